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

struct ConvDims {
  int64_t N, C, H, W, O, KH, KW, OH, OW, sh, sw, ph, pw, dh, dw, G;
  int64_t Cg, Og, K, P, HW;
  bool direct; // 1x1, stride 1, no padding: col == x
  // Valid output-column range [owLo[kw], owHi[kw]) for each kw.
  std::vector<int64_t> owLo, owHi;
};

ConvDims parseDims(const char *fn, const int64_t *dims) {
  if (!dims)
    fatal("%s: dims is NULL", fn);
  ConvDims d;
  d.N = dims[0], d.C = dims[1], d.H = dims[2], d.W = dims[3], d.O = dims[4];
  d.KH = dims[5], d.KW = dims[6], d.OH = dims[7], d.OW = dims[8];
  d.sh = dims[9], d.sw = dims[10], d.ph = dims[11], d.pw = dims[12];
  d.dh = dims[13], d.dw = dims[14], d.G = dims[15];
  auto bad = [&](const char *why) {
    fatal("%s: %s (dims N=%lld C=%lld H=%lld W=%lld O=%lld KH=%lld KW=%lld "
          "OH=%lld OW=%lld stride=%lldx%lld pad=%lldx%lld dilation=%lldx%lld "
          "groups=%lld)",
          fn, why, (long long)d.N, (long long)d.C, (long long)d.H,
          (long long)d.W, (long long)d.O, (long long)d.KH, (long long)d.KW,
          (long long)d.OH, (long long)d.OW, (long long)d.sh, (long long)d.sw,
          (long long)d.ph, (long long)d.pw, (long long)d.dh, (long long)d.dw,
          (long long)d.G);
  };
  if (d.N < 0 || d.C < 0 || d.H < 0 || d.W < 0 || d.O < 0)
    bad("negative size");
  if (d.KH < 1 || d.KW < 1)
    bad("kernel size must be >= 1");
  if (d.sh < 1 || d.sw < 1 || d.dh < 1 || d.dw < 1)
    bad("strides and dilations must be >= 1");
  if (d.ph < 0 || d.pw < 0)
    bad("padding must be >= 0");
  if (d.G < 1 || d.C % d.G != 0 || d.O % d.G != 0)
    bad("groups must be >= 1 and divide C and O");
  int64_t effH = d.dh * (d.KH - 1) + 1, effW = d.dw * (d.KW - 1) + 1;
  if (d.H + 2 * d.ph < effH || d.W + 2 * d.pw < effW)
    bad("the dilated kernel is larger than the padded input");
  if (d.OH != (d.H + 2 * d.ph - effH) / d.sh + 1 ||
      d.OW != (d.W + 2 * d.pw - effW) / d.sw + 1)
    bad("OH/OW do not match (H + 2*pad - dil*(K-1) - 1) / stride + 1");
  d.Cg = d.C / d.G;
  d.Og = d.O / d.G;
  d.K = mulChecked(fn, mulChecked(fn, d.Cg, d.KH), d.KW);
  d.P = mulChecked(fn, d.OH, d.OW);
  d.HW = mulChecked(fn, d.H, d.W);
  mulChecked(fn, mulChecked(fn, d.N, d.C), d.HW);
  mulChecked(fn, mulChecked(fn, d.N, d.O), d.P);
  mulChecked(fn, d.K, d.P);
  d.direct = d.KH == 1 && d.KW == 1 && d.sh == 1 && d.sw == 1 && d.ph == 0 &&
             d.pw == 0;
  validColumns(d.W, d.OW, d.KW, d.sw, d.pw, d.dw, d.owLo, d.owHi);
  return d;
}

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

/// The tensors of a conv2d call: x [N][C][H][W], w [O][K], y [N][O][OH][OW],
/// or their gradients.
enum class Tensor { X, W, Y };
struct TensorArg {
  const char *name;
  const void *ptr;
  Tensor kind;
};

/// Parses dims, then checks each tensor argument in the order given.
ConvDims checkedDims(const char *fn, const int64_t *dims,
                     std::initializer_list<TensorArg> args) {
  ConvDims d = parseDims(fn, dims);
  for (const TensorArg &a : args)
    checkPtr(fn, a.name, a.ptr,
             a.kind == Tensor::X   ? d.N * d.C * d.HW
             : a.kind == Tensor::W ? d.O * d.K
                                   : d.N * d.O * d.P);
  return d;
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
  if (n == 0)
    return true;
  if (!emptySum)
    return false;
  std::memset(out, 0, size_t(n) * sizeof(float));
  return true;
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
  ConvDims d = checkedDims(
      "pfrt_k_conv2d", dims,
      {{"x", x, Tensor::X}, {"w", w, Tensor::W}, {"y", y, Tensor::Y}});
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
  ConvDims d = checkedDims(
      "pfrt_k_conv2d_grad_input", dims,
      {{"dy", dy, Tensor::Y}, {"w", w, Tensor::W}, {"dx", dx, Tensor::X}});
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
  ConvDims d = checkedDims(
      "pfrt_k_conv2d_grad_weight", dims,
      {{"x", x, Tensor::X}, {"dy", dy, Tensor::Y}, {"dw", dw, Tensor::W}});
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
