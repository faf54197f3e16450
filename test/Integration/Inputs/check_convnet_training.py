#!/usr/bin/env python3
"""Trains examples/mlir/convnet.mlir (conv, batch norm, max/avg/global pool,
linear) with PipeFlow on one CPU rank and compares every step's loss with an
independent float64 NumPy implementation (forward and hand-written backward
of each layer, SGD). Same logical parameters and data on both sides (the
runtime's Philox twin); a fresh seed every run."""
import os
import subprocess
import sys
import tempfile

import common

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "runtime", "python"))
import pfrt_philox as ph  # noqa: E402


def windows(x, kh, kw, stride, pad):
    """[N, C, OH, OW, KH, KW] view of the padded input."""
    x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    n, c, h, w = x.shape
    oh, ow = (h - kh) // stride + 1, (w - kw) // stride + 1
    s = x.strides
    return np.lib.stride_tricks.as_strided(
        x, (n, c, oh, ow, kh, kw),
        (s[0], s[1], s[2] * stride, s[3] * stride, s[2], s[3]))


def conv(x, w, pad):
    return np.einsum("ncijkl,ockl->noij", windows(x, 3, 3, 1, pad), w)


def conv_backward(x, w, dy, pad):
    dw = np.einsum("ncijkl,noij->ockl", windows(x, 3, 3, 1, pad), dy)
    n, c, h, ww = x.shape
    dxp = np.zeros((n, c, h + 2 * pad, ww + 2 * pad))
    oh, ow = dy.shape[2:]
    for i in range(3):
        for j in range(3):
            dxp[:, :, i:i + oh, j:j + ow] += np.einsum("noab,oc->ncab", dy,
                                                       w[:, :, i, j])
    return dxp[:, :, pad:pad + h, pad:pad + ww], dw


def init(seed, name, kind, a, shape):
    return ph.init_param(kind, a, 0.0, seed, ph.stream_id(name),
                         shape).astype(np.float64)


def reference(seed, steps, lr):
    K = ph.INIT_KAIMING_UNIFORM
    p = {
        "conv1.weight": init(seed, "conv1.weight", K, 9, (4, 1, 3, 3)),
        "conv1.bias": init(seed, "conv1.bias", K, 9, (4,)),
        "bn1.weight": np.ones(4), "bn1.bias": np.zeros(4),
        "conv2.weight": init(seed, "conv2.weight", K, 36, (8, 4, 3, 3)),
        "conv2.bias": init(seed, "conv2.bias", K, 36, (8,)),
        "fc.weight": init(seed, "fc.weight", K, 8, (10, 8)),
        "fc.bias": init(seed, "fc.bias", K, 8, (10,)),
    }
    x = ph.synthetic_batch(seed, ph.stream_id("input0"), 0,
                           (8, 1, 12, 12)).astype(np.float64)
    y = ph.synthetic_labels(10, seed, ph.stream_id("input1"), 0, (8,))
    eps, n = 1e-5, 8
    losses = []
    for _ in range(steps):
        c1 = conv(x, p["conv1.weight"], 1) + p["conv1.bias"][None, :, None, None]
        mu = c1.mean(axis=(0, 2, 3))
        var = c1.var(axis=(0, 2, 3))
        inv = 1.0 / np.sqrt(var + eps)
        xhat = (c1 - mu[None, :, None, None]) * inv[None, :, None, None]
        bn = xhat * p["bn1.weight"][None, :, None, None] + \
            p["bn1.bias"][None, :, None, None]
        r1 = np.maximum(bn, 0)
        win = windows(r1, 2, 2, 2, 0).reshape(8, 4, 6, 6, 4)
        arg = win.argmax(axis=-1)  # the first maximum, as the kernel
        p1 = win.max(axis=-1)
        c2 = conv(p1, p["conv2.weight"], 0) + p["conv2.bias"][None, :, None, None]
        r2 = np.maximum(c2, 0)
        p2 = windows(r2, 2, 2, 2, 0).mean(axis=(4, 5))
        f = p2.mean(axis=(2, 3))
        logits = f @ p["fc.weight"].T + p["fc.bias"]
        m = logits.max(axis=1, keepdims=True)
        lse = m[:, 0] + np.log(np.exp(logits - m).sum(axis=1))
        losses.append(float(np.mean(lse - logits[np.arange(n), y])))
        # Backward.
        d = np.exp(logits - lse[:, None])
        d[np.arange(n), y] -= 1.0
        d /= n
        g = {"fc.weight": d.T @ f, "fc.bias": d.sum(axis=0)}
        df = d @ p["fc.weight"]
        dp2 = np.broadcast_to(df[:, :, None, None] / 4.0, p2.shape)
        dr2 = np.repeat(np.repeat(dp2, 2, axis=2), 2, axis=3) / 4.0
        dc2 = dr2 * (c2 > 0)
        g["conv2.bias"] = dc2.sum(axis=(0, 2, 3))
        dp1, g["conv2.weight"] = conv_backward(p1, p["conv2.weight"], dc2, 0)
        dwin = np.zeros((8, 4, 6, 6, 4))
        np.put_along_axis(dwin, arg[..., None], dp1[..., None], axis=-1)
        dr1 = dwin.reshape(8, 4, 6, 6, 2, 2).transpose(0, 1, 2, 4, 3, 5) \
            .reshape(8, 4, 12, 12)
        dbn = dr1 * (bn > 0)
        g["bn1.weight"] = (dbn * xhat).sum(axis=(0, 2, 3))
        g["bn1.bias"] = dbn.sum(axis=(0, 2, 3))
        M = 8 * 12 * 12
        dxhat = dbn * p["bn1.weight"][None, :, None, None]
        dc1 = (inv[None, :, None, None] / M) * (
            M * dxhat - dxhat.sum(axis=(0, 2, 3))[None, :, None, None] -
            xhat * (dxhat * xhat).sum(axis=(0, 2, 3))[None, :, None, None])
        g["conv1.bias"] = dc1.sum(axis=(0, 2, 3))
        _, g["conv1.weight"] = conv_backward(x, p["conv1.weight"], dc1, 1)
        for k in g:
            p[k] = p[k] - lr * g[k]
    return losses


def main():
    ap = common.tool_parser(compare=True)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--lr", type=float, default=0.05)
    args = ap.parse_args()
    seed = common.pick_seed(args.seed)
    os.makedirs(args.workdir, exist_ok=True)
    lowered = os.path.join(args.workdir, "convnet.llvm.mlir")
    artifacts = os.path.join(args.workdir, "artifacts")
    common.compile_artifacts(args, args.mlir, ["-pf-compile-cpu-pipeline"],
                             lowered, artifacts)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "losses")
        subprocess.run([args.pf_run, "-n", "1", artifacts, "--steps",
                        str(args.steps), "--seed", str(seed), "--lr",
                        repr(args.lr), "--loss-out", out, "--timeout", "120"],
                       check=True, stdout=subprocess.DEVNULL)
        got = [float(l.split()[0]) for l in open(out) if l.strip()]
    want = reference(seed, args.steps, float(np.float32(args.lr)))
    rel = [abs(a - b) / abs(b) for a, b in zip(got, want)]
    for k, (a, b, r) in enumerate(zip(got, want, rel)):
        print("step %2d pipeflow %.9f numpy %.9f rel %.2e" % (k, a, b, r))
    print("max relative error %.3e" % max(rel))
    ok = len(got) == args.steps and max(rel) < args.tolerance and \
        want[-1] < want[0]
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
