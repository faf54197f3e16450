#!/usr/bin/env python3
"""Memory of a two-stage pipeline under GPipe and 1F1B (issue 13's table).

  /usr/bin/python3 bench/memory_bench.py [--microbatches 4,8,16,32]
        [--widths 512x9] [--microbatch-size 512] [--steps 2] [--write]

For each schedule and micro-batch count m this compiles a 9-layer 512-wide
MLP (bench/gen_mlp.py) at batch m x 512 (a fixed micro-batch, so GPipe's
activations grow with m; m = 16 is the issue's batch 8192) cut into two
stages by the compiler
(`auto-stages=2`, one rank each), runs it with pf-run on two CPU ranks with
--memory-report and reads, per rank:

  planned      the arena of the static memory plan (manifest and runtime)
  high-water   the largest offset + size the step touched (runtime)
  peak RSS     getrusage's peak resident set size of the rank's process
  baseline     the peak RSS before the arena existed (libraries, MPI)

and prints them with the ratios the issue asks for: 1F1B's peak RSS over
GPipe's at the same m, RSS over planned + baseline, and the growth of the
activation part with m. A second table runs GPipe with every hidden
layer's forward checkpointed (recomputed in the backward) against GPipe
without, at the largest m. --write appends both tables to bench/RESULTS.md
with the date, machine and settings.
"""

import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import gen_mlp  # noqa: E402
import results  # noqa: E402


def tools():
    build = os.environ.get("PF_BUILD_DIR", os.path.join(ROOT, "build"))
    return {t: os.path.join(build, "bin", t)
            for t in ("pf-opt", "pf-translate", "pf-run")}


def mark_checkpoint(program, last_layer):
    """pf.checkpoint on the forward ops of every layer but the last."""
    out = []
    for line in program.splitlines():
        m = re.match(r"\s*%[a-z]+(\d+)b? = pf\.(matmul|bias_add|relu) ", line)
        if m and int(m.group(1)) < last_layer:
            if "{transpose_b}" in line:
                line = line.replace("{transpose_b}",
                                    "{transpose_b, pf.checkpoint}")
            else:
                line = line.replace(" : (", " {pf.checkpoint} : (", 1)
        out.append(line)
    return "\n".join(out)


def run_config(t, program, schedule, m, steps, work):
    src = os.path.join(work, "mlp.mlir")
    with open(src, "w") as f:
        f.write(program)
    lowered = os.path.join(work, "lowered.mlir")
    art = os.path.join(work, "art")
    opts = "optimizer=sgd accumulation-steps=%d schedule=%s auto-stages=2" % (
        m, schedule)
    subprocess.run([t["pf-opt"], src, "-pf-compile-cpu-pipeline=" + opts,
                    "-o", lowered], check=True)
    subprocess.run([t["pf-translate"], "--pf-emit-rank-artifacts", lowered,
                    "--pf-artifact-dir=" + art], check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(art, "manifest.json")) as f:
        manifest = json.load(f)
    run = subprocess.run([t["pf-run"], "-n", "2", art, "--steps", str(steps),
                          "--threads", "1", "--timeout", "600",
                          "--memory-report"],
                         check=True, stdout=subprocess.PIPE, text=True)
    ranks = {}
    for line in run.stdout.splitlines():
        w = line.split()
        if len(w) > 3 and w[0] == "memory" and w[1] == "rank":
            ranks[int(w[2])] = dict(zip(w[3::2], map(int, w[4::2])))
    for r in manifest["ranks"]:
        ranks[r["rank"]]["plan"] = r["memory"]
    return ranks


MB = 1 << 20


def main():
    ap = results.parser(__doc__)
    ap.add_argument("--microbatches", default="4,8,16,32")
    ap.add_argument("--widths", default="512x9",
                    help="WIDTHxLAYERS of the hidden layers (10 classes)")
    ap.add_argument("--microbatch-size", type=int, default=512)
    ap.add_argument("--steps", type=int, default=2)
    args = ap.parse_args()
    width, layers = map(int, args.widths.split("x"))
    widths = [width] * layers + [10]
    t = tools()
    ms = [int(v) for v in args.microbatches.split(",")]
    programs = {m: gen_mlp.mlp_program(widths, m * args.microbatch_size)
                for m in ms}
    rows, peaks = [], {}
    with tempfile.TemporaryDirectory() as work:
        for m in ms:
            for schedule in ("gpipe", "1f1b"):
                ranks = run_config(t, programs[m], schedule, m, args.steps,
                                   work)
                peaks[schedule, m] = ranks
                for r, v in sorted(ranks.items()):
                    plan = v["plan"]
                    rows.append((schedule, m, r, v, plan))
        ckpt = {}
        m = ms[-1]
        ckpt["plain"] = peaks["gpipe", m]
        ckpt["checkpointed"] = run_config(
            t, mark_checkpoint(programs[m], layers - 1), "gpipe", m, args.steps,
            work)

    lines = []
    lines.append("| schedule | m | rank | planned MiB (params+grads+states / "
                 "step peak / lower bound) | high-water = planned | peak RSS "
                 "MiB | RSS / (planned + baseline) | 1F1B / GPipe RSS |")
    lines.append("|---|---|---|---|---|---|---|---|")
    for schedule, m, r, v, plan in rows:
        ratio = v["peak_rss_bytes"] / (v["planned_bytes"] +
                                       v["baseline_rss_bytes"])
        vs = ""
        if schedule == "1f1b":
            vs = "%.2f" % (v["peak_rss_bytes"] /
                           peaks["gpipe", m][r]["peak_rss_bytes"])
        lines.append(
            "| %s | %d | %d | %.1f (%.1f / %.1f / %.1f) | %s | %.1f | %.2f "
            "| %s |" % (
                schedule, m, r, v["planned_bytes"] / MB,
                plan["persistent_bytes"] / MB, plan["step_peak_bytes"] / MB,
                plan["step_lower_bound_bytes"] / MB,
                "yes" if v["high_water_bytes"] == v["planned_bytes"] else
                "NO (%d)" % v["high_water_bytes"],
                v["peak_rss_bytes"] / MB, ratio, vs))
    lines.append("")
    lines.append("Activation checkpointing (GPipe, m = %d; every hidden "
                 "layer's forward recomputed in the backward):" % ms[-1])
    lines.append("")
    lines.append("| rank | planned MiB plain | planned MiB checkpointed | "
                 "peak RSS MiB plain | peak RSS MiB checkpointed | saved MiB "
                 "(RSS) |")
    lines.append("|---|---|---|---|---|---|")
    for r in sorted(ckpt["plain"]):
        a, b = ckpt["plain"][r], ckpt["checkpointed"][r]
        lines.append("| %d | %.1f | %.1f | %.1f | %.1f | %.1f |" % (
            r, a["planned_bytes"] / MB, b["planned_bytes"] / MB,
            a["peak_rss_bytes"] / MB, b["peak_rss_bytes"] / MB,
            (a["peak_rss_bytes"] - b["peak_rss_bytes"]) / MB))
    table = "\n".join(lines)
    print(table)
    if args.write:
        results.append(
            "Memory plan: two-stage %d-layer %d-wide MLP, batch m x %d "
            "(bench/memory_bench.py)" % (layers, width, args.microbatch_size),
            "2 CPU ranks, 1 BLAS thread each, OPENBLAS_CORETYPE=%s, %d steps."
            % (os.environ.get("OPENBLAS_CORETYPE", "(unset)"), args.steps),
            table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
