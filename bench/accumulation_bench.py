#!/usr/bin/env python3
"""Gradient accumulation folded into the weight-gradient GEMM, before/after.

  /usr/bin/python3 bench/accumulation_bench.py [--widths 1024x9]
        [--batch 512] [--microbatches 16] [--steps 12] [--write]

One rank, one BLAS thread: a 9-layer 1024-wide MLP (bench/gen_mlp.py) at
batch 512 in 16 micro-batches, compiled twice from the same per-rank
program (`pf-compile-to=rank`), with `convert-pf-to-cpu` folding
`add(acc, matmul(...))` into the matmul (C += A B, beta = 1; the default)
and without (`fold-accumulation=false`: a separate pfrt_k_add pass and a
temporary per micro-batch). Both run in this process's environment (say
OPENBLAS_CORETYPE in the results); the table gives the median step time
of each after --warmup steps, the saving, and the ratio.
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import gen_mlp  # noqa: E402
import results  # noqa: E402

BUILD = os.environ.get("PF_BUILD_DIR", os.path.join(ROOT, "build"))
BIN = os.path.join(BUILD, "bin")


def build(src, work, name, fold):
    rank = os.path.join(work, name + ".rank.mlir")
    lowered = os.path.join(work, name + ".llvm.mlir")
    art = os.path.join(work, name)
    subprocess.run([os.path.join(BIN, "pf-opt"), src,
                    "-pf-compile-cpu-pipeline=optimizer=sgd "
                    "accumulation-steps=%d pf-compile-to=rank" % ARGS.microbatches,
                    "-o", rank], check=True)
    subprocess.run([os.path.join(BIN, "pf-opt"), rank,
                    "-convert-pf-to-cpu=fold-accumulation=%s" %
                    ("true" if fold else "false"), "-o", lowered], check=True)
    subprocess.run([os.path.join(BIN, "pf-translate"),
                    "--pf-emit-rank-artifacts", lowered,
                    "--pf-artifact-dir=" + art], check=True,
                   stdout=subprocess.DEVNULL)
    return art


def step_times(art, trace=None):
    cmd = [os.path.join(BIN, "pf-run"), "-n", "1", art, "--steps",
           str(ARGS.warmup + ARGS.steps), "--threads", "1"]
    if trace:
        cmd += ["--trace", trace]
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE,
                         text=True).stdout
    times = [float(line.split()[-1]) for line in out.splitlines()
             if line.startswith("step ")]
    return times[ARGS.warmup:]


def add_share(trace_dir, step_ms):
    """pf.add's milliseconds per step over the step's milliseconds."""
    files = [os.path.join(trace_dir, f) for f in os.listdir(trace_dir)
             if f.endswith(".json")]
    with open(files[0]) as f:
        events = [e for e in json.load(f)["traceEvents"]
                  if e.get("ph") == "X" and e.get("name") == "pf.add"]
    per_step = sum(e["dur"] for e in events) / 1e3 / (ARGS.warmup +
                                                       ARGS.steps)
    return per_step / step_ms


def main():
    global ARGS
    ap = results.parser(__doc__)
    ap.add_argument("--widths", default="1024x9")
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--microbatches", type=int, default=16)
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--warmup", type=int, default=2)
    ARGS = ap.parse_args()
    width, layers = map(int, ARGS.widths.split("x"))
    with tempfile.TemporaryDirectory() as work:
        src = os.path.join(work, "mlp.mlir")
        with open(src, "w") as f:
            f.write(gen_mlp.mlp_program([width] * layers + [10], ARGS.batch))
        arts = {fold: build(src, work, "fold" if fold else "add", fold)
                for fold in (False, True)}
        # Interleave the runs so that load changes hit both alike.
        times = {False: [], True: []}
        for _ in range(2):
            for fold in (False, True):
                times[fold] += step_times(arts[fold])
        # The separate adds' share of the unfolded step, from its trace.
        trace = os.path.join(work, "trace")
        traced = step_times(arts[False], trace)
        share = add_share(trace, statistics.median(traced))
    before = statistics.median(times[False])
    after = statistics.median(times[True])
    table = ("| accumulation | median step ms |\n|---|---|\n"
             "| separate add (fold-accumulation=false) | %.1f |\n"
             "| folded into the GEMM (default) | %.1f |\n\n"
             "saving %.1f%% of the step; folded / separate = %.3f; the "
             "separate pf.add took %.1f%% of the unfolded step (trace)" % (
                 before, after, 100 * (before - after) / before,
                 after / before, 100 * share))
    print(table)
    if ARGS.write:
        results.append(
            "Gradient accumulation in the GEMM (bench/accumulation_bench.py)",
            "one rank, 1 BLAS thread, OPENBLAS_CORETYPE=%s; %d-layer %d-wide "
            "MLP, batch %d, %d micro-batches, median of %d steps x 2 runs." % (
                os.environ.get("OPENBLAS_CORETYPE", "(unset)"), layers, width,
                ARGS.batch, ARGS.microbatches, ARGS.steps), table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
