//===- Cudnn.cpp - cuDNN's fused flash attention, dlopen'ed ---------------===//
//
// pfrt_cuda_cudnn_attention(_grad) (pfrt_cuda.h): libcudnn.so.9 and its
// graph library are loaded at the first call, as libcuda, cuBLASLt and
// NCCL are (the search directories of pfrt_cuda.h; absent: one line naming
// the library, exit status 2), its backend entry points bound (under
// PFRT_CUDA_FAKE=1 the host emulation's, emulation/FakeCudnn.h). Each
// (shape, dtype, causal, mask, direction) gets one operation graph
// (CudnnGraph.h) and one execution plan, built at its first call, which
// must not be inside a graph capture (the compiled step's first run is
// uncaptured); later calls, captured or not, only execute the plan, on the
// compute stream, with a persistent workspace grown at build time.
//
//===----------------------------------------------------------------------===//

#include "../common/Internal.h"
#include "CudaInternal.h"
#include "CudnnGraph.h"
#include "CudnnInternal.h"
#include "Driver.h"
#include "emulation/FakeCudnn.h"
#include "emulation/FakeDevice.h"
#include "pfrt/pfrt.h"
#include "pfrt/pfrt_cuda.h"

#include <dlfcn.h>
#include <map>
#include <memory>
#include <string>

using namespace pfrt;
using namespace pfrt::cuda::dnn;

namespace {

Api gApi;
bool gLoaded = false;

[[noreturn]] void noCudnn(const char *name, const std::string &tried) {
  cuda::drv::unavailable(
      std::string("no cuDNN (") + name +
      " not found in: " + (tried.empty() ? "nowhere" : tried) +
      "); cuDNN 9's fused attention needs it: set PFRT_CUDA_LIB_DIR to its "
      "directory");
}

void load() {
  if (gLoaded)
    return;
  if (fake::enabled()) {
    if (fake::dnn::absent())
      noCudnn("libcudnn.so.9", "emulated: PFRT_CUDA_FAKE_NO_CUDNN=1");
#define PFRT_FAKE(fn) gApi.fn = &fake::dnn::fn;
    PFRT_CUDNN_FUNCTIONS(PFRT_FAKE)
#undef PFRT_FAKE
    gLoaded = true;
    return;
  }
  std::string tried;
  // cuDNN 9 is a front library that loads its sub-libraries at run time;
  // the backend API needs libcudnn_graph (checked here, so its absence is
  // named rather than a failing first call).
  void *lib = cuda::drv::tryOpenLibrary("libcudnn.so.9", tried);
  if (!lib)
    noCudnn("libcudnn.so.9", tried);
  tried.clear();
  if (!cuda::drv::tryOpenLibrary("libcudnn_graph.so.9", tried))
    noCudnn("libcudnn_graph.so.9", tried);
#define PFRT_RESOLVE(fn)                                                       \
  gApi.fn = reinterpret_cast<decltype(&::fn)>(dlsym(lib, #fn));                \
  if (!gApi.fn)                                                                \
    cuda::drv::unavailable("libcudnn.so.9 lacks " #fn " (not cuDNN 9?)");
  PFRT_CUDNN_FUNCTIONS(PFRT_RESOLVE)
#undef PFRT_RESOLVE
  if (gApi.cudnnGetVersion() < 90000)
    cuda::drv::unavailable("cuDNN " + std::to_string(gApi.cudnnGetVersion()) +
                           " is older than 9.0 (fused attention needs 9)");
  gLoaded = true;
}

void check(cudnnStatus_t s, const char *fn, const char *call) {
  if (s != CUDNN_STATUS_SUCCESS)
    fatal("%s: %s failed: %s (%d)", fn, call, gApi.cudnnGetErrorString(s),
          int(s));
}

cudnnHandle_t handle(const char *fn) {
  static cudnnHandle_t h = nullptr;
  if (!h) {
    check(gApi.cudnnCreate(&h), fn, "cudnnCreate");
    check(gApi.cudnnSetStream(h,
                              static_cast<cudaStream_t>(cuda::computeStream())),
          fn, "cudnnSetStream");
  }
  return h;
}

/// One built plan: its graph's descriptors, the plan, its workspace.
struct Plan {
  std::unique_ptr<SdpaGraph> graph;
  cudnnBackendDescriptor_t plan = nullptr;
  int64_t workspace = 0;
};

/// The plans, kept for the program's life (never destroyed: at exit the
/// library, or the emulation's state, may already be gone).
std::map<SdpaKey, std::unique_ptr<Plan>> &plans() {
  static auto *p = new std::map<SdpaKey, std::unique_ptr<Plan>>;
  return *p;
}
int64_t gBuilt = 0;
void *gWorkspace = nullptr;
int64_t gWorkspaceBytes = 0;

std::string describe(const SdpaKey &k) {
  char buf[200];
  std::snprintf(
      buf, sizeof buf, "%s B=%lld H=%lld T=%lld S=%lld D=%lld Dv=%lld %s%s%s",
      k.backward ? "backward" : "forward", (long long)k.b, (long long)k.h,
      (long long)k.t, (long long)k.s, (long long)k.d, (long long)k.dv,
      k.dtype == CUDNN_DATA_BFLOAT16 ? "bf16" : "f16",
      k.causal ? " causal" : "", k.bias ? " bias" : "");
  return buf;
}

/// The engine configurations cuDNN's heuristics (mode A) offer for graph.
std::vector<cudnnBackendDescriptor_t>
engineConfigs(const char *fn, cudnnBackendDescriptor_t g) {
  cudnnBackendDescriptor_t heur = nullptr;
  check(gApi.cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR,
                                          &heur),
        fn, "cudnnBackendCreateDescriptor(engine heuristics)");
  cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
  check(gApi.cudnnBackendSetAttribute(heur,
                                      CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH,
                                      CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &g),
        fn, "cudnnBackendSetAttribute(heuristics graph)");
  check(gApi.cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_MODE,
                                      CUDNN_TYPE_HEUR_MODE, 1, &mode),
        fn, "cudnnBackendSetAttribute(heuristics mode)");
  check(gApi.cudnnBackendFinalize(heur), fn, "cudnnBackendFinalize(heur)");
  constexpr int kMax = 8;
  cudnnBackendDescriptor_t cfgs[kMax];
  for (auto &c : cfgs)
    check(gApi.cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR,
                                            &c),
          fn, "cudnnBackendCreateDescriptor(engine config)");
  int64_t n = 0;
  check(gApi.cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                      CUDNN_TYPE_BACKEND_DESCRIPTOR, kMax, &n,
                                      cfgs),
        fn, "cudnnBackendGetAttribute(heuristics results)");
  gApi.cudnnBackendDestroyDescriptor(heur);
  std::vector<cudnnBackendDescriptor_t> out(cfgs, cfgs + (n < kMax ? n : kMax));
  for (int i = int(out.size()); i < kMax; ++i)
    gApi.cudnnBackendDestroyDescriptor(cfgs[i]);
  return out;
}

/// Builds key's graph and the first plan cuDNN finalizes for it.
std::unique_ptr<Plan> buildPlan(const char *fn, const SdpaKey &key) {
  auto p = std::make_unique<Plan>();
  cudnnHandle_t h = handle(fn);
  p->graph = std::make_unique<SdpaGraph>(h);
  cudnnBackendDescriptor_t g = p->graph->build(key);
  std::vector<cudnnBackendDescriptor_t> cfgs = engineConfigs(fn, g);
  cudnnStatus_t last = CUDNN_STATUS_NOT_SUPPORTED;
  for (cudnnBackendDescriptor_t cfg : cfgs) {
    if (p->plan)
      break;
    cudnnBackendDescriptor_t plan = nullptr;
    check(gApi.cudnnBackendCreateDescriptor(
              CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan),
          fn, "cudnnBackendCreateDescriptor(plan)");
    check(gApi.cudnnBackendSetAttribute(
              plan, cudnnBackendAttributeName_t(400) /* PLAN_HANDLE */,
              CUDNN_TYPE_HANDLE, 1, &h),
          fn, "cudnnBackendSetAttribute(plan handle)");
    check(gApi.cudnnBackendSetAttribute(plan,
                                        CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                                        CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg),
          fn, "cudnnBackendSetAttribute(plan engine config)");
    last = gApi.cudnnBackendFinalize(plan);
    if (last == CUDNN_STATUS_SUCCESS)
      p->plan = plan;
    else
      gApi.cudnnBackendDestroyDescriptor(plan);
  }
  for (cudnnBackendDescriptor_t cfg : cfgs)
    gApi.cudnnBackendDestroyDescriptor(cfg);
  if (!p->plan)
    fatal("%s: cuDNN has no engine for the attention graph (%s): %s (%d)", fn,
          describe(key).c_str(), gApi.cudnnGetErrorString(last), int(last));
  int64_t n = 0;
  check(gApi.cudnnBackendGetAttribute(p->plan,
                                      CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                      CUDNN_TYPE_INT64, 1, &n, &p->workspace),
        fn, "cudnnBackendGetAttribute(plan workspace)");
  if (p->workspace > gWorkspaceBytes) {
    // The old buffer is kept: a captured graph may still read it.
    gWorkspace = cuda::allocPersistent(p->workspace, "cuDNN's workspace");
    gWorkspaceBytes = p->workspace;
  }
  ++gBuilt;
  return p;
}

/// key's plan: built at its first call, which must be uncaptured.
Plan &planFor(const char *fn, const SdpaKey &key) {
  auto it = plans().find(key);
  if (it != plans().end())
    return *it->second;
  if (cuda::streamCapturing())
    fatal("%s: no cuDNN plan for %s was built before the graph capture (a "
          "plan is built at the first, uncaptured call of its shape)",
          fn, describe(key).c_str());
  return *(plans()[key] = buildPlan(fn, key));
}

/// Runs plan with the tensors uids[i] at ptrs[i] on the compute stream.
void execute(const char *fn, Plan &plan, const std::vector<int64_t> &uids,
             std::vector<void *> ptrs) {
  cudnnBackendDescriptor_t pack = nullptr;
  check(gApi.cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR,
                                          &pack),
        fn, "cudnnBackendCreateDescriptor(variant pack)");
  check(gApi.cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS,
                                      CUDNN_TYPE_INT64, int64_t(uids.size()),
                                      uids.data()),
        fn, "cudnnBackendSetAttribute(variant pack ids)");
  check(gApi.cudnnBackendSetAttribute(
            pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR,
            int64_t(ptrs.size()), ptrs.data()),
        fn, "cudnnBackendSetAttribute(variant pack pointers)");
  void *ws = gWorkspace;
  check(gApi.cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE,
                                      CUDNN_TYPE_VOID_PTR, 1, &ws),
        fn, "cudnnBackendSetAttribute(variant pack workspace)");
  check(gApi.cudnnBackendFinalize(pack), fn, "cudnnBackendFinalize(pack)");
  check(gApi.cudnnBackendExecute(handle(fn), plan.plan, pack), fn,
        "cudnnBackendExecute");
  gApi.cudnnBackendDestroyDescriptor(pack);
}

/// The checks both rows share; the key of the call.
SdpaKey checkArgs(const char *fn, const int64_t *dims, int32_t dtype,
                  const float *mask, const int64_t *maskStrides, double scale,
                  int32_t causal, int32_t backward,
                  std::initializer_list<const void *> buffers) {
  cuda::drv::requireReady(fn);
  if (!dims)
    fatal("%s: dims is NULL", fn);
  SdpaKey k{dims[0],         dims[1],      dims[2],          dims[3],
            dims[4],         dims[5],      CUDNN_DATA_FLOAT, causal != 0,
            mask != nullptr, {0, 0, 0, 0}, backward};
  for (int i = 0; i < 6; ++i)
    if (dims[i] <= 0)
      fatal("%s: dims[%d] = %lld (B, H, T, S, D, Dv must be positive)", fn, i,
            (long long)dims[i]);
  if (dtype != PFRT_DTYPE_BF16 && dtype != PFRT_DTYPE_F16)
    fatal("%s: dtype %d (cuDNN's fused attention takes bf16 or f16)", fn,
          int(dtype));
  k.dtype = dtype == PFRT_DTYPE_BF16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_HALF;
  for (int64_t d : {k.d, k.dv})
    if (d > 128 || d % 8 != 0)
      fatal("%s: head dim %lld (cuDNN's fused attention takes a multiple of "
            "8 up to 128)",
            fn, (long long)d);
  if (!(scale > 0.0))
    fatal("%s: scale %g must be positive", fn, scale);
  for (const void *b : buffers)
    if (!b || reinterpret_cast<uintptr_t>(b) % 16 != 0)
      fatal("%s: a tensor pointer is %s (cuDNN needs 16-byte aligned "
            "buffers)",
            fn, b ? "not 16-byte aligned" : "NULL");
  if (mask) {
    if (!maskStrides)
      fatal("%s: maskStrides is NULL with a mask", fn);
    for (int i = 0; i < 4; ++i)
      k.biasS[i] = maskStrides[i];
    if (k.biasS[2] == 0 || k.biasS[3] == 0 || k.biasS[3] != 1 ||
        k.biasS[2] != k.s)
      fatal("%s: the mask must be whole and packed over its [T, S] axes "
            "(strides %lld, %lld; cuDNN's bias broadcasts only B and H)",
            fn, (long long)k.biasS[2], (long long)k.biasS[3]);
  }
  return k;
}

} // namespace

const Api &pfrt::cuda::dnn::api() {
  load();
  return gApi;
}

extern "C" {

int pfrt_cuda_cudnn_attention(const void *q, const void *k, const void *v,
                              const float *mask, const int64_t *maskStrides,
                              void *out, float *lse, const int64_t *dims,
                              int32_t dtype, double scale, int32_t causal) {
  const char *fn = "pfrt_cuda_cudnn_attention";
  SdpaKey key = checkArgs(fn, dims, dtype, mask, maskStrides, scale, causal, 0,
                          {q, k, v, out, lse});
  load();
  Plan &plan = planFor(fn, key);
  float s = float(scale), ninf = -__builtin_inff();
  std::vector<int64_t> uids = {kQ, kKT, kV, kO, kStats, kScale};
  std::vector<void *> ptrs = {const_cast<void *>(q),
                              const_cast<void *>(k),
                              const_cast<void *>(v),
                              out,
                              lse,
                              &s};
  if (causal) {
    uids.push_back(kNegInf);
    ptrs.push_back(&ninf);
  }
  if (mask) {
    uids.push_back(kBias);
    ptrs.push_back(const_cast<float *>(mask));
  }
  execute(fn, plan, uids, ptrs);
  return 0;
}

int pfrt_cuda_cudnn_attention_grad(const void *q, const void *k, const void *v,
                                   const float *mask,
                                   const int64_t *maskStrides, const void *out,
                                   const float *lse, const void *dout, void *dq,
                                   void *dk, void *dv, const int64_t *dims,
                                   int32_t dtype, double scale,
                                   int32_t causal) {
  const char *fn = "pfrt_cuda_cudnn_attention_grad";
  SdpaKey key = checkArgs(fn, dims, dtype, mask, maskStrides, scale, causal, 1,
                          {q, k, v, out, lse, dout, dq, dk, dv});
  load();
  Plan &plan = planFor(fn, key);
  float s = float(scale), ninf = -__builtin_inff();
  auto p = [](const void *x) { return const_cast<void *>(x); };
  std::vector<int64_t> uids = {kQ,     kKT, kK,  kVT, kO,    kDO,
                               kStats, kDQ, kDK, kDV, kScale};
  std::vector<void *> ptrs = {p(q),   p(k), p(k), p(v), p(out), p(dout),
                              p(lse), dq,   dk,   dv,   &s};
  if (causal) {
    uids.push_back(kNegInf);
    ptrs.push_back(&ninf);
  }
  if (mask) {
    uids.push_back(kBias);
    ptrs.push_back(p(mask));
  }
  execute(fn, plan, uids, ptrs);
  return 0;
}

int64_t pfrt_cuda_cudnn_plans_built(void) { return gBuilt; }

} // extern "C"
