#!/usr/bin/env python3
"""GPT training throughput: PipeFlow against eager PyTorch, one CPU thread (issue 16).

  PYTHONPATH=python /usr/bin/python3 bench/gpt_bench.py [--layers 4]
        [--embd 128] [--heads 4] [--block 64] [--batch 16] [--steps 20]
        [--threads 1] [--write]

The GPT of examples/python/models/gpt_model.py (untied head, AdamW) on byte tokens
of the licence text: PipeFlow compiles it (nn.Graph, one rank, in this
process) and eager PyTorch (Debian's python3-torch) runs the same model file
with its imports pointed at torch, from the same initial weights on the same
batches. Both use --threads threads (OPENBLAS_NUM_THREADS for PipeFlow's
OpenBLAS, torch.set_num_threads for torch). The first steps warm up (and
compile); the median of the later steps' times gives tokens per second
(batch x block per step). Prints both rates and their ratio (the target is
PipeFlow >= 1.25x) and the largest relative difference of the losses.
--write appends the table to bench/RESULTS.md.
"""

import os
import statistics
import sys
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "examples", "python"))
sys.path.insert(0, os.path.join(ROOT, "examples", "python", "models"))
sys.path.insert(0, os.path.join(ROOT, "test", "python"))
import results  # noqa: E402


def model_args(ap, steps):
    """The GPT's size and the run's length (shared with gpt_profile.py)."""
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--embd", type=int, default=128)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--block", type=int, default=64)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--steps", type=int, default=steps)
    ap.add_argument("--warmup", type=int, default=3)


def main():
    ap = results.parser(__doc__)
    model_args(ap, steps=20)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--sequential", action="store_true",
                    help="all PipeFlow steps, then all PyTorch steps")
    args = ap.parse_args()
    os.environ["OPENBLAS_NUM_THREADS"] = str(args.threads)
    import numpy as np
    import torch

    import gpt
    import gpt_model
    import pipeflow as flow
    from test_gpt import torch_module

    torch.set_num_threads(args.threads)
    flow.manual_seed(0)
    config = gpt_model.GPTConfig(block_size=args.block, n_layer=args.layers,
                                 n_head=args.heads, n_embd=args.embd)
    model = gpt_model.GPT(config)
    opts = types.SimpleNamespace(layout="one", schedule="1f1b", micro_batches=1, lr=1e-3)
    graph, place = gpt.build_graph(model, opts)
    batches = list(gpt.batches(0, args.batch, args.block, args.steps))
    # Traced, the parameters hold the compiled program's initial values.
    graph.compile(*place(flow.tensor(batches[0][0]), flow.tensor(batches[0][1])))
    weights = {n: p.numpy().copy() for n, p in model.named_parameters()}

    tg = torch_module()
    tmodel = tg.GPT(tg.GPTConfig(**config.__dict__))
    state = tmodel.state_dict()
    for name, value in weights.items():
        state[name] = torch.from_numpy(value)
    tmodel.load_state_dict(state)
    opt = torch.optim.AdamW(tmodel.parameters(), lr=1e-3, weight_decay=0.1)

    ours, our_times, theirs, their_times = [], [], [], []

    def pipeflow_step(x, y):
        xs, ys = place(flow.tensor(x), flow.tensor(y))
        t0 = time.perf_counter()
        loss = graph(xs, ys)
        ours.append(float(loss.numpy().mean()))
        our_times.append(time.perf_counter() - t0)

    def torch_step(x, y):
        xt, yt = torch.from_numpy(x), torch.from_numpy(y)
        t0 = time.perf_counter()
        loss = tmodel(xt, yt)
        opt.zero_grad()
        loss.backward()
        opt.step()
        theirs.append(loss.item())
        their_times.append(time.perf_counter() - t0)

    # By default the two systems' steps alternate (PipeFlow's step i, then
    # PyTorch's step i): this VM's speed drifts by tens of percent over
    # seconds, and alternating lets both see the same drift. --sequential
    # runs all of PipeFlow's steps, then all of PyTorch's.
    if args.sequential:
        for x, y in batches:
            pipeflow_step(x, y)
        for x, y in batches:
            torch_step(x, y)
    else:
        for x, y in batches:
            pipeflow_step(x, y)
            torch_step(x, y)

    tokens = args.batch * args.block
    ours_s = statistics.median(our_times[args.warmup:])
    theirs_s = statistics.median(their_times[args.warmup:])
    diff = max(abs(a - b) / abs(b) for a, b in zip(ours, theirs))
    params = sum(w.size for w in weights.values())
    table = ("| system | step ms (median) | tokens/s | vs PyTorch |\n"
             "|---|---|---|---|\n"
             "| PipeFlow (nn.Graph, 1 rank) | %.1f | %.0f | %.2fx |\n"
             "| PyTorch %s eager | %.1f | %.0f | 1.00x |\n"
             "\nLargest relative loss difference over %d steps: %.2e; loss %.4f -> %.4f.\n"
             % (ours_s * 1e3, tokens / ours_s, theirs_s / ours_s, torch.__version__,
                theirs_s * 1e3, tokens / theirs_s, args.steps, diff, ours[0], ours[-1]))
    setup = ("GPT %d layers, %d wide, %d heads, block %d, batch %d (%d tokens/step), "
             "%d parameters, AdamW, float32; %d thread(s) each "
             "(OPENBLAS_NUM_THREADS=%d, OPENBLAS_CORETYPE=%s, torch.set_num_threads(%d)); "
             "median of steps %d..%d; %s." % (
                 args.layers, args.embd, args.heads, args.block, args.batch, tokens,
                 params, args.threads, args.threads,
                 os.environ.get("OPENBLAS_CORETYPE", "unset"), args.threads,
                 args.warmup, args.steps - 1,
                 "all PipeFlow steps, then all PyTorch steps" if args.sequential
                 else "the two systems' steps alternating"))
    results.report(args, "GPT training throughput (bench/gpt_bench.py)", setup, table)


if __name__ == "__main__":
    main()
