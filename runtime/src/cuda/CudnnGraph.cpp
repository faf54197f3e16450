//===- CudnnGraph.cpp - cuDNN's SDPA graphs from backend descriptors ------===//
//
// See CudnnGraph.h. The forward, per (b, h):
//   S = scale * Q K^T (+ bias) (causal: -inf where the key index > the
//   query index), M = rowmax(S), E = exp(S - M), L = rowsum(E),
//   stats = M + log L, O = (E / L) V.
// The backward, from Q, K, V, O, dO and the stats:
//   Dl = rowsum(dO * O), P = exp(S - stats), dV = P^T dO, dP = dO V^T,
//   dS = scale * P (dP - Dl), dQ = dS K, dK = dS^T Q.
//
//===----------------------------------------------------------------------===//

#include "CudnnGraph.h"

#include "../common/Internal.h"
#include "CudnnInternal.h"

#include <tuple>

using namespace pfrt;
using namespace pfrt::cuda::dnn;

namespace {

void check(cudnnStatus_t s, const char *call) {
  if (s == CUDNN_STATUS_SUCCESS)
    return;
  fatal("pfrt_cuda_cudnn_attention: %s failed: %s (%d)", call,
        api().cudnnGetErrorString(s), int(s));
}

/// Row-major strides of dims.
std::array<int64_t, 4> packed(const std::array<int64_t, 4> &d) {
  return {d[1] * d[2] * d[3], d[2] * d[3], d[3], 1};
}

} // namespace

bool SdpaKey::operator<(const SdpaKey &o) const {
  auto tie = [](const SdpaKey &k) {
    return std::tie(k.b, k.h, k.t, k.s, k.d, k.dv, k.dtype, k.causal, k.bias,
                    k.biasS, k.backward);
  };
  return tie(*this) < tie(o);
}

SdpaGraph::~SdpaGraph() {
  for (auto it = owned.rbegin(); it != owned.rend(); ++it)
    api().cudnnBackendDestroyDescriptor(*it);
}

SdpaGraph::D SdpaGraph::make(cudnnBackendDescriptorType_t type) {
  D d = nullptr;
  check(api().cudnnBackendCreateDescriptor(type, &d),
        "cudnnBackendCreateDescriptor");
  owned.push_back(d);
  return d;
}

void SdpaGraph::set(D d, cudnnBackendAttributeName_t attr,
                    cudnnBackendAttributeType_t t, int64_t n, const void *v) {
  check(api().cudnnBackendSetAttribute(d, attr, t, n, v),
        "cudnnBackendSetAttribute");
}

void SdpaGraph::setDesc(D d, cudnnBackendAttributeName_t attr, D v) {
  set(d, attr, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &v);
}

void SdpaGraph::finalize(D d, const char *what) {
  cudnnStatus_t s = api().cudnnBackendFinalize(d);
  if (s != CUDNN_STATUS_SUCCESS)
    fatal("pfrt_cuda_cudnn_attention: cudnnBackendFinalize(%s) failed: %s "
          "(%d)",
          what, api().cudnnGetErrorString(s), int(s));
}

SdpaGraph::D SdpaGraph::tensor(int64_t uid, cudnnDataType_t type, Dims dims,
                               Dims strides, bool isVirtual, bool byValue) {
  D t = make(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  const int64_t align = 16;
  set(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type);
  set(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims.data());
  set(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides.data());
  set(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
  set(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align);
  if (isVirtual)
    set(t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &isVirtual);
  if (byValue)
    set(t, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &byValue);
  finalize(t, "tensor");
  return t;
}

SdpaGraph::D SdpaGraph::virt(Dims dims, cudnnDataType_t type) {
  return tensor(nextVirtual++, type, dims, packed(dims), true);
}

SdpaGraph::D SdpaGraph::matmul(D a, D b, D c) {
  D desc = make(CUDNN_BACKEND_MATMUL_DESCRIPTOR);
  cudnnDataType_t comp = CUDNN_DATA_FLOAT;
  set(desc, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp);
  finalize(desc, "matmul");
  D op = make(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
  setDesc(op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, a);
  setDesc(op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, b);
  setDesc(op, CUDNN_ATTR_OPERATION_MATMUL_CDESC, c);
  setDesc(op, CUDNN_ATTR_OPERATION_MATMUL_DESC, desc);
  finalize(op, "matmul operation");
  ops.push_back(op);
  return c;
}

SdpaGraph::D SdpaGraph::pointwise(cudnnPointwiseMode_t mode, D x, D b, D y, D t,
                                  int64_t axis) {
  D desc = make(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
  cudnnDataType_t prec = CUDNN_DATA_FLOAT;
  set(desc, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode);
  set(desc, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec);
  if (axis >= 0)
    set(desc, CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &axis);
  finalize(desc, "pointwise");
  D op = make(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
  setDesc(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, desc);
  setDesc(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x);
  if (b)
    setDesc(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, b);
  setDesc(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y);
  if (t)
    setDesc(op, CUDNN_ATTR_OPERATION_POINTWISE_TDESC, t);
  finalize(op, "pointwise operation");
  ops.push_back(op);
  return y;
}

SdpaGraph::D SdpaGraph::unary(cudnnPointwiseMode_t mode, D x, Dims dims) {
  return pointwise(mode, x, nullptr, virt(dims));
}

SdpaGraph::D SdpaGraph::binary(cudnnPointwiseMode_t mode, D x, D b, Dims dims) {
  return pointwise(mode, x, b, virt(dims));
}

SdpaGraph::D SdpaGraph::reduce(cudnnReduceTensorOp_t op, D x, Dims dims) {
  D desc = make(CUDNN_BACKEND_REDUCTION_DESCRIPTOR);
  cudnnDataType_t comp = CUDNN_DATA_FLOAT;
  set(desc, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE,
      1, &op);
  set(desc, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp);
  finalize(desc, "reduction");
  D r = make(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR);
  D y = virt({dims[0], dims[1], dims[2], 1});
  setDesc(r, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, x);
  setDesc(r, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, y);
  setDesc(r, CUDNN_ATTR_OPERATION_REDUCTION_DESC, desc);
  finalize(r, "reduction operation");
  ops.push_back(r);
  return y;
}

SdpaGraph::D SdpaGraph::transpose(D x, Dims dims) {
  // x is [B, H, M, N] packed; its transpose views it as [B, H, N, M].
  Dims strides = {dims[1] * dims[2] * dims[3], dims[2] * dims[3], 1, dims[3]};
  D y = tensor(nextVirtual++, CUDNN_DATA_FLOAT,
               {dims[0], dims[1], dims[3], dims[2]}, strides, true);
  D op = make(CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR);
  setDesc(op, CUDNN_ATTR_OPERATION_RESHAPE_XDESC, x);
  setDesc(op, CUDNN_ATTR_OPERATION_RESHAPE_YDESC, y);
  finalize(op, "reshape operation");
  ops.push_back(op);
  return y;
}

SdpaGraph::D SdpaGraph::scale() {
  if (!scaleT)
    scaleT = tensor(kScale, CUDNN_DATA_FLOAT, {1, 1, 1, 1}, {1, 1, 1, 1}, false,
                    true);
  return scaleT;
}

/// scale * Q K^T (+ bias) (causal: -inf above the diagonal), [B, H, T, S].
SdpaGraph::D SdpaGraph::scores(const SdpaKey &k, D q, D kt) {
  const Dims ts = {k.b, k.h, k.t, k.s};
  D s = matmul(q, kt, virt(ts));
  s = binary(CUDNN_POINTWISE_MUL, s, scale(), ts);
  if (k.bias) {
    Dims bd = {k.biasS[0] ? k.b : 1, k.biasS[1] ? k.h : 1, k.t, k.s};
    Dims bs = {k.biasS[0] ? k.biasS[0] : 1, k.biasS[1] ? k.biasS[1] : 1,
               k.biasS[2], k.biasS[3]};
    D bias = tensor(kBias, CUDNN_DATA_FLOAT, bd, bs, false);
    s = binary(CUDNN_POINTWISE_ADD, s, bias, ts);
  }
  if (k.causal) {
    D row = pointwise(CUDNN_POINTWISE_GEN_INDEX, s, nullptr,
                      virt(ts, CUDNN_DATA_INT32), nullptr, 2);
    D col = pointwise(CUDNN_POINTWISE_GEN_INDEX, s, nullptr,
                      virt(ts, CUDNN_DATA_INT32), nullptr, 3);
    D keep = pointwise(CUDNN_POINTWISE_CMP_GE, row, col,
                       virt(ts, CUDNN_DATA_BOOLEAN));
    D ninf = tensor(kNegInf, CUDNN_DATA_FLOAT, {1, 1, 1, 1}, {1, 1, 1, 1},
                    false, true);
    s = pointwise(CUDNN_POINTWISE_BINARY_SELECT, s, ninf, virt(ts), keep);
  }
  return s;
}

void SdpaGraph::forward(const SdpaKey &k) {
  const Dims ts = {k.b, k.h, k.t, k.s}, t1 = {k.b, k.h, k.t, 1};
  D q = tensor(kQ, k.dtype, {k.b, k.h, k.t, k.d}, packed({k.b, k.h, k.t, k.d}),
               false);
  D kt = tensor(kKT, k.dtype, {k.b, k.h, k.d, k.s},
                {k.h * k.s * k.d, k.s * k.d, 1, k.d}, false);
  D v = tensor(kV, k.dtype, {k.b, k.h, k.s, k.dv},
               packed({k.b, k.h, k.s, k.dv}), false);
  D o = tensor(kO, k.dtype, {k.b, k.h, k.t, k.dv},
               packed({k.b, k.h, k.t, k.dv}), false);
  D stats = tensor(kStats, CUDNN_DATA_FLOAT, t1, packed(t1), false);
  D s = scores(k, q, kt);
  D m = reduce(CUDNN_REDUCE_TENSOR_MAX, s, ts);
  D e = unary(CUDNN_POINTWISE_EXP, binary(CUDNN_POINTWISE_SUB, s, m, ts), ts);
  D l = reduce(CUDNN_REDUCE_TENSOR_ADD, e, ts);
  D logl = unary(CUDNN_POINTWISE_LOG, l, t1);
  pointwise(CUDNN_POINTWISE_ADD, m, logl, stats);
  D p = binary(CUDNN_POINTWISE_DIV, e, l, ts);
  matmul(p, v, o);
}

void SdpaGraph::backward(const SdpaKey &k) {
  const Dims ts = {k.b, k.h, k.t, k.s}, t1 = {k.b, k.h, k.t, 1};
  const Dims qd = {k.b, k.h, k.t, k.d}, od = {k.b, k.h, k.t, k.dv};
  const Dims kd = {k.b, k.h, k.s, k.d}, vd = {k.b, k.h, k.s, k.dv};
  D q = tensor(kQ, k.dtype, qd, packed(qd), false);
  D kt = tensor(kKT, k.dtype, {k.b, k.h, k.d, k.s},
                {k.h * k.s * k.d, k.s * k.d, 1, k.d}, false);
  D kk = tensor(kK, k.dtype, kd, packed(kd), false);
  D vt = tensor(kVT, k.dtype, {k.b, k.h, k.dv, k.s},
                {k.h * k.s * k.dv, k.s * k.dv, 1, k.dv}, false);
  D o = tensor(kO, k.dtype, od, packed(od), false);
  D dO = tensor(kDO, k.dtype, od, packed(od), false);
  D stats = tensor(kStats, CUDNN_DATA_FLOAT, t1, packed(t1), false);
  D dq = tensor(kDQ, k.dtype, qd, packed(qd), false);
  D dk = tensor(kDK, k.dtype, kd, packed(kd), false);
  D dv = tensor(kDV, k.dtype, vd, packed(vd), false);
  D rows = reduce(CUDNN_REDUCE_TENSOR_ADD,
                  binary(CUDNN_POINTWISE_MUL, dO, o, od), od);
  D s = scores(k, q, kt);
  D p =
      unary(CUDNN_POINTWISE_EXP, binary(CUDNN_POINTWISE_SUB, s, stats, ts), ts);
  matmul(transpose(p, ts), dO, dv);
  D dp = matmul(dO, vt, virt(ts));
  D ds = binary(CUDNN_POINTWISE_MUL, p,
                binary(CUDNN_POINTWISE_SUB, dp, rows, ts), ts);
  ds = binary(CUDNN_POINTWISE_MUL, ds, scale(), ts);
  matmul(ds, kk, dq);
  matmul(transpose(ds, ts), q, dk);
}

cudnnBackendDescriptor_t SdpaGraph::build(const SdpaKey &key) {
  if (key.backward)
    backward(key);
  else
    forward(key);
  D graph = make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  set(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
      int64_t(ops.size()), ops.data());
  set(graph, cudnnBackendAttributeName_t(800) /* OPERATIONGRAPH_HANDLE */,
      CUDNN_TYPE_HANDLE, 1, &handle);
  finalize(graph, "operation graph");
  return graph;
}
