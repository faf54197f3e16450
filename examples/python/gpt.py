"""A small GPT trained on a licence text that ships with Debian (issue 16).

The model (models/gpt_model.py) is written the way nanoGPT writes it, against the
torch API, and runs under ``import pipeflow as flow``. Tokens are the bytes of
``/usr/share/common-licenses/GPL-3``; each step trains on ``--batch``
windows of ``--block`` bytes drawn from a seeded generator, with AdamW.
From the repository root::

    PYTHONPATH=python /usr/bin/python3 examples/python/gpt.py --steps 50

trains in one process (layout ``one``) and prints the loss every step and,
on rank 0, the median step time after the first two steps.
Other layouts run under the launcher on CPU ranks::

    PYTHONPATH=python /usr/bin/python3 -m pipeflow.distributed.launch \\
        --nproc_per_node 2 examples/python/gpt.py --layout dp

``--layout``: ``one`` (one rank), ``dp`` (data parallel on ranks 0 and 1),
``pp`` (two pipeline stages, the first half of the blocks on rank 0, the
rest and the head on rank 1), ``pp_dp`` (two stages of two data-parallel
ranks each, 4 ranks), ``tp`` (Megatron's tensor parallelism on ranks 0
and 1: ``c_attn`` and ``c_fc`` column-split, both ``c_proj`` row-split,
the rest replicated), ``tp_dp`` (a 2 x 2 mesh: data parallel over its
rows, tensor parallel within each) and ``pp_tp`` (two stages of two
tensor-parallel ranks each) and ``pp_tp_dp`` (two stages of a 2 x 2 mesh
each, data parallel over its rows, 8 ranks). The tensor-parallel layouts only set the
weights' SBP the way Megatron lays them out (and the vocabulary split
of the token embedding and the head, tied or not); the compiler derives
the rest (one all-reduce per attention and per MLP, each way, one for the
embedding, one for the head's input gradient, and the cross-entropy split
by class, which all-reduces each row's max and sums, never the logits);
``--sequence-parallel`` adds Megatron's sequence parallelism to them
(reduce-scatters and all-gathers instead of those all-reduces, layer norms
and dropout on 1/TP of the tokens). ``--schedule`` picks the pipeline schedule of the
staged layouts (gpipe, 1f1b, interleaved-1f1b with two model chunks per
rank, zb-h1) and ``--micro-batches`` the gradient accumulation steps. ``--tie`` ties ``lm_head`` to the token
embedding (one-stage layouts). ``--compile-only`` traces and verifies.
"""

import argparse
import os
import statistics
import sys
import time

import numpy as np

import pipeflow as flow
import pipeflow.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "models"))
from gpt_model import GPT, GPTConfig  # noqa: E402

TEXT = "/usr/share/common-licenses/GPL-3"


def batches(seed, batch, block, steps):
    """``steps`` (inputs, targets) pairs of byte windows of the text."""
    data = np.frombuffer(open(TEXT, "rb").read(), dtype=np.uint8).astype(np.int64)
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        starts = rng.integers(0, len(data) - block - 1, size=batch)
        x = np.stack([data[s:s + block] for s in starts])
        y = np.stack([data[s + 1:s + 1 + block] for s in starts])
        yield x, y


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layout", default="one", choices=sorted(LAYOUTS))
    parser.add_argument("--schedule", default="1f1b", help="gpipe, 1f1b, interleaved-1f1b or zb-h1")
    parser.add_argument("--micro-batches", type=int, default=1)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--block", type=int, default=32)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--heads", type=int, default=4,
                        help="attention heads (any count: a tensor-parallel layout whose "
                             "ranks do not divide it computes attention replicated)")
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--zero", type=int, default=0, choices=[0, 1, 2, 3],
                        help="ZeRO stage (graph.config.enable_zero)")
    parser.add_argument("--tie", action="store_true")
    parser.add_argument("--dropout", type=float, default=0.0,
                        help="attention, residual and embedding dropout (nanoGPT's)")
    parser.add_argument("--bucket-mbytes", type=float, default=None,
                        help="gradient all-reduce bucket size in MiB (0: one all-reduce a "
                             "gradient; default: the compiler's 25)")
    parser.add_argument("--amp", choices=["bf16", "f16"], default=None,
                        help="mixed precision: GEMMs in bfloat16 or float16, float32 master "
                             "weights (graph.config.enable_amp)")
    parser.add_argument("--sequence-parallel", action="store_true",
                        help="Megatron's sequence parallelism on the tensor-parallel layouts "
                             "(graph.config.enable_sequence_parallel)")
    parser.add_argument("--compile-only", action="store_true")
    parser.add_argument("--checksum", action="store_true",
                        help="print a checksum of the trained weights (read back in logical form)")
    args = parser.parse_args()
    flow.manual_seed(args.seed)
    config = GPTConfig(block_size=args.block, n_layer=args.layers, n_head=args.heads,
                       n_embd=args.width, tie=args.tie, dropout=args.dropout)
    model = GPT(config)
    graph, place_inputs = build_graph(model, args)
    times = []
    for step, (x, y) in enumerate(batches(args.seed, args.batch, args.block, args.steps)):
        x, y = place_inputs(flow.tensor(x), flow.tensor(y))
        if args.compile_only:
            compiled = graph.compile(x, y)
            print(compiled.verified_ir, end="")
            print(f"// verified by pf-opt; cached in {compiled.directory}")
            return
        t0 = time.perf_counter()
        local = graph(x, y).to_local()  # the micro-batch losses, on the ranks of the last stage
        times.append(time.perf_counter() - t0)
        if local.numel():
            print(f"step {step}: loss {float(local.numpy().astype('float64').mean()):.8f}", flush=True)
    if len(times) > 2 and flow.env.get_rank() == 0:
        # The first steps compile and warm up.
        print(f"median step {statistics.median(times[2:]) * 1e3:.1f} ms", flush=True)
    if args.checksum:
        print(f"weights checksum {weights_checksum(graph, model):.10e}", flush=True)


def weights_checksum(graph, model):
    """A position-weighted sum of the trained parameters' logical values: a
    layout that put any element in another place would change it.
    ``graph.state_dict()`` reads them back (a collective: every process)."""
    graph.state_dict()
    total = 0.0
    for _, value in sorted(model.state_dict().items()):
        a = value.numpy().astype(np.float64).ravel()
        total += float(np.dot(a, np.arange(a.size) % 97 + 1))
    return total


B = flow.sbp.broadcast
S0 = flow.sbp.split(0)
# layout: (the ranks of each pipeline stage, the batch's SBP, tensor parallel)
LAYOUTS = {"one": ([[0]], B, False), "dp": ([[0, 1]], S0, False),
           "pp": ([[0], [1]], B, False), "pp_dp": ([[0, 1], [2, 3]], S0, False),
           "tp": ([[0, 1]], B, True), "tp_dp": ([[[0, 1], [2, 3]]], [S0, B], True),
           "pp_tp": ([[0, 1], [2, 3]], B, True),
           "pp_tp_dp": ([[[0, 1], [2, 3]], [[4, 5], [6, 7]]], [S0, B], True)}


def tensor_parallel(block, place):
    """Megatron's layout of a block on ``place`` (its last dimension is the
    tensor-parallel one): the input projections column-split, the output
    projections row-split with a replicated bias."""
    def sbp(split):
        return [B] * (place.ndim - 1) + [split]

    for linear in (block.attn.c_attn, block.mlp.c_fc):
        linear.to_global(placement=place, sbp=sbp(flow.sbp.split(0)))
    for linear in (block.attn.c_proj, block.mlp.c_proj):
        linear.weight = nn.Parameter(linear.weight.to_global(placement=place,
                                                             sbp=sbp(flow.sbp.split(1))))


def submodule(root, name):
    """``root``'s module at the dotted path ``name`` (``"h.0"``)."""
    for part in name.split("."):
        root = root[int(part)] if part.isdigit() else getattr(root, part)
    return root


def build_graph(model, args):
    """The training graph of ``args.layout`` and how it places the inputs."""
    ranks, batch_sbp, tp = LAYOUTS[args.layout]
    places = [flow.placement("cpu", ranks=r) for r in ranks]
    replicated = [B] * places[0].ndim
    # Interleaved 1F1B: two model chunks per pipeline rank, stage s on
    # rank s mod 2; otherwise one stage per rank. The blocks spread evenly;
    # the embeddings are stage 0, the head last.
    chunks = 2 if args.schedule == "interleaved-1f1b" and len(places) > 1 else 1
    stages = chunks * len(places)
    stage_of = {f"h.{i}": i * stages // len(model.h) for i in range(len(model.h))}
    stage_of.update({"ln_f": stages - 1, "lm_head": stages - 1})
    model.to_global(placement=places[0], sbp=replicated)
    for name, stage in stage_of.items():
        module = submodule(model, name)
        module.to_global(placement=places[stage % len(places)], sbp=replicated)
        if tp and name.startswith("h."):
            tensor_parallel(module, places[stage % len(places)])
    if tp:
        # Megatron's vocabulary-parallel embedding and head: each rank holds
        # a range of the token table's rows and of the head's, so the logits
        # stay split by class (the cross-entropy all-reduces each row's max
        # and sums, never the logits). A tied table is the head's weight.
        vocab = replicated[:-1] + [flow.sbp.split(0)]
        model.lm_head.to_global(placement=places[(stages - 1) % len(places)], sbp=vocab)
        if not args.tie:
            model.wte.to_global(placement=places[0], sbp=vocab)
    optimizer = flow.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.1)

    class GPTGraph(nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            self.add_optimizer(optimizer)
            self.config.set_gradient_accumulation_steps(args.micro_batches)
            if getattr(args, "amp", None):
                low = {"bf16": flow.bfloat16, "f16": flow.float16}[args.amp]
                self.config.enable_amp(True, dtype=low)
            if getattr(args, "zero", 0):
                self.config.enable_zero(True, stage=args.zero)
            if getattr(args, "sequence_parallel", False):
                self.config.enable_sequence_parallel(True)
            if getattr(args, "bucket_mbytes", None) is not None:
                self.config.set_gradient_bucket_mbytes(args.bucket_mbytes)
            if len(places) > 1:
                for name, stage in stage_of.items():
                    submodule(self.model, name).config.set_stage(
                        stage_id=stage, placement=places[stage % len(places)])
                self.config.set_pipeline_schedule(args.schedule, num_chunks=chunks)

        def build(self, x, y):
            loss = self.model(x, y)
            loss.backward()
            return loss

    def place_inputs(x, y):
        return (x.to_global(placement=places[0], sbp=batch_sbp),
                y.to_global(placement=places[-1], sbp=batch_sbp))

    return GPTGraph(), place_inputs


if __name__ == "__main__":
    main()
