#!/usr/bin/env python3
"""Data at the speed of the step: the time a GPT step waits for its batch.

  PYTHONPATH=python /usr/bin/python3 bench/data_bench.py [--steps 400]
        [--rounds 2] [--prefetch 4] [--threads 1] [--write]

One process, one rank: nanoGPT's GPT (examples/python/nanogpt/model.py; 2
layers, 2 heads, 64 wide, block 32, vocabulary 512, no bias, AdamW,
gradient clipping 1.0: a short step, so the data's share shows) trained by
an nn.Graph step, fed from a ``TokenDataset`` over a memory-mapped file of
1M random uint16 tokens (written to a temporary directory; nanoGPT's
shakespeare_char is 1M tokens) through ``DataLoader(batch_size=8,
sampler=DistributedSampler(dataset))`` (this process is replica 0 of 1;
seed 1337), once without prefetching and once with ``prefetch=N`` (a
background thread), alternating, --rounds times each, --steps steps each,
all on the same compiled graph. Every step times ``next(it)`` (the wait
for the batch: with prefetching, taking a ready batch from the queue) and
the graph call (the step). The ratio is the summed waits over the summed
step times; the target is under 2% with prefetching. Each pass starts a
fresh epoch (``set_epoch``); the epoch's start (the first batch, which
includes the sampler's permutation of the 1M windows, torch's randperm
in Python, about 1 s) is timed separately and left out of the ratio, as
it is paid once per epoch (here 125k steps). --write appends the table to
bench/RESULTS.md with the threads and OPENBLAS_CORETYPE of the run.
"""

import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "examples", "python", "nanogpt"))
import results  # noqa: E402

TOKENS = 1_000_000
VOCAB = 512
BLOCK = 32
BATCH = 8


def make_graph(flow, nn):
    from model import GPT, GPTConfig

    config = GPTConfig(block_size=BLOCK, vocab_size=VOCAB, n_layer=2, n_head=2, n_embd=64,
                       dropout=0.0, bias=False)
    model = GPT(config)
    optimizer = model.configure_optimizers(0.1, 1e-3, (0.9, 0.99), "cpu")
    return results.train_graph(flow, model, optimizer, results.nanogpt_loss, clip=1.0)


def one_pass(graph, loader, epoch, steps):
    """(epoch start s, waits s, steps s, last loss) of ``steps`` steps of a fresh epoch."""
    clock = time.perf_counter
    loader.sampler.set_epoch(epoch)
    t0 = clock()
    it = iter(loader)
    x, y = next(it)
    start = clock() - t0
    loss = graph(x, y)
    waits, times = [], []
    for _ in range(steps):
        t0 = clock()
        x, y = next(it)
        t1 = clock()
        loss = graph(x, y)
        t2 = clock()
        waits.append(t1 - t0)
        times.append(t2 - t1)
    if hasattr(it, "close"):
        it.close()
    return start, waits, times, float(loss.numpy())


def main():
    args = results.parser(__doc__, steps=400, rounds=2, prefetch=4, threads=1).parse_args()
    results.use_threads(args.threads)
    import numpy as np

    import pipeflow as flow
    from pipeflow import nn
    from pipeflow.utils.data import DataLoader, DistributedSampler, TokenDataset

    flow.manual_seed(1337)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "train.bin")
        np.random.default_rng(0).integers(0, VOCAB, TOKENS, dtype=np.uint16).tofile(path)
        dataset = TokenDataset(path, BLOCK)
        loaders = {
            "none": DataLoader(dataset, batch_size=BATCH, sampler=DistributedSampler(dataset, seed=1337)),
            f"prefetch={args.prefetch}": DataLoader(
                dataset, batch_size=BATCH, sampler=DistributedSampler(dataset, seed=1337),
                prefetch=args.prefetch),
        }
        graph = make_graph(flow, nn)
        t0 = time.perf_counter()
        x, y = dataset.get_batch(BATCH, 0)
        graph(x, y)  # compiles
        print(f"compiled and ran the first step in {time.perf_counter() - t0:.1f} s", flush=True)
        found = {name: ([], [], []) for name in loaders}
        for r in range(args.rounds):
            for name, loader in loaders.items():
                start, waits, times, loss = one_pass(graph, loader, r, args.steps)
                found[name][0].append(start)
                found[name][1].extend(waits)
                found[name][2].extend(times)
                print(f"round {r} {name}: wait {1e3 * sum(waits) / len(waits):.3f} ms, step "
                      f"{1e3 * sum(times) / len(times):.2f} ms a step, ratio "
                      f"{100 * sum(waits) / sum(times):.2f}%, epoch start {start:.2f} s, "
                      f"loss {loss:.4f}", flush=True)
    table = ["| loader | steps | mean wait ms | median wait ms | max wait ms | mean step ms | "
             "wait / step (target < 2%) | median wait / mean step | epoch start s |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name, (starts, waits, times) in found.items():
        ratio = sum(waits) / sum(times)
        table.append(f"| {name} | {len(waits)} | {1e3 * np.mean(waits):.3f} | "
                     f"{1e3 * np.median(waits):.3f} | {1e3 * max(waits):.3f} | "
                     f"{1e3 * np.mean(times):.2f} | {100 * ratio:.2f}% | "
                     f"{100 * np.median(waits) / np.mean(times):.2f}% | "
                     f"{max(starts):.2f} |")
    print("\n".join(table))
    ahead = found[f"prefetch={args.prefetch}"]
    ratio = sum(ahead[1]) / sum(ahead[2])
    print(f"prefetching: the step waits {100 * ratio:.2f}% of its time for data "
          f"(target < 2%: {'met' if ratio < 0.02 else 'NOT met'})")
    if args.write:
        coretype = os.environ.get("OPENBLAS_CORETYPE", "unset")
        rev = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True).stdout.strip() or "unknown"
        setup = (f"git {rev} (+ working tree); one rank in this process; nanoGPT GPT 2 layers x 64, "
                 f"block {BLOCK}, vocabulary {VOCAB}, batch {BATCH}, AdamW, clip 1.0; TokenDataset "
                 f"over a {TOKENS // 1000000}M-token uint16 memmap, DistributedSampler (1 replica, "
                 f"shuffled); {args.rounds} alternating rounds of {args.steps} steps per loader; "
                 f"{args.threads} thread(s) (PIPEFLOW_NUM_THREADS={args.threads}, "
                 f"OPENBLAS_CORETYPE={coretype}); Python {sys.version.split()[0]}; wait = "
                 "`next(it)`, step = the graph call; the epoch's first batch (the "
                 "sampler's permutation) is timed apart.")
        results.append("Data loading against the GPT step (bench/data_bench.py)", setup,
                       "\n".join(table))


if __name__ == "__main__":
    main()
