#!/usr/bin/env python3
"""Step times of the GPT (examples/python/gpt.py) under each layout (issue 16).

  PYTHONPATH=python /usr/bin/python3 bench/gpt_layouts_bench.py [--layers 4]
        [--batch 16] [--block 32] [--micro-batches 4]
        [--steps 12] [--write]

Runs gpt.py on one rank and under the launcher as DP2, PP2 (1F1B,
interleaved 1F1B, ZB-H1), TP2 (Megatron's layout) and, on 4 ranks,
PP2 x DP2, TP2 x DP2 and PP2 x TP2, each with one OpenBLAS
thread per rank, and prints rank 0's median step time (steps 2.. ; the
first steps compile and warm up) and its ratio to the one-rank run. On a
machine with fewer cores than ranks the ranks share cores: the ratios then
show the overheads (communication, bubbles), not the speed-up.
"""

import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import results  # noqa: E402

GPT = os.path.join(ROOT, "examples", "python", "gpt.py")
# (layout, ranks, schedule[, gradient bucket MiB]): dp without buckets
# (one all-reduce a gradient) beside the default 25 MiB.
LAYOUTS = [("one", 1, "1f1b"), ("dp", 2, "1f1b"), ("dp", 2, "1f1b", 0), ("pp", 2, "1f1b"),
           ("pp", 2, "interleaved-1f1b"), ("pp", 2, "zb-h1"), ("tp", 2, "1f1b"),
           ("pp_dp", 4, "1f1b"), ("tp_dp", 4, "1f1b"), ("pp_tp", 4, "1f1b")]


def step_ms(layout, ranks, schedule, args, bucket=None):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"), OPENBLAS_NUM_THREADS="1")
    cmd = [sys.executable, GPT, "--layout", layout, "--schedule", schedule,
           "--layers", str(args.layers), "--batch", str(args.batch), "--block", str(args.block),
           "--micro-batches", str(args.micro_batches), "--steps", str(args.steps)]
    if bucket is not None:
        cmd += ["--bucket-mbytes", str(bucket)]
    if ranks > 1:
        cmd = [sys.executable, "-m", "pipeflow.distributed.launch", "--nproc_per_node",
               str(ranks)] + cmd[1:]
    out = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return float(re.search(r"median step ([0-9.]+) ms", out).group(1))


def main():
    args = results.parser(__doc__, layers=4, batch=16, block=32, micro_batches=4, steps=12).parse_args()
    rows, base = [], None
    for layout, ranks, schedule, *bucket in LAYOUTS:
        bucket = bucket[0] if bucket else None
        ms = step_ms(layout, ranks, schedule, args, bucket)
        base = base or ms
        rows.append("| %s | %d | %s | %s | %.1f | %.2f |"
                    % (layout, ranks, schedule, "25 MiB" if bucket is None else "%g MiB" % bucket,
                       ms, ms / base))
    table = ("| layout | ranks | schedule | gradient buckets | step ms (median) | vs one rank |\n"
             "|---|---|---|---|---|---|\n" + "\n".join(rows) + "\n")
    setup = ("GPT %d layers, 64 wide, 4 heads, block %d, batch %d, %d micro-batches, AdamW; "
             "1 OpenBLAS thread per rank, OPENBLAS_CORETYPE=%s" % (
                 args.layers, args.block, args.batch, args.micro_batches,
                 os.environ.get("OPENBLAS_CORETYPE", "unset")))
    results.report(args, "GPT step time by layout (bench/gpt_layouts_bench.py)", setup, table)


if __name__ == "__main__":
    main()
