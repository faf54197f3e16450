#!/usr/bin/env python3
"""Compile time against program size and micro-batch count (issue 13).

  /usr/bin/python3 bench/compile_bench.py [--layers 25,100,400]
        [--microbatches 8,32,128] [--width 64] [--stages 4] [--write]

Two sweeps of an MLP (bench/gen_mlp.py, `width` wide, batch 8 x m) cut
into `stages` stages by the compiler (auto-stages, 1F1B):

  layers        25, 100, 400 layers at m = 8
  micro-batches 8, 32, 128 at 25 layers

For each: the number of training ops (the program after
`pf-compile-to=training`: forward, backward and optimizer ops with every
micro-batch's copy, which is what pf-opt's later passes walk), the wall time of `pf-opt -pf-compile-cpu-pipeline`
(written to a file) and of `pf-translate --pf-emit-rank-artifacts`, pf-opt's
seconds per 1,000 training ops, and each time's ratio to the first row of
its sweep. The best of --repeat runs is taken. --write appends the table to
bench/RESULTS.md with the date and machine.
"""

import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import gen_mlp  # noqa: E402
import results  # noqa: E402

BUILD = os.environ.get("PF_BUILD_DIR", os.path.join(ROOT, "build"))
PF_OPT = os.path.join(BUILD, "bin", "pf-opt")
PF_TRANSLATE = os.path.join(BUILD, "bin", "pf-translate")
OP = re.compile(r"^\s*(?:%[^=]+=\s*)?pf\.[a-z_0-9]+", re.M)


def timed(cmd, repeat):
    best = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        dt = time.perf_counter() - t0
        best = dt if best is None else min(best, dt)
    return best


def measure(layers, m, width, stages, repeat, work):
    src = os.path.join(work, "mlp.mlir")
    with open(src, "w") as f:
        f.write(gen_mlp.mlp_program([width] * (layers + 1) + [10], 8 * m))
    opts = ("optimizer=sgd accumulation-steps=%d schedule=1f1b "
            "auto-stages=%d" % (m, stages))
    training = subprocess.run(
        [PF_OPT, src, "-pf-compile-cpu-pipeline=" + opts +
         " pf-compile-to=training"], check=True, stdout=subprocess.PIPE,
        text=True).stdout
    ops = len(OP.findall(training))
    lowered = os.path.join(work, "lowered.mlir")
    t_opt = timed([PF_OPT, src, "-pf-compile-cpu-pipeline=" + opts, "-o",
                   lowered], repeat)
    t_tr = timed([PF_TRANSLATE, "--pf-emit-rank-artifacts", lowered,
                  "--pf-artifact-dir=" + os.path.join(work, "art")], repeat)
    return ops, t_opt, t_tr


def main():
    ap = results.parser(__doc__)
    ap.add_argument("--layers", default="25,100,400")
    ap.add_argument("--microbatches", default="8,32,128")
    ap.add_argument("--width", type=int, default=64)
    ap.add_argument("--stages", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for sweep, configs in (
                ("layers", [(int(l), 8) for l in args.layers.split(",")]),
                ("micro-batches",
                 [(25, int(m)) for m in args.microbatches.split(",")])):
            first = None
            for layers, m in configs:
                ops, t_opt, t_tr = measure(layers, m, args.width, args.stages,
                                           args.repeat, work)
                first = first or (ops, t_opt, t_tr)
                rows.append((sweep, layers, m, ops, t_opt, t_tr, first))
    lines = ["| sweep | layers | m | training ops | pf-opt s | pf-opt s "
             "per 1k ops | pf-translate s | total s | pf-opt per op / first "
             "| total / first |", "|---|---|---|---|---|---|---|---|---|---|"]
    for sweep, layers, m, ops, t_opt, t_tr, (ops0, opt0, tr0) in rows:
        lines.append("| %s | %d | %d | %d | %.3f | %.3f | %.3f | %.3f | "
                     "%.2f | %.2f |" % (
                         sweep, layers, m, ops, t_opt, 1000 * t_opt / ops,
                         t_tr, t_opt + t_tr, (t_opt / ops) / (opt0 / ops0),
                         (t_opt + t_tr) / (opt0 + tr0)))
    table = "\n".join(lines)
    print(table)
    if args.write:
        results.append(
            "Compile time (bench/compile_bench.py)",
            "%d-wide MLP, %d stages, 1F1B, batch 8 x m, best of %d." % (
                args.width, args.stages, args.repeat), table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
