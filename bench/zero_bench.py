#!/usr/bin/env python3
"""Planned and measured memory of the GPT under DP4 with ZeRO stages 0-3 (issue 39).

  /usr/bin/python3 bench/zero_bench.py [--layers 4] [--width 256] [--heads 8]
        [--vocab 4096] [--block 64] [--batch 16] [--micro-batches 2]
        [--steps 3] [--amp] [--write]

The GPT of examples/python/models/gpt_model.py (nanoGPT's, untied head)
trains on four CPU ranks under pipeflow's launcher, data parallel (the
batch split over ranks 0-3, every parameter broadcast), with AdamW
(weight decay 0.1), clipping by global norm 1.0 and --micro-batches
gradient accumulation steps, once per ZeRO stage (0: none;
``graph.config.enable_zero(True, stage=s)`` with its default
shard_min_size), each stage a job of its own with a fresh compile cache.
Every rank records:

  plan        graph.memory_report()[rank]: the static memory plan's arena
              and its parts (parameters, gradient buffers, optimizer
              states, the step's buffers at their peak)
  measured    graph.memory_usage(): the high-water mark of the arena the
              runtime allocated for the plan (the largest offset + size the
              steps touched, libpfrt's pfrt_arena_high_water) after --steps
              steps, and the process's peak RSS (Python, numpy and MPI
              included; one stage a process)

and the bench prints them per rank with each stage's ratio to stage 0's
(arena, parameters, states, gradients) and checks that stages 1-3 give
stage 0's losses within 1e-5 (relative) and that the high-water mark equals
the plan. --write appends the table to bench/RESULTS.md with the machine,
threads and OPENBLAS_CORETYPE.
"""

import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import results  # noqa: E402

RANKS = 4
TOL = 1e-5

JOB = r"""
import json
import sys
import time

import numpy as np

sys.path.insert(0, sys.argv[1])
import pipeflow as flow
from pipeflow import nn
from gpt_model import GPT, GPTConfig

cfg = json.loads(sys.argv[2])
out = sys.argv[3]
rank = flow.env.get_rank()
B, S0 = flow.sbp.broadcast, flow.sbp.split(0)
PL = flow.placement("cpu", ranks=list(range(4)))
flow.manual_seed(1234)
model = GPT(GPTConfig(block_size=cfg["block"], vocab_size=cfg["vocab"], n_layer=cfg["layers"],
                      n_head=cfg["heads"], n_embd=cfg["width"]))
model.to_global(placement=PL, sbp=[B])


class Train(nn.Graph):
    def __init__(self):
        super().__init__()
        self.model = model
        self.config.set_gradient_accumulation_steps(cfg["micro_batches"])
        if cfg["stage"]:
            self.config.enable_zero(True, stage=cfg["stage"])
        if cfg["amp"]:
            self.config.enable_amp(True, dtype=flow.bfloat16)
        self.add_optimizer(flow.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.1))

    def build(self, x, y):
        loss = self.model(x, y)
        loss.backward()
        nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        return loss


graph = Train()
rng = np.random.default_rng(99)
losses, times = [], []
for step in range(cfg["steps"]):
    xy = rng.integers(0, cfg["vocab"], (2, cfg["batch"], cfg["block"]))
    x, y = (flow.tensor(a, placement=PL, sbp=[S0]) for a in xy)
    t = time.perf_counter()
    losses.append(graph(x, y).to_local().numpy().reshape(-1).tolist())
    times.append(time.perf_counter() - t)
record = {"losses": losses, "times": times, "plan": graph.memory_report()[rank],
          "usage": graph.memory_usage(), "params": sum(p.numel() for p in model.parameters())}
with open(f"{out}/rank{rank}.json", "w") as f:
    json.dump(record, f)
"""


def run_stage(cfg, stage, work):
    out = os.path.join(work, f"stage{stage}")
    os.makedirs(out)
    script = os.path.join(work, "zero_job.py")
    with open(script, "w") as f:
        f.write(JOB)
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"),
               PIPEFLOW_CACHE=os.path.join(out, "cache"),
               PIPEFLOW_NUM_THREADS=str(cfg["threads"]), OPENBLAS_NUM_THREADS=str(cfg["threads"]))
    cmd = [sys.executable, "-m", "pipeflow.distributed.launch", "--nproc_per_node", str(RANKS),
           script, os.path.join(ROOT, "examples", "python", "models"),
           json.dumps(dict(cfg, stage=stage)), out]
    t = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        sys.exit(f"stage {stage} failed:\n{proc.stdout}\n{proc.stderr}")
    return wall, [json.load(open(os.path.join(out, f"rank{r}.json"))) for r in range(RANKS)]


MIB = 1 << 20


def mib(nbytes):
    return f"{nbytes / MIB:.2f}"


def ratio(a, b):
    return f"{a / b:.3f}" if b else "-"


def rel(a, b):
    return max(abs(x - y) / max(abs(y), 1e-30) for x, y in zip(a, b, strict=True))


def main():
    ap = results.parser(__doc__, layers=4, width=256, heads=8, vocab=4096, block=64, batch=16,
                        micro_batches=2, steps=3, threads=1)
    ap.add_argument("--amp", action="store_true",
                    help="mixed precision: enable_amp(True, dtype=flow.bfloat16)")
    args = ap.parse_args()
    cfg = {k: getattr(args, k) for k in ("layers", "width", "heads", "vocab", "block", "batch",
                                         "micro_batches", "steps", "threads", "amp")}
    records, walls = {}, {}
    with tempfile.TemporaryDirectory(prefix="zero-bench-") as work:
        for stage in range(4):
            walls[stage], records[stage] = run_stage(cfg, stage, work)
            print(f"stage {stage}: job {walls[stage]:.1f} s", flush=True)
    params = records[0][0]["params"]
    rows, failures = [], []
    for stage in range(4):
        for rank in range(RANKS):
            rec, base = records[stage][rank], records[0][rank]
            plan, usage, plan0 = rec["plan"], rec["usage"], base["plan"]
            high = usage["high_water_bytes"]
            loss = [v for step in rec["losses"] for v in step]
            loss0 = [v for step in base["losses"] for v in step]
            if not loss0 or len(loss) != len(loss0):
                failures.append(f"stage {stage} rank {rank}: losses {loss}, stage 0's {loss0}")
                continue
            err = rel(loss, loss0)
            if err > TOL:
                failures.append(f"stage {stage} rank {rank}: losses {loss} vs stage 0's {loss0} "
                                f"(relative difference {err:.2e})")
            if high > plan["arena_bytes"]:
                failures.append(f"stage {stage} rank {rank}: high-water mark {high} above the plan "
                                f"{plan['arena_bytes']}")
            first = rec["times"][0]
            later = sorted(rec["times"][1:])
            rows.append(
                f"| {stage} | {rank} | {mib(plan['parameter_bytes'])} | {mib(plan['gradient_bytes'])} "
                f"| {mib(plan['state_bytes'])} | {mib(plan['step_peak_bytes'])} | {mib(plan['arena_bytes'])} "
                f"| {mib(high)} | {high - plan['arena_bytes']} "
                f"| {ratio(plan['arena_bytes'], plan0['arena_bytes'])} "
                f"| {ratio(plan['parameter_bytes'], plan0['parameter_bytes'])} "
                f"| {ratio(plan['state_bytes'], plan0['state_bytes'])} "
                f"| {ratio(plan['gradient_bytes'], plan0['gradient_bytes'])} "
                f"| {mib(usage['peak_rss_bytes'])} | {first:.1f} "
                f"| {later[len(later) // 2] * 1e3:.0f} | {err:.1e} |")
    table = ("| stage | rank | params MiB | grad buffers MiB | states MiB | step peak MiB "
             "| arena (plan) MiB | high-water MiB | high-water - plan (bytes) | arena vs 0 | params vs 0 "
             "| states vs 0 | grads vs 0 | peak RSS MiB | first call s | later step ms "
             "| loss diff vs 0 |\n|" + "---|" * 17 + "\n" + "\n".join(rows) + "\n")
    coretype = os.environ.get("OPENBLAS_CORETYPE", "unset")
    setup = (f"DP4 on 4 CPU ranks (pipeflow.distributed.launch); GPT (gpt_model.py) {args.layers} "
             f"layers x {args.width} wide, {args.heads} heads, vocabulary {args.vocab}, block "
             f"{args.block}, untied head: {params / 1e6:.2f}M parameters; batch {args.batch} in "
             f"{args.micro_batches} micro-batches, AdamW, clip 1.0, {args.steps} steps, "
             f"{'bf16 autocast (float32 master weights)' if args.amp else 'float32'}; "
             f"enable_zero(True, stage=s) with the default shard_min_size; "
             f"{args.threads} thread(s) per rank (PIPEFLOW_NUM_THREADS, OPENBLAS_NUM_THREADS), "
             f"OPENBLAS_CORETYPE={coretype}; job wall time per stage "
             + ", ".join(f"{s}: {w:.0f} s" for s, w in walls.items())
             + "; MiB = 2^20 bytes; 'vs 0' = the plan's ratio to stage 0's on the same rank; "
             f"loss diff = the largest relative difference of the {args.steps} x "
             f"{args.micro_batches} losses from stage 0's (must stay under {TOL:g})")
    results.report(args, "ZeRO stages 0-3 under DP4: planned and measured memory "
                         "(bench/zero_bench.py)", setup, table)
    if failures:
        sys.exit("\n".join(failures))


if __name__ == "__main__":
    main()
