//===- ConvBodies.h - convolution -------------------------------*- C++ -*-===//
//
// Not installed; nothing here is part of the ABI. Part of the CUDA kernels'
// bodies (DeviceBodies.h says how they are written and checked).
//
//===----------------------------------------------------------------------===//

#ifndef PFRT_SRC_CUDA_KERNELS_CONVBODIES_H
#define PFRT_SRC_CUDA_KERNELS_CONVBODIES_H

#include "CommonBodies.h"

namespace pfrt {
namespace dev {

//===----------------------------------------------------------------------===//
// Convolution (src/cpu/Conv.cpp): im2col, col2im, the sum over images
//===----------------------------------------------------------------------===//

/// pfrt_k_conv2d's dims (checked by the twin), and what follows from them.
struct ConvGeom {
  int64_t N, C, H, W, O, KH, KW, OH, OW, sh, sw, ph, pw, dh, dw, G;
  int64_t Cg, Og, K, P, HW;
  int32_t direct; // 1x1, stride 1, no padding: the column matrix is x
};

inline ConvGeom makeConvGeom(const int64_t *dims) {
  ConvGeom d;
  d.N = dims[0], d.C = dims[1], d.H = dims[2], d.W = dims[3], d.O = dims[4];
  d.KH = dims[5], d.KW = dims[6], d.OH = dims[7], d.OW = dims[8];
  d.sh = dims[9], d.sw = dims[10], d.ph = dims[11], d.pw = dims[12];
  d.dh = dims[13], d.dw = dims[14], d.G = dims[15];
  d.Cg = d.G > 0 ? d.C / d.G : 0;
  d.Og = d.G > 0 ? d.O / d.G : 0;
  d.K = d.Cg * d.KH * d.KW;
  d.P = d.OH * d.OW;
  d.HW = d.H * d.W;
  d.direct = d.KH == 1 && d.KW == 1 && d.sh == 1 && d.sw == 1 && d.ph == 0 &&
             d.pw == 0;
  return d;
}

/// The column matrices of a run of images, one thread per element:
///   col[n][(c*KH + kh)*KW + kw][oh*OW + ow]
///     = x[n][c][oh*sh - ph + kh*dh][ow*sw - pw + kw*dw]  (0 outside),
/// c over all C channels, so image n's group g is the [K][P] matrix at
/// (n*G + g)*K*P, the CPU's col for that image and group. i < nb*C*KH*KW*P.
PFRT_HD inline void im2colAt(const float *x, float *col, const ConvGeom &d,
                             int64_t i) {
  int64_t p = i % d.P, r = i / d.P;
  int64_t kw = r % d.KW;
  r /= d.KW;
  int64_t kh = r % d.KH;
  r /= d.KH; // r = n*C + c
  int64_t oh = p / d.OW, ow = p - oh * d.OW;
  int64_t ih = oh * d.sh - d.ph + kh * d.dh;
  int64_t iw = ow * d.sw - d.pw + kw * d.dw;
  col[i] = (ih >= 0 && ih < d.H && iw >= 0 && iw < d.W)
               ? x[(r * d.H + ih) * d.W + iw]
               : 0.0f;
}

/// dx[n][c][ih][iw] = col2im of col (laid out as im2colAt writes it), one
/// thread per input element gathering its contributions: 0.0f, then + each
/// col element that reads it, in the CPU's col2imAdd order (kh, then kw).
/// i < nb*C*H*W.
PFRT_HD inline void col2imAt(const float *col, float *dx, const ConvGeom &d,
                             int64_t i) {
  int64_t iw = i % d.W, t = i / d.W;
  int64_t ih = t % d.H;
  t /= d.H; // t = n*C + c
  const float *rows = col + t * d.KH * d.KW * d.P;
  float acc = 0.0f;
  for (int64_t kh = 0; kh < d.KH; ++kh) {
    int64_t a = ih + d.ph - kh * d.dh;
    if (a < 0 || a % d.sh != 0 || a / d.sh >= d.OH)
      continue;
    int64_t oh = a / d.sh;
    for (int64_t kw = 0; kw < d.KW; ++kw) {
      int64_t b = iw + d.pw - kw * d.dw;
      if (b < 0 || b % d.sw != 0 || b / d.sw >= d.OW)
        continue;
      acc += rows[(kh * d.KW + kw) * d.P + oh * d.OW + b / d.sw];
    }
  }
  dx[i] = acc;
}

/// The weight gradient summed over a run of images in float32, in image
/// order, as the CPU's SGEMMs accumulate it (beta = 1 after the first
/// image): part[n*stride + i] is image n's dy_g col_n^T; the run's first
/// image starts the sum when `first` (the batch's first image), else it is
/// added to dw[i].
PFRT_HD inline void sumImagesAt(const float *part, float *dw, int64_t nb,
                                int64_t stride, int32_t first, int64_t i) {
  float acc = first ? part[i] : dw[i] + part[i];
  for (int64_t n = 1; n < nb; ++n)
    acc = acc + part[n * stride + i];
  dw[i] = acc;
}

} // namespace dev
} // namespace pfrt

#endif // PFRT_SRC_CUDA_KERNELS_CONVBODIES_H
