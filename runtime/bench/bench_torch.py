#!/usr/bin/env python3
"""PyTorch (one thread) timings of the ops that pfrt-bench-kernels times.

  bench_torch.py [FILTER]        prints `<name> <ms>` lines
  bench_torch.py --compare PFRT_OUT TORCH_OUT   prints a side-by-side table

Each op calls the ATen function that PyTorch's own forward or autograd
backward calls (e.g. aten.convolution_backward, native_batch_norm_backward,
max_pool2d_with_indices_backward), so the comparison is kernel to kernel.
Where PyTorch keeps state from the forward pass (pooling indices,
batch-norm mean/invstd) that state is precomputed and not timed, while
pfrt's kernels recompute it: that cost is part of pfrt's numbers.
"""

import statistics
import sys
import time


def timed(fn):
    fn()
    t, total = [], 0.0
    while len(t) < 5 or (total < 300.0 and len(t) < 200):
        t0 = time.perf_counter()
        fn()
        ms = (time.perf_counter() - t0) * 1e3
        t.append(ms)
        total += ms
    return statistics.median(t)


def main(flt):
    import torch
    import torch.nn.functional as F
    torch.set_num_threads(1)
    torch.manual_seed(0)
    aten = torch.ops.aten

    def run(name, fn):
        if flt and flt not in name:
            return
        with torch.no_grad():
            print("%-28s %10.4f" % (name, timed(fn)), flush=True)

    r = lambda *s: torch.rand(*s) * 2 - 1
    B, I, H = 128, 784, 512
    x, w, dy, bias = r(B, I), r(H, I), r(B, H), r(H)
    y, dx, dw = torch.empty(B, H), torch.empty(B, I), torch.empty(H, I)
    run("mlp.linear.fwd", lambda: torch.mm(x, w.t(), out=y))
    run("mlp.linear.dgrad", lambda: torch.mm(dy, w, out=dx))
    run("mlp.linear.wgrad", lambda: torch.mm(dy.t(), x, out=dw))
    run("mlp.bias_add", lambda: torch.add(y, bias, out=y))
    run("mlp.bias_grad", lambda: dy.sum(0))
    run("mlp.relu", lambda: torch.relu(dy))
    run("mlp.relu_grad", lambda: aten.threshold_backward(dy, y, 0))
    for C in (10, 1000):
        logits = (r(B, C) * 3).requires_grad_()
        labels = torch.arange(B) * 7 % C

        def xent():
            with torch.enable_grad():
                loss = F.cross_entropy(logits, labels)
                loss.backward()
        run("xent%d.fwd+bwd" % C, xent)

    n = H * I
    for name, opt in (
            ("optim.sgd_momentum",
             lambda p: torch.optim.SGD([p], lr=0.01, momentum=0.9)),
            ("optim.adam", lambda p: torch.optim.Adam([p], lr=0.01)),
            ("optim.adamw", lambda p: torch.optim.AdamW([p], lr=0.01))):
        p = torch.nn.Parameter(r(n))
        p.grad = r(n)
        o = opt(p)
        o.step()
        run(name, o.step)

    def conv(name, N, C, Hh, O, K, s, p, g):
        x, w = r(N, C, Hh, Hh), r(O, C // g, K, K)
        y = F.conv2d(x, w, None, s, p, 1, g)
        dy = r(*y.shape)
        run(name + ".fwd", lambda: F.conv2d(x, w, None, s, p, 1, g))
        run(name + ".dgrad", lambda: aten.convolution_backward(
            dy, x, w, None, [s, s], [p, p], [1, 1], False, [0, 0], g,
            [True, False, False]))
        run(name + ".wgrad", lambda: aten.convolution_backward(
            dy, x, w, None, [s, s], [p, p], [1, 1], False, [0, 0], g,
            [False, True, False]))

    conv("conv.c3_64_32x32", 32, 3, 32, 64, 3, 1, 1, 1)
    conv("conv.c64_64_32x32", 32, 64, 32, 64, 3, 1, 1, 1)
    conv("conv.c64_128_s2", 32, 64, 32, 128, 3, 2, 1, 1)
    conv("conv.c128_128_16x16", 32, 128, 16, 128, 3, 1, 1, 1)
    conv("conv.c256_256_8x8", 32, 256, 8, 256, 3, 1, 1, 1)
    conv("conv.1x1_128_256_16x16", 32, 128, 16, 256, 1, 1, 0, 1)
    conv("conv.dw64_32x32", 32, 64, 32, 64, 3, 1, 1, 64)

    N, C = 32, 64
    x, dy, x2 = r(N, C, 32, 32), r(N, C, 32, 32), r(N, C, 32, 32)
    gamma, beta = torch.rand(C) + 0.5, r(C)
    rm, rv = torch.zeros(C), torch.ones(C)
    y = torch.empty_like(x)
    run("bn.fwd", lambda: aten.native_batch_norm(x, gamma, beta, rm, rv, True,
                                                 0.1, 1e-5))
    _, sm, si = aten.native_batch_norm(x, gamma, beta, rm, rv, True, 0.1, 1e-5)
    run("bn.bwd", lambda: aten.native_batch_norm_backward(
        dy, x, gamma, rm, rv, sm, si, True, 1e-5, [True, True, True]))
    run("ew.relu_2M", lambda: torch.clamp_min(x, 0, out=y))
    run("ew.relu_grad_2M", lambda: aten.threshold_backward(dy, x, 0))
    run("ew.add_2M", lambda: torch.add(x, x2, out=y))
    run("ew.add_inplace_2M", lambda: y.add_(x2))
    run("ew.copy_2M", lambda: y.copy_(x))
    run("ew.scale_2M", lambda: torch.mul(x, 0.5, out=y))
    x3 = x.view(N, C, 1024)
    run("layout.transpose_021", lambda: x3.permute(0, 2, 1).contiguous())
    run("reduce.conv_bias_grad", lambda: dy.sum((0, 2, 3)))
    run("bias_add.conv", lambda: torch.add(x, beta.view(1, C, 1, 1), out=y))
    for k in (2, 3):
        s, p = 2, (1 if k == 3 else 0)
        yy, idx = aten.max_pool2d_with_indices(x, [k, k], [s, s], [p, p])
        dyy = r(*yy.shape)
        nm = "pool.max%dx%d" % (k, k)
        run(nm + ".fwd", lambda: aten.max_pool2d_with_indices(
            x, [k, k], [s, s], [p, p]))
        run(nm + ".bwd", lambda: aten.max_pool2d_with_indices_backward(
            dyy, x, [k, k], [s, s], [p, p], [1, 1], False, idx))
    dyy = r(N, C, 16, 16)
    run("pool.avg2x2.fwd", lambda: F.avg_pool2d(x, 2, 2))
    run("pool.avg2x2.bwd", lambda: aten.avg_pool2d_backward(
        dyy, x, [2, 2], [2, 2], [0, 0], False, True, None))
    run("pool.global.fwd", lambda: x.mean((2, 3)))
    dg = r(N, C)
    run("pool.global.bwd", lambda: (dg / 1024).view(N, C, 1, 1)
        .expand(N, C, 32, 32).contiguous())

    # The GPT of bench/gpt_bench.py (see bench_kernels.cpp).
    R, C, F, S, T = 1024, 128, 512, 16 * 4 * 64, 64
    x, dy = r(R, C), r(R, C)
    gamma, beta = torch.rand(C) + 0.5, r(C)
    run("gpt.layer_norm.fwd", lambda: aten.native_layer_norm(x, [C], gamma, beta, 1e-5))
    _, mean, rstd = aten.native_layer_norm(x, [C], gamma, beta, 1e-5)
    run("gpt.layer_norm.bwd", lambda: aten.native_layer_norm_backward(
        dy, x, [C], mean, rstd, gamma, beta, [True, True, True]))
    h, dh = r(R, F) * 3, r(R, F)
    run("gpt.gelu.fwd", lambda: aten.gelu(h))
    run("gpt.gelu.bwd", lambda: aten.gelu_backward(dh, h))
    att, datt = r(S, T) * 4, r(S, T)
    run("gpt.softmax.fwd", lambda: aten._softmax(att, -1, False))
    p = aten._softmax(att, -1, False)
    run("gpt.softmax.bwd", lambda: aten._softmax_backward_data(datt, p, -1, torch.float32))


def compare(a, b):
    def read(path):
        d = {}
        for line in open(path):
            parts = line.split()
            if len(parts) == 2:
                try:
                    d[parts[0]] = float(parts[1])
                except ValueError:
                    pass
        return d
    pf, th = read(a), read(b)
    print("%-28s %10s %10s %8s" % ("op", "pfrt ms", "torch ms", "ratio"))
    for k in pf:
        if k in th:
            print("%-28s %10.4f %10.4f %8.2f" % (k, pf[k], th[k], pf[k] / th[k]))


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--compare":
        compare(sys.argv[2], sys.argv[3])
    else:
        main(sys.argv[1] if len(sys.argv) > 1 else "")
