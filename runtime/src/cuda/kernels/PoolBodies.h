//===- PoolBodies.h - pooling -----------------------------------*- C++ -*-===//
//
// Not installed; nothing here is part of the ABI. Part of the CUDA kernels'
// bodies (DeviceBodies.h says how they are written and checked).
//
//===----------------------------------------------------------------------===//

#ifndef PFRT_SRC_CUDA_KERNELS_POOLBODIES_H
#define PFRT_SRC_CUDA_KERNELS_POOLBODIES_H

#include "CommonBodies.h"

namespace pfrt {
namespace dev {

//===----------------------------------------------------------------------===//
// Pooling (src/cpu/Pool.cpp)
//===----------------------------------------------------------------------===//

/// The pools' dims (checked by the twin) and what follows from them.
struct PoolGeom {
  int64_t N, C, H, W, OH, OW, KH, KW, sh, sw, ph, pw;
  int64_t planes, HW, P;
  int32_t overlap; // windows overlap: max-pool gradients sum in float64
};

inline PoolGeom makePoolGeom(const int64_t *dims) {
  PoolGeom d;
  d.N = dims[0], d.C = dims[1], d.H = dims[2], d.W = dims[3];
  d.OH = dims[4], d.OW = dims[5], d.KH = dims[6], d.KW = dims[7];
  d.sh = dims[8], d.sw = dims[9], d.ph = dims[10], d.pw = dims[11];
  d.planes = d.N * d.C;
  d.HW = d.H * d.W;
  d.P = d.OH * d.OW;
  d.overlap = d.sh < d.KH || d.sw < d.KW;
  return d;
}

/// The output windows that contain input row (or column) i: [*lo, *hi).
PFRT_HD inline void windowsOf(int64_t i, int64_t pad, int64_t k, int64_t s,
                              int64_t outs, int64_t *lo, int64_t *hi) {
  int64_t first = i + pad - k + 1; // oh*s >= first
  *lo = first <= 0 ? 0 : (first + s - 1) / s;
  int64_t last = (i + pad) / s + 1; // oh*s <= i + pad
  *hi = last < outs ? last : outs;
}

/// Input i's plane, its flat index q in the plane, and the output windows
/// that hold it: rows [ohLo, ohHi), columns [owLo, owHi).
struct InputWindows {
  int64_t plane, q, ohLo, ohHi, owLo, owHi;
};
PFRT_HD inline InputWindows inputWindows(const PoolGeom &d, int64_t i) {
  InputWindows w;
  w.plane = i / d.HW;
  w.q = i - w.plane * d.HW;
  int64_t ih = w.q / d.W, iw = w.q - ih * d.W;
  windowsOf(ih, d.ph, d.KH, d.sh, d.OH, &w.ohLo, &w.ohHi);
  windowsOf(iw, d.pw, d.KW, d.sw, d.OW, &w.owLo, &w.owHi);
  return w;
}

/// Visits the input elements of output window o in row-major order, padding
/// skipped: fn(plane, at) with plane the window's input plane and at the
/// element's flat index in it. o < planes*P.
template <typename Fn>
PFRT_HD inline void forEachInWindow(const float *x, const PoolGeom &d,
                                    int64_t o, Fn &&fn) {
  int64_t pl = o / d.P, q = o - pl * d.P;
  int64_t oh = q / d.OW, ow = q - oh * d.OW;
  const float *plane = x + pl * d.HW;
  for (int64_t kh = 0; kh < d.KH; ++kh) {
    int64_t ih = oh * d.sh - d.ph + kh;
    if (ih < 0 || ih >= d.H)
      continue;
    for (int64_t kw = 0; kw < d.KW; ++kw) {
      int64_t iw = ow * d.sw - d.pw + kw;
      if (iw < 0 || iw >= d.W)
        continue;
      fn(plane, ih * d.W + iw);
    }
  }
}

/// y[o] = the window's maximum, scanned in row-major order as maxPoolFwd
/// does: padding never wins, a NaN wins and stays. o < planes*P.
PFRT_HD inline void maxPoolAt(const float *x, float *y, const PoolGeom &d,
                              int64_t o) {
  float m = negInf();
  forEachInWindow(x, d, o, [&](const float *plane, int64_t at) {
    float v = plane[at];
    m = ((v > m) | (v != v)) ? v : m;
  });
  y[o] = m;
}

/// arg[o] = the flat index in its plane of window o's FIRST maximum in
/// row-major scan order (maxPoolBwd's rule: starts at the window's first
/// valid element, so an all -inf window picks it; the first NaN wins).
PFRT_HD inline void maxPoolArgAt(const float *x, int32_t *arg,
                                 const PoolGeom &d, int64_t o) {
  int64_t q = o % d.P;
  int64_t oh = q / d.OW, ow = q - oh * d.OW;
  int64_t ih0 = oh * d.sh - d.ph > 0 ? oh * d.sh - d.ph : 0;
  int64_t iw0 = ow * d.sw - d.pw > 0 ? ow * d.sw - d.pw : 0;
  float best = negInf();
  int64_t a = ih0 * d.W + iw0;
  forEachInWindow(x, d, o, [&](const float *plane, int64_t at) {
    float v = plane[at];
    bool take = (v > best) | ((v != v) & (best == best));
    best = take ? v : best;
    a = take ? at : a;
  });
  arg[o] = int32_t(a);
}

/// dx[i] = the dy of every window whose arg-max is input i, gathered in
/// the CPU's scatter order (windows in row-major order): summed in float64
/// when windows overlap, else the one window's dy (0 if none).
/// i < planes*HW.
PFRT_HD inline void maxPoolGradAt(const int32_t *arg, const float *dy,
                                  float *dx, const PoolGeom &d, int64_t i) {
  const InputWindows w = inputWindows(d, i);
  const int32_t *argp = arg + w.plane * d.P;
  const float *dyp = dy + w.plane * d.P;
  if (d.overlap) {
    double acc = 0.0;
    for (int64_t oh = w.ohLo; oh < w.ohHi; ++oh)
      for (int64_t ow = w.owLo; ow < w.owHi; ++ow)
        if (argp[oh * d.OW + ow] == int32_t(w.q))
          acc += double(dyp[oh * d.OW + ow]);
    dx[i] = float(acc);
    return;
  }
  float v = 0.0f;
  for (int64_t oh = w.ohLo; oh < w.ohHi; ++oh)
    for (int64_t ow = w.owLo; ow < w.owHi; ++ow)
      if (argp[oh * d.OW + ow] == int32_t(w.q))
        v = dyp[oh * d.OW + ow];
  dx[i] = v;
}

/// y[o] = the float64 window sum over KH*KW (count_include_pad), summed
/// in row-major order. o < planes*P.
PFRT_HD inline void avgPoolAt(const float *x, float *y, const PoolGeom &d,
                              int64_t o) {
  const double div = double(d.KH * d.KW);
  double acc = 0.0;
  forEachInWindow(x, d, o, [&](const float *plane, int64_t at) {
    acc += double(plane[at]);
  });
  y[o] = float(acc / div);
}

/// dx[i] = the float64 sum of dy / (KH*KW) over the windows containing
/// input i, in avgPoolBwd's scatter order: windows by row ascending, and
/// within a row by kernel column ascending, i.e. window column descending.
PFRT_HD inline void avgPoolGradAt(const float *dy, float *dx, const PoolGeom &d,
                                  int64_t i) {
  const InputWindows w = inputWindows(d, i);
  const float *dyp = dy + w.plane * d.P;
  const double div = double(d.KH * d.KW);
  double acc = 0.0;
  for (int64_t oh = w.ohLo; oh < w.ohHi; ++oh)
    for (int64_t ow = w.owHi - 1; ow >= w.owLo; --ow)
      acc += double(dyp[oh * d.OW + ow]) / div;
  dx[i] = float(acc);
}

/// y[p] = the float64 mean of plane p (planeMeans).
PFRT_HD inline void globalAvgPoolAt(const float *x, float *y, int64_t hw,
                                    int64_t p) {
  y[p] = float(sumF64(x + p * hw, hw) / double(hw));
}

/// dx[i] = dy[plane] / hw, rounded once.
PFRT_HD inline void globalAvgPoolGradAt(const float *dy, float *dx, int64_t hw,
                                        int64_t i) {
  dx[i] = float(double(dy[i / hw]) / double(hw));
}

} // namespace dev
} // namespace pfrt

#endif // PFRT_SRC_CUDA_KERNELS_POOLBODIES_H
