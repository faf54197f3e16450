#!/usr/bin/env python3
"""Trains an MLP with PipeFlow on CPU ranks and compares every step's loss
with an independent float64 NumPy implementation (hand-written backprop and
SGD) started from the same logical parameters and data.

The parameters and the data are drawn from the runtime's counter-based
generator (runtime/python/pfrt_philox.py is its bit-exact NumPy twin), so
both sides start from identical float32 values. A fresh random seed is used
on every run (printed, so a failure can be replayed with --seed).
"""
import os
import json
import subprocess
import sys
import tempfile

import common

import numpy as np


HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "runtime", "python"))
import pfrt_philox as ph  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "test", "python"))
import mlp_reference as ref  # noqa: E402


def reference_losses(seed, steps, lr, layers, batch_shape, classes, args):
    """The float64 NumPy reference shared with the Python front end's tests
    (test/python/mlp_reference.py), from the same initial parameters and
    data as the compiled program."""
    params = [ref.linear_init(seed, name, i, o) for name, i, o in layers]
    x = ph.synthetic_batch(seed, ph.stream_id("input0"), 0, batch_shape)
    y = ph.synthetic_labels(classes, seed, ph.stream_id("input1"), 0,
                            (batch_shape[0],))
    wd = args.weight_decay if args.weight_decay >= 0 else \
        (0.01 if args.optimizer == "adamw" else 0.0)
    opt = ref.Optimizer(args.optimizer, momentum=args.momentum,
                        dampening=args.dampening, nesterov=args.nesterov,
                        weight_decay=wd, betas=(args.beta1, args.beta2),
                        eps=args.eps, bias_correction=args.bias_correction)
    dropout = None
    if args.dropout > 0:
        p = args.dropout

        def dropout(j, step, k, shape):
            if j + 1 == len(layers):
                return None
            s = ph.stream_for_step(ph.stream_for_step(j + 1, step), k)
            u = ph.init_param(ph.INIT_UNIFORM, 0.0, 1.0, seed, s, shape)
            return np.where(u >= np.float32(p), np.float64(np.float32(1.0 / (1.0 - p))), 0.0)
    return ref.train(params, x, y, [lr] * steps, args.microbatches, opt,
                     dropout=dropout)


def check_memory_plan(stdout, artifacts, ranks):
    """Every rank's arena is the compiler's plan, and the step used all of
    it: the measured high-water mark equals the planned peak exactly."""
    with open(os.path.join(artifacts, "manifest.json")) as f:
        planned = {r["rank"]: r["memory"]["arena_bytes"]
                   for r in json.load(f)["ranks"]}
    seen = {}
    for line in stdout.splitlines():
        w = line.split()
        if len(w) > 3 and w[0] == "memory" and w[1] == "rank":
            fields = dict(zip(w[3::2], map(int, w[4::2])))
            seen[int(w[2])] = (fields["planned_bytes"],
                               fields["high_water_bytes"])
    if sorted(seen) != list(range(ranks)):
        print("FAIL: memory reports from ranks %s" % sorted(seen))
        return 1
    for r, (arena, high) in sorted(seen.items()):
        if arena != planned[r] or high != planned[r]:
            print("FAIL: rank %d planned %d bytes, arena %d, high-water %d" %
                  (r, planned[r], arena, high))
            return 1
    print("memory plan: high-water == planned on %d ranks" % ranks)
    return 0


def main():
    ap = common.tool_parser(mlir_help="forward + loss program",
                            compare=True)
    ap.add_argument("--microbatches", type=int, default=1)
    ap.add_argument("--schedule", default="none")
    ap.add_argument("--num-chunks", type=int, default=1)
    ap.add_argument("--optimizer", default="sgd")
    ap.add_argument("--momentum", type=float, default=0.0)
    ap.add_argument("--dampening", type=float, default=0.0)
    ap.add_argument("--nesterov", action="store_true")
    ap.add_argument("--weight-decay", type=float, default=-1.0)
    ap.add_argument("--beta1", type=float, default=0.9)
    ap.add_argument("--beta2", type=float, default=0.999)
    ap.add_argument("--eps", type=float, default=1e-8)
    ap.add_argument("--no-bias-correction", dest="bias_correction",
                    action="store_false")
    ap.add_argument("--ranks", type=int, required=True)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--lr", type=float, default=0.001)
    ap.add_argument("--layers", required=True,
                    help="name:in:out,... in order (the seed MLP: "
                         "m_stage0.linear0:784:512,...)")
    ap.add_argument("--batch-shape", required=True, help="e.g. 16x1x28x28")
    ap.add_argument("--dropout", type=float, default=0.0,
                    help="the program has pf.dropout(p) after every hidden "
                         "layer (gen_staged_mlp.py --dropout): the reference "
                         "draws the same masks")
    ap.add_argument("--pipeline-options", default="",
                    help="more pf-compile-cpu-pipeline options, e.g. "
                         "'auto-stages=4 balance=flops'")
    args = ap.parse_args()

    seed = common.pick_seed(args.seed)
    layers = []
    for spec in args.layers.split(","):
        name, i, o = spec.split(":")
        layers.append((name, int(i), int(o)))
    batch_shape = tuple(int(d) for d in args.batch_shape.split("x"))

    options = ["optimizer=%s" % args.optimizer,
               "accumulation-steps=%d" % args.microbatches,
               "schedule=%s" % args.schedule,
               "num-chunks=%d" % args.num_chunks]
    if args.optimizer == "sgd":
        options += ["momentum=%r" % args.momentum,
                    "dampening=%r" % args.dampening,
                    "nesterov=%s" % str(args.nesterov).lower()]
    else:
        options += ["beta1=%r" % args.beta1, "beta2=%r" % args.beta2,
                    "eps=%r" % args.eps,
                    "bias-correction=%s" % str(args.bias_correction).lower()]
    if args.weight_decay >= 0:
        options.append("weight-decay=%r" % args.weight_decay)
    options += args.pipeline_options.split()
    os.makedirs(args.workdir, exist_ok=True)
    lowered = os.path.join(args.workdir, "program.llvm.mlir")
    artifacts = os.path.join(args.workdir, "artifacts")
    common.compile_artifacts(
        args, args.mlir, ["-pf-compile-cpu-pipeline=" + " ".join(options)],
        lowered, artifacts)
    print("compiled with", " ".join(options))
    with tempfile.TemporaryDirectory() as tmp:
        loss_file = os.path.join(tmp, "losses")
        run = subprocess.run([args.pf_run, "-n", str(args.ranks), artifacts,
                              "--steps", str(args.steps), "--seed", str(seed),
                              "--lr", repr(args.lr), "--loss-out", loss_file,
                              "--timeout", "120", "--memory-report"],
                             check=True, stdout=subprocess.PIPE, text=True)
        sys.stdout.write(run.stdout)
        got = common.read_losses(loss_file)
    if check_memory_plan(run.stdout, artifacts, args.ranks):
        return 1
    want = reference_losses(seed, args.steps, args.lr, layers, batch_shape,
                            layers[-1][2], args)
    if len(got) != args.steps or \
            any(len(g) != args.microbatches for g in got):
        print("FAIL: expected %d steps of %d losses, got %r" %
              (args.steps, args.microbatches, got))
        return 1
    rel = []
    for k, (g, w) in enumerate(zip(got, want)):
        r = max(abs(a - b) / abs(b) for a, b in zip(g, w))
        rel.append(r)
        print("step %2d pipeflow %s numpy %s rel %.2e" % (
            k, " ".join("%.9f" % v for v in g),
            " ".join("%.9f" % v for v in w), r))
    print("max relative error %.3e" % max(rel))
    if max(rel) >= args.tolerance:
        print("FAIL: tolerance %.1e exceeded" % args.tolerance)
        return 1
    # (With dropout a few steps are too noisy for a decrease to be certain;
    # the equality with the reference above is the check.)
    if args.dropout == 0 and not sum(want[-1]) < sum(want[0]):
        print("FAIL: the loss did not decrease")
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
