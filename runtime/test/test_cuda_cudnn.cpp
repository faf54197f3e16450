//===- test_cuda_cudnn.cpp - cuDNN's fused attention against float64 ------===//
//
// pfrt_cuda_cudnn_attention(_grad) (Cudnn.cpp) on fresh random bf16 / f16
// data against a float64 reference computed from the same rounded inputs,
// with torch.testing.assert_close's tolerances for the dtype (bf16: rtol
// 1.6e-2, atol 1e-5; f16: rtol 1e-3, atol 1e-5): forward (O, the stats)
// and backward (dQ, dK, dV), causal or not, with or without an additive
// mask (broadcast over B or H), T = S and T != S, B * H > 1 (the
// reference backward reads O rounded to the dtype, as it is stored). Then the
// plan cache (a repeated shape builds nothing, a new one builds one plan)
// and a captured step (replayed on new data). Under PFRT_CUDA_FAKE=1 it
// runs on the emulation (emulation/FakeCudnn.h); on a GPU, on cuDNN. The
// host rows pfrt_k_attention_typed(_grad), the twins' reference, too.
//
// Modes (argv[1]): "" all of the above; "absent" one call (run with cuDNN
// missing: exit 2 naming it); "capture_new_shape" a first call of a shape
// inside a capture (fatal); "finalize" the backend API's Finalize errors.
//
//===----------------------------------------------------------------------===//

#include "../src/common/HalfMath.h"
#include "../src/cuda/CudnnInternal.h"
#include "CudaTestUtil.h"

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

using namespace pt;

namespace {

uint64_t gSeed = 0;
uint64_t gTag = 0;
pt::DeviceArena *gArena = nullptr;
int gChecks = 0;

struct Case {
  int64_t b, h, t, s, d, dv;
  int32_t dtype;
  bool causal;
  int mask; // 0 none, 1 [B, H, T, S], 2 [1, H, T, S], 3 [B, 1, T, S]
};

uint16_t toBits(int32_t dtype, float x) {
  return dtype == PFRT_DTYPE_BF16 ? pfrt::half::floatToBf16(x)
                                  : pfrt::half::floatToF16(x);
}
double fromBits(int32_t dtype, uint16_t b) {
  return dtype == PFRT_DTYPE_BF16 ? pfrt::half::bf16ToFloat(b)
                                  : pfrt::half::f16ToFloat(b);
}

/// n fresh values in [-1, 1) rounded to dtype.
std::vector<uint16_t> fresh(int32_t dtype, int64_t n) {
  ++gTag;
  std::vector<uint16_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[size_t(i)] = toBits(dtype, pt_value(gSeed, gTag, 0, uint64_t(i)));
  return v;
}

/// The data of a case, its float64 reference and its device buffers.
struct Data {
  Case c;
  double scale;
  std::vector<uint16_t> q, k, v, dout;
  std::vector<float> mask;
  int64_t ms[4] = {0, 0, 0, 0};
  std::vector<double> out, lse, dq, dk, dv; // the reference
  void *dQ, *dK, *dV, *dO, *dDout, *dDq, *dDk, *dDv;
  float *dLse, *dMask = nullptr;
};

double maskAt(const Data &x, int64_t b, int64_t h, int64_t t, int64_t s) {
  if (!x.c.mask)
    return 0.0;
  return x.mask[size_t(b * x.ms[0] + h * x.ms[1] + t * x.ms[2] + s * x.ms[3])];
}

/// The float64 reference of one (b, h) plane.
void referencePlane(Data &x, int64_t b, int64_t h) {
  const Case &c = x.c;
  const int64_t bh = b * c.h + h;
  auto at = [&](const std::vector<uint16_t> &v, int64_t row, int64_t w,
                int64_t i) {
    return fromBits(c.dtype, v[size_t((bh * row) * w + i)]);
  };
  std::vector<double> p(size_t(c.t * c.s)), ds(size_t(c.t * c.s));
  for (int64_t t = 0; t < c.t; ++t) {
    double m = -INFINITY, l = 0.0;
    for (int64_t s = 0; s < c.s; ++s) {
      double dot = 0.0;
      for (int64_t d = 0; d < c.d; ++d)
        dot += at(x.q, c.t, c.d, t * c.d + d) * at(x.k, c.s, c.d, s * c.d + d);
      double sc = x.scale * dot + maskAt(x, b, h, t, s);
      if (c.causal && s > t)
        sc = -INFINITY;
      p[size_t(t * c.s + s)] = sc;
      m = std::fmax(m, sc);
    }
    for (int64_t s = 0; s < c.s; ++s)
      l += std::exp(p[size_t(t * c.s + s)] - m);
    for (int64_t s = 0; s < c.s; ++s)
      p[size_t(t * c.s + s)] = std::exp(p[size_t(t * c.s + s)] - m) / l;
    x.lse[size_t(bh * c.t + t)] = m + std::log(l);
    double delta = 0.0;
    for (int64_t e = 0; e < c.dv; ++e) {
      double o = 0.0;
      for (int64_t s = 0; s < c.s; ++s)
        o += p[size_t(t * c.s + s)] * at(x.v, c.s, c.dv, s * c.dv + e);
      x.out[size_t((bh * c.t + t) * c.dv + e)] = o;
      // The backward reads O as stored: in the dtype.
      delta += fromBits(c.dtype, toBits(c.dtype, float(o))) *
               at(x.dout, c.t, c.dv, t * c.dv + e);
    }
    for (int64_t s = 0; s < c.s; ++s) {
      double dp = 0.0;
      for (int64_t e = 0; e < c.dv; ++e)
        dp += at(x.dout, c.t, c.dv, t * c.dv + e) *
              at(x.v, c.s, c.dv, s * c.dv + e);
      ds[size_t(t * c.s + s)] = p[size_t(t * c.s + s)] * (dp - delta);
    }
  }
  for (int64_t t = 0; t < c.t; ++t)
    for (int64_t s = 0; s < c.s; ++s) {
      const double pv = p[size_t(t * c.s + s)], g = ds[size_t(t * c.s + s)];
      for (int64_t d = 0; d < c.d; ++d) {
        x.dq[size_t((bh * c.t + t) * c.d + d)] +=
            x.scale * g * at(x.k, c.s, c.d, s * c.d + d);
        x.dk[size_t((bh * c.s + s) * c.d + d)] +=
            x.scale * g * at(x.q, c.t, c.d, t * c.d + d);
      }
      for (int64_t e = 0; e < c.dv; ++e)
        x.dv[size_t((bh * c.s + s) * c.dv + e)] +=
            pv * at(x.dout, c.t, c.dv, t * c.dv + e);
    }
}

void reference(Data &x) {
  const Case &c = x.c;
  x.out.assign(size_t(c.b * c.h * c.t * c.dv), 0.0);
  x.lse.assign(size_t(c.b * c.h * c.t), 0.0);
  x.dq.assign(size_t(c.b * c.h * c.t * c.d), 0.0);
  x.dk.assign(size_t(c.b * c.h * c.s * c.d), 0.0);
  x.dv.assign(size_t(c.b * c.h * c.s * c.dv), 0.0);
  for (int64_t b = 0; b < c.b; ++b)
    for (int64_t h = 0; h < c.h; ++h)
      referencePlane(x, b, h);
}

/// Fresh inputs (and a fresh reference), uploaded to the device buffers.
void refill(Data &x) {
  const Case &c = x.c;
  x.q = fresh(c.dtype, c.b * c.h * c.t * c.d);
  x.k = fresh(c.dtype, c.b * c.h * c.s * c.d);
  x.v = fresh(c.dtype, c.b * c.h * c.s * c.dv);
  x.dout = fresh(c.dtype, c.b * c.h * c.t * c.dv);
  auto up = [](void *d, const std::vector<uint16_t> &h) {
    pfrt_cuda_h2d(d, h.data(), int64_t(h.size() * 2));
  };
  up(x.dQ, x.q);
  up(x.dK, x.k);
  up(x.dV, x.v);
  up(x.dDout, x.dout);
  if (c.mask) {
    ++gTag;
    for (size_t i = 0; i < x.mask.size(); ++i) // in [-2, 0)
      x.mask[i] = pt_value(gSeed, gTag, 1, i) - 1.0f;
    pfrt_cuda_h2d(x.dMask, x.mask.data(), int64_t(x.mask.size() * 4));
  }
  reference(x);
}

Data setup(const Case &c) {
  Data x;
  x.c = c;
  x.scale = 1.0 / std::sqrt(double(c.d));
  const int64_t bh = c.b * c.h;
  x.dQ = gArena->alloc(bh * c.t * c.d * 2);
  x.dK = gArena->alloc(bh * c.s * c.d * 2);
  x.dV = gArena->alloc(bh * c.s * c.dv * 2);
  x.dO = gArena->alloc(bh * c.t * c.dv * 2);
  x.dDout = gArena->alloc(bh * c.t * c.dv * 2);
  x.dDq = gArena->alloc(bh * c.t * c.d * 2);
  x.dDk = gArena->alloc(bh * c.s * c.d * 2);
  x.dDv = gArena->alloc(bh * c.s * c.dv * 2);
  x.dLse = static_cast<float *>(gArena->alloc(bh * c.t * 4));
  if (c.mask) {
    const int64_t mb = c.mask == 2 ? 1 : c.b, mh = c.mask == 3 ? 1 : c.h;
    x.mask.resize(size_t(mb * mh * c.t * c.s));
    x.ms[3] = 1;
    x.ms[2] = c.s;
    x.ms[1] = mh == 1 ? 0 : c.t * c.s;
    x.ms[0] = mb == 1 ? 0 : mh * c.t * c.s;
    x.dMask = static_cast<float *>(gArena->alloc(int64_t(x.mask.size()) * 4));
  }
  refill(x);
  return x;
}

std::string name(const Case &c) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "%s B=%lld H=%lld T=%lld S=%lld D=%lld%s%s",
                c.dtype == PFRT_DTYPE_BF16 ? "bf16" : "f16", (long long)c.b,
                (long long)c.h, (long long)c.t, (long long)c.s, (long long)c.d,
                c.causal ? " causal" : "",
                c.mask ? (c.mask == 1   ? " mask"
                          : c.mask == 2 ? " mask[1,H]"
                                        : " mask[B,1]")
                       : "");
  return buf;
}

/// assert_close's atol (1e-5) plus a share of rtol at the tensor's own
/// scale: an element of a gradient is a sum of terms of that scale, each
/// rounded to the dtype on the way (dS, P), so a near-zero sum misses a
/// per-element rtol by rounding alone (13% of seeds at atol 1e-5). A wrong
/// graph errs at the scale itself, far above this.
double scaledAtol(const std::vector<double> &want, double rtol) {
  double rms = 0;
  for (double w : want)
    rms += w * w;
  rms = want.empty() ? 0 : std::sqrt(rms / double(want.size()));
  return 1e-5 + 0.25 * rtol * rms;
}

/// assert_close of got (device, dtype or float32) against want.
void expectClose(const Data &x, const void *dev, bool f32,
                 const std::vector<double> &want, const char *what) {
  const double rtol = x.c.dtype == PFRT_DTYPE_BF16 ? 1.6e-2 : 1e-3;
  const double atol = scaledAtol(want, rtol);
  std::vector<double> got(want.size());
  if (f32) {
    auto h = download(static_cast<const float *>(dev), int64_t(want.size()));
    for (size_t i = 0; i < h.size(); ++i)
      got[i] = h[i];
  } else {
    auto h = download(static_cast<const uint16_t *>(dev), int64_t(want.size()));
    for (size_t i = 0; i < h.size(); ++i)
      got[i] = fromBits(x.c.dtype, h[i]);
  }
  for (size_t i = 0; i < want.size(); ++i) {
    const double err = std::fabs(got[i] - want[i]);
    CHECK(err <= atol + rtol * std::fabs(want[i]),
          "%s, %s[%zu]: got %.8g, want %.8g (|err| %.3g > %.3g)",
          name(x.c).c_str(), what, i, got[i], want[i], err,
          atol + rtol * std::fabs(want[i]));
  }
  ++gChecks;
}

void forward(Data &x) {
  const Case &c = x.c;
  const int64_t dims[6] = {c.b, c.h, c.t, c.s, c.d, c.dv};
  pfrt_cuda_cudnn_attention(x.dQ, x.dK, x.dV, x.dMask, c.mask ? x.ms : nullptr,
                            x.dO, x.dLse, dims, c.dtype, x.scale, c.causal);
}

void backward(Data &x) {
  const Case &c = x.c;
  const int64_t dims[6] = {c.b, c.h, c.t, c.s, c.d, c.dv};
  pfrt_cuda_cudnn_attention_grad(
      x.dQ, x.dK, x.dV, x.dMask, c.mask ? x.ms : nullptr, x.dO, x.dLse, x.dDout,
      x.dDq, x.dDk, x.dDv, dims, c.dtype, x.scale, c.causal);
}

void expectAll(const Data &x) {
  expectClose(x, x.dO, false, x.out, "O");
  expectClose(x, x.dLse, true, x.lse, "stats");
  expectClose(x, x.dDq, false, x.dq, "dQ");
  expectClose(x, x.dDk, false, x.dk, "dK");
  expectClose(x, x.dDv, false, x.dv, "dV");
}

/// The host rows pfrt_k_attention_typed(_grad) (the twins' reference:
/// widen, the CPU kernels, round once) on x's inputs, against the float64
/// reference at the same tolerances.
void hostRows(const Data &x) {
  const Case &c = x.c;
  const int64_t dims[6] = {c.b, c.h, c.t, c.s, c.d, c.dv};
  std::vector<uint16_t> out(x.out.size()), dq(x.dq.size()), dk(x.dk.size()),
      dv(x.dv.size());
  std::vector<float> lse(x.lse.size());
  const float *mask = c.mask ? x.mask.data() : nullptr;
  pfrt_k_attention_typed(x.q.data(), x.k.data(), x.v.data(), mask,
                         c.mask ? x.ms : nullptr, out.data(), lse.data(), dims,
                         c.dtype, x.scale, c.causal);
  pfrt_k_attention_typed_grad(x.q.data(), x.k.data(), x.v.data(), mask,
                              c.mask ? x.ms : nullptr, out.data(), lse.data(),
                              x.dout.data(), dq.data(), dk.data(), dv.data(),
                              dims, c.dtype, x.scale, c.causal);
  const double rtol = c.dtype == PFRT_DTYPE_BF16 ? 1.6e-2 : 1e-3;
  auto close = [&](const std::vector<uint16_t> &got,
                   const std::vector<double> &want, const char *what) {
    const double atol = scaledAtol(want, rtol);
    for (size_t i = 0; i < want.size(); ++i) {
      const double g = fromBits(c.dtype, got[i]);
      CHECK(std::fabs(g - want[i]) <= atol + rtol * std::fabs(want[i]),
            "host row, %s, %s[%zu]: got %.8g, want %.8g", name(c).c_str(), what,
            i, g, want[i]);
    }
    ++gChecks;
  };
  close(out, x.out, "O");
  close(dq, x.dq, "dQ");
  close(dk, x.dk, "dK");
  close(dv, x.dv, "dV");
}

/// Forward then backward of c, against the reference (and the host rows);
/// returns the plans the two calls built.
int64_t runCase(const Case &c) {
  const int64_t before = pfrt_cuda_cudnn_plans_built();
  Data x = setup(c);
  forward(x);
  backward(x);
  expectAll(x);
  hostRows(x);
  return pfrt_cuda_cudnn_plans_built() - before;
}

/// The plan cache, then a captured step replayed on new data.
void cacheAndCapture() {
  const Case c = {2, 3, 24, 40, 16, 16, PFRT_DTYPE_BF16, true, 0};
  CHECK(runCase(c) == 0, "a shape run before built a plan again");
  Data x = setup(c);
  const int64_t built = pfrt_cuda_cudnn_plans_built();
  forward(x);
  backward(x);
  CHECK(pfrt_cuda_cudnn_plans_built() == built, "repeated calls built plans");
  expectAll(x);
  Case c2 = c;
  c2.t = 32; // one new forward and one new backward plan
  CHECK(runCase(c2) == 2, "a new shape did not build exactly two plans");
  if (!pfrt_cuda_graphs_enabled())
    return;
  pfrt_cuda_graph_begin();
  forward(x);
  backward(x);
  pfrt_cuda_graph_end();
  CHECK(pfrt_cuda_cudnn_plans_built() == built + 2, "the capture built");
  for (int replay = 0; replay < 2; ++replay) {
    refill(x); // new data: the replay must compute, not keep old results
    pfrt_cuda_graph_launch();
    pfrt_cuda_synchronize();
    expectAll(x);
  }
}

/// A descriptor of `type`, fatal unless created.
cudnnBackendDescriptor_t create(cudnnBackendDescriptorType_t type) {
  cudnnBackendDescriptor_t d = nullptr;
  CHECK(pfrt::cuda::dnn::api().cudnnBackendCreateDescriptor(type, &d) ==
            CUDNN_STATUS_SUCCESS,
        "cudnnBackendCreateDescriptor(%d) failed", int(type));
  return d;
}

/// A bf16 tensor [1, 1, m, n] packed (no unique id when uid is 0), and the
/// status of its Finalize.
cudnnStatus_t tensor(cudnnBackendDescriptor_t *t, int64_t uid, int64_t m,
                     int64_t n) {
  const auto &a = pfrt::cuda::dnn::api();
  *t = create(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  const cudnnDataType_t type = CUDNN_DATA_BFLOAT16;
  const int64_t dims[4] = {1, 1, m, n}, strides[4] = {m * n, m * n, n, 1};
  const int64_t align = 16;
  a.cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_DATA_TYPE,
                             CUDNN_TYPE_DATA_TYPE, 1, &type);
  a.cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64,
                             4, dims);
  a.cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4,
                             strides);
  a.cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT,
                             CUDNN_TYPE_INT64, 1, &align);
  if (uid)
    a.cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_UNIQUE_ID,
                               CUDNN_TYPE_INT64, 1, &uid);
  return a.cudnnBackendFinalize(*t);
}

/// The backend API's Finalize errors: a tensor without a unique id, a
/// matmul whose inner dims differ (any failure on a GPU, the emulation's
/// codes under PFRT_CUDA_FAKE=1), and, emulated, a graph that is no
/// attention pattern refused by the plan.
void finalizeErrors() {
  const auto &a = pfrt::cuda::dnn::api();
  const char *fake = std::getenv("PFRT_CUDA_FAKE");
  const bool emulated = fake && std::strcmp(fake, "1") == 0;
  cudnnBackendDescriptor_t bad, x, y, z;
  cudnnStatus_t st = tensor(&bad, 0, 8, 16);
  printf("tensor without a unique id: %s\n", a.cudnnGetErrorString(st));
  CHECK(st != CUDNN_STATUS_SUCCESS, "a tensor without a unique id finalized");
  // NOLINTNEXTLINE(readability-simplify-boolean-expr)
  CHECK(!emulated || st == CUDNN_STATUS_BAD_PARAM, "emulated: %d", int(st));
  CHECK(tensor(&x, 1, 8, 16) == CUDNN_STATUS_SUCCESS, "tensor x");
  CHECK(tensor(&y, 2, 8, 8) == CUDNN_STATUS_SUCCESS, "tensor y");
  CHECK(tensor(&z, 3, 8, 8) == CUDNN_STATUS_SUCCESS, "tensor z");
  cudnnBackendDescriptor_t mm = create(CUDNN_BACKEND_MATMUL_DESCRIPTOR);
  const cudnnDataType_t comp = CUDNN_DATA_FLOAT;
  a.cudnnBackendSetAttribute(mm, CUDNN_ATTR_MATMUL_COMP_TYPE,
                             CUDNN_TYPE_DATA_TYPE, 1, &comp);
  CHECK(a.cudnnBackendFinalize(mm) == CUDNN_STATUS_SUCCESS, "matmul desc");
  cudnnBackendDescriptor_t op =
      create(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
  auto setDesc = [&](cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t n,
                     cudnnBackendDescriptor_t v) {
    a.cudnnBackendSetAttribute(d, n, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &v);
  };
  setDesc(op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, x); // [8, 16]
  setDesc(op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, y); // [8, 8]: 16 != 8
  setDesc(op, CUDNN_ATTR_OPERATION_MATMUL_CDESC, z);
  setDesc(op, CUDNN_ATTR_OPERATION_MATMUL_DESC, mm);
  st = a.cudnnBackendFinalize(op);
  printf("matmul [8, 16] x [8, 8]: %s\n", a.cudnnGetErrorString(st));
  CHECK(st != CUDNN_STATUS_SUCCESS, "a mismatched matmul finalized");
  // NOLINTNEXTLINE(readability-simplify-boolean-expr)
  CHECK(!emulated || st == CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH,
        "emulated: %d", int(st));
  if (!emulated)
    return;
  // A lone (well-shaped) matmul: a graph, but no attention pattern.
  cudnnBackendDescriptor_t w,
      ok = create(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
  CHECK(tensor(&w, 4, 16, 8) == CUDNN_STATUS_SUCCESS, "tensor w");
  setDesc(ok, CUDNN_ATTR_OPERATION_MATMUL_ADESC, x);
  setDesc(ok, CUDNN_ATTR_OPERATION_MATMUL_BDESC, w);
  setDesc(ok, CUDNN_ATTR_OPERATION_MATMUL_CDESC, z);
  setDesc(ok, CUDNN_ATTR_OPERATION_MATMUL_DESC, mm);
  CHECK(a.cudnnBackendFinalize(ok) == CUDNN_STATUS_SUCCESS, "matmul");
  cudnnHandle_t h;
  CHECK(a.cudnnCreate(&h) == CUDNN_STATUS_SUCCESS, "cudnnCreate");
  cudnnBackendDescriptor_t g = create(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  setDesc(g, CUDNN_ATTR_OPERATIONGRAPH_OPS, ok);
  a.cudnnBackendSetAttribute(g, cudnnBackendAttributeName_t(800),
                             CUDNN_TYPE_HANDLE, 1, &h);
  CHECK(a.cudnnBackendFinalize(g) == CUDNN_STATUS_SUCCESS, "graph");
  cudnnBackendDescriptor_t heur = create(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  const cudnnBackendHeurMode_t hm = CUDNN_HEUR_MODE_A;
  setDesc(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, g);
  a.cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_MODE,
                             CUDNN_TYPE_HEUR_MODE, 1, &hm);
  CHECK(a.cudnnBackendFinalize(heur) == CUDNN_STATUS_SUCCESS, "heuristics");
  cudnnBackendDescriptor_t cfg = create(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
  int64_t n = 0;
  a.cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                             CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &cfg);
  cudnnBackendDescriptor_t plan =
      create(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
  setDesc(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, cfg);
  a.cudnnBackendSetAttribute(plan, cudnnBackendAttributeName_t(400),
                             CUDNN_TYPE_HANDLE, 1, &h);
  st = a.cudnnBackendFinalize(plan);
  printf("a lone matmul's plan: %s\n", a.cudnnGetErrorString(st));
  CHECK(st == CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN, "emulated: %d",
        int(st));
}

} // namespace

int main(int argc, char **argv) {
  pt::skipWithoutDevice("cuda-cudnn");
  pfrt_init(&argc, &argv);
  gSeed = pt_seed("cuda-cudnn");
  const std::string mode = argc > 1 ? argv[1] : "";
  const int64_t arenaBytes = 64 << 20;
  pfrt_cuda_arena_plan(arenaBytes);
  pt::DeviceArena arena(arenaBytes);
  gArena = &arena;
  if (mode == "absent") {
    Data x = setup({1, 1, 8, 8, 8, 8, PFRT_DTYPE_BF16, false, 0});
    forward(x); // exits 2: no cuDNN
    return 0;
  }
  if (mode == "capture_new_shape") {
    Data x = setup({1, 2, 8, 8, 8, 8, PFRT_DTYPE_F16, false, 0});
    pfrt_cuda_graph_begin();
    forward(x); // fatal: no plan before the capture
    return 0;
  }
  if (mode == "finalize") {
    finalizeErrors();
    printf("cuda-cudnn finalize: the errors as expected\n");
    pfrt_finalize();
    return 0;
  }
  const int64_t hd = 64;
  const Case cases[] = {
      {1, 1, 16, 16, hd, hd, PFRT_DTYPE_BF16, false, 0},
      {2, 3, 24, 40, 16, 16, PFRT_DTYPE_BF16, true, 0},
      {2, 2, 33, 17, hd, hd, PFRT_DTYPE_BF16, false, 1},
      {2, 2, 20, 20, 32, 32, PFRT_DTYPE_BF16, true, 2},
      {1, 2, 16, 16, 8, 8, PFRT_DTYPE_F16, false, 0},
      {2, 2, 40, 24, hd, hd, PFRT_DTYPE_F16, true, 0},
      {3, 2, 12, 28, 32, 32, PFRT_DTYPE_F16, false, 3},
      {2, 1, 24, 24, 128, 128, PFRT_DTYPE_F16, true, 1},
  };
  for (const Case &c : cases)
    CHECK(runCase(c) == 2, "%s built other than two plans", name(c).c_str());
  cacheAndCapture();
  printf("cuda-cudnn: %d comparisons passed (%lld plans built)\n", gChecks,
         (long long)pfrt_cuda_cudnn_plans_built());
  pfrt_finalize();
  return 0;
}
