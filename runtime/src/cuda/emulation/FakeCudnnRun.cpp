//===- FakeCudnnRun.cpp - the emulated cuDNN executes a graph -------------===//
//
// A finalized graph's operations, in dependency order, on the host: each
// operation's output is computed in float32 over its dims (inputs
// broadcast over their axes of size 1), kept as a packed host array when
// the tensor is virtual, else rounded to its dtype and stored through its
// strides. Matmuls accumulate in float32 in k order; the reshapes of the
// patterns are transposes of the last two axes. This computes what the
// graph says (a wrong graph gives wrong numbers), not how cuDNN's fused
// kernels tile it: P is not rounded to the inputs' dtype before P V as a
// tensor-core kernel does, so a GPU's results differ in the low bits.
//
//===----------------------------------------------------------------------===//

#include "../../common/HalfMath.h"
#include "FakeCudnnDesc.h"

#include <cmath>
#include <cstdint>
#include <vector>

namespace pfrt {
namespace fake {
namespace dnn {
namespace {

int64_t numel(const Dims &d) { return d[0] * d[1] * d[2] * d[3]; }

/// The packed offset of index i (broadcast over t's axes of size 1).
int64_t packedAt(const Dims &t, const Dims &i) {
  int64_t at = 0;
  for (size_t a = 0; a < 4; ++a)
    at = at * t[a] + (t[a] == 1 ? 0 : i[a]);
  return at;
}

/// The strided element offset of index i (broadcast as above).
int64_t stridedAt(const Tensor &t, const Dims &i) {
  int64_t at = 0;
  for (size_t a = 0; a < 4; ++a)
    at += (t.dims[a] == 1 ? 0 : i[a]) * t.strides[a];
  return at;
}

/// The index of packed offset n in dims.
Dims indexOf(const Dims &d, int64_t n) {
  Dims i{};
  for (int a = 3; a >= 0; --a) {
    i[size_t(a)] = n % d[size_t(a)];
    n /= d[size_t(a)];
  }
  return i;
}

struct Run {
  const std::map<int64_t, void *> &ptrs;
  const std::map<int64_t, float> &values;
  std::map<int64_t, std::vector<float>> virt;

  float read(const Desc *d, const Dims &i) const {
    const Tensor &t = d->tensor;
    if (t.byValue)
      return values.at(t.uid);
    if (t.isVirtual)
      return virt.at(t.uid)[size_t(packedAt(t.dims, i))];
    const void *p = ptrs.at(t.uid);
    const int64_t at = stridedAt(t, i);
    switch (t.type) {
    case CUDNN_DATA_BFLOAT16:
      return half::bf16ToFloat(static_cast<const uint16_t *>(p)[at]);
    case CUDNN_DATA_HALF:
      return half::f16ToFloat(static_cast<const uint16_t *>(p)[at]);
    default:
      return static_cast<const float *>(p)[at];
    }
  }

  void write(const Desc *d, std::vector<float> v) {
    const Tensor &t = d->tensor;
    if (t.isVirtual) {
      virt[t.uid] = std::move(v);
      return;
    }
    void *p = ptrs.at(t.uid);
    for (int64_t n = 0; n < int64_t(v.size()); ++n) {
      const int64_t at = stridedAt(t, indexOf(t.dims, n));
      const float x = v[size_t(n)];
      if (t.type == CUDNN_DATA_BFLOAT16)
        static_cast<uint16_t *>(p)[at] = half::floatToBf16(x);
      else if (t.type == CUDNN_DATA_HALF)
        static_cast<uint16_t *>(p)[at] = half::floatToF16(x);
      else
        static_cast<float *>(p)[at] = x;
    }
  }

  std::vector<float> matmul(const Op &op) const {
    const Dims &y = op.y->tensor.dims;
    const int64_t k = op.x->tensor.dims[3];
    std::vector<float> out(size_t(numel(y)));
    for (int64_t n = 0; n < numel(y); ++n) {
      const Dims i = indexOf(y, n);
      float acc = 0.0f;
      for (int64_t j = 0; j < k; ++j)
        acc += read(op.x, {i[0], i[1], i[2], j}) *
               read(op.b, {i[0], i[1], j, i[3]});
      out[size_t(n)] = acc;
    }
    return out;
  }

  float pointwise(const Op &op, const Dims &i) const {
    const float x = read(op.x, i);
    const float b = op.b ? read(op.b, i) : 0.0f;
    switch (op.mode) {
    case CUDNN_POINTWISE_ADD:
      return x + b;
    case CUDNN_POINTWISE_SUB:
      return x - b;
    case CUDNN_POINTWISE_MUL:
      return x * b;
    case CUDNN_POINTWISE_DIV:
      return x / b;
    case CUDNN_POINTWISE_EXP:
      return std::exp(x);
    case CUDNN_POINTWISE_LOG:
      return std::log(x);
    case CUDNN_POINTWISE_GEN_INDEX:
      return float(i[size_t(op.axis)]);
    case CUDNN_POINTWISE_CMP_GE:
      return x >= b ? 1.0f : 0.0f;
    case CUDNN_POINTWISE_BINARY_SELECT:
      return read(op.t, i) != 0.0f ? x : b;
    default:
      return x; // identity (the patterns have no other mode)
    }
  }

  std::vector<float> apply(const Op &op) const {
    const Dims &y = op.y->tensor.dims, &x = op.x->tensor.dims;
    std::vector<float> out(size_t(numel(y)));
    if (op.kind == CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR)
      return matmul(op);
    if (op.kind == CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR) {
      for (int64_t n = 0; n < numel(y); ++n) {
        const Dims i = indexOf(y, n);
        out[size_t(n)] = read(op.x, {i[0], i[1], i[3], i[2]});
      }
      return out;
    }
    if (op.kind == CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR) {
      const bool max = op.mode == CUDNN_REDUCE_TENSOR_MAX;
      for (float &v : out)
        v = max ? -INFINITY : 0.0f;
      for (int64_t n = 0; n < numel(x); ++n) {
        const Dims i = indexOf(x, n);
        float &v = out[size_t(packedAt(y, i))];
        const float e = read(op.x, i);
        v = max ? (e > v ? e : v) : v + e;
      }
      return out;
    }
    for (int64_t n = 0; n < numel(y); ++n)
      out[size_t(n)] = pointwise(op, indexOf(y, n));
    return out;
  }
};

} // namespace

void runGraph(const Desc &graph, const std::map<int64_t, void *> &ptrs,
              const std::map<int64_t, float> &values) {
  Run run{ptrs, values, {}};
  for (const Desc *o : graph.order)
    run.write(o->op.y, run.apply(o->op));
}

} // namespace dnn
} // namespace fake
} // namespace pfrt
