#!/usr/bin/env python3
"""Trains an MLP with PipeFlow on CPU ranks and compares every step's loss
with an independent float64 NumPy implementation (hand-written backprop and
SGD) started from the same logical parameters and data.

The parameters and the data are drawn from the runtime's counter-based
generator (runtime/python/pfrt_philox.py is its bit-exact NumPy twin), so
both sides start from identical float32 values. A fresh random seed is used
on every run (printed, so a failure can be replayed with --seed).
"""
import argparse
import os
import random
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "runtime", "python"))
import pfrt_philox as ph  # noqa: E402


def linear_params(seed, prefix, fan_in, fan_out):
    """nn.Linear's default init: kaiming_uniform(fan_in) for both tensors."""
    w = ph.init_param(ph.INIT_KAIMING_UNIFORM, fan_in, 0.0, seed,
                      ph.stream_id(prefix + ".weight"), (fan_out, fan_in))
    b = ph.init_param(ph.INIT_KAIMING_UNIFORM, fan_in, 0.0, seed,
                      ph.stream_id(prefix + ".bias"), (fan_out,))
    return w.astype(np.float64), b.astype(np.float64)


def reference_losses(seed, steps, lr, layers, batch_shape, classes):
    params = [list(linear_params(seed, name, i, o)) for name, i, o in layers]
    x = ph.synthetic_batch(seed, ph.stream_id("input0"), 0, batch_shape)
    y = ph.synthetic_labels(classes, seed, ph.stream_id("input1"), 0,
                            (batch_shape[0],))
    x = x.astype(np.float64).reshape(batch_shape[0], -1)
    n = x.shape[0]
    losses = []
    for _ in range(steps):
        acts, pre = [x], []
        for w, b in params:
            h = acts[-1] @ w.T + b
            pre.append(h)
            acts.append(np.maximum(h, 0.0))
        logits = acts[-1]
        m = logits.max(axis=1, keepdims=True)
        lse = m[:, 0] + np.log(np.exp(logits - m).sum(axis=1))
        losses.append(float(np.mean(lse - logits[np.arange(n), y])))
        # Backward.
        soft = np.exp(logits - lse[:, None])
        soft[np.arange(n), y] -= 1.0
        d = soft / n
        grads = []
        for k in reversed(range(len(params))):
            d = d * (pre[k] > 0)
            grads.append((d.T @ acts[k], d.sum(axis=0)))
            d = d @ params[k][0]
        for (w_b, (dw, db)) in zip(params, reversed(grads)):
            w_b[0] = w_b[0] - lr * dw
            w_b[1] = w_b[1] - lr * db
    return losses


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pf-run", required=True)
    ap.add_argument("--artifacts", required=True)
    ap.add_argument("--ranks", type=int, required=True)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--lr", type=float, default=0.001)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--layers", required=True,
                    help="name:in:out,... in order (the seed MLP: "
                         "m_stage0.linear0:784:512,...)")
    ap.add_argument("--batch-shape", required=True, help="e.g. 16x1x28x28")
    ap.add_argument("--tolerance", type=float, default=1e-5)
    args = ap.parse_args()

    seed = args.seed if args.seed is not None else random.randrange(2**31)
    print("seed", seed)
    layers = []
    for spec in args.layers.split(","):
        name, i, o = spec.split(":")
        layers.append((name, int(i), int(o)))
    batch_shape = tuple(int(d) for d in args.batch_shape.split("x"))

    with tempfile.TemporaryDirectory() as tmp:
        loss_file = os.path.join(tmp, "losses")
        subprocess.run([args.pf_run, "-n", str(args.ranks), args.artifacts,
                        "--steps", str(args.steps), "--seed", str(seed),
                        "--lr", repr(args.lr), "--loss-out", loss_file,
                        "--timeout", "120"], check=True)
        with open(loss_file) as f:
            got = [float(line.split()[0]) for line in f if line.strip()]
    want = reference_losses(seed, args.steps, args.lr, layers, batch_shape,
                            layers[-1][2])
    if len(got) != args.steps:
        print("FAIL: expected %d losses, got %d" % (args.steps, len(got)))
        return 1
    rel = [abs(g - w) / abs(w) for g, w in zip(got, want)]
    for k, (g, w, r) in enumerate(zip(got, want, rel)):
        print("step %2d pipeflow %.9f numpy %.9f rel %.2e" % (k, g, w, r))
    print("max relative error %.3e" % max(rel))
    if max(rel) >= args.tolerance:
        print("FAIL: tolerance %.1e exceeded" % args.tolerance)
        return 1
    if not want[-1] < want[0]:
        print("FAIL: the loss did not decrease")
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
