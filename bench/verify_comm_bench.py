#!/usr/bin/env python3
"""pf-verify-comm on a 1,024-rank data x pipeline x tensor job (issue 18).

  /usr/bin/python3 bench/verify_comm_bench.py [--data 8] [--stages 8]
        [--tensor 16] [--microbatches 16] [--layers 2] [--repeat 3] [--write]

Writes a synthetic job as per-rank pf modules (no model: only the
communication and the values it moves), rank = (d * stages + s) * tensor + t:

  - pipeline: stage s runs 1F1B over the micro-batches; a forward receives
    its activation from stage s - 1 and sends it to s + 1, a backward
    receives its gradient from s + 1 and sends one to s - 1 (tags number
    the micro-batch and direction);
  - tensor: every layer of a forward or backward all-gathers its sequence
    shard over the stage's tensor group and reduce-scatters the result
    (sequence parallelism), both with the whole `groups` list;
  - data: at the end, every (stage, tensor) position all-reduces its
    gradient bucket over its data group, reduce-scatters the optimizer's
    shard and all-gathers the updated parameters.

Then times `pf-opt -pf-verify-comm` on it (best of --repeat): the whole run,
the pass alone (from -mlir-timing), and pf-opt parsing and printing alone
(no pass), with the job's communication op count. --write appends the
result to bench/RESULTS.md with the date and machine.
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
import results  # noqa: E402
BUILD = os.environ.get("PF_BUILD_DIR", os.path.join(ROOT, "build"))
PF_OPT = os.path.join(BUILD, "bin", "pf-opt")


def one_f_one_b(stage, stages, m):
    """The 1F1B order of a stage: ('F' | 'B', micro-batch)."""
    warmup = min(stages - stage - 1, m)
    order = [("F", k) for k in range(warmup)]
    f, b = warmup, 0
    while b < m:
        if f < m:
            order.append(("F", f))
            f += 1
        order.append(("B", b))
        b += 1
    return order


def groups_attr(groups):
    return "[" + ", ".join(
        "array<i64: %s>" % ", ".join(map(str, g)) for g in groups) + "]"


def job(data, stages, tensor, m, layers):
    """The job's text and its number of communication ops."""
    def rank(d, s, t):
        return (d * stages + s) * tensor + t
    world = data * stages * tensor
    tp = [[rank(d, s, t) for t in range(tensor)]
          for d in range(data) for s in range(stages)]
    dp = [[rank(d, s, t) for d in range(data)]
          for s in range(stages) for t in range(tensor)]
    act, shard = 8 * tensor, 8  # rows of the activation and its shard
    bucket = 1024 * data
    out = ["#TP = " + groups_attr(tp), "#DP = " + groups_attr(dp)]
    for r in range(world):
        out.append('#P%d = #pf.placement<"cpu", [%d]>' % (r, r))
    out.append("module attributes {pf.world_size = %d : i64} {" % world)
    ops = 0
    for d in range(data):
        for s in range(stages):
            for t in range(tensor):
                r = rank(d, s, t)
                ty = lambda shape, sbp="B": (
                    "!pf.global<%sxf32, #P%d, #pf.sbp<[%s]>>" % (shape, r, sbp))
                A, S = ty("%dx256" % act), ty("%dx256" % shard)
                P = ty("%dx256" % act, "P")
                W, Wp = ty(str(bucket)), ty(str(bucket), "P")
                Ws = ty(str(bucket // data))
                body = []
                for phase, k in one_f_one_b(s, stages, m):
                    fwd = phase == "F"
                    src = s - 1 if fwd else s + 1
                    if 0 <= src < stages:
                        body.append("%%in%s%d = pf.recv from %d tag %d : %s"
                                    % (phase, k, rank(d, src, t),
                                       2 * k + (0 if fwd else 1), A))
                    for _ in range(layers):
                        body.append(
                            "%%g = pf.all_gather %%s {axis = 0 : i64, groups "
                            "= #TP} : %s -> %s" % (S, A))
                        body.append(
                            "%%rs = pf.reduce_scatter %%p {axis = 0 : i64, "
                            "groups = #TP} : %s -> %s" % (P, S))
                    dst = s + 1 if fwd else s - 1
                    if 0 <= dst < stages:
                        body.append("pf.send %%a to %d tag %d : %s"
                                    % (rank(d, dst, t),
                                       2 * k + (0 if fwd else 1), A))
                body.append("%%ar = pf.all_reduce %%wp {groups = #DP} : "
                            "%s -> %s" % (Wp, W))
                body.append("%%sh = pf.reduce_scatter %%wp {axis = 0 : i64, "
                            "groups = #DP} : %s -> %s" % (Wp, Ws))
                body.append("%%ag = pf.all_gather %%ws {axis = 0 : i64, "
                            "groups = #DP} : %s -> %s" % (Ws, W))
                ops += len(body)
                # SSA names must be unique: number the results.
                n = [0]

                def fresh(match):
                    n[0] += 1
                    return "%%v%d =" % n[0]
                body = [re.sub(r"^%[A-Za-z0-9]+ =", fresh, b) for b in body]
                out.append("  module @rank%d attributes {pf.rank = %d : i64} {"
                           % (r, r))
                out.append("    func.func @train_step(%%a: %s, %%s: %s, "
                           "%%p: %s, %%wp: %s, %%ws: %s) {"
                           % (A, S, P, Wp, Ws))
                out.extend("      " + b for b in body)
                out.append("      return\n    }\n  }")
    out.append("}")
    return "\n".join(out) + "\n", ops


def timed(cmd, repeat):
    best, stderr = None, ""
    for _ in range(repeat):
        t0 = time.perf_counter()
        p = subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True)
        dt = time.perf_counter() - t0
        if best is None or dt < best:
            best, stderr = dt, p.stderr
    return best, stderr


def main():
    args = results.parser(__doc__, data=8, stages=8, tensor=16, microbatches=16, layers=2,
                          repeat=3).parse_args()
    world = args.data * args.stages * args.tensor
    text, ops = job(args.data, args.stages, args.tensor, args.microbatches,
                    args.layers)
    with tempfile.TemporaryDirectory() as work:
        path = os.path.join(work, "job.mlir")
        with open(path, "w") as f:
            f.write(text)
        size_mb = os.path.getsize(path) / 1e6
        t_parse, _ = timed([PF_OPT, path], args.repeat)
        t_run, timing = timed([PF_OPT, path, "-pf-verify-comm",
                               "-mlir-timing"], args.repeat)
    m = re.search(r"^\s*([0-9.]+)\s+\(\s*[0-9.]+%\)\s+VerifyCommPass", timing,
                  re.M) or re.search(
        r"^\s*([0-9.]+)\s.*pf-verify-comm|^\s*([0-9.]+).*VerifyComm", timing,
        re.M)
    t_pass = float(m.group(1)) if m else float("nan")
    lines = ["| ranks | data x stages x tensor | micro-batches | layers "
             "| communication ops | input MB | pf-verify-comm s | us per op "
             "| pf-opt total s | pf-opt without the pass s |",
             "|---|---|---|---|---|---|---|---|---|---|",
             "| %d | %d x %d x %d | %d | %d | %d | %.1f | %.3f | %.3f | %.2f "
             "| %.2f |" % (world, args.data, args.stages, args.tensor,
                           args.microbatches, args.layers, ops, size_mb,
                           t_pass, 1e6 * t_pass / ops,
                           t_run, t_parse)]
    table = "\n".join(lines)
    print(table)
    if args.write:
        results.append(
            "Communication check (bench/verify_comm_bench.py)",
            "synthetic 1F1B job (sends, receives, tensor "
            "all-gather/reduce-scatter per layer, data "
            "all-reduce/reduce-scatter/all-gather), best of %d; the pass's "
            "time from -mlir-timing." % args.repeat, table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
