#!/usr/bin/env python3
"""Where a GPT step's time goes: GEMMs against everything else, PipeFlow and
eager PyTorch on one thread each (issue 16's tokens/s target).

  PYTHONPATH=python /usr/bin/python3 bench/gpt_profile.py [--layers 4]
        [--embd 128] [--heads 4] [--block 64] [--batch 16] [--steps 10]
        [--write]

The model, data and settings of bench/gpt_bench.py. PipeFlow runs in a
child process with PF_TRACE set (its runtime writes the trace at exit); its
GEMMs are the trace's pf.matmul events (OpenBLAS). PyTorch's GEMMs are the
self CPU time of aten::mm, bmm, addmm and baddbmm under torch.profiler
(Debian's torch calls the same system BLAS: BLAS_INFO=generic). Times are
per step over the steps after the warm-up. The table shows how far any
amount of fusion outside the GEMMs could take PipeFlow: its GEMM time alone
against PyTorch's whole step.
"""

import collections
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import types

import results
from gpt_bench import model_args  # and its sys.path: examples/python, its models, test/python

GEMMS = ("aten::mm", "aten::bmm", "aten::addmm", "aten::baddbmm")


def setup_model(args):
    import gpt_model
    config = gpt_model.GPTConfig(block_size=args.block, n_layer=args.layers,
                                 n_head=args.heads, n_embd=args.embd)
    import gpt
    return config, list(gpt.batches(0, args.batch, args.block, args.steps))


def pipeflow_part(args):
    """Child: PipeFlow's steps; prints their times (s) as JSON."""
    import gpt
    import gpt_model
    import pipeflow as flow
    flow.manual_seed(0)
    config, batches = setup_model(args)
    model = gpt_model.GPT(config)
    opts = types.SimpleNamespace(layout="one", schedule="1f1b", micro_batches=1, lr=1e-3)
    graph, place = gpt.build_graph(model, opts)
    graph.compile(*place(flow.tensor(batches[0][0]), flow.tensor(batches[0][1])))
    times = []
    for x, y in batches:
        xs, ys = place(flow.tensor(x), flow.tensor(y))
        t0 = time.perf_counter()
        graph(xs, ys).numpy()
        times.append(time.perf_counter() - t0)
    print("TIMES " + json.dumps(times))


def main():
    ap = results.parser(__doc__)
    model_args(ap, steps=10)
    ap.add_argument("--pipeflow-part", action="store_true", help=argparse_hidden())
    args = ap.parse_args()
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    if args.pipeflow_part:
        return pipeflow_part(args)

    with tempfile.TemporaryDirectory() as trace_dir:
        argv = [a for a in sys.argv[1:] if a != "--write"]
        child = subprocess.run([sys.executable, os.path.abspath(__file__), "--pipeflow-part"] + argv,
                               env=dict(os.environ, PF_TRACE=trace_dir), stdout=subprocess.PIPE,
                               text=True, check=True)
        ours = json.loads(child.stdout.split("TIMES ", 1)[1].splitlines()[0])
        per_op = collections.Counter()
        for name in os.listdir(trace_dir):
            with open(os.path.join(trace_dir, name)) as f:
                data = json.load(f)
            for e in data["traceEvents"] if isinstance(data, dict) else data:
                if e.get("ph") == "X" and e.get("name", "").startswith("pf."):
                    per_op[e["name"]] += e["dur"]

    import torch
    import torch.profiler
    from test_gpt import torch_module
    torch.set_num_threads(1)
    torch.manual_seed(0)
    config, batches = setup_model(args)
    tg = torch_module()
    tmodel = tg.GPT(tg.GPTConfig(**config.__dict__))
    opt = torch.optim.AdamW(tmodel.parameters(), lr=1e-3, weight_decay=0.1)

    def torch_step(x, y):
        loss = tmodel(torch.from_numpy(x), torch.from_numpy(y))
        opt.zero_grad()
        loss.backward()
        opt.step()

    # Timed without the profiler (its overhead per op is large), then the
    # same batches again under it for the GEMMs' share.
    # Two passes; the faster one's median counts (this VM's load comes in
    # bursts that can double a pass's step time).
    passes = []
    for _ in range(2):
        passes.append([])
        for x, y in batches:
            t0 = time.perf_counter()
            torch_step(x, y)
            passes[-1].append(time.perf_counter() - t0)
    theirs = min(passes, key=lambda p: statistics.median(p[args.warmup:]))
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        for x, y in batches[args.warmup:]:
            torch_step(x, y)
    timed = args.steps - args.warmup
    torch_gemm = sum(e.self_cpu_time_total for e in prof.key_averages()
                     if e.key in GEMMS) / timed / 1e3

    # The trace covers every PipeFlow step (warm-up included): per step.
    steps = len(ours)
    ours_ms = statistics.median(ours[args.warmup:]) * 1e3
    theirs_ms = statistics.median(theirs[args.warmup:]) * 1e3
    pf_gemm = per_op["pf.matmul"] / steps / 1e3
    setup = ("GPT %d layers, %d wide, %d heads, block %d, batch %d; 1 thread each "
             "(OPENBLAS_NUM_THREADS=1, OPENBLAS_CORETYPE=%s, torch.set_num_threads(1)); "
             "step medians of steps %d..%d, op times per step (PipeFlow: all %d steps, "
             "traced; PyTorch: GEMMs from a profiled rerun of steps %d..%d, the step "
             "timed without the profiler, the faster of two passes); PyTorch %s."
             % (args.layers, args.embd, args.heads, args.block, args.batch,
                os.environ.get("OPENBLAS_CORETYPE", "unset"), args.warmup, args.steps - 1,
                steps, args.warmup, args.steps - 1, torch.__version__))
    rest = ", ".join("%s %.1f" % (k[3:], v / steps / 1e3)
                     for k, v in per_op.most_common(10) if k != "pf.matmul")
    table = ("| system | step ms (median) | GEMMs ms/step | rest ms/step |\n"
             "|---|---|---|---|\n"
             "| PipeFlow (traced) | %.1f | %.1f | %.1f |\n"
             "| PyTorch eager | %.1f | %.1f | %.1f |\n"
             "\nPipeFlow's GEMMs alone take %.2f of PyTorch's step: with nothing else "
             "left, PipeFlow would be %.2fx PyTorch (the target is 1.25x). PipeFlow's "
             "largest other ops, ms/step: %s.\n"
             % (ours_ms, pf_gemm, ours_ms - pf_gemm, theirs_ms, torch_gemm,
                theirs_ms - torch_gemm, pf_gemm / theirs_ms, theirs_ms / pf_gemm, rest))
    results.report(args, "GPT step split: GEMMs and the rest (bench/gpt_profile.py)", setup, table)


def argparse_hidden():
    import argparse
    return argparse.SUPPRESS


if __name__ == "__main__":
    main()
