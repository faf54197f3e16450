//===- test_k_conv.cpp - conv2d forward, input and weight gradients -------===//
//
// Odd sizes, groups (incl. depthwise), strides, padding (incl. padding
// larger than the kernel), dilation, rectangular kernels, the direct 1x1
// path and 1x1 with stride. Small cases are also checked by finite
// differences (fd=1).
//
//===----------------------------------------------------------------------===//

#include "KernelTest.h"

int main(int argc, char **argv) {
  kt::Harness h("k-conv", argc, argv);
  // N C H W O KH KW sh sw ph pw dh dw G fd
  const int64_t cfgs[][15] = {
      {2, 3, 9, 11, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
      {2, 4, 10, 9, 6, 3, 3, 2, 2, 1, 1, 1, 1, 2, 1},
      {1, 3, 13, 12, 4, 3, 2, 1, 2, 2, 0, 2, 2, 1, 1},
      {3, 6, 7, 7, 6, 3, 3, 1, 1, 1, 1, 1, 1, 6, 0},
      {2, 5, 8, 6, 7, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1},
      {2, 4, 9, 9, 4, 1, 1, 2, 2, 0, 0, 1, 1, 2, 0},
      {1, 2, 5, 5, 3, 5, 5, 1, 1, 2, 2, 1, 1, 1, 1},
      {2, 3, 17, 15, 9, 7, 3, 3, 2, 3, 1, 1, 2, 3, 0},
      {1, 2, 4, 4, 2, 3, 3, 1, 1, 3, 3, 1, 1, 1, 1},
      {4, 16, 20, 20, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 0},
      {2, 8, 15, 15, 12, 3, 3, 2, 2, 1, 1, 1, 1, 4, 0},
      {1, 3, 6, 20, 5, 2, 4, 2, 3, 1, 2, 2, 1, 1, 1},
      {1, 2, 3, 80, 2, 1, 70, 1, 1, 0, 5, 1, 1, 1, 1}, // a very wide kernel
  };
  for (const auto &c : cfgs) {
    int64_t N = c[0], C = c[1], H = c[2], W = c[3], O = c[4], KH = c[5],
            KW = c[6], sh = c[7], sw = c[8], ph = c[9], pw = c[10], dh = c[11],
            dw = c[12], G = c[13];
    int64_t OH = (H + 2 * ph - dh * (KH - 1) - 1) / sh + 1;
    int64_t OW = (W + 2 * pw - dw * (KW - 1) - 1) / sw + 1;
    const int64_t dims[16] = {N,  C,  H,  W,  O,  KH, KW, OH,
                              OW, sh, sw, ph, pw, dh, dw, G};
    std::string id = h.newCase();
    auto x = h.uniform(N * C * H * W), w = h.uniform(O * (C / G) * KH * KW),
         dy = h.uniform(N * O * OH * OW);
    std::vector<float> y(dy.size(), 9.0f), dx(x.size(), 9.0f),
        dwt(w.size(), 9.0f);
    pfrt_k_conv2d(x.data(), w.data(), y.data(), dims);
    pfrt_k_conv2d_grad_input(dy.data(), w.data(), dx.data(), dims);
    pfrt_k_conv2d_grad_weight(x.data(), dy.data(), dwt.data(), dims);
    h.save(id, "x", {N, C, H, W}, x);
    h.save(id, "w", {O, C / G, KH, KW}, w);
    h.save(id, "dy", {N, O, OH, OW}, dy);
    h.save(id, "y", {N, O, OH, OW}, y);
    h.save(id, "dx", {N, C, H, W}, dx);
    h.save(id, "dw", {O, C / G, KH, KW}, dwt);
    h.record("conv2d", id, "dims=%s fd=%lld",
             kt::join(kt::Shape(dims, dims + 16)).c_str(), (long long)c[14]);
  }
  return 0;
}
