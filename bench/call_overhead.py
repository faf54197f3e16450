#!/usr/bin/env python3
"""Per-call overhead of a compiled nn.Graph: Python time beyond the C step.

  PYTHONPATH=python /usr/bin/python3 bench/call_overhead.py [--calls 2000]
        [--gpt-calls 500] [--layers 12] [--threads 1] [--write]

Two training graphs in this process, one rank, SGD: a small MLP (8-16-4,
batch 4) and a GPT-2-sized module tree (examples/python/models/gpt_model.py
with 12 blocks, 16 wide, 2 heads, block 8, batch 2: 163 modules, 161
parameters and buffers, the C step short). Each graph is called
--calls (--gpt-calls) times after its first (compiling) call and a
warm-up of a tenth as many; every call times the whole ``graph(x, y)``
(perf_counter) and the compiled step itself: the program's ``pf_step``
(the C function that runs the step, ``Program.run_step``) is wrapped in a
timer for the measurement. The Python time of a call is the whole call
minus its C step; the table gives the medians of both and their ratio. The
target is at most 50 us of Python per call. A long C step leaves the
caches to the step's data, so the same Python costs more after it (the
GPT row) than after the small MLP's few microseconds; on a shared machine
other load adds to both. --write appends the table to bench/RESULTS.md
with the threads and OPENBLAS_CORETYPE of the run.
"""

import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "examples", "python", "models"))
import results  # noqa: E402


def small_graph(flow, nn):
    """An 8-16-4 MLP on placement cpu [0], batch 4."""
    place, b = flow.placement("cpu", ranks=[0]), [flow.sbp.broadcast]
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)).to_global(place, b)
    opt = flow.optim.SGD(model.parameters(), lr=0.01)

    class Small(nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            self.loss_fn = nn.CrossEntropyLoss()
            self.add_optimizer(opt)

        def build(self, x, y):
            loss = self.loss_fn(self.model(x), y)
            loss.backward()
            return loss

    x = flow.randn(4, 8).to_global(place, b)
    y = flow.randint(0, 4, (4,)).to_global(place, b)
    return Small(), model, (x, y)


def gpt_graph(flow, nn, layers):
    """nanoGPT's module tree at GPT-2's depth, narrow (see the docstring)."""
    import gpt_model
    config = gpt_model.GPTConfig(block_size=8, n_layer=layers, n_head=2, n_embd=16)
    place, b = flow.placement("cpu", ranks=[0]), [flow.sbp.broadcast]
    model = gpt_model.GPT(config).to_global(place, b)
    opt = flow.optim.SGD(model.parameters(), lr=1e-3)
    x = flow.randint(0, config.vocab_size, (2, 8)).to_global(place, b)
    y = flow.randint(0, config.vocab_size, (2, 8)).to_global(place, b)
    return results.train_graph(flow, model, opt), model, (x, y)


def measure(graph, args, calls):
    """Median whole-call and C-step times (seconds) over ``calls`` calls."""
    graph(*args)  # compiles
    program = graph._run.program
    cfunc = program.run_step  # pf_step, the C function
    inside = []
    clock = time.perf_counter

    def timed(step):
        t0 = clock()
        cfunc(step)
        inside.append(clock() - t0)

    program.run_step = timed
    try:
        for _ in range(max(1, calls // 10)):
            graph(*args)
        inside.clear()
        whole = []
        for _ in range(calls):
            t0 = clock()
            graph(*args)
            whole.append(clock() - t0)
    finally:
        program.run_step = cfunc
    python = [w - c for w, c in zip(whole, inside, strict=True)]
    return statistics.median(whole), statistics.median(inside), statistics.median(python)


def main():
    args = results.parser(__doc__, calls=2000, gpt_calls=500, layers=12, threads=1).parse_args()
    results.use_threads(args.threads)
    import pipeflow as flow
    from pipeflow import nn

    flow.manual_seed(0)
    rows = []
    for name, make, calls in (("small MLP 8-16-4, batch 4", small_graph, args.calls),
                              (f"GPT tree, {args.layers} blocks x 16 wide, batch 2x8",
                               lambda f, n: gpt_graph(f, n, args.layers), args.gpt_calls)):
        graph, model, inputs = make(flow, nn)
        modules = sum(1 for _ in model.modules())
        tensors = len(list(model.parameters())) + len(list(model.buffers()))
        whole, c_step, python = measure(graph, inputs, calls)
        rows.append((name, modules, tensors, calls, whole, c_step, python))
        print(f"{name}: {modules} modules, {tensors} parameters and buffers, {calls} calls: "
              f"call {whole * 1e6:.1f} us, C step {c_step * 1e6:.1f} us, Python beyond the C "
              f"step {python * 1e6:.1f} us ({python / c_step:.2f}x the C step)", flush=True)
    coretype = os.environ.get("OPENBLAS_CORETYPE", "unset")
    table = ["| graph | modules | parameters + buffers | calls | call us | C step us | "
             "Python us (target <= 50) | Python / C step |",
             "|---|---|---|---|---|---|---|---|"]
    for name, modules, tensors, calls, whole, c_step, python in rows:
        table.append(f"| {name} | {modules} | {tensors} | {calls} | {whole * 1e6:.1f} | "
                     f"{c_step * 1e6:.1f} | {python * 1e6:.1f} | {python / c_step:.2f} |")
    print("\n".join(table))
    if args.write:
        rev = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True).stdout.strip() or "unknown"
        setup = (f"git {rev} (+ working tree); one rank in this process, SGD; {args.threads} thread(s) "
                 f"(PIPEFLOW_NUM_THREADS={args.threads}, OPENBLAS_CORETYPE={coretype}); "
                 f"Python {sys.version.split()[0]}; medians over the calls after "
                 "a warm-up; Python = whole `graph(x, y)` minus the program's `pf_step`.")
        results.append("Per-call overhead of a compiled graph (bench/call_overhead.py)", setup,
                       "\n".join(table))


if __name__ == "__main__":
    main()
