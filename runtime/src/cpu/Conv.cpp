//===- Conv.cpp - 2-D convolution: im2col + SGEMM per image and group -----===//
//
// Layout of the column matrix of one image and group (K = Cg*KH*KW rows,
// P = OH*OW columns), matching the [Og][Cg][KH][KW] weight rows:
//   col[(c*KH + kh)*KW + kw][oh*OW + ow] = x[c][oh*sh - ph + kh*dh]
//                                              [ow*sw - pw + kw*dw]
// (0 outside the image). Then
//   y_g  = w_g (Og x K) * col                 (forward)
//   dcol = w_g^T * dy_g, dx_g = col2im(dcol)  (input gradient)
//   dw_g = sum_n dy_g[n] * col[n]^T           (weight gradient)
// 1x1 kernels with stride 1 and no padding use x directly as col.
//
//===----------------------------------------------------------------------===//

#include "KernelUtil.h"
#include "pfrt/pfrt.h"

#include <cstring>
#include <initializer_list>
#include <vector>

using namespace pfrt;
using namespace pfrt::kern;

namespace {

using ConvDims = WindowDims<ConvArgs>;

/// col[K][P] from x[Cg][H][W].
void im2col(const ConvDims &d, const float *PFRT_RESTRICT x,
            float *PFRT_RESTRICT col) {
  for (int64_t c = 0; c < d.Cg; ++c)
    for (int64_t kh = 0; kh < d.KH; ++kh)
      for (int64_t kw = 0; kw < d.KW; ++kw) {
        float *PFRT_RESTRICT row = col + ((c * d.KH + kh) * d.KW + kw) * d.P;
        const int64_t lo = d.owLo[kw], hi = d.owHi[kw];
        const int64_t off = kw * d.dw - d.pw;
        for (int64_t oh = 0; oh < d.OH; ++oh) {
          float *PFRT_RESTRICT dst = row + oh * d.OW;
          int64_t ih = oh * d.sh - d.ph + kh * d.dh;
          if (ih < 0 || ih >= d.H) {
            std::memset(dst, 0, size_t(d.OW) * sizeof(float));
            continue;
          }
          const float *PFRT_RESTRICT src = x + (c * d.H + ih) * d.W + off;
          for (int64_t ow = 0; ow < lo; ++ow)
            dst[ow] = 0.0f;
          if (d.sw == 1) {
            if (hi > lo)
              std::memcpy(dst + lo, src + lo, size_t(hi - lo) * sizeof(float));
          } else {
            const int64_t sw = d.sw;
            for (int64_t ow = lo; ow < hi; ++ow)
              dst[ow] = src[ow * sw];
          }
          for (int64_t ow = hi; ow < d.OW; ++ow)
            dst[ow] = 0.0f;
        }
      }
}

/// dx[Cg][H][W] += col2im(col[K][P]).
void col2imAdd(const ConvDims &d, const float *PFRT_RESTRICT col,
               float *PFRT_RESTRICT dx) {
  for (int64_t c = 0; c < d.Cg; ++c)
    for (int64_t kh = 0; kh < d.KH; ++kh)
      for (int64_t kw = 0; kw < d.KW; ++kw) {
        const float *PFRT_RESTRICT row =
            col + ((c * d.KH + kh) * d.KW + kw) * d.P;
        const int64_t lo = d.owLo[kw], hi = d.owHi[kw];
        const int64_t off = kw * d.dw - d.pw;
        for (int64_t oh = 0; oh < d.OH; ++oh) {
          int64_t ih = oh * d.sh - d.ph + kh * d.dh;
          if (ih < 0 || ih >= d.H)
            continue;
          float *PFRT_RESTRICT dst = dx + (c * d.H + ih) * d.W + off;
          const float *PFRT_RESTRICT src = row + oh * d.OW;
          if (d.sw == 1) {
            for (int64_t ow = lo; ow < hi; ++ow)
              dst[ow] += src[ow];
          } else {
            const int64_t sw = d.sw;
            for (int64_t ow = lo; ow < hi; ++ow)
              dst[ow * sw] += src[ow];
          }
        }
      }
}

/// The GEMM operand [K][P] for a group's input xg: xg itself on the direct
/// path, else its im2col in col.
const float *columns(const ConvDims &d, const float *xg, float *col) {
  if (d.direct)
    return xg;
  im2col(d, xg, col);
  return col;
}

/// An output of n elements needs no GEMM: empty, or zero-filled when its
/// reduction is empty (emptySum). False when there is work to do.
bool trivialOutput(float *out, int64_t n, bool emptySum) {
  return trivialConvOutput(out, n, emptySum, [](float *o, int64_t m) {
    std::memset(o, 0, size_t(m) * sizeof(float));
  });
}

/// Calls body(n, x, y, w) for every image n and group g, with the element
/// offsets of group g's slices of x[N][C][H][W], y[N][O][OH][OW] (or of their
/// gradients) and w[O][K].
template <typename Body> void forEachGroup(const ConvDims &d, Body body) {
  for (int64_t n = 0; n < d.N; ++n)
    for (int64_t g = 0; g < d.G; ++g)
      body(n, (n * d.C + g * d.Cg) * d.HW, (n * d.O + g * d.Og) * d.P,
           g * d.Og * d.K);
}

} // namespace

extern "C" {

void pfrt_k_conv2d(const float *x, const float *w, float *y,
                   const int64_t dims[16]) {
  ConvDims d = checkedDims("pfrt_k_conv2d", dims,
                           {{"x", x, ConvTensor::X},
                            {"w", w, ConvTensor::W},
                            {"y", y, ConvTensor::Y}});
  if (trivialOutput(y, d.N * d.O * d.P, d.K == 0))
    return;
  float *col = d.direct ? nullptr : scratchOf<float>(0, d.K * d.P);
  forEachGroup(d, [&](int64_t, int64_t xo, int64_t yo, int64_t wo) {
    pfrt_sgemm(0, 0, d.Og, d.P, d.K, 1.0f, w + wo, d.K, columns(d, x + xo, col),
               d.P, 0.0f, y + yo, d.P);
  });
}

void pfrt_k_conv2d_grad_input(const float *dy, const float *w, float *dx,
                              const int64_t dims[16]) {
  ConvDims d = checkedDims("pfrt_k_conv2d_grad_input", dims,
                           {{"dy", dy, ConvTensor::Y},
                            {"w", w, ConvTensor::W},
                            {"dx", dx, ConvTensor::X}});
  if (trivialOutput(dx, d.N * d.C * d.HW, d.Og == 0))
    return;
  float *col = d.direct ? nullptr : scratchOf<float>(0, d.K * d.P);
  forEachGroup(d, [&](int64_t, int64_t xo, int64_t yo, int64_t wo) {
    float *dxg = dx + xo;
    if (d.direct) {
      pfrt_sgemm(1, 0, d.K, d.P, d.Og, 1.0f, w + wo, d.K, dy + yo, d.P, 0.0f,
                 dxg, d.P);
      return;
    }
    pfrt_sgemm(1, 0, d.K, d.P, d.Og, 1.0f, w + wo, d.K, dy + yo, d.P, 0.0f, col,
               d.P);
    std::memset(dxg, 0, size_t(d.Cg * d.HW) * sizeof(float));
    col2imAdd(d, col, dxg);
  });
}

void pfrt_k_conv2d_grad_weight(const float *x, const float *dy, float *dw,
                               const int64_t dims[16]) {
  ConvDims d = checkedDims("pfrt_k_conv2d_grad_weight", dims,
                           {{"x", x, ConvTensor::X},
                            {"dy", dy, ConvTensor::Y},
                            {"dw", dw, ConvTensor::W}});
  if (trivialOutput(dw, d.O * d.K, d.N == 0 || d.P == 0))
    return;
  float *col = d.direct ? nullptr : scratchOf<float>(0, d.K * d.P);
  // dw_g accumulates over the images through SGEMM's beta (float32).
  forEachGroup(d, [&](int64_t n, int64_t xo, int64_t yo, int64_t wo) {
    pfrt_sgemm(0, 1, d.Og, d.K, d.P, 1.0f, dy + yo, d.P,
               columns(d, x + xo, col), d.P, n == 0 ? 0.0f : 1.0f, dw + wo,
               d.K);
  });
}

} // extern "C"
