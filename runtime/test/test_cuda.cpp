//===- test_cuda.cpp - the GPU layer on a GPU (pfrt_cuda.h) ---------------===//
//
// pfrt-test-cuda PTX_FILE [MODE]. Without a CUDA device it exits 77 (run_
// tests.sh reports SKIP). With one: generated-style kernels loaded from PTX
// and launched (element-wise, a deterministic row reduction), cuBLASLt
// GEMMs in every transpose combination, with beta = 1 accumulation,
// batched, and each epilogue, against a float64 CPU reference on fresh
// random data; a captured graph replayed equal to the uncaptured run; two
// runs giving identical bits. MODE "init_only" just initialises (for the
// no-driver failure test); "plan" starts the way a compiled GPU rank does,
// with pfrt_cuda_arena_plan (the device twin that picks and initialises the
// GPU; without one it exits 2 like pfrt_cuda_init); "oom" asks for more
// arena than the device has.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"
#include "pfrt/pfrt_cuda.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

uint64_t gSeed;

std::vector<float> randomVector(size_t n, uint64_t stream) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = pt_value(gSeed, stream, 0, i);
  return v;
}

void *device(const std::vector<float> &h, int64_t offset) {
  void *d = pfrt_cuda_arena_ptr(offset, int64_t(h.size() * sizeof(float)));
  pfrt_cuda_h2d(d, h.data(), int64_t(h.size() * sizeof(float)));
  return d;
}

std::vector<float> host(const void *d, size_t n) {
  std::vector<float> h(n);
  pfrt_cuda_d2h(h.data(), d, int64_t(n * sizeof(float)));
  return h;
}

double relErr(const std::vector<float> &got, const std::vector<double> &want) {
  double worst = 0.0;
  for (size_t i = 0; i < got.size(); ++i)
    worst = std::max(worst, std::fabs(got[i] - want[i]) /
                                std::max(1.0, std::fabs(want[i])));
  return worst;
}

/// C = op(A) op(B) (+ beta C) (+ bias, relu) in float64, row-major.
std::vector<double> gemmRef(bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                            const std::vector<float> &a,
                            const std::vector<float> &b,
                            const std::vector<float> &c0, float beta,
                            const std::vector<float> *bias, bool relu) {
  std::vector<double> c(size_t(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0.0;
      for (int64_t p = 0; p < k; ++p)
        s += double(ta ? a[p * m + i] : a[i * k + p]) *
             double(tb ? b[j * k + p] : b[p * n + j]);
      s += beta * c0[i * n + j];
      if (bias)
        s += (*bias)[j];
      c[i * n + j] = relu ? std::max(0.0, s) : s;
    }
  return c;
}

void gemms() {
  const int64_t m = 37, n = 53, k = 29;
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb)
      for (int ep : {PFRT_EPILOGUE_NONE, PFRT_EPILOGUE_RELU, PFRT_EPILOGUE_BIAS,
                     PFRT_EPILOGUE_RELU_BIAS})
        for (float beta : {0.0f, 1.0f}) {
          if (beta != 0.0f && ep != PFRT_EPILOGUE_NONE)
            continue;
          auto a = randomVector(size_t(m * k), 1),
               b = randomVector(size_t(k * n), 2);
          auto c = randomVector(size_t(m * n), 3),
               bias = randomVector(size_t(n), 4);
          void *da = device(a, 0), *db = device(b, 1 << 16);
          void *dc = device(c, 2 << 16), *dbias = device(bias, 3 << 16);
          bool hasBias =
              ep == PFRT_EPILOGUE_BIAS || ep == PFRT_EPILOGUE_RELU_BIAS;
          pfrt_cuda_gemm(ta, tb, m, n, k, 1.0f, da, ta ? m : k, db, tb ? k : n,
                         beta, dc, n, 1, 0, 0, 0, ep, hasBias ? dbias : nullptr,
                         nullptr, 0);
          auto want = gemmRef(
              ta, tb, m, n, k, a, b, c, beta, hasBias ? &bias : nullptr,
              ep == PFRT_EPILOGUE_RELU || ep == PFRT_EPILOGUE_RELU_BIAS);
          double err = relErr(host(dc, size_t(m * n)), want);
          CHECK(err < 1e-5, "gemm ta=%d tb=%d epilogue=%d beta=%g: error %g",
                ta, tb, ep, beta, err);
        }
  // Batched, strided.
  const int64_t batch = 3;
  auto a = randomVector(size_t(batch * m * k), 5),
       b = randomVector(size_t(batch * k * n), 6);
  std::vector<float> zero(size_t(batch * m * n), 0.0f);
  void *da = device(a, 0), *db = device(b, 1 << 17),
       *dc = device(zero, 2 << 17);
  pfrt_cuda_gemm(0, 0, m, n, k, 1.0f, da, k, db, n, 0.0f, dc, n, batch, m * k,
                 k * n, m * n, PFRT_EPILOGUE_NONE, nullptr, nullptr, 0);
  auto got = host(dc, size_t(batch * m * n));
  for (int64_t i = 0; i < batch; ++i) {
    std::vector<float> ai(a.begin() + i * m * k, a.begin() + (i + 1) * m * k);
    std::vector<float> bi(b.begin() + i * k * n, b.begin() + (i + 1) * k * n);
    std::vector<float> z(size_t(m * n), 0.0f);
    std::vector<float> gi(got.begin() + i * m * n,
                          got.begin() + (i + 1) * m * n);
    double err = relErr(
        gi, gemmRef(false, false, m, n, k, ai, bi, z, 0.0f, nullptr, false));
    CHECK(err < 1e-5, "batched gemm entry %lld: error %g", (long long)i, err);
  }
}

std::vector<float> kernels(void *module, bool captured) {
  const long long n = 100003, rows = 64, cols = 1000;
  void *scaleAdd = pfrt_cuda_function(module, "scale_add");
  void *rowSum = pfrt_cuda_function(module, "row_sum");
  auto x = randomVector(size_t(n), 7), y = randomVector(size_t(n), 8);
  auto r = randomVector(size_t(rows * cols), 9);
  void *dx = device(x, 0), *dy = device(y, 1 << 20), *dr = device(r, 2 << 20);
  void *dsum = pfrt_cuda_arena_ptr(3 << 20, rows * 4);
  float a = 0.75f;
  void *args1[] = {&dx, &dy, &a, const_cast<long long *>(&n)};
  long long c = cols;
  void *args2[] = {&dr, &dsum, &c};
  auto launch = [&] {
    pfrt_cuda_launch(scaleAdd, (n + 255) / 256, 1, 1, 256, 1, 1, 0, args1);
    pfrt_cuda_launch(rowSum, rows, 1, 1, 256, 1, 1, 0, args2);
  };
  if (captured) {
    pfrt_cuda_graph_begin();
    launch();
    pfrt_cuda_graph_end();
    pfrt_cuda_graph_launch();
  } else {
    launch();
  }
  auto gy = host(dy, size_t(n)), gs = host(dsum, size_t(rows));
  std::vector<double> wy(static_cast<size_t>(n)),
      ws(static_cast<size_t>(rows), 0.0);
  for (long long i = 0; i < n; ++i)
    wy[i] = double(a) * x[i] + y[i];
  for (long long i = 0; i < rows; ++i)
    for (long long j = 0; j < cols; ++j)
      ws[i] += r[i * cols + j];
  CHECK(relErr(gy, wy) < 1e-6, "scale_add differs from the CPU");
  CHECK(relErr(gs, ws) < 1e-5, "row_sum differs from the CPU");
  gy.insert(gy.end(), gs.begin(), gs.end());
  return gy;
}

} // namespace

int main(int argc, char **argv) {
  std::string mode = argc > 2 ? argv[2] : "";
  if (mode == "plan") {
    pfrt_init(&argc, &argv);
    pfrt_cuda_arena_plan(int64_t(1) << 20);
    pfrt_cuda_arena_plan(int64_t(1) << 10); // no more than planned: a no-op
    printf("cuda: device arena planned (%lld bytes)\n",
           (long long)(int64_t(1) << 20));
    pfrt_finalize();
    return 0;
  }
  if (mode != "init_only" && pfrt_cuda_device_count() == 0) {
    printf("cuda: no CUDA device here, skipped\n");
    return 77;
  }
  pfrt_init(&argc, &argv);
  gSeed = pt_seed("cuda");
  pfrt_cuda_init(0);
  if (mode == "init_only") {
    printf("cuda: device 0 initialised\n");
    return 0;
  }
  if (mode == "oom") {
    pfrt_cuda_arena_init(int64_t(1) << 50);
    return 0;
  }
  pfrt_cuda_arena_init(int64_t(64) << 20);
  std::ifstream f(argc > 1 ? argv[1] : "");
  CHECK(f.good(), "cannot read the PTX file %s", argc > 1 ? argv[1] : "(none)");
  std::stringstream ptx;
  ptx << f.rdbuf();
  std::string text = ptx.str();
  void *module = pfrt_cuda_module_load(text.c_str());
  std::vector<float> first = kernels(module, false);
  std::vector<float> again = kernels(module, false);
  CHECK(std::memcmp(first.data(), again.data(), first.size() * 4) == 0,
        "two runs differ in their bits");
  if (pfrt_cuda_graphs_enabled()) {
    std::vector<float> graph = kernels(module, true);
    CHECK(std::memcmp(first.data(), graph.data(), first.size() * 4) == 0,
          "the captured graph's replay differs from the uncaptured run");
  }
  gemms();
  pfrt_cuda_synchronize();
  printf(
      "cuda: kernels, graph replay and cuBLASLt GEMMs OK (high-water %lld)\n",
      (long long)pfrt_cuda_arena_high_water());
  pfrt_finalize();
  return 0;
}
