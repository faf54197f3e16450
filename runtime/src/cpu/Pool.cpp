//===- Pool.cpp - Max, average and global average pooling -----------------===//
//
// Each output row is computed window offset by window offset: for a fixed
// (kh, kw) the loop over ow is a simple strided loop that vectorizes, and
// visiting (kh, kw) in row-major order keeps every window's scan order, so
// "first maximum" is the same as in a per-window scalar scan. Window sums
// and gradient scatters accumulate in float64.
//
//===----------------------------------------------------------------------===//

#include "KernelUtil.h"
#include "pfrt/pfrt.h"

#include <climits>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <type_traits>
#include <vector>

using namespace pfrt;
using namespace pfrt::kern;

namespace {

using PoolDims = WindowDims<PoolArgs>;

/// Visits the valid window offsets of output row oh in row-major order:
/// fn(ih, kw, src, lo, hi) where src[ow*sw] is input column ow*sw - pw + kw
/// of input row ih, for ow in [lo, hi).
template <typename Fn>
PFRT_ALWAYS_INLINE void forWindow(const PoolDims &d, int64_t oh,
                                  const float *plane, Fn &&fn) {
  for (int64_t kh = 0; kh < d.KH; ++kh) {
    int64_t ih = oh * d.sh - d.ph + kh;
    if (ih < 0 || ih >= d.H)
      continue;
    for (int64_t kw = 0; kw < d.KW; ++kw)
      fn(ih, kw, plane + ih * d.W + kw - d.pw, d.owLo[kw], d.owHi[kw]);
  }
}

/// Runs body(stride) with the column stride as a compile-time constant for
/// the common strides 1 and 2 (constant strides vectorize; a run-time
/// stride would need gathers), and as a run-time value otherwise.
template <typename Body>
PFRT_ALWAYS_INLINE void withStride(int64_t sw, Body &&body) {
  if (sw == 1)
    body(std::integral_constant<int64_t, 1>{});
  else if (sw == 2)
    body(std::integral_constant<int64_t, 2>{});
  else
    body(sw);
}

PFRT_MULTIVERSION void planeMeans(const float *PFRT_RESTRICT x,
                                  float *PFRT_RESTRICT y, int64_t planes,
                                  int64_t hw) {
  for (int64_t p = 0; p < planes; ++p)
    y[p] = float(sumF64(x + p * hw, hw) / double(hw));
}

void maxPoolFwd(const PoolDims &d, const float *x, float *y) {
  const float ninf = -std::numeric_limits<float>::infinity();
  withStride(d.sw, [&](auto sw) {
    for (int64_t pl = 0; pl < d.planes; ++pl) {
      const float *plane = x + pl * d.HW;
      for (int64_t oh = 0; oh < d.OH; ++oh) {
        float *PFRT_RESTRICT yr = y + pl * d.P + oh * d.OW;
        for (int64_t ow = 0; ow < d.OW; ++ow)
          yr[ow] = ninf;
        forWindow(d, oh, plane,
                  [&](int64_t, int64_t, const float *PFRT_RESTRICT src,
                      int64_t lo, int64_t hi) {
                    // NaN wins (and stays), like PyTorch.
                    for (int64_t ow = lo; ow < hi; ++ow) {
                      float v = src[ow * sw], m = yr[ow];
                      yr[ow] = ((v > m) | (v != v)) ? v : m;
                    }
                  });
      }
    }
  });
}

void maxPoolBwd(const PoolDims &d, const float *x, const float *dy, float *dx) {
  const float ninf = -std::numeric_limits<float>::infinity();
  // The arg-max of each window of an output row, as a flat index into the
  // plane. It starts at the window's first valid element, so a window of
  // all -inf still picks its first element and the scan needs no "unset"
  // test.
  float *PFRT_RESTRICT best = scratchOf<float>(0, d.OW);
  int32_t *PFRT_RESTRICT arg = scratchOf<int32_t>(1, d.OW);
  // Overlapping windows can send several gradients to one input: those
  // are summed in float64; otherwise each input gets at most one.
  const bool overlap = d.sh < d.KH || d.sw < d.KW;
  double *acc = overlap ? scratchOf<double>(2, d.HW) : nullptr;
  withStride(d.sw, [&](auto s) {
    for (int64_t pl = 0; pl < d.planes; ++pl) {
      const float *plane = x + pl * d.HW;
      float *dxp = dx + pl * d.HW;
      if (overlap)
        std::memset(acc, 0, size_t(d.HW) * sizeof(double));
      else
        std::memset(dxp, 0, size_t(d.HW) * sizeof(float));
      for (int64_t oh = 0; oh < d.OH; ++oh) {
        const int64_t ih0 = oh * d.sh - d.ph > 0 ? oh * d.sh - d.ph : 0;
        for (int64_t ow = 0; ow < d.OW; ++ow) {
          int64_t iw0 = ow * s - d.pw;
          best[ow] = ninf;
          arg[ow] = int32_t(ih0 * d.W + (iw0 > 0 ? iw0 : 0));
        }
        forWindow(d, oh, plane,
                  [&](int64_t ih, int64_t kw, const float *PFRT_RESTRICT src,
                      int64_t lo, int64_t hi) {
                    const int32_t base = int32_t(ih * d.W + kw - d.pw);
          // Every load is unconditional (a load under `take` is
          // predicated: scalar and branchy), the test is bitwise,
          // and the selects are marked unpredictable so that the
          // scalar remainder keeps cmov instead of branching on
          // random data. Forced: the cost model declines it.
#if defined(__clang__)
#pragma clang loop vectorize(enable)
#endif
                    for (int64_t ow = lo; ow < hi; ++ow) {
                      float v = src[ow * s], mm = best[ow];
                      int32_t a = arg[ow];
                      int32_t at = base + int32_t(ow * s);
                      // First maximum in scan order; the first NaN wins.
                      bool take = (v > mm) | ((v != v) & (mm == mm));
                      best[ow] = PFRT_UNPREDICTABLE(take) ? v : mm;
                      arg[ow] = PFRT_UNPREDICTABLE(take) ? at : a;
                    }
                  });
        const float *dyr = dy + pl * d.P + oh * d.OW;
        if (overlap)
          for (int64_t ow = 0; ow < d.OW; ++ow)
            acc[arg[ow]] += double(dyr[ow]);
        else
          for (int64_t ow = 0; ow < d.OW; ++ow)
            dxp[arg[ow]] = dyr[ow];
      }
      if (overlap)
        for (int64_t i = 0; i < d.HW; ++i)
          dxp[i] = float(acc[i]);
    }
  });
}

void avgPoolFwd(const PoolDims &d, const float *x, float *y) {
  const double div = double(d.KH * d.KW); // count_include_pad=True
  const int64_t sw = d.sw;
  double *PFRT_RESTRICT acc = scratchOf<double>(0, d.OW);
  for (int64_t pl = 0; pl < d.planes; ++pl) {
    const float *plane = x + pl * d.HW;
    for (int64_t oh = 0; oh < d.OH; ++oh) {
      for (int64_t ow = 0; ow < d.OW; ++ow)
        acc[ow] = 0.0;
      withStride(sw, [&](auto s) {
        forWindow(d, oh, plane,
                  [&](int64_t, int64_t, const float *PFRT_RESTRICT src,
                      int64_t lo, int64_t hi) {
                    for (int64_t ow = lo; ow < hi; ++ow)
                      acc[ow] += double(src[ow * s]);
                  });
      });
      float *PFRT_RESTRICT yr = y + pl * d.P + oh * d.OW;
      for (int64_t ow = 0; ow < d.OW; ++ow)
        yr[ow] = float(acc[ow] / div);
    }
  }
}

void avgPoolBwd(const PoolDims &d, const float *dy, float *dx) {
  const double div = double(d.KH * d.KW);
  const int64_t sw = d.sw;
  double *PFRT_RESTRICT acc = scratchOf<double>(0, d.HW);
  double *PFRT_RESTRICT g = scratchOf<double>(1, d.OW);
  for (int64_t pl = 0; pl < d.planes; ++pl) {
    std::memset(acc, 0, size_t(d.HW) * sizeof(double));
    for (int64_t oh = 0; oh < d.OH; ++oh) {
      const float *dyr = dy + pl * d.P + oh * d.OW;
      for (int64_t ow = 0; ow < d.OW; ++ow)
        g[ow] = double(dyr[ow]) / div;
      for (int64_t kh = 0; kh < d.KH; ++kh) {
        int64_t ih = oh * d.sh - d.ph + kh;
        if (ih < 0 || ih >= d.H)
          continue;
        for (int64_t kw = 0; kw < d.KW; ++kw) {
          double *PFRT_RESTRICT dst = acc + ih * d.W + kw - d.pw;
          const int64_t lo = d.owLo[kw], hi = d.owHi[kw];
          withStride(sw, [&](auto s) {
            for (int64_t ow = lo; ow < hi; ++ow)
              dst[ow * s] += g[ow];
          });
        }
      }
    }
    float *PFRT_RESTRICT dxp = dx + pl * d.HW;
    for (int64_t i = 0; i < d.HW; ++i)
      dxp[i] = float(acc[i]);
  }
}

} // namespace

extern "C" {

void pfrt_k_max_pool2d(const float *x, float *y, const int64_t dims[12]) {
  PoolDims d =
      checkedDims("pfrt_k_max_pool2d", dims,
                  {{"x", x, PoolTensor::In}, {"y", y, PoolTensor::Out}});
  maxPoolFwd(d, x, y);
}

void pfrt_k_max_pool2d_grad(const float *x, const float *dy, float *dx,
                            const int64_t dims[12]) {
  const char *fn = "pfrt_k_max_pool2d_grad";
  PoolDims d = checkedDims(fn, dims,
                           {{"x", x, PoolTensor::In},
                            {"dy", dy, PoolTensor::Out},
                            {"dx", dx, PoolTensor::In}});
  checkPoolPlaneIndex(fn, d);
  maxPoolBwd(d, x, dy, dx);
}

void pfrt_k_avg_pool2d(const float *x, float *y, const int64_t dims[12]) {
  PoolDims d =
      checkedDims("pfrt_k_avg_pool2d", dims,
                  {{"x", x, PoolTensor::In}, {"y", y, PoolTensor::Out}});
  avgPoolFwd(d, x, y);
}

void pfrt_k_avg_pool2d_grad(const float *dy, float *dx,
                            const int64_t dims[12]) {
  PoolDims d =
      checkedDims("pfrt_k_avg_pool2d_grad", dims,
                  {{"dy", dy, PoolTensor::Out}, {"dx", dx, PoolTensor::In}});
  avgPoolBwd(d, dy, dx);
}

void pfrt_k_global_avg_pool(const float *x, float *y, int64_t n, int64_t c,
                            int64_t hw) {
  GlobalPoolSizes s =
      checkGlobalAvgPoolArgs("pfrt_k_global_avg_pool", x, y, n, c, hw);
  planeMeans(x, y, s.planes, hw);
}

void pfrt_k_global_avg_pool_grad(const float *dy, float *dx, int64_t n,
                                 int64_t c, int64_t hw) {
  GlobalPoolSizes s = checkGlobalAvgPoolGradArgs("pfrt_k_global_avg_pool_grad",
                                                 dy, dx, n, c, hw);
  for (int64_t p = 0; p < s.planes; ++p) {
    const float v = float(double(dy[p]) / double(hw));
    float *PFRT_RESTRICT dxp = dx + p * hw;
    for (int64_t i = 0; i < hw; ++i)
      dxp[i] = v;
  }
}

} // extern "C"
