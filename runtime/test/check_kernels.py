#!/usr/bin/python3
"""NumPy float64 reference for the pfrt_k_* CPU kernels.

  check_kernels.py DIR

DIR holds manifest.txt and the .npy files written by a pfrt-test-k-* program
(see KernelTest.h). Every case is recomputed here in float64 with
straightforward formulas (conv and pooling by windows, batch norm and the
optimizers by their textbook/PyTorch-documented formulas) and compared with
what libpfrt computed. Gradients of cases marked fd=1 are also checked by
central finite differences of the float64 reference forward along random
directions.

Error measure: max |got - ref| / max |ref| over the tensor (norm-wise; an
element-wise ratio is meaningless where the reference is ~0). Tolerances:
  exact    float32 results that are correctly rounded by construction
           (relu, add, scale, copy, fill, bias_add, transpose)
  1e-6     float64-accumulated reductions: reduce_sum, softmax-xent loss,
           global pooling, batch-norm statistics
  1e-5     everything else computed in float32 (matmul and conv forward go
           through SGEMM's float32 accumulation; optimizer trajectories)
  1e-4     conv input/weight gradients: each is a float32 SGEMM over
           K = Og (input) or OH*OW per image plus float32 accumulation over
           the batch (SGEMM beta=1) and col2im, i.e. longer float32 sums than
           the forward; and the total optimizer displacement p_10 - p_0,
           which is ~10 lr and so magnifies float32 rounding of p.
  FD       |fd - <g, v>| / |g|_2 < 1e-4 for Gaussian v (fd = central
           difference of the float64 reference; g = the C gradient).
Prints one line per kernel (cases, worst error) and exits 1 on any failure.
"""

import math
import os
import sys

import numpy as np

EXACT, REDUCE, F32, GRAD, FD = 0.0, 1e-6, 1e-5, 1e-4, 1e-4


class Ctx:
    def __init__(self, d):
        self.dir = d
        self.failures = []
        self.stats = {}  # kernel -> [cases, worst error]
        self.rng = np.random.default_rng(12345)

    def load(self, case, name):
        return np.load(os.path.join(self.dir, "%s_%s.npy" % (case["id"], name)))

    def check(self, case, what, got, ref, tol, scale=None):
        """``got`` against ``ref`` within ``tol`` relative to the largest
        reference element, or to ``scale`` where that is larger (the size
        of the terms a result sums: a sum that cancels to nearly zero is
        only as exact as its terms)."""
        kernel = case["kernel"]
        ref = np.asarray(ref, dtype=np.float64)
        tag = "%s %s %s" % (kernel, case["id"], what)
        if got.shape != ref.shape:
            self.failures.append("%s: shape %s, expected %s" %
                                 (tag, got.shape, ref.shape))
            return
        if tol == EXACT:
            want = ref.astype(np.float32)
            ok = np.array_equal(got, want)
            err = 0.0 if ok else float(np.max(np.abs(got.astype(np.float64) - ref)))
            if not ok:
                bad = np.argwhere(got != want)[0]
                self.failures.append(
                    "%s: not exact, first mismatch at %s: %r vs %r" %
                    (tag, tuple(bad), got[tuple(bad)], want[tuple(bad)]))
        else:
            err = rel_err(got, ref, scale)
            if not err <= tol:
                i = np.unravel_index(np.argmax(np.abs(got - ref)), ref.shape) \
                    if ref.size else ()
                self.failures.append(
                    "%s: error %.3g > %.0e (worst at %s: got %r, ref %r; %s)" %
                    (tag, err, tol, i, got[i] if ref.size else None,
                     ref[i] if ref.size else None, params(case)))
        s = self.stats.setdefault("%s.%s" % (kernel, what.split("[")[0]),
                                  [0, 0.0])
        s[0] += 1
        s[1] = max(s[1], err)

    def same(self, case, what, got, want):
        """Exactly ``want``: dtype, shape and every element (floats bit for
        bit, NaN where NaN)."""
        want = np.asarray(want)
        tag = "%s %s %s" % (case["kernel"], case["id"], what)
        if got.dtype != want.dtype or got.shape != want.shape:
            self.failures.append("%s: %s %s, expected %s %s" % (
                tag, got.dtype, got.shape, want.dtype, want.shape))
        elif not np.array_equal(got.view(np.uint8), want.view(np.uint8)) and not (
                got.dtype.kind == "f" and np.array_equal(got, want, equal_nan=True)):
            bad = np.argwhere(got != want)
            at = tuple(bad[0]) if len(bad) else "?"
            self.failures.append("%s: first mismatch at %s: %r vs %r" % (
                tag, at, got[at] if len(bad) else None, want[at] if len(bad) else None))
        s = self.stats.setdefault("%s.%s" % (case["kernel"], what.split("_")[0]), [0, 0.0])
        s[0] += 1

    def fd(self, case, what, f, x0, grad, h=1e-6, dirs=3):
        """Directional central differences of the float64 function f at x0
        against the C gradient grad."""
        g = grad.astype(np.float64)
        gn = np.linalg.norm(g)
        worst = 0.0
        for _ in range(dirs):
            v = self.rng.standard_normal(x0.shape)
            fd = (f(x0 + h * v) - f(x0 - h * v)) / (2 * h)
            an = float(np.sum(g * v))
            err = abs(fd - an) / max(gn, 1e-300)
            worst = max(worst, err)
        name = "fd " + case["kernel"]
        s = self.stats.setdefault(name, [0, 0.0])
        s[0] += 1
        s[1] = max(s[1], worst)
        if not worst <= FD:
            self.failures.append("%s %s: finite-difference check of %s: "
                                 "error %.3g > %.0e (%s)" %
                                 (case["kernel"], case["id"], what, worst, FD,
                                  params(case)))


def rel_err(got, ref, floor=None):
    got = np.asarray(got, dtype=np.float64)
    if ref.size == 0:
        return 0.0
    scale = max(float(np.max(np.abs(ref))), floor or 0.0)
    diff = float(np.max(np.abs(got - ref)))
    if np.isnan(diff):
        return float("inf")
    if scale == 0.0:
        return 0.0 if diff == 0.0 else float("inf")
    return diff / scale


def params(case):
    return " ".join("%s=%s" % kv for kv in case.items()
                    if kv[0] not in ("kernel", "id"))


def ints(s):
    return [] if s == "-" else [int(t) for t in s.split(",")]


def f64(a):
    return np.asarray(a, dtype=np.float64)


# --- element-wise, bias, reduce, transpose ------------------------------------

def check_elementwise(ctx, c):
    x, dy, a, b = (f64(ctx.load(c, k)) for k in ("x", "dy", "a", "b"))
    s, v = float(c["s"]), float(c["v"])
    relu = np.where(x < 0, 0.0, x)
    ctx.check(c, "relu", ctx.load(c, "relu"), relu, EXACT)
    ctx.check(c, "relu_inplace", ctx.load(c, "relu_inplace"), relu, EXACT)
    rg = np.where(relu > 0, dy, 0.0)
    ctx.check(c, "relu_grad", ctx.load(c, "relu_grad"), rg, EXACT)
    ctx.check(c, "relu_grad_inplace", ctx.load(c, "relu_grad_inplace"), rg,
              EXACT)
    # Sums and products of two float32 values are exact in float64, so the
    # float32 rounding of the float64 result is the correct float32 result.
    for k in ("add", "add_out_a", "add_out_b"):
        ctx.check(c, k, ctx.load(c, k), a + b, EXACT)
    ctx.check(c, "add_all_same", ctx.load(c, "add_all_same"), a + a, EXACT)
    for k in ("mul", "mul_inplace"):
        ctx.check(c, k, ctx.load(c, k), a * b, EXACT)
    sf = float(np.float32(s))
    ctx.check(c, "scale", ctx.load(c, "scale"), x * sf, EXACT)
    ctx.check(c, "scale_inplace", ctx.load(c, "scale_inplace"), x * sf, EXACT)
    ctx.check(c, "copy", ctx.load(c, "copy"), a, EXACT)
    ctx.check(c, "copy_inplace", ctx.load(c, "copy_inplace"), a, EXACT)
    ctx.check(c, "fill", ctx.load(c, "fill"), np.full(x.shape, v), EXACT)


def check_activation(ctx, c):
    """GELU (erf and tanh forms), tanh, sigmoid in float64, and their
    derivatives against the closed forms and central differences."""
    x, dy = (f64(ctx.load(c, k)) for k in ("x", "dy"))
    kind = int(c["kind"])
    erf = np.vectorize(math.erf)

    def f(v):
        if kind == 0:
            return 0.5 * v * (1.0 + erf(v / math.sqrt(2.0)))
        if kind == 1:
            u = math.sqrt(2.0 / math.pi) * (v + 0.044715 * v ** 3)
            return 0.5 * v * (1.0 + np.tanh(u))
        if kind == 2:
            return np.tanh(v)
        return 1.0 / (1.0 + np.exp(-v))

    def df(v):
        if kind == 0:
            return (0.5 * (1.0 + erf(v / math.sqrt(2.0)))
                    + v * np.exp(-0.5 * v * v) / math.sqrt(2.0 * math.pi))
        if kind == 1:
            k = math.sqrt(2.0 / math.pi)
            t = np.tanh(k * (v + 0.044715 * v ** 3))
            return (0.5 * (1.0 + t)
                    + 0.5 * v * (1.0 - t * t) * k * (1.0 + 3 * 0.044715 * v * v))
        if kind == 2:
            return 1.0 - np.tanh(v) ** 2
        s = 1.0 / (1.0 + np.exp(-v))
        return s * (1.0 - s)

    # The kernel's gradient against the closed form; the closed form against
    # central differences, relative to the derivative's scale but at least
    # 1e-3 (a difference quotient of values near 1e-10, far in a tail, is
    # noise at that size).
    h = 1e-5
    fd = (f(x + h) - f(x - h)) / (2 * h)
    closed = df(x)
    if x.size:
        scale = max(float(np.max(np.abs(closed))), 1e-3)
        fd_err = float(np.max(np.abs(fd - closed))) / scale
        if not fd_err <= FD:
            ctx.failures.append("activation %s: closed-form derivative vs "
                                "central differences: error %.3g > %.0e (%s)"
                                % (c["id"], fd_err, FD, params(c)))
    ctx.check(c, "y", ctx.load(c, "y"), f(x), F32)
    ctx.check(c, "dx", ctx.load(c, "dx"), closed * dy, GRAD)


def check_softmax(ctx, c):
    """Softmax / log-softmax along axis 1 of [outer, n, inner] in float64;
    the gradient as the vector-Jacobian product of that reference."""
    x, dy = (f64(ctx.load(c, k)) for k in ("x", "dy"))
    z = x - x.max(1, keepdims=True)
    p = np.exp(z) / np.exp(z).sum(1, keepdims=True)
    if int(c["log"]):
        y = np.log(p)
        dx = dy - p * dy.sum(1, keepdims=True)
    else:
        y = p
        dx = p * (dy - (dy * p).sum(1, keepdims=True))
    ctx.check(c, "y", ctx.load(c, "y"), y, F32)
    ctx.check(c, "dx", ctx.load(c, "dx"), dx, F32)


def check_layer_norm(ctx, c):
    """Layer norm over the last axis in float64; the input gradient by
    central differences of sum(y * dy), the parameter gradients exactly."""
    x, dy, g, b = (f64(ctx.load(c, k)) for k in ("x", "dy", "gamma", "beta"))
    eps = float(c["eps"])

    def ln(v):
        m = v.mean(-1, keepdims=True)
        return (v - m) / np.sqrt(((v - m) ** 2).mean(-1, keepdims=True) + eps)

    ctx.check(c, "y", ctx.load(c, "y"), ln(x) * g + b, F32)
    h = 1e-6
    dx = np.zeros_like(x)
    for idx in np.ndindex(*x.shape):
        xp, xm = x.copy(), x.copy()
        xp[idx] += h
        xm[idx] -= h
        dx[idx] = ((ln(xp) * g * dy).sum() - (ln(xm) * g * dy).sum()) / (2 * h)
    ctx.check(c, "dx", ctx.load(c, "dx"), dx, FD)
    ctx.check(c, "dgamma", ctx.load(c, "dgamma"), (dy * ln(x)).sum(0), F32)
    ctx.check(c, "dbeta", ctx.load(c, "dbeta"), dy.sum(0), F32)


def check_embedding(ctx, c):
    """Rows gathered exactly; the gradient scatter-added per id."""
    table, dy = (f64(ctx.load(c, k)) for k in ("table", "dy"))
    ids = ctx.load(c, "ids").astype(np.int64)
    ctx.check(c, "y", ctx.load(c, "y"), table[ids], EXACT)
    dt = np.zeros_like(table)
    np.add.at(dt, ids, dy)
    ctx.check(c, "dtable", ctx.load(c, "dtable"), dt, F32)


def check_embedding_rows(ctx, c):
    """Two halves of a vocabulary-split table: each looks up its rows and
    gives zeros elsewhere (the halves add up to the lookup); each gradient
    is its rows of the whole scatter-add."""
    table, dy = (f64(ctx.load(c, k)) for k in ("table", "dy"))
    ids = ctx.load(c, "ids").astype(np.int64)
    r0 = int(c["r0"])
    mine = (ids < r0)[:, None]
    ctx.check(c, "ya", ctx.load(c, "ya"), np.where(mine, table[ids], 0.0), EXACT)
    ctx.check(c, "yb", ctx.load(c, "yb"), np.where(mine, 0.0, table[ids]), EXACT)
    dt = np.zeros_like(table)
    np.add.at(dt, ids, dy)
    ctx.check(c, "da", ctx.load(c, "da"), dt[:r0], F32)
    ctx.check(c, "db", ctx.load(c, "db"), dt[r0:], F32)


def check_bias_add(ctx, c):
    x, b = f64(ctx.load(c, "x")), f64(ctx.load(c, "b"))
    ref = x + b[None, :, None]
    ctx.check(c, "y", ctx.load(c, "y"), ref, EXACT)
    ctx.check(c, "y_inplace", ctx.load(c, "y_inplace"), ref, EXACT)


def check_reduce_sum(ctx, c):
    shape, flags = ints(c["shape"]), ints(c["reduce"])
    x = f64(ctx.load(c, "x")).reshape(shape)
    axes = tuple(i for i, f in enumerate(flags) if f)
    ref = np.sum(x, axis=axes) if axes else x
    ctx.check(c, "y", ctx.load(c, "y"), ref, REDUCE)


def check_transpose(ctx, c):
    x = ctx.load(c, "x")
    ref = np.transpose(x, ints(c["perm"])) if x.ndim else x
    ctx.check(c, "y", ctx.load(c, "y"), f64(ref), EXACT)


# --- matmul ------------------------------------------------------------------

def check_matmul(ctx, c):
    a, b = f64(ctx.load(c, "a")), f64(ctx.load(c, "b"))
    if int(c["ta"]):
        a = np.swapaxes(a, 1, 2)
    if int(c["tb"]):
        b = np.swapaxes(b, 1, 2)
    ref = np.matmul(a, b)  # b's batch of 1 broadcasts
    terms = np.matmul(np.abs(a), np.abs(b))
    if c["kernel"] in ("matmul_bias", "matmul_bias_relu"):
        bias = f64(ctx.load(c, "bias"))
        ref, terms = ref + bias, terms + np.abs(bias)
    if c["kernel"] == "matmul_bias_relu":
        ref = np.maximum(ref, 0.0)
    # m = n = k = 1: a * b + bias may cancel to nearly nothing; the float32
    # result is then exact only to the size of its terms.
    scale = float(np.max(terms)) if terms.size else 0.0
    ctx.check(c, "c", ctx.load(c, "c"), ref, F32, scale)


def check_matmul_bgrad(ctx, c):
    a, b = f64(ctx.load(c, "a")), f64(ctx.load(c, "b"))
    ref = a.T @ b
    if int(c["accumulate"]):
        ref = ref + f64(ctx.load(c, "c0"))
    ctx.check(c, "c", ctx.load(c, "c"), ref, F32)
    ctx.check(c, "dbias", ctx.load(c, "dbias"), a.sum(axis=0), F32)


# --- softmax cross-entropy -----------------------------------------------------

def xent_loss(x, labels, keep=None):
    keep = np.ones(len(labels), bool) if keep is None else keep
    m = np.max(x, axis=1, keepdims=True)
    lse = np.log(np.sum(np.exp(x - m), axis=1)) + m[:, 0]
    rows = np.arange(x.shape[0])[keep]
    return float(np.mean(lse[keep] - x[rows, labels[keep]]))


def check_softmax_xent(ctx, c):
    """The mean over the rows kept (all, or those without ignore_index); with
    sum=1 their sum, its gradient, and the count of kept rows."""
    x = f64(ctx.load(c, "logits"))
    labels = ctx.load(c, "labels")
    dloss = float(ctx.load(c, "dloss"))
    keep = (labels != int(c["ignore"])) if "ignore" in c else np.ones(len(labels), bool)
    n = int(keep.sum())
    if int(c.get("sum", 0)):
        ctx.check(c, "count", ctx.load(c, "count"), float(n), EXACT)
        n = 1  # the sum: the mean times the count, its gradient unscaled
        ctx.check(c, "loss", ctx.load(c, "loss"), xent_loss(x, labels, keep) * keep.sum(), REDUCE)
    else:
        ctx.check(c, "loss", ctx.load(c, "loss"), xent_loss(x, labels, keep), REDUCE)
    e = np.exp(x - np.max(x, axis=1, keepdims=True))
    p = e / np.sum(e, axis=1, keepdims=True)
    rows = np.arange(x.shape[0])[keep]
    p[rows, labels[keep]] -= 1.0
    p[~keep] = 0.0
    ctx.check(c, "dlogits", ctx.load(c, "dlogits"), p * dloss / n, F32)
    if int(c["fd"]):
        scale = keep.sum() if int(c.get("sum", 0)) else 1
        ctx.fd(c, "dlogits", lambda z: dloss * scale * xent_loss(z, labels, keep), x,
               ctx.load(c, "dlogits"), h=1e-5)


# --- convolution ---------------------------------------------------------------

def conv_windows(dims):
    N, C, H, W, O, KH, KW, OH, OW, sh, sw, ph, pw, dh, dw, G = dims
    for kh in range(KH):
        for kw in range(KW):
            yield (kh, kw,
                   slice(kh * dh, kh * dh + sh * (OH - 1) + 1, sh),
                   slice(kw * dw, kw * dw + sw * (OW - 1) + 1, sw))


def conv_ref(x, w, dims):
    N, C, H, W, O, KH, KW, OH, OW, sh, sw, ph, pw, dh, dw, G = dims
    Cg, Og = C // G, O // G
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    y = np.zeros((N, O, OH, OW))
    for kh, kw, si, sj in conv_windows(dims):
        xs = xp[:, :, si, sj]
        for g in range(G):
            y[:, g * Og:(g + 1) * Og] += np.einsum(
                "nchw,oc->nohw", xs[:, g * Cg:(g + 1) * Cg],
                w[g * Og:(g + 1) * Og, :, kh, kw])
    return y


def conv_grads_ref(x, w, dy, dims):
    N, C, H, W, O, KH, KW, OH, OW, sh, sw, ph, pw, dh, dw, G = dims
    Cg, Og = C // G, O // G
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    dxp = np.zeros_like(xp)
    dwr = np.zeros_like(w)
    for kh, kw, si, sj in conv_windows(dims):
        xs = xp[:, :, si, sj]
        for g in range(G):
            cs, os_ = slice(g * Cg, (g + 1) * Cg), slice(g * Og, (g + 1) * Og)
            dxp[:, cs, si, sj] += np.einsum("nohw,oc->nchw", dy[:, os_],
                                            w[os_, :, kh, kw])
            dwr[os_, :, kh, kw] = np.einsum("nohw,nchw->oc", dy[:, os_],
                                            xs[:, cs])
    return dxp[:, :, ph:ph + H, pw:pw + W], dwr


def check_conv2d(ctx, c):
    dims = ints(c["dims"])
    x, w, dy = (f64(ctx.load(c, k)) for k in ("x", "w", "dy"))
    ctx.check(c, "y", ctx.load(c, "y"), conv_ref(x, w, dims), F32)
    dx, dw = conv_grads_ref(x, w, dy, dims)
    ctx.check(c, "dx", ctx.load(c, "dx"), dx, GRAD)
    ctx.check(c, "dw", ctx.load(c, "dw"), dw, GRAD)
    if int(c["fd"]):
        ctx.fd(c, "dx", lambda z: np.sum(dy * conv_ref(z, w, dims)), x,
               ctx.load(c, "dx"), h=1e-3)
        ctx.fd(c, "dw", lambda z: np.sum(dy * conv_ref(x, z, dims)), w,
               ctx.load(c, "dw"), h=1e-3)


# --- pooling -------------------------------------------------------------------

def pool_windows(dims):
    N, C, H, W, OH, OW, KH, KW, sh, sw, ph, pw = dims
    for kh in range(KH):
        for kw in range(KW):  # row-major scan of the window
            yield (kh, kw, slice(kh, kh + sh * (OH - 1) + 1, sh),
                   slice(kw, kw + sw * (OW - 1) + 1, sw))


def max_pool_ref(x, dims):
    """Returns the output and, per output, the flat plane index of the first
    maximum (padding is -inf, so it never wins)."""
    N, C, H, W, OH, OW, KH, KW, sh, sw, ph, pw = dims
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)),
                constant_values=-np.inf)
    best = np.full((N, C, OH, OW), -np.inf)
    arg = np.full((N, C, OH, OW), -1, dtype=np.int64)
    oh = np.arange(OH)[:, None]
    ow = np.arange(OW)[None, :]
    for kh, kw, si, sj in pool_windows(dims):
        v = xp[:, :, si, sj]
        take = v > best  # strictly greater: the first maximum stays
        best = np.where(take, v, best)
        idx = (oh * sh - ph + kh) * W + (ow * sw - pw + kw)
        arg = np.where(take, idx[None, None], arg)
    return best, arg


def check_max_pool2d(ctx, c):
    dims = ints(c["dims"])
    N, C, H, W, OH, OW = dims[:6]
    x, dy = f64(ctx.load(c, "x")), f64(ctx.load(c, "dy"))
    y, arg = max_pool_ref(x, dims)
    ctx.check(c, "y", ctx.load(c, "y"), y, EXACT)
    assert (arg >= 0).all()
    dx = np.zeros((N * C, H * W))
    rows = np.repeat(np.arange(N * C), OH * OW)
    np.add.at(dx, (rows, arg.reshape(-1)), dy.reshape(-1))
    ctx.check(c, "dx", ctx.load(c, "dx"), dx.reshape(x.shape), F32)
    if int(c["fd"]):  # distinct values, gaps >> h: max is locally linear
        ctx.fd(c, "dx", lambda z: np.sum(dy * max_pool_ref(z, dims)[0]), x,
               ctx.load(c, "dx"), h=1e-7)


def avg_pool_ref(x, dims):
    N, C, H, W, OH, OW, KH, KW, sh, sw, ph, pw = dims
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    y = np.zeros((N, C, OH, OW))
    for kh, kw, si, sj in pool_windows(dims):
        y += xp[:, :, si, sj]
    return y / (KH * KW)  # count_include_pad=True


def check_avg_pool2d(ctx, c):
    dims = ints(c["dims"])
    N, C, H, W, OH, OW, KH, KW, sh, sw, ph, pw = dims
    x, dy = f64(ctx.load(c, "x")), f64(ctx.load(c, "dy"))
    ctx.check(c, "y", ctx.load(c, "y"), avg_pool_ref(x, dims), F32)
    dxp = np.zeros((N, C, H + 2 * ph, W + 2 * pw))
    for kh, kw, si, sj in pool_windows(dims):
        dxp[:, :, si, sj] += dy / (KH * KW)
    ctx.check(c, "dx", ctx.load(c, "dx"), dxp[:, :, ph:ph + H, pw:pw + W], F32)
    if int(c["fd"]):
        ctx.fd(c, "dx", lambda z: np.sum(dy * avg_pool_ref(z, dims)), x,
               ctx.load(c, "dx"), h=1e-3)


def check_global_avg_pool(ctx, c):
    x, dy = f64(ctx.load(c, "x")), f64(ctx.load(c, "dy"))
    hw = x.shape[2]
    ctx.check(c, "y", ctx.load(c, "y"), x.mean(axis=2), REDUCE)
    ctx.check(c, "dx", ctx.load(c, "dx"),
              np.repeat(dy[:, :, None] / hw, hw, axis=2), F32)


# --- batch norm ----------------------------------------------------------------

def bn_forward(x, gamma, beta, eps):
    mean = x.mean(axis=(0, 2))
    var = x.var(axis=(0, 2))  # biased
    xhat = (x - mean[None, :, None]) / np.sqrt(var + eps)[None, :, None]
    return xhat * gamma[None, :, None] + beta[None, :, None], mean, var, xhat


def check_batch_norm(ctx, c):
    x, dy = f64(ctx.load(c, "x")), f64(ctx.load(c, "dy"))
    affine = int(c["affine"])
    C = x.shape[1]
    gamma = f64(ctx.load(c, "gamma")) if affine else np.ones(C)
    beta = f64(ctx.load(c, "beta")) if affine else np.zeros(C)
    rmean, rvar = f64(ctx.load(c, "rmean")), f64(ctx.load(c, "rvar"))
    eps, mom = float(c["eps"]), float(c["momentum"])
    M = x.shape[0] * x.shape[2]
    y, mean, var, xhat = bn_forward(x, gamma, beta, eps)
    ctx.check(c, "y", ctx.load(c, "y"), y, F32)
    if affine:
        ctx.check(c, "new_mean", ctx.load(c, "new_mean"),
                  (1 - mom) * rmean + mom * mean, F32)
        ctx.check(c, "new_var", ctx.load(c, "new_var"),
                  (1 - mom) * rvar + mom * var * M / (M - 1), F32)
    else:  # no running statistics: the buffers stay untouched
        ctx.check(c, "new_mean", ctx.load(c, "new_mean"), rmean, EXACT)
        ctx.check(c, "new_var", ctx.load(c, "new_var"), rvar, EXACT)
    istd = 1.0 / np.sqrt(var + eps)
    mdy = dy.mean(axis=(0, 2))
    mdyx = (dy * xhat).mean(axis=(0, 2))
    dx = (gamma * istd)[None, :, None] * (
        dy - mdy[None, :, None] - xhat * mdyx[None, :, None])
    ctx.check(c, "dx", ctx.load(c, "dx"), dx, GRAD)
    ctx.check(c, "dgamma", ctx.load(c, "dgamma"),
              (dy * xhat).sum(axis=(0, 2)), F32)
    ctx.check(c, "dbeta", ctx.load(c, "dbeta"), dy.sum(axis=(0, 2)), REDUCE)
    if int(c["fd"]):
        h = 1e-6 * max(1.0, float(np.abs(x).max()))
        ctx.fd(c, "dx",
               lambda z: np.sum(dy * bn_forward(z, gamma, beta, eps)[0]), x,
               ctx.load(c, "dx"), h=h)
        ctx.fd(c, "dgamma",
               lambda z: np.sum(dy * bn_forward(x, z, beta, eps)[0]), gamma,
               ctx.load(c, "dgamma"))
        ctx.fd(c, "dbeta",
               lambda z: np.sum(dy * bn_forward(x, gamma, z, eps)[0]), beta,
               ctx.load(c, "dbeta"))


# --- optimizers ----------------------------------------------------------------

def check_traj(ctx, c, traj, p0, ref_traj):
    T = traj.shape[0]
    for t in range(T):
        ctx.check(c, "p[step %d]" % (t + 1), traj[t], ref_traj[t], F32)
    ctx.check(c, "displacement", traj[T - 1].astype(np.float64) - p0,
              ref_traj[T - 1] - p0, GRAD)


def check_sgd(ctx, c):
    p0 = f64(ctx.load(c, "p0"))
    grads, lrs = f64(ctx.load(c, "grads")), f64(ctx.load(c, "lrs"))
    mom, damp = float(c["momentum"]), float(c["dampening"])
    wd, nesterov = float(c["weight_decay"]), int(c["nesterov"])
    p, buf, ref = p0.copy(), None, []
    for t in range(1, int(c["steps"]) + 1):
        g = grads[t - 1].copy()
        if wd != 0:
            g = g + wd * p
        if mom != 0:
            buf = g.copy() if t == 1 else mom * buf + (1 - damp) * g
            g = g + mom * buf if nesterov else buf
        p = p - lrs[t - 1] * g
        ref.append(p)
    check_traj(ctx, c, ctx.load(c, "traj"), p0, ref)
    if mom != 0:
        ctx.check(c, "momentum_buffer", ctx.load(c, "buf"), buf, F32)


def check_adam(ctx, c):
    p0 = f64(ctx.load(c, "p0"))
    m, v = f64(ctx.load(c, "m0")), f64(ctx.load(c, "v0"))
    grads, lrs = f64(ctx.load(c, "grads")), f64(ctx.load(c, "lrs"))
    b1, b2, eps = float(c["beta1"]), float(c["beta2"]), float(c["eps"])
    wd, decoupled = float(c["weight_decay"]), int(c["decoupled"])
    bc = int(c["bias_correction"])
    p, ref = p0.copy(), []
    for t in range(1, int(c["steps"]) + 1):
        g, lr = grads[t - 1].copy(), lrs[t - 1]
        if wd != 0 and decoupled:
            p = p * (1 - lr * wd)
        elif wd != 0:
            g = g + wd * p
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        if bc:
            step_size = lr / (1 - b1 ** t)
            denom = np.sqrt(v) / np.sqrt(1 - b2 ** t) + eps
        else:
            step_size = lr
            denom = np.sqrt(v) + eps
        p = p - step_size * m / denom
        ref.append(p)
    check_traj(ctx, c, ctx.load(c, "traj"), p0, ref)
    ctx.check(c, "m", ctx.load(c, "m"), m, F32)
    ctx.check(c, "v", ctx.load(c, "v"), v, F32)


def check_tensor_elementwise(ctx, c):
    """sub, div (float32 rounding of the float64 result) and masked_fill."""
    a, b = f64(ctx.load(c, "a")), f64(ctx.load(c, "b"))
    v = float(np.float32(float(c["v"])))
    for k in ("sub", "sub_inplace"):
        ctx.check(c, k, ctx.load(c, k), a - b, EXACT)
    for k in ("div", "div_inplace"):
        ctx.check(c, k, ctx.load(c, k), a / b, F32)
    for k, m in (("fill_f", "mask_f"), ("fill_i", "mask_i")):
        mask = f64(ctx.load(c, m))
        ctx.check(c, k, ctx.load(c, k), np.where(mask != 0, v, a), EXACT)


def check_broadcast(ctx, c):
    out = ints(c["out"])
    x = f64(ctx.load(c, "x"))
    ref = np.broadcast_to(x.reshape(ints(c["shape"])), out)
    ctx.check(c, "y", ctx.load(c, "y").reshape(out), ref, EXACT)
    ref_i = np.trunc(np.float32(x) * np.float32(1000)).astype(np.float64)
    ctx.check(c, "y_i64", ctx.load(c, "y_i64").reshape(out),
              np.broadcast_to(ref_i.reshape(ints(c["shape"])), out), EXACT)


# --- comparisons, boolean tensors, casts (test_k_logical.cpp) -----------------

DTYPES = ("f32", "i64", "i32", "bool")
PREDICATES = (np.equal, np.not_equal, np.less, np.less_equal, np.greater,
              np.greater_equal)
LIMITS = {"i64": (-2**63, 2**63 - 1), "i32": (-2**31, 2**31 - 1)}


def cast_ref(x, to):
    """pfrt_k_cast's rule: to bool x != 0 (NaN true); float to integer toward
    zero, NaN 0, clamped to the type's range; integer to integer keeps the
    low bits; from bool 0 or 1."""
    want = {"f32": np.float32, "i64": np.int64, "i32": np.int32, "bool": np.bool_}[to]
    if to == "bool":
        return x != 0
    if to == "f32" or x.dtype.kind in "iub":
        return x.astype(want)  # (numpy's integer casts wrap)
    lo, hi = LIMITS[to]
    out = [0 if math.isnan(v) else lo if v <= lo else hi if v >= hi else int(v)
           for v in x.astype(np.float64).tolist()]
    return np.array(out, dtype=want)


def check_logical(ctx, c):
    """pfrt_k_compare, _logical, _where, _cast and masked_fill's masks: exact
    (bools, integers, and floats bit for bit with NaN where NaN)."""
    a = {d: ctx.load(c, "a_" + d) for d in DTYPES}
    b = {d: ctx.load(c, "b_" + d) for d in DTYPES}
    for d in DTYPES:
        for p, rel in enumerate(PREDICATES):
            ctx.same(c, "cmp_%s_%d" % (d, p), ctx.load(c, "cmp_%s_%d" % (d, p)),
                     rel(a[d], b[d]))
    ab, bb = a["bool"], b["bool"]
    for k, want in enumerate((ab & bb, ab | bb, ab ^ bb, ~ab)):
        ctx.same(c, "logical_%d" % k, ctx.load(c, "logical_%d" % k), want)
    ctx.same(c, "logical_inplace", ctx.load(c, "logical_inplace"), ab ^ bb)
    cond = ctx.load(c, "cond")
    ctx.same(c, "cond", cond, a["f32"] < b["f32"])
    for d in DTYPES:
        ctx.same(c, "where_" + d, ctx.load(c, "where_" + d), np.where(cond, a[d], b[d]))
    for f in DTYPES:
        for t in DTYPES:
            name = "cast_%s_%s" % (f, t)
            ctx.same(c, name, ctx.load(c, name), cast_ref(a[f], t))
    v = np.float32(float(c["v"]))
    for d in DTYPES:
        ctx.same(c, "fill_" + d, ctx.load(c, "fill_" + d),
                 np.where(b[d] != 0, v, a["f32"]).astype(np.float32))


def check_bool_moves(ctx, c):
    x, y = ctx.load(c, "x"), ctx.load(c, "y")
    ctx.same(c, "broadcast", y, np.broadcast_to(x, (int(c["rows"]), int(c["cols"]))))
    box = np.zeros((4, 5), np.bool_)
    box[:3, :4] = y[1:4, 2:6]
    ctx.same(c, "copy_box", ctx.load(c, "box"), box)


CHECKS = {
    "elementwise": check_elementwise,
    "activation": check_activation,
    "softmax": check_softmax,
    "layer_norm": check_layer_norm,
    "embedding": check_embedding,
    "embedding_rows": check_embedding_rows,
    "bias_add": check_bias_add,
    "reduce_sum": check_reduce_sum,
    "transpose": check_transpose,
    "tensor_elementwise": check_tensor_elementwise,
    "broadcast": check_broadcast,
    "matmul": check_matmul,
    "matmul_bias": check_matmul,
    "matmul_bias_relu": check_matmul,
    "matmul_bgrad": check_matmul_bgrad,
    "softmax_xent": check_softmax_xent,
    "conv2d": check_conv2d,
    "max_pool2d": check_max_pool2d,
    "avg_pool2d": check_avg_pool2d,
    "global_avg_pool": check_global_avg_pool,
    "batch_norm": check_batch_norm,
    "sgd": check_sgd,
    "adam": check_adam,
    "logical": check_logical,
    "bool_moves": check_bool_moves,
}


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    ctx = Ctx(sys.argv[1])
    n = 0
    with open(os.path.join(ctx.dir, "manifest.txt")) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            case = dict(tok.split("=", 1) for tok in line.split())
            CHECKS[case["kernel"]](ctx, case)
            n += 1
    if n == 0:
        ctx.failures.append("no cases in the manifest")
    for name in sorted(ctx.stats):
        cnt, worst = ctx.stats[name]
        print("%-28s %4d checks, worst error %.3g" % (name, cnt, worst))
    if ctx.failures:
        print("%d FAILURES:" % len(ctx.failures))
        for msg in ctx.failures[:40]:
            print("  " + msg)
        sys.exit(1)
    print("all %d cases OK" % n)


if __name__ == "__main__":
    main()
