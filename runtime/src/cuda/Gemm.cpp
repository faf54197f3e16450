//===- Gemm.cpp - cuBLASLt GEMMs: plans, tuning, pfrt_cuda_gemm -----------===//
//
// pfrt_cuda_gemm: a row-major GEMM (transposes, strided batches, beta,
// bias and ReLU epilogues, TF32 only when asked) as cuBLASLt's
// column-major one, with a plan (descriptors, layouts, algorithm) cached
// per shape, and PFRT_CUDA_GEMM_TUNE's choice among the heuristic's
// algorithms.
//
//===----------------------------------------------------------------------===//

#include "Driver.h"

#include "../common/Internal.h"
#include "CudaInternal.h"
#include "pfrt/pfrt.h"
#include "pfrt/pfrt_cuda.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <string>
#include <sys/file.h>
#include <unistd.h>
#include <vector>

using namespace pfrt;
using namespace pfrt::cuda::drv;

namespace {

/// One shape of GEMM, ready to run.
struct Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  /// The index of `algo` among cuBLASLt's heuristic's answers (0 unless
  /// PFRT_CUDA_GEMM_TUNE chose another).
  int choice = 0;
  /// cuBLASLt has no algorithm for it (asked only of the BGRADB epilogue,
  /// whose callers fall back to a GEMM and a reduction).
  bool unsupported = false;
};

/// The plans made so far, by shape (pfrt_cuda_gemm's key).
std::map<std::vector<int64_t>, Plan> gPlans;

/// PFRT_CUDA_GEMM_TUNE: which of cuBLASLt's algorithms each GEMM shape
/// runs. Unset or 0: the heuristic's first (cuBLASLt's own choice). 1: at
/// a shape's first use (outside a capture) up to 8 of the heuristic's
/// answers are timed on scratch buffers and the fastest is kept for the
/// run. A file's path: the same, and the choices are kept in that file: a
/// shape found there takes its recorded choice without timing, so runs
/// with one file run the same algorithms and give the same bits (timing
/// alone may choose differently from one run to the next, and two
/// algorithms may sum in different orders). The file names the device and
/// cuBLASLt's version; choices made for another are dropped.
struct GemmTuning {
  bool loaded = false;
  int mode = 0; // 0 off, 1 timed, 2 timed and kept in `path`
  std::string path, header;
  std::map<std::string, int> table;

  bool on() { return mode != 0; }

  int recorded(const std::string &name, int found) {
    auto it = table.find(name);
    if (it == table.end())
      return -1;
    if (it->second >= found) {
      std::fprintf(stderr,
                   "pfrt: rank %d: %s: the choice %d recorded for %s is not "
                   "among cuBLASLt's %d answers; timing it again\n",
                   pfrt_rank(), path.c_str(), it->second, name.c_str(), found);
      return -1;
    }
    return it->second;
  }

  void record(const std::string &name, int choice) {
    table[name] = choice;
    if (mode != 2)
      return;
    // Ranks of one job may share the file: under a lock, merge what the
    // others wrote since (this rank's choices win), then rewrite it whole
    // by a rename (never a file with half an entry).
    std::string lockPath = path + ".lock";
    int lock = open(lockPath.c_str(), O_RDWR | O_CREAT, 0644);
    if (lock < 0 || flock(lock, LOCK_EX) != 0)
      fatal("PFRT_CUDA_GEMM_TUNE: cannot lock %s", lockPath.c_str());
    std::map<std::string, int> merged;
    read(merged);
    for (auto &[shape, index] : table)
      merged[shape] = index;
    std::string tmp = path + ".tmp." + std::to_string(getpid());
    FILE *f = std::fopen(tmp.c_str(), "w");
    if (!f)
      fatal("PFRT_CUDA_GEMM_TUNE: cannot write %s", tmp.c_str());
    std::fprintf(f, "%s\n", header.c_str());
    for (auto &[shape, index] : merged)
      std::fprintf(f, "%s %d\n", shape.c_str(), index);
    if (std::fclose(f) != 0 || std::rename(tmp.c_str(), path.c_str()) != 0)
      fatal("PFRT_CUDA_GEMM_TUNE: cannot write %s", path.c_str());
    close(lock); // (releases the lock)
  }

  /// Adds the file's choices to `into`; false when it was made for another
  /// device or cuBLASLt (or does not exist yet).
  bool read(std::map<std::string, int> &into) {
    FILE *f = std::fopen(path.c_str(), "r");
    if (!f)
      return true; // a new file
    char line[512];
    bool same =
        std::fgets(line, sizeof(line), f) && std::string(line) == header + "\n";
    int lineNo = 1;
    while (same && std::fgets(line, sizeof(line), f)) {
      ++lineNo;
      std::string text(line);
      size_t space = text.find_last_of(' ');
      char *end = nullptr;
      long index = space == std::string::npos
                       ? -1
                       : std::strtol(text.c_str() + space + 1, &end, 10);
      if (index < 0 || !end || end == text.c_str() + space + 1 ||
          (*end != '\n' && *end != 0))
        fatal("PFRT_CUDA_GEMM_TUNE: %s:%d: expected `<shape> <choice>`, "
              "got: %s",
              path.c_str(), lineNo, line);
      into[text.substr(0, space)] = int(index);
    }
    std::fclose(f);
    return same;
  }
};

GemmTuning &gemmTuning() {
  static GemmTuning t;
  if (t.loaded)
    return t;
  t.loaded = true;
  const char *v = std::getenv("PFRT_CUDA_GEMM_TUNE");
  if (!v || !*v || std::strcmp(v, "0") == 0)
    return t;
  if (std::strcmp(v, "1") == 0) {
    t.mode = 1;
    return t;
  }
  t.mode = 2;
  t.path = v;
  char device[256] = "unknown";
  CUdevice dev;
  if (gCuda.api.cuDeviceGet(&dev, gCuda.device) == CUDA_SUCCESS)
    gCuda.api.cuDeviceGetName(device, sizeof(device), dev);
  t.header = std::string("# pfrt gemm choices: device ") + device +
             ", cublasLt " + std::to_string(gCuda.api.cublasLtGetVersion());
  if (!t.read(t.table))
    std::fprintf(stderr,
                 "pfrt: rank %d: %s was made for another device or cuBLASLt "
                 "(%s); timing every shape again\n",
                 pfrt_rank(), v, t.header.c_str());
  return t;
}

/// A GEMM's row-major arguments (pfrt_cuda_gemm's), for the tuner, and
/// its element sizes (A and B, C).
struct GemmShape {
  int64_t m, n, k;
  int32_t ta, tb;
  int64_t lda, ldb, ldc, batch, sa, sb, sc;
  size_t abBytes = 4, cBytes = 4;
};

/// Where a plan's key holds its operands' alignments (pfrt_cuda_gemm's
/// order: our A, our B, C), after its 14 shape fields, then the element
/// types (PFRT_DTYPE_*) of A and B, and of C.
constexpr size_t kAlignA = 14, kAlignB = 15, kAlignC = 16, kTypeAB = 17,
                 kTypeC = 18, kKeySize = 19;

const char *dtypeName(int64_t t) {
  return t == PFRT_DTYPE_F32    ? "f32"
         : t == PFRT_DTYPE_BF16 ? "bf16"
         : t == PFRT_DTYPE_F16  ? "f16"
                                : "?";
}

cudaDataType cudaType(int64_t t) {
  return t == PFRT_DTYPE_BF16  ? CUDA_R_16BF
         : t == PFRT_DTYPE_F16 ? CUDA_R_16F
                               : CUDA_R_32F;
}

std::string gemmName(const std::vector<int64_t> &key) {
  static const char *kFields[] = {"ta",  "tb",  "m",        "n",     "k",
                                  "lda", "ldb", "ldc",      "batch", "sa",
                                  "sb",  "sc",  "epilogue", "tf32"};
  std::string name;
  for (size_t i = 0; i < key.size() && i < 14; ++i)
    name +=
        (i ? "," : "") + std::string(kFields[i]) + "=" + std::to_string(key[i]);
  // Operands aligned less than 256 bytes get other answers from the
  // heuristic: their own entry (the names of aligned shapes unchanged).
  if (key.size() == kKeySize &&
      (key[kAlignA] < 256 || key[kAlignB] < 256 || key[kAlignC] < 256))
    name += ",align=" + std::to_string(key[kAlignA]) + "/" +
            std::to_string(key[kAlignB]) + "/" + std::to_string(key[kAlignC]);
  // Typed GEMMs (bf16/f16 operands or output) their own entry too.
  if (key.size() == kKeySize &&
      (key[kTypeAB] != PFRT_DTYPE_F32 || key[kTypeC] != PFRT_DTYPE_F32))
    name += ",types=" + std::string(dtypeName(key[kTypeAB])) + "/" +
            dtypeName(key[kTypeC]);
  return name;
}

/// Times the heuristic's `found` answers for `p` (each run once, then
/// three times between events) on zeroed scratch buffers and returns the
/// index of the fastest (the first of equals). Returns 0 (cuBLASLt's own
/// choice) where it cannot time: during a capture, for the DRELU_BGRAD
/// epilogue (its aux buffer), or without the scratch memory.
int timeCandidates(const Plan &p,
                   const cublasLtMatmulHeuristicResult_t *results, int found,
                   const GemmShape &g, float beta, int32_t epilogue,
                   const std::string &name) {
  CudaState &s = gCuda;
  const Api &api = s.api;
  auto note = [&](const char *why) {
    std::fprintf(stderr,
                 "pfrt: rank %d: gemm tune: %s: %s; cuBLASLt's own "
                 "choice\n",
                 pfrt_rank(), name.c_str(), why);
    return 0;
  };
  if (found < 2)
    return 0;
  if (pfrt::cuda::streamCapturing())
    return note("first used during a capture");
  if (epilogue == PFRT_EPILOGUE_DRELU_BGRAD)
    return note("DRELU_BGRAD is not timed");
  auto span = [&](int64_t ld, int64_t cols, int64_t stride, size_t bytes) {
    return size_t((g.batch - 1) * stride + ld * cols) * bytes;
  };
  // Column-major operands as planFor made them: A' = B, B' = A, C' = C^T.
  size_t bytesA = span(g.ldb, g.tb ? g.n : g.k, g.sb, g.abBytes);
  size_t bytesB = span(g.lda, g.ta ? g.k : g.m, g.sa, g.abBytes);
  size_t bytesC = span(g.ldc, g.m, g.sc, g.cBytes);
  size_t bytesBias = size_t(std::max({g.m, g.n, g.k})) * sizeof(float);
  size_t total = bytesA + bytesB + bytesC + bytesBias + 4 * 256;
  CUdeviceptr scratch = 0;
  if (api.cuMemAlloc(&scratch, total) != CUDA_SUCCESS)
    return note("no device memory for the scratch buffers");
  check(api.cuMemsetD8Async(scratch, 0, total, s.stream), "cuMemsetD8Async");
  auto align = [](size_t x) { return (x + 255) / 256 * 256; };
  CUdeviceptr a = scratch, b = a + align(bytesA), c = b + align(bytesB),
              bias = c + align(bytesC);
  void *biasPtr = reinterpret_cast<void *>(bias);
  if (epilogue != PFRT_EPILOGUE_NONE && epilogue != PFRT_EPILOGUE_RELU)
    check(api.cublasLtMatmulDescSetAttribute(p.desc,
                                             CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                             &biasPtr, sizeof(biasPtr)),
          "cublasLtMatmulDescSetAttribute(BIAS_POINTER)");
  static CUevent start = nullptr, stop = nullptr;
  if (!start) {
    check(api.cuEventCreate(&start, CU_EVENT_DEFAULT), "cuEventCreate");
    check(api.cuEventCreate(&stop, CU_EVENT_DEFAULT), "cuEventCreate");
  }
  float alpha = 1.0f;
  std::string times;
  int best = -1;
  float bestMs = 0;
  for (int i = 0; i < found; ++i) {
    if (results[i].state != CUBLAS_STATUS_SUCCESS)
      continue;
    auto launch = [&] {
      return api.cublasLtMatmul(
          s.lt, p.desc, &alpha, reinterpret_cast<void *>(a), p.a,
          reinterpret_cast<void *>(b), p.b, &beta, reinterpret_cast<void *>(c),
          p.c, reinterpret_cast<void *>(c), p.c, &results[i].algo,
          reinterpret_cast<void *>(s.workspace), s.workspaceBytes, s.stream);
    };
    if (launch() != CUBLAS_STATUS_SUCCESS)
      continue; // an answer that does not run is never chosen
    check(api.cuEventRecord(start, s.stream), "cuEventRecord");
    for (int r = 0; r < 3; ++r)
      check(launch(), "cublasLtMatmul");
    check(api.cuEventRecord(stop, s.stream), "cuEventRecord");
    check(api.cuEventSynchronize(stop), "cuEventSynchronize");
    float ms = 0;
    check(api.cuEventElapsedTime(&ms, start, stop), "cuEventElapsedTime");
    ms /= 3;
    char item[64];
    std::snprintf(item, sizeof(item), "%s%d: %.4f ms",
                  times.empty() ? "" : ", ", i, ms);
    times += item;
    if (best < 0 || ms < bestMs) {
      best = i;
      bestMs = ms;
    }
  }
  check(api.cuStreamSynchronize(s.stream), "cuStreamSynchronize");
  check(api.cuMemFree(scratch), "cuMemFree");
  if (const char *v = std::getenv("PFRT_CUDA_VERBOSE"); v && *v == '1')
    std::fprintf(stderr, "pfrt: rank %d: gemm tune: %s: %s; chosen %d\n",
                 pfrt_rank(), name.c_str(), times.c_str(), best);
  if (best < 0)
    fatal("pfrt_cuda_gemm: none of cuBLASLt's %d algorithms for %s runs", found,
          name.c_str());
  return best;
}

Plan &planFor(const std::vector<int64_t> &key, int32_t ta, int32_t tb,
              int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb,
              int64_t ldc, int64_t batch, int64_t sa, int64_t sb, int64_t sc,
              float beta, int32_t epilogue, int32_t tf32) {
  CudaState &s = gCuda;
  auto it = gPlans.find(key);
  if (it != gPlans.end())
    return it->second;
  Plan p;
  const Api &api = s.api;
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: A'
  // is B, B' is A, m' = n, n' = m.
  cublasOperation_t opA = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t opB = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  // bf16/f16 operands: CUBLAS_COMPUTE_32F on tensor cores (float32
  // accumulation and scale); TF32 math is for float32 operands only.
  cudaDataType abType = cudaType(key[kTypeAB]), cType = cudaType(key[kTypeC]);
  cublasComputeType_t compute = tf32 && abType == CUDA_R_32F
                                    ? CUBLAS_COMPUTE_32F_FAST_TF32
                                    : CUBLAS_COMPUTE_32F;
  check(api.cublasLtMatmulDescCreate(&p.desc, compute, CUDA_R_32F),
        "cublasLtMatmulDescCreate");
  check(api.cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA,
                                           &opA, sizeof(opA)),
        "cublasLtMatmulDescSetAttribute(TRANSA)");
  check(api.cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB,
                                           &opB, sizeof(opB)),
        "cublasLtMatmulDescSetAttribute(TRANSB)");
  static const cublasLtEpilogue_t kEpilogues[] = {
      CUBLASLT_EPILOGUE_DEFAULT,     CUBLASLT_EPILOGUE_RELU,
      CUBLASLT_EPILOGUE_BIAS,        CUBLASLT_EPILOGUE_RELU_BIAS,
      CUBLASLT_EPILOGUE_DRELU_BGRAD, CUBLASLT_EPILOGUE_BGRADB};
  cublasLtEpilogue_t ep = kEpilogues[epilogue];
  check(api.cublasLtMatmulDescSetAttribute(
            p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &ep, sizeof(ep)),
        "cublasLtMatmulDescSetAttribute(EPILOGUE)");
  if (epilogue == PFRT_EPILOGUE_DRELU_BGRAD) {
    int64_t auxLd = n;
    check(api.cublasLtMatmulDescSetAttribute(
              p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &auxLd,
              sizeof(auxLd)),
          "cublasLtMatmulDescSetAttribute(AUX_LD)");
  }
  auto layout = [&](cublasLtMatrixLayout_t *l, cudaDataType type, uint64_t rows,
                    uint64_t cols, int64_t ld, int64_t stride) {
    check(api.cublasLtMatrixLayoutCreate(l, type, rows, cols, ld),
          "cublasLtMatrixLayoutCreate");
    if (batch > 1) {
      int32_t count = int32_t(batch);
      check(api.cublasLtMatrixLayoutSetAttribute(
                *l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)),
            "cublasLtMatrixLayoutSetAttribute(BATCH_COUNT)");
      check(api.cublasLtMatrixLayoutSetAttribute(
                *l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                sizeof(stride)),
            "cublasLtMatrixLayoutSetAttribute(STRIDED_BATCH_OFFSET)");
    }
  };
  layout(&p.a, abType, tb ? k : n, tb ? n : k, ldb, sb);
  layout(&p.b, abType, ta ? m : k, ta ? k : m, lda, sa);
  layout(&p.c, cType, n, m, ldc, sc);
  cublasLtMatmulPreference_t pref;
  check(api.cublasLtMatmulPreferenceCreate(&pref),
        "cublasLtMatmulPreferenceCreate");
  check(api.cublasLtMatmulPreferenceSetAttribute(
            pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &s.workspaceBytes,
            sizeof(s.workspaceBytes)),
        "cublasLtMatmulPreferenceSetAttribute");
  // cuBLASLt's A is our B and its B our A (see above); C and D are c.
  const uint32_t aligns[4] = {uint32_t(key[kAlignB]), uint32_t(key[kAlignA]),
                              uint32_t(key[kAlignC]), uint32_t(key[kAlignC])};
  const cublasLtMatmulPreferenceAttributes_t alignAttrs[4] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  for (int j = 0; j < 4; ++j)
    check(api.cublasLtMatmulPreferenceSetAttribute(
              pref, alignAttrs[j], &aligns[j], sizeof(aligns[j])),
          "cublasLtMatmulPreferenceSetAttribute(MIN_ALIGNMENT)");
  // Up to kCandidates answers: the first is cuBLASLt's own choice, the
  // others are what PFRT_CUDA_GEMM_TUNE may time against it.
  constexpr int kCandidates = 8;
  cublasLtMatmulHeuristicResult_t results[kCandidates] = {};
  GemmTuning &tuning = gemmTuning();
  int found = 0;
  cublasStatus_t heuristic = api.cublasLtMatmulAlgoGetHeuristic(
      s.lt, p.desc, p.a, p.b, p.c, p.c, pref, tuning.on() ? kCandidates : 1,
      results, &found);
  check(api.cublasLtMatmulPreferenceDestroy(pref),
        "cublasLtMatmulPreferenceDestroy");
  if (epilogue == PFRT_EPILOGUE_BGRADB &&
      (heuristic != CUBLAS_STATUS_SUCCESS || found < 1)) {
    p.unsupported = true;
    return gPlans[key] = p;
  }
  if (heuristic == CUBLAS_STATUS_NOT_SUPPORTED || found < 1)
    fatal("pfrt_cuda_gemm: cuBLASLt has no algorithm for %lld x %lld x %lld "
          "(epilogue %d) with A and B %s, C and D %s, compute 32F (status "
          "%d)",
          (long long)m, (long long)n, (long long)k, epilogue,
          dtypeName(key[kTypeAB]), dtypeName(key[kTypeC]), int(heuristic));
  check(heuristic, "cublasLtMatmulAlgoGetHeuristic");
  if (tuning.on()) {
    std::string name = gemmName(key);
    p.choice = tuning.recorded(name, found);
    if (p.choice < 0) {
      GemmShape shape{m,
                      n,
                      k,
                      ta,
                      tb,
                      lda,
                      ldb,
                      ldc,
                      batch,
                      sa,
                      sb,
                      sc,
                      abType == CUDA_R_32F ? 4u : 2u,
                      cType == CUDA_R_32F ? 4u : 2u};
      p.choice = timeCandidates(p, results, found, shape, beta, epilogue, name);
      tuning.record(name, p.choice);
    }
  }
  p.algo = results[p.choice].algo;
  return gPlans[key] = p;
}

/// A typed GEMM's checks: known types (cuBLASLt judges the combination:
/// its heuristic refuses what its table lacks), an epilogue a bf16/f16
/// GEMM has, and 16-byte alignment of every bf16/f16 matrix (pointer,
/// leading dimension, batch stride: tensor cores read 16-byte vectors).
void checkTyped(const char *fn, int32_t abType, int32_t cType, int32_t epilogue,
                const void *a, int64_t lda, int64_t sa, const void *b,
                int64_t ldb, int64_t sb, const void *c, int64_t ldc, int64_t sc,
                int64_t batch) {
  auto known = [](int32_t t) {
    return t == PFRT_DTYPE_F32 || t == PFRT_DTYPE_BF16 || t == PFRT_DTYPE_F16;
  };
  if (!known(abType) || !known(cType))
    fatal("%s: the operand and output dtypes must be PFRT_DTYPE_F32, _BF16 "
          "or _F16, got %d and %d",
          fn, abType, cType);
  if (abType == PFRT_DTYPE_F32 && cType == PFRT_DTYPE_F32)
    return; // pfrt_cuda_gemm's float32 GEMM
  if (epilogue == PFRT_EPILOGUE_DRELU_BGRAD || epilogue == PFRT_EPILOGUE_BGRADB)
    fatal("%s: epilogue %d is float32 only (A and B %s, C %s)", fn, epilogue,
          dtypeName(abType), dtypeName(cType));
  struct Matrix {
    const char *name;
    const void *ptr;
    int64_t ld, stride;
    int32_t type;
  } mats[3] = {{"A", a, lda, sa, abType},
               {"B", b, ldb, sb, abType},
               {"C", c, ldc, sc, cType}};
  for (const Matrix &x : mats) {
    int64_t bytes = x.type == PFRT_DTYPE_F32 ? 4 : 2;
    if (reinterpret_cast<uintptr_t>(x.ptr) % 16 != 0 || (x.ld * bytes) % 16 ||
        (batch > 1 && (x.stride * bytes) % 16))
      fatal("%s: %s (%s at %p, leading dimension %lld, batch stride %lld) "
            "is not 16-byte aligned: a bf16/f16 GEMM runs on tensor cores, "
            "which read 16-byte vectors (pointers and strides multiples of "
            "16 bytes)",
            fn, x.name, dtypeName(x.type), x.ptr, (long long)x.ld,
            (long long)x.stride);
  }
}

} // namespace

extern "C" {

int pfrt_cuda_gemm(int32_t ta, int32_t tb, int64_t m, int64_t n, int64_t k,
                   float alpha, const void *a, int64_t lda, const void *b,
                   int64_t ldb, float beta, void *c, int64_t ldc, int64_t batch,
                   int64_t strideA, int64_t strideB, int64_t strideC,
                   int32_t epilogue, void *bias, const void *aux,
                   int32_t tf32) {
  return pfrt_cuda_gemm_typed(PFRT_DTYPE_F32, PFRT_DTYPE_F32, ta, tb, m, n, k,
                              alpha, a, lda, b, ldb, beta, c, ldc, batch,
                              strideA, strideB, strideC, epilogue, bias, aux,
                              tf32);
}

int pfrt_cuda_gemm_typed(int32_t abDtype, int32_t cDtype, int32_t ta,
                         int32_t tb, int64_t m, int64_t n, int64_t k,
                         float alpha, const void *a, int64_t lda, const void *b,
                         int64_t ldb, float beta, void *c, int64_t ldc,
                         int64_t batch, int64_t strideA, int64_t strideB,
                         int64_t strideC, int32_t epilogue, void *bias,
                         const void *aux, int32_t tf32) {
  const char *fn = abDtype == PFRT_DTYPE_F32 && cDtype == PFRT_DTYPE_F32
                       ? "pfrt_cuda_gemm"
                       : "pfrt_cuda_gemm_typed";
  requireReady(fn);
  if (m < 1 || n < 1 || k < 1 || batch < 1 || epilogue < 0 || epilogue > 5)
    fatal("%s: m, n, k, batch must be >= 1 and epilogue in [0, 5], got %lld "
          "%lld %lld %lld %d",
          fn, (long long)m, (long long)n, (long long)k, (long long)batch,
          epilogue);
  bool needsBias =
      epilogue == PFRT_EPILOGUE_BIAS || epilogue == PFRT_EPILOGUE_RELU_BIAS ||
      epilogue == PFRT_EPILOGUE_DRELU_BGRAD || epilogue == PFRT_EPILOGUE_BGRADB;
  if (needsBias != (bias != nullptr) ||
      (epilogue == PFRT_EPILOGUE_DRELU_BGRAD) != (aux != nullptr))
    fatal("%s: epilogue %d %s a bias and %s an aux pointer", fn, epilogue,
          needsBias ? "needs" : "takes no",
          epilogue == PFRT_EPILOGUE_DRELU_BGRAD ? "needs" : "takes no");
  // cuBLASLt's epilogues may read the bias (and DRELU's aux) in 16-byte
  // vectors, and no preference tells its heuristic otherwise: a less
  // aligned one is refused here (BGRADB's callers take their GEMM-and-
  // reduction path), not left to fault on the device.
  bool badBias = reinterpret_cast<uintptr_t>(bias) % 16 != 0,
       badAux = reinterpret_cast<uintptr_t>(aux) % 16 != 0;
  if (badBias || badAux) {
    if (epilogue == PFRT_EPILOGUE_BGRADB)
      return 1;
    fatal("%s: epilogue %d's %s pointer %p is not 16-byte aligned (cuBLASLt's "
          "epilogues read it in 16-byte vectors)",
          fn, epilogue, badBias ? "bias" : "aux", badBias ? bias : aux);
  }
  checkTyped(fn, abDtype, cDtype, epilogue, a, lda, strideA, b, ldb, strideB, c,
             ldc, strideC, batch);
  // TF32 only when asked: by the caller, or for the whole run
  // (PFRT_CUDA_TF32=1, pf-run --tf32); exact float32 otherwise.
  static const bool runTF32 = [] {
    const char *v = std::getenv("PFRT_CUDA_TF32");
    return v && std::strcmp(v, "1") == 0;
  }();
  if (runTF32)
    tf32 = 1;
  // How aligned each matrix is (its pointer and, batched, its stride; at
  // most 256 bytes, cuBLASLt's default assumption): told to the heuristic,
  // so that it answers only with algorithms these pointers can run (arena
  // buffers are 64-byte aligned, a group's slice of a convolution's
  // weight or a strided view of a projection less).
  auto alignment = [batch](const void *ptr, int64_t stride, int32_t type) {
    uint64_t v = uint64_t(reinterpret_cast<uintptr_t>(ptr)) | 256u;
    if (batch > 1 && stride != 0)
      v |= uint64_t(stride) * (type == PFRT_DTYPE_F32 ? 4u : 2u);
    return int64_t(v & (~v + 1)); // the lowest set bit
  };
  std::vector<int64_t> key = {ta,
                              tb,
                              m,
                              n,
                              k,
                              lda,
                              ldb,
                              ldc,
                              batch,
                              strideA,
                              strideB,
                              strideC,
                              epilogue,
                              tf32,
                              alignment(a, strideA, abDtype),
                              alignment(b, strideB, abDtype),
                              alignment(c, strideC, cDtype),
                              abDtype,
                              cDtype};
  Plan &p = planFor(key, ta, tb, m, n, k, lda, ldb, ldc, batch, strideA,
                    strideB, strideC, beta, epilogue, tf32);
  if (p.unsupported)
    return 1; // BGRADB without an algorithm: the caller falls back
  const Api &api = gCuda.api;
  if (bias)
    check(api.cublasLtMatmulDescSetAttribute(
              p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)),
          "cublasLtMatmulDescSetAttribute(BIAS_POINTER)");
  if (aux)
    check(api.cublasLtMatmulDescSetAttribute(
              p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux,
              sizeof(aux)),
          "cublasLtMatmulDescSetAttribute(AUX_POINTER)");
  check(api.cublasLtMatmul(gCuda.lt, p.desc, &alpha, b, p.a, a, p.b, &beta, c,
                           p.c, c, p.c, &p.algo,
                           reinterpret_cast<void *>(gCuda.workspace),
                           gCuda.workspaceBytes, gCuda.stream),
        "cublasLtMatmul");
  return 0;
}

} // extern "C"
