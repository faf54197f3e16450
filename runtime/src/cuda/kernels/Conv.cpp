//===- Conv.cpp - device twins of the 2-D convolutions --------------------===//
//
// Convolutions: the CPU's im2col + SGEMM per image and group, with the
// column matrices of a run of images built at once in device scratch and
// one strided-batched GEMM (exact float32) per group and run; the direct
// path (1x1, stride 1, no padding) reads x itself.
// Every kernel but the GEMMs is the CPU's arithmetic (ConvBodies.h); the
// weight gradient sums the images' products in image order.
//
//===----------------------------------------------------------------------===//

#include "ConvBodies.h"
#include "Twin.h"

#include "pfrt/pfrt.h"
#include "pfrt/pfrt_cuda.h"

#include <climits>
#include <cstdlib>
#include <initializer_list>
#include <optional>

using namespace pfrt;
using namespace pfrt::kern;
using namespace pfrt::twin;

namespace {

/// The device scratch a convolution may use for its column matrices (and
/// the weight gradient's per-image products): the images are processed in
/// runs that fit, at least one image a run. PFRT_CUDA_CONV_SCRATCH (bytes)
/// overrides it (read once; the tests make runs short with it).
int64_t convScratchBudget() {
  static const int64_t budget = [] {
    if (const char *v = std::getenv("PFRT_CUDA_CONV_SCRATCH")) {
      char *end = nullptr;
      long long b = std::strtoll(v, &end, 10);
      if (end && end != v && *end == '\0' && b > 0)
        return int64_t(b);
    }
    return int64_t(256) << 20;
  }();
  return budget;
}

/// Images per run when each needs `perImage` bytes of scratch.
int64_t imagesPerRun(int64_t perImage, int64_t images) {
  int64_t nb = perImage > 0 ? convScratchBudget() / perImage : images;
  if (nb > images)
    nb = images;
  if (nb > INT32_MAX) // cuBLASLt's batch count
    nb = INT32_MAX;
  return nb < 1 ? 1 : nb;
}

/// pfrt_k_conv2d's checks (common/KernelArgs.h: the dims, then each tensor
/// in the order given), and the columns of all groups of an image within
/// int64; the kernels' geometry.
dev::ConvGeom checkConv(const char *fn, const int64_t *dims,
                        std::initializer_list<ConvBuf> bufs) {
  ConvArgs a = checkConvArgs(fn, dims, bufs);
  mulChecked(fn, mulChecked(fn, a.K, a.P), a.G);
  return dev::makeConvGeom(dims);
}

/// Enqueues the column matrices of images [n0, n0 + nb) of x into col.
void im2col(const char *fn, const dev::ConvGeom &d, const float *x, int64_t n0,
            int64_t nb, float *col) {
  const float *xs = x + n0 * d.C * d.HW;
  int64_t total = nb * d.C * d.KH * d.KW * d.P;
  dev::ConvGeom g = d;
  void *args[] = {&xs, &col, &g, &total};
  launch(kIm2col, total, args, fn);
}

/// An output of `total` floats that needs no GEMM (trivialConvOutput):
/// empty, or an empty sum, which it zero-fills.
bool trivialOutput(float *out, int64_t total, bool emptySum) {
  return trivialConvOutput(out, total, emptySum, [](float *o, int64_t n) {
    pfrt_cuda_memset(o, 0, n * int64_t(sizeof(float)));
  });
}

/// The images per run (*nb) and, unless the path is direct, the device
/// scratch for their column matrices.
float *columnScratch(const char *fn, const dev::ConvGeom &d, int64_t *nb) {
  const int64_t colImage = d.G * d.K * d.P;
  *nb = imagesPerRun(d.direct ? 0 : colImage * int64_t(sizeof(float)), d.N);
  return d.direct ? nullptr
                  : static_cast<float *>(
                        scratch(*nb * colImage * int64_t(sizeof(float)), fn));
}

/// The GEMMs' operand of images [n0, n0 + m): x itself on the direct path,
/// else their column matrices, built into col; *stride: floats from one
/// image's to the next.
const float *runColumns(const char *fn, const dev::ConvGeom &d, const float *x,
                        int64_t n0, int64_t m, float *col, int64_t *stride) {
  if (d.direct) {
    *stride = d.C * d.HW;
    return x + n0 * d.C * d.HW;
  }
  im2col(fn, d, x, n0, m, col);
  *stride = d.G * d.K * d.P;
  return col;
}

} // namespace

extern "C" {

void pfrt_cuda_k_conv2d(const float *x, const float *w, float *y,
                        const int64_t dims[16]) {
  const char *fn = "pfrt_cuda_k_conv2d";
  dev::ConvGeom d = checkConv(fn, dims,
                              {{"x", x, ConvTensor::X},
                               {"w", w, ConvTensor::W},
                               {"y", y, ConvTensor::Y}});
  if (trivialOutput(y, d.N * d.O * d.P, d.K == 0)) // K == 0: no input channel
    return;
  int64_t nb;
  float *col = columnScratch(fn, d, &nb);
  for (int64_t n0 = 0; n0 < d.N; n0 += nb) {
    const int64_t m = nb < d.N - n0 ? nb : d.N - n0;
    int64_t strideB;
    const float *b = runColumns(fn, d, x, n0, m, col, &strideB);
    // Under 3xTF32 the groups' GEMMs share one split of w and the run.
    std::optional<SplitOnce> once;
    if (d.G > 1)
      once.emplace(fn, std::initializer_list<SplitOnce::Range>{
                           {w, d.O * d.K}, {b, m * strideB}});
    for (int64_t g = 0; g < d.G; ++g)
      gemm(0, 0, d.Og, d.P, d.K, 1.0f, w + g * d.Og * d.K, d.K,
           b + g * d.K * d.P, d.P, 0.0f, y + (n0 * d.O + g * d.Og) * d.P, d.P,
           m, 0, strideB, d.O * d.P, PFRT_EPILOGUE_NONE, nullptr, nullptr);
  }
}

void pfrt_cuda_k_conv2d_grad_input(const float *dy, const float *w, float *dx,
                                   const int64_t dims[16]) {
  const char *fn = "pfrt_cuda_k_conv2d_grad_input";
  dev::ConvGeom d = checkConv(fn, dims,
                              {{"dy", dy, ConvTensor::Y},
                               {"w", w, ConvTensor::W},
                               {"dx", dx, ConvTensor::X}});
  if (trivialOutput(dx, d.N * d.C * d.HW,
                    d.Og == 0)) // Og == 0: no output channel
    return;
  const int64_t colImage = d.G * d.K * d.P;
  int64_t nb;
  float *col = columnScratch(fn, d, &nb);
  for (int64_t n0 = 0; n0 < d.N; n0 += nb) {
    const int64_t m = nb < d.N - n0 ? nb : d.N - n0;
    // Under 3xTF32 the groups' GEMMs share one split of w and the run's dy.
    std::optional<SplitOnce> once;
    if (d.G > 1)
      once.emplace(fn,
                   std::initializer_list<SplitOnce::Range>{
                       {w, d.O * d.K}, {dy + n0 * d.O * d.P, m * d.O * d.P}});
    if (d.direct) {
      // dx_g = w_g^T dy_g straight into dx (col2im is the identity).
      for (int64_t g = 0; g < d.G; ++g)
        gemm(1, 0, d.K, d.P, d.Og, 1.0f, w + g * d.Og * d.K, d.K,
             dy + (n0 * d.O + g * d.Og) * d.P, d.P, 0.0f,
             dx + (n0 * d.C + g * d.Cg) * d.HW, d.P, m, 0, d.O * d.P,
             d.C * d.HW, PFRT_EPILOGUE_NONE, nullptr, nullptr);
      continue;
    }
    // dcol_g = w_g^T dy_g for each image of the run, then one thread per
    // input element gathers its column entries (no atomics).
    for (int64_t g = 0; g < d.G; ++g)
      gemm(1, 0, d.K, d.P, d.Og, 1.0f, w + g * d.Og * d.K, d.K,
           dy + (n0 * d.O + g * d.Og) * d.P, d.P, 0.0f, col + g * d.K * d.P,
           d.P, m, 0, d.O * d.P, colImage, PFRT_EPILOGUE_NONE, nullptr,
           nullptr);
    float *dxs = dx + n0 * d.C * d.HW;
    int64_t total = m * d.C * d.HW;
    void *args[] = {&col, &dxs, &d, &total};
    launch(kCol2im, total, args, fn);
  }
}

void pfrt_cuda_k_conv2d_grad_weight(const float *x, const float *dy, float *dw,
                                    const int64_t dims[16]) {
  const char *fn = "pfrt_cuda_k_conv2d_grad_weight";
  dev::ConvGeom d = checkConv(fn, dims,
                              {{"x", x, ConvTensor::X},
                               {"dy", dy, ConvTensor::Y},
                               {"dw", dw, ConvTensor::W}});
  const int64_t dwTotal = d.O * d.K;
  if (trivialOutput(dw, dwTotal, d.N == 0 || d.P == 0))
    return;
  // Each image's dy_g col^T into `part` (a strided-batched GEMM per group),
  // then summed over the images in order in float32, as the CPU's SGEMMs
  // accumulate them (beta = 1 after the first image).
  const int64_t colImage = d.direct ? 0 : d.G * d.K * d.P;
  const int64_t nb =
      imagesPerRun((colImage + dwTotal) * int64_t(sizeof(float)), d.N);
  ScratchLayout l;
  const int64_t colAt = l.add(nb * colImage * int64_t(sizeof(float)));
  const int64_t partAt = l.add(nb * dwTotal * int64_t(sizeof(float)));
  void *base = scratch(l.bytes, fn);
  float *col = scratchAt<float>(base, colAt),
        *part = scratchAt<float>(base, partAt);
  for (int64_t n0 = 0; n0 < d.N; n0 += nb) {
    int64_t m = nb < d.N - n0 ? nb : d.N - n0;
    int64_t strideB;
    const float *b = runColumns(fn, d, x, n0, m, col, &strideB);
    // Under 3xTF32 the groups' GEMMs share one split of the run's dy and
    // columns.
    std::optional<SplitOnce> once;
    if (d.G > 1)
      once.emplace(fn,
                   std::initializer_list<SplitOnce::Range>{
                       {dy + n0 * d.O * d.P, m * d.O * d.P}, {b, m * strideB}});
    for (int64_t g = 0; g < d.G; ++g)
      gemm(0, 1, d.Og, d.K, d.P, 1.0f, dy + (n0 * d.O + g * d.Og) * d.P, d.P,
           b + g * d.K * d.P, d.P, 0.0f, part + g * d.Og * d.K, d.K, m,
           d.O * d.P, strideB, dwTotal, PFRT_EPILOGUE_NONE, nullptr, nullptr);
    int64_t stride = dwTotal, total = dwTotal;
    int32_t first = n0 == 0;
    void *args[] = {&part, &dw, &m, &stride, &first, &total};
    launch(kSumImages, total, args, fn);
  }
}

} // extern "C"
