"""Planned memory of the GPT in mixed precision against float32 (issue 36).

Compiles examples/python/models/gpt_model.py's GPT for one rank with AdamW,
in float32 and with graph.config.enable_amp(True, dtype=bfloat16) and
float16, without running it (graph.memory_report(*inputs): the per-rank
memory plan), and prints each plan's bytes by category and their ratio to
float32's. The issue's target: the step's planned activation bytes in bf16
at most 0.6 of float32's (the plan's activation_peak_bytes: buffers a
forward op writes and a backward op, or a recomputation for one, reads
later; two micro-batches, so that the plan tags them).

    /usr/bin/python3 bench/amp_memory.py [--width 768 --block 256 ...] [--write]
"""

import os
import sys
import types

import results

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [os.path.join(ROOT, "python"), os.path.join(ROOT, "examples", "python"),
                os.path.join(ROOT, "examples", "python", "models")]

KEYS = ("activation_peak_bytes", "parameter_bytes", "state_bytes", "step_peak_bytes", "step_lower_bound_bytes",
        "arena_bytes")


def plan(flow, gpt, gpt_model, args, amp):
    import numpy as np
    flow.manual_seed(0)
    config = gpt_model.GPTConfig(block_size=args.block, n_layer=args.layers, n_head=args.heads,
                                 n_embd=args.width, vocab_size=args.vocab)
    graph, place = gpt.build_graph(gpt_model.GPT(config), types.SimpleNamespace(
        layout="one", schedule="1f1b", micro_batches=2, lr=1e-3, amp=amp))
    x = np.random.default_rng(0).integers(0, args.vocab, (args.batch, args.block))
    return graph.memory_report(*place(flow.tensor(x), flow.tensor(x)))[0]


def main():
    args = results.parser(__doc__, layers=4, width=768, heads=12, vocab=8192, block=256,
                          batch=4).parse_args()
    import gpt
    import gpt_model

    import pipeflow as flow
    plans = {amp: plan(flow, gpt, gpt_model, args, amp) for amp in (None, "bf16", "f16")}
    base = plans[None]
    rows = []
    for amp, p in plans.items():
        cells = " | ".join(f"{p[k] / 2**20:.1f} ({p[k] / base[k]:.3f})" for k in KEYS)
        rows.append(f"| {amp or 'f32'} | {cells} |")
    table = ("| dtype | " + " | ".join(f"{k} MiB (vs f32)" for k in KEYS) + " |\n|"
             + "---|" * (len(KEYS) + 1) + "\n" + "\n".join(rows) + "\n")
    bf16 = plans["bf16"]["activation_peak_bytes"] / base["activation_peak_bytes"]
    setup = (f"GPT (gpt_model.py) {args.layers} layers x {args.width} wide, {args.heads} heads, "
             f"vocabulary {args.vocab}, block {args.block}, batch {args.batch} in 2 micro-batches, "
             "AdamW, one rank, fused attention; "
             "compiled only (graph.memory_report(*inputs)), the rank's memory plan; step peak = "
             "the plan's largest live set of step buffers (activations, gradients in flight, "
             "temporaries); activation peak = forward buffers a backward op reads; target: "
             "bf16 activation peak <= 0.6 of f32's, "
             f"{'met' if bf16 <= 0.6 else 'NOT met'} ({bf16:.3f})")
    results.report(args, "GPT planned memory in mixed precision (bench/amp_memory.py)", setup,
                   table)


if __name__ == "__main__":
    main()
