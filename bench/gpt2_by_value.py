#!/usr/bin/env python3
"""GPT-2 124M from a state dict: every parameter given by value, at size.

  PYTHONPATH=python /usr/bin/python3 bench/gpt2_by_value.py [--steps 3]
        [--block 64] [--batch 2] [--threads 2] [--write]

nanoGPT's GPT (examples/python/nanogpt/model.py) at GPT-2 small's size
(12 layers, 12 heads, 768 wide, vocabulary 50304, bias, tied embedding,
124M parameters) is made in torch (Debian's 1.13, the same model file with
its imports pointed at torch) and its state dict loaded into PipeFlow's
model with ``load_state_dict``: as with a pretrained checkpoint, no
parameter keeps an initializer recipe, so all 124M values travel into the
compiled program before its first step (``traced.given`` lists them). Then
--steps AdamW steps (nanoGPT's configure_optimizers, clipping 1.0) of
TrainGraph in PipeFlow and of eager torch from the same weights on the same
random batches. Prints the phases' times (trace + compile + load of the
first call, the later steps), the peak resident memory, and the losses'
largest relative difference (a check: it must stay under 1e-4).
"""

import argparse
import os
import resource
import statistics
import sys
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
NANOGPT = os.path.join(ROOT, "examples", "python", "nanogpt")
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, NANOGPT)
import results  # noqa: E402


def torch_module():
    src = open(os.path.join(NANOGPT, "model.py")).read()
    for ours, theirs in (("import pipeflow as flow", "import torch as flow"),
                         ("from pipeflow import nn", "from torch import nn"),
                         ("from pipeflow.nn import functional as F", "from torch.nn import functional as F")):
        src = src.replace(ours, theirs)
    module = types.ModuleType("nanogpt_model_torch")
    sys.modules[module.__name__] = module
    exec(compile(src, "model.py", "exec"), module.__dict__)
    return module


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--block", type=int, default=64)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    os.environ["PIPEFLOW_NUM_THREADS"] = str(args.threads)
    import numpy as np
    import torch

    import pipeflow as flow
    import model as ours
    torch.set_num_threads(args.threads)

    dims = dict(n_layer=12, n_head=12, n_embd=768, block_size=args.block, vocab_size=50304,
                dropout=0.0, bias=True)
    tm = torch_module()
    torch.manual_seed(0)
    tmodel = tm.GPT(tm.GPTConfig(**dims))
    state = {k: v.detach().numpy().copy() for k, v in tmodel.state_dict().items()}

    t0 = time.perf_counter()
    model = ours.GPT(ours.GPTConfig(**dims))
    result = model.load_state_dict({k: flow.tensor(v) for k, v in state.items()}, strict=False)
    made = time.perf_counter() - t0
    assert not result.missing_keys, result.missing_keys

    def optimizer_of(m):
        return m.configure_optimizers(0.1, 6e-4, (0.9, 0.95), "cpu")

    graph = results.train_graph(flow, model, optimizer_of(model), results.nanogpt_loss, clip=1.0)
    rng = np.random.default_rng(1)
    batches = [(rng.integers(0, 50304, (args.batch, args.block)), rng.integers(0, 50304, (args.batch, args.block)))
               for _ in range(args.steps)]
    ours_losses, times = [], []
    for x, y in batches:
        t = time.perf_counter()
        ours_losses.append(float(graph(flow.tensor(x), flow.tensor(y)).numpy()))
        times.append(time.perf_counter() - t)
    given = len(graph._run.traced.given)
    peak_ours = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    topt = optimizer_of(tmodel)
    theirs, ttimes = [], []
    for x, y in batches:
        t = time.perf_counter()
        _, loss = tmodel(torch.from_numpy(x), torch.from_numpy(y))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(tmodel.parameters(), 1.0)
        topt.step()
        topt.zero_grad(set_to_none=True)
        theirs.append(loss.item())
        ttimes.append(time.perf_counter() - t)
    err = max(abs(a - b) / abs(b) for a, b in zip(ours_losses, theirs, strict=True))
    params = sum(v.size for k, v in state.items() if k != "lm_head.weight")
    rows = [
        ("parameters", f"{params / 1e6:.1f}M ({given} tensors given by value)"),
        ("model + load_state_dict", f"{made:.2f} s"),
        ("first call (trace, compile, build, load, values in, step)", f"{times[0]:.1f} s"),
        ("later steps, median", f"{statistics.median(times[1:]):.2f} s" if len(times) > 1 else "-"),
        ("torch eager step, median of later", f"{statistics.median(ttimes[1:]):.2f} s" if len(ttimes) > 1 else "-"),
        ("peak RSS after PipeFlow's steps", f"{peak_ours:.0f} MiB"),
        ("losses (PipeFlow / torch)", " ".join(f"{a:.6f}/{b:.6f}" for a, b in zip(ours_losses, theirs, strict=True))),
        ("largest relative difference", f"{err:.1e}"),
    ]
    for k, v in rows:
        print(f"{k:58s} {v}")
    assert given >= 140, f"only {given} parameters given by value"
    assert err < 1e-4, f"losses differ: {ours_losses} vs {theirs}"
    if args.write:
        settings = (f"GPT-2 124M (nanoGPT model.py, bias, tied), block {args.block}, batch {args.batch}, "
                    f"AdamW, clip 1.0, {args.steps} steps; {args.threads} thread(s), "
                    f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', 'unset')}")
        table = "| what | value |\n|---|---|\n" + "".join(f"| {k} | {v} |\n" for k, v in rows)
        results.append("GPT-2 124M from a state dict, every parameter by value (bench/gpt2_by_value.py)",
                       settings, table)


if __name__ == "__main__":
    main()
