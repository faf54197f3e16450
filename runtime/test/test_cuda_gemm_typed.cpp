//===- test_cuda_gemm_typed.cpp - bf16/f16 GEMMs (pfrt_cuda_gemm_typed) ---===//
//
// pfrt-test-cuda-gemm-typed [MODE]: the mixed-precision GEMMs of the GPU
// layer, on a GPU or on the host emulation (PFRT_CUDA_FAKE=1); without
// either it exits 77. Fresh random operands (uniform in [-1, 1), 23 bits:
// not exact in bf16 or f16) are rounded to the operand type on the host
// (pfrt_k_cast); the reference is the float64 product of those rounded
// values (+ beta C), and each result is held to torch.testing's
// tolerance for its type (bf16: rtol 1.6e-2, f16: rtol 1e-3, atol 1e-5;
// float32 output: 2e-5 of the terms' magnitude). K = 768, so a GEMM that
// read float32 operands unrounded, or rounded them twice, misses the
// float32 output's tolerance (the test checks that it would), and a lost
// accumulation (beta) misses every tolerance.
//
// MODE "all" (default): every supported pair (A/B bf16 with C bf16 or f32,
// A/B f16 with C f16 or f32) in the four transposes, beta 0 and 1;
// strided batches (own and shared B); the bias epilogue with a bf16 bias;
// the twin pfrt_cuda_k_matmul_typed against the host row
// pfrt_k_matmul_typed. "tune": the same GEMM in f32 and bf16 under
// PFRT_CUDA_GEMM_TUNE=FILE keep two entries. The refusals (run_tests.sh
// expects them fatal): "bf16_f16" (C f16 with bf16 operands),
// "f32_bf16" (C bf16 with float32 operands), "misaligned_ld" (a leading
// dimension of 12 bf16 = 24 bytes), "misaligned_ptr" (A 2 bytes off).
//
//===----------------------------------------------------------------------===//

#include "CudaTestUtil.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

uint64_t gSeed;
pt::DeviceArena gArena(int64_t(256) << 20);

int64_t bytesOf(int32_t t) { return t == PFRT_DTYPE_F32 ? 4 : 2; }
const char *nameOf(int32_t t) {
  return t == PFRT_DTYPE_F32 ? "f32" : t == PFRT_DTYPE_BF16 ? "bf16" : "f16";
}

/// n fresh values in [-1, 1), rounded to `type` (returned as floats, exact)
/// and that type's bytes.
struct Typed {
  std::vector<float> values;
  std::vector<char> bytes;
};
Typed randomTyped(int64_t n, int32_t type, uint64_t stream) {
  std::vector<float> raw(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    raw[size_t(i)] = pt_value(gSeed, stream, 7, uint64_t(i));
  Typed t;
  t.bytes.resize(size_t(n * bytesOf(type)));
  pfrt_k_cast(raw.data(), PFRT_DTYPE_F32, t.bytes.data(), type, n);
  t.values.resize(size_t(n));
  pfrt_k_cast(t.bytes.data(), type, t.values.data(), PFRT_DTYPE_F32, n);
  return t;
}

void *upload(const Typed &t) {
  return gArena.upload(t.bytes.data(), int64_t(t.bytes.size()));
}

std::vector<float> downloadAs(const void *d, int64_t n, int32_t type) {
  std::vector<char> raw(static_cast<size_t>(n * bytesOf(type)));
  pfrt_cuda_synchronize();
  pfrt_cuda_d2h(raw.data(), d, int64_t(raw.size()));
  std::vector<float> v(static_cast<size_t>(n));
  pfrt_k_cast(raw.data(), type, v.data(), PFRT_DTYPE_F32, n);
  return v;
}

/// C[b] = op(A[b]) op(B[b or 0]) + beta C0[b] (+ bias) in float64, and the
/// sum of the terms' magnitudes per element (for float32's tolerance).
void reference(bool ta, bool tb, int64_t batch, bool sharedB, int64_t m,
               int64_t n, int64_t k, const std::vector<float> &a,
               const std::vector<float> &b, const std::vector<float> &c0,
               double beta, const std::vector<float> *bias,
               std::vector<double> &want, std::vector<double> &mag) {
  want.assign(size_t(batch * m * n), 0.0);
  mag.assign(want.size(), 0.0);
  for (int64_t p = 0; p < batch; ++p)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        const float *ap = a.data() + p * m * k;
        const float *bp = b.data() + (sharedB ? 0 : p * k * n);
        double s = 0.0, g = 0.0;
        for (int64_t q = 0; q < k; ++q) {
          double t = double(ta ? ap[q * m + i] : ap[i * k + q]) *
                     double(tb ? bp[j * k + q] : bp[q * n + j]);
          s += t;
          g += std::fabs(t);
        }
        size_t at = size_t((p * m + i) * n + j);
        s += beta * c0[at];
        if (bias)
          s += (*bias)[size_t(j)];
        want[at] = s;
        mag[at] = g + std::fabs(beta * c0[at]) + 1.0;
      }
}

/// How far `got` is outside its type's tolerance (<= 1 passes).
double excess(const std::vector<float> &got, const std::vector<double> &want,
              const std::vector<double> &mag, int32_t type) {
  double worst = 0.0;
  for (size_t i = 0; i < got.size(); ++i) {
    double err = std::fabs(double(got[i]) - want[i]);
    double tol = type == PFRT_DTYPE_BF16  ? 1e-5 + 1.6e-2 * std::fabs(want[i])
                 : type == PFRT_DTYPE_F16 ? 1e-5 + 1e-3 * std::fabs(want[i])
                                          : 2e-5 * mag[i];
    worst = std::max(worst, err / tol);
  }
  return worst;
}

/// One GEMM through pfrt_cuda_gemm_typed against the reference.
void oneGemm(int32_t ab, int32_t ct, int ta, int tb, float beta, int64_t batch,
             bool sharedB, bool withBias) {
  const int64_t m = 24, n = 40, k = 768;
  static uint64_t stream = 100;
  stream += 10;
  Typed a = randomTyped(batch * m * k, ab, stream),
        b = randomTyped((sharedB ? 1 : batch) * k * n, ab, stream + 1),
        c = randomTyped(batch * m * n, ct, stream + 2),
        bias = randomTyped(n, ct, stream + 3);
  void *da = upload(a), *db = upload(b), *dc = upload(c), *dbias = upload(bias);
  pfrt_cuda_gemm_typed(ab, ct, ta, tb, m, n, k, 1.0f, da, ta ? m : k, db,
                       tb ? k : n, beta, dc, n, batch, m * k,
                       sharedB ? 0 : k * n, m * n,
                       withBias ? PFRT_EPILOGUE_BIAS : PFRT_EPILOGUE_NONE,
                       withBias ? dbias : nullptr, nullptr, 0);
  std::vector<double> want, mag;
  reference(ta, tb, batch, sharedB, m, n, k, a.values, b.values, c.values, beta,
            withBias ? &bias.values : nullptr, want, mag);
  double e = excess(downloadAs(dc, batch * m * n, ct), want, mag, ct);
  CHECK(e <= 1.0,
        "A/B %s, C %s, ta=%d tb=%d beta=%g batch=%lld%s%s: %g times the "
        "tolerance",
        nameOf(ab), nameOf(ct), ta, tb, beta, (long long)batch,
        sharedB ? " (shared B)" : "", withBias ? " +bias" : "", e);
  // The data can tell: the float64 product of the unrounded operands is
  // outside float32's tolerance of the rounded ones' (a GEMM that skipped
  // the operands' rounding would fail above).
  if (ab != PFRT_DTYPE_F32 && ct == PFRT_DTYPE_F32 && batch == 1 && !withBias) {
    std::vector<float> ra(a.values.size()), rb(b.values.size());
    for (size_t i = 0; i < ra.size(); ++i)
      ra[i] = pt_value(gSeed, stream, 7, i);
    for (size_t i = 0; i < rb.size(); ++i)
      rb[i] = pt_value(gSeed, stream + 1, 7, i);
    std::vector<double> unrounded, mag2;
    reference(ta, tb, 1, false, m, n, k, ra, rb, c.values, beta, nullptr,
              unrounded, mag2);
    std::vector<float> asFloat(unrounded.begin(), unrounded.end());
    CHECK(excess(asFloat, want, mag, ct) > 1.0,
          "the test cannot tell rounded operands from unrounded ones");
  }
}

/// The twin against the host row (both against the reference).
void twinAgainstHost(int32_t ab, int32_t ct, int ta, int tb, int64_t batch,
                     int64_t batchB, int acc) {
  const int64_t m = 16, n = 24, k = 768;
  uint64_t stream = 900 + uint64_t(ta * 2 + tb) * 10 + uint64_t(acc);
  Typed a = randomTyped(batch * m * k, ab, stream),
        b = randomTyped(batchB * k * n, ab, stream + 1),
        c = randomTyped(batch * m * n, ct, stream + 2);
  void *da = upload(a), *db = upload(b), *dc = upload(c);
  pfrt_cuda_k_matmul_typed(da, db, dc, batch, batchB, m, n, k, ta, tb, ab, ct,
                           acc);
  std::vector<char> hostC = c.bytes;
  pfrt_k_matmul_typed(a.bytes.data(), b.bytes.data(), hostC.data(), batch,
                      batchB, m, n, k, ta, tb, ab, ct, acc);
  std::vector<float> host(static_cast<size_t>(batch * m * n));
  pfrt_k_cast(hostC.data(), ct, host.data(), PFRT_DTYPE_F32, batch * m * n);
  std::vector<double> want, mag;
  reference(ta, tb, batch, batchB == 1, m, n, k, a.values, b.values, c.values,
            acc, nullptr, want, mag);
  double eTwin = excess(downloadAs(dc, batch * m * n, ct), want, mag, ct);
  double eHost = excess(host, want, mag, ct);
  // NOLINTNEXTLINE(readability-simplify-boolean-expr)
  CHECK(eTwin <= 1.0 && eHost <= 1.0,
        "matmul_typed A/B %s C %s ta=%d tb=%d batch=%lld/%lld acc=%d: twin "
        "%g, host row %g times the tolerance",
        nameOf(ab), nameOf(ct), ta, tb, (long long)batch, (long long)batchB,
        acc, eTwin, eHost);
}

void all() {
  const int32_t pairs[4][2] = {{PFRT_DTYPE_BF16, PFRT_DTYPE_BF16},
                               {PFRT_DTYPE_BF16, PFRT_DTYPE_F32},
                               {PFRT_DTYPE_F16, PFRT_DTYPE_F16},
                               {PFRT_DTYPE_F16, PFRT_DTYPE_F32}};
  for (auto &pr : pairs) {
    for (int ta = 0; ta < 2; ++ta)
      for (int tb = 0; tb < 2; ++tb)
        for (float beta : {0.0f, 1.0f})
          oneGemm(pr[0], pr[1], ta, tb, beta, 1, false, false);
    oneGemm(pr[0], pr[1], 0, 1, 1.0f, 3, false, false); // strided batches
    oneGemm(pr[0], pr[1], 1, 0, 0.0f, 3, true, false);  // a shared B
    oneGemm(pr[0], pr[1], 0, 1, 0.0f, 1, false, true);  // bias of C's type
    for (int acc = 0; acc < 2; ++acc) {
      twinAgainstHost(pr[0], pr[1], 1, 0, 1, 1, acc); // a weight gradient
      twinAgainstHost(pr[0], pr[1], 0, 0, 3, 1, acc); // batch folded into M
      twinAgainstHost(pr[0], pr[1], 0, 1, 2, 2, acc); // own B per batch
    }
  }
  // The float32 GEMM through the typed row is pfrt_cuda_gemm's.
  oneGemm(PFRT_DTYPE_F32, PFRT_DTYPE_F32, 1, 0, 1.0f, 1, false, false);
}

/// A bf16 GEMM that cuBLASLt refuses or the row does: fatal.
void refused(const std::string &mode) {
  const int64_t m = 16, n = 16, k = 64;
  Typed a = randomTyped(m * k + 8, PFRT_DTYPE_BF16, 1),
        b = randomTyped(k * n, PFRT_DTYPE_BF16, 2),
        c = randomTyped(m * n, PFRT_DTYPE_F32, 3);
  void *da = upload(a), *db = upload(b), *dc = upload(c);
  if (mode == "bf16_f16")
    pfrt_cuda_gemm_typed(PFRT_DTYPE_BF16, PFRT_DTYPE_F16, 0, 0, m, n, k, 1.0f,
                         da, k, db, n, 0.0f, dc, n, 1, 0, 0, 0,
                         PFRT_EPILOGUE_NONE, nullptr, nullptr, 0);
  else if (mode == "f32_bf16")
    pfrt_cuda_gemm_typed(PFRT_DTYPE_F32, PFRT_DTYPE_BF16, 0, 0, m, n, k, 1.0f,
                         dc, k, dc, n, 0.0f, db, n, 1, 0, 0, 0,
                         PFRT_EPILOGUE_NONE, nullptr, nullptr, 0);
  else if (mode == "misaligned_ld") // 12 bf16 = 24 bytes a row
    pfrt_cuda_gemm_typed(PFRT_DTYPE_BF16, PFRT_DTYPE_F32, 0, 0, m, 12, k, 1.0f,
                         da, k, db, 12, 0.0f, dc, 12, 1, 0, 0, 0,
                         PFRT_EPILOGUE_NONE, nullptr, nullptr, 0);
  else if (mode == "misaligned_ptr")
    pfrt_cuda_gemm_typed(PFRT_DTYPE_BF16, PFRT_DTYPE_F32, 0, 0, m, n, k, 1.0f,
                         static_cast<char *>(da) + 2, k, db, n, 0.0f, dc, n, 1,
                         0, 0, 0, PFRT_EPILOGUE_NONE, nullptr, nullptr, 0);
  else
    CHECK(false, "unknown mode %s", mode.c_str());
  pfrt_cuda_synchronize();
  CHECK(false, "mode %s was not refused", mode.c_str());
}

/// Under PFRT_CUDA_GEMM_TUNE=FILE one shape in f32 and in bf16: two
/// entries, the bf16 one named by its types.
void tune(const char *file) {
  const int64_t m = 32, n = 32, k = 64;
  for (int32_t t : {PFRT_DTYPE_F32, PFRT_DTYPE_BF16}) {
    Typed a = randomTyped(m * k, t, 11), b = randomTyped(k * n, t, 12);
    void *da = upload(a), *db = upload(b);
    void *dc = gArena.alloc(m * n * 4);
    pfrt_cuda_gemm_typed(t, PFRT_DTYPE_F32, 0, 0, m, n, k, 1.0f, da, k, db, n,
                         0.0f, dc, n, 1, 0, 0, 0, PFRT_EPILOGUE_NONE, nullptr,
                         nullptr, 0);
  }
  pfrt_cuda_synchronize();
  std::ifstream f(file);
  std::stringstream text;
  text << f.rdbuf();
  std::string s = text.str();
  const std::string shape = "ta=0,tb=0,m=32,n=32,k=64,";
  size_t first = s.find(shape), second = s.find(shape, first + 1);
  // NOLINTNEXTLINE(readability-simplify-boolean-expr)
  CHECK(first != std::string::npos && second != std::string::npos &&
            s.find("types=bf16/f32") != std::string::npos,
        "the tuning file lacks the f32 and the bf16 entry:\n%s", s.c_str());
}

} // namespace

int main(int argc, char **argv) {
  pt::skipWithoutDevice("cuda-gemm-typed");
  pfrt_init(&argc, &argv);
  gSeed = pt_seed("cuda-gemm-typed");
  pfrt_cuda_arena_plan(gArena.size);
  std::string mode = argc > 1 ? argv[1] : "all";
  if (mode == "all")
    all();
  else if (mode == "tune")
    tune(argc > 2 ? argv[2] : "");
  else
    refused(mode);
  printf("cuda-gemm-typed: %s OK\n", mode.c_str());
  pfrt_finalize();
  return 0;
}
