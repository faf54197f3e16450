"""Selective activation checkpointing (issue 39): a module configured with
``activation_checkpointing = "selective"`` recomputes only attention's
scores, mask, softmax and dropout in the backward (Megatron-LM's selective
checkpointing, ``pf-selective-checkpoint``), fused or not.

The GPT of examples/python/models/gpt_model.py with every block's ``attn``
selective trains to the same losses as without checkpointing; with fusion
off, its plan keeps none of the [T, T] tensors the unmarked program saves
for the backward, and full checkpointing keeps no more than selective.
"""

import os
import re
import subprocess
import sys
import types

import numpy as np
import pytest

import pipeflow as flow

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(HERE)), "examples", "python")
sys.path[:0] = [EXAMPLES, os.path.join(EXAMPLES, "models")]
import gpt  # noqa: E402  (build_graph, batches)
import gpt_model  # noqa: E402

ARGS = dict(layout="one", schedule="1f1b", lr=1e-3, amp=None)


def gpt_graph(config, mode, fuse, seed, micro_batches=1):
    """gpt.py's one-rank AdamW graph of ``config`` with every block's
    attention's ``activation_checkpointing`` set to ``mode`` (None: not
    set)."""
    flow.manual_seed(seed)
    model = gpt_model.GPT(config)
    graph, place = gpt.build_graph(model, types.SimpleNamespace(micro_batches=micro_batches, **ARGS))
    graph.config.enable_fuse_attention(fuse)
    if mode is not None:
        for block in graph.model.h:
            block.attn.config.activation_checkpointing = mode
    return graph, place


def losses(config, mode, fuse, seed, steps=3):
    graph, place = gpt_graph(config, mode, fuse, seed)
    return np.array([float(graph(*place(flow.tensor(x), flow.tensor(y))).numpy())
                     for x, y in gpt.batches(seed, 4, config.block_size, steps)])


@pytest.mark.parametrize("fuse", [True, False])
def test_selective_losses_equal_no_checkpointing(pf_opt, fuse):
    """Three AdamW steps (with dropout, whose recomputed draws must be the
    forward's) give the losses of the run without checkpointing."""
    seed = int(np.random.default_rng().integers(1 << 30))
    config = gpt_model.GPTConfig(block_size=64, n_layer=2, n_head=4, n_embd=64, dropout=0.1)
    plain = losses(config, None, fuse, seed)
    selective = losses(config, "selective", fuse, seed)
    err = np.abs(selective - plain) / np.abs(plain)
    assert err.max() < 1e-6, f"seed {seed}: {selective} vs {plain}"
    assert plain[-1] != plain[0], plain


@pytest.mark.parametrize("fuse", [True, False])
def test_selective_marks_only_core_attention(pf_opt, fuse):
    """The tracer marks the attention modules' ops pf.checkpoint_selective;
    pf-selective-checkpoint turns that into pf.checkpoint on the fused op,
    or on the score matmul, scale, mask, softmax and dropout (5 ops and the
    mask's expansion) of each layer, and drops the selective marks."""
    config = gpt_model.GPTConfig(block_size=16, n_layer=2, n_head=4, n_embd=32, dropout=0.1)
    graph, place = gpt_graph(config, "selective", fuse, 0)
    x = np.random.default_rng().integers(0, config.vocab_size, (2, config.block_size))
    traced = graph.ir(*place(flow.tensor(x), flow.tensor(x)))
    assert "pf.checkpoint_selective" in traced and not re.search(r"pf\.checkpoint(?!_)", traced)
    passes = ["-pf-fuse-attention"] if fuse else []
    marked = subprocess.run([pf_opt, "-", *passes, "-pf-selective-checkpoint"], input=traced,
                            capture_output=True, text=True, check=True).stdout
    assert "pf.checkpoint_selective" not in marked
    ops = [line.split(" = ")[1].split()[0] for line in marked.splitlines()
           if "pf.checkpoint" in line and " = " in line]
    if fuse:
        assert ops == ["pf.attention"] * 2, ops
    else:
        per_layer = ["pf.matmul", "pf.mul_scalar", "pf.broadcast_to", "pf.masked_fill",
                     "pf.softmax", "pf.dropout"]
        assert ops == per_layer * 2, ops


def test_selective_plans_fewer_activation_bytes(pf_opt):
    """Fusion off, block 128: the forward keeps no [T, T] tensor for the
    backward. Without checkpointing it keeps per layer the softmax's output
    (for its gradient) and the dropout's (for the product with v's weight
    side), 4-byte floats of [b, H, T, T] per micro-batch of b sequences.
    activation_peak_bytes counts the bytes the forward keeps for the
    backward (per micro-batch: two micro-batches, so that it counts them)."""
    config = gpt_model.GPTConfig(block_size=128, n_layer=2, n_head=4, n_embd=64, dropout=0.1)
    batch, micro_batches = 4, 2
    x = np.random.default_rng().integers(0, config.vocab_size, (batch, config.block_size))

    def plan(mode):
        graph, place = gpt_graph(config, mode, False, 0, micro_batches=micro_batches)
        return graph.memory_report(*place(flow.tensor(x), flow.tensor(x)))[0]

    plain, selective, full = plan(None), plan("selective"), plan(True)
    T, H, L = config.block_size, config.n_head, config.n_layer
    saved_per_layer = 2  # softmax output, dropout output
    in_flight = plain["activations_in_flight"]
    assert in_flight == selective["activations_in_flight"] == micro_batches
    square = (batch // micro_batches) * H * T * T * 4 * saved_per_layer * L * in_flight
    # The recomputed mask expansion reads the causal mask constant
    # ([1, 1, T, T] booleans) in the backward instead.
    mask = T * T
    saved = plain["activation_peak_bytes"] - selective["activation_peak_bytes"]
    print(f"activation bytes: none {plain['activation_peak_bytes']}, selective "
          f"{selective['activation_peak_bytes']}, full {full['activation_peak_bytes']}; "
          f"[T, T] tensors {square}")
    assert saved >= square - mask, (saved, square, plain, selective)
    assert full["activation_peak_bytes"] <= selective["activation_peak_bytes"], (full, selective)


def test_switching_modes_traces_and_compiles_again():
    """True and "selective" are different programs: each switch traces
    again, and the compile options (the compile cache's key) name the
    modules of each mode."""
    graph, place = gpt_graph(gpt_model.GPTConfig(), None, True, 0)
    x = np.random.default_rng().integers(0, 256, (2, 32))
    args = place(flow.tensor(x), flow.tensor(x))
    attns = ["model.h.0.attn", "model.h.1.attn"]
    seen = []
    for mode in ("selective", True, "selective"):
        for block in graph.model.h:
            block.attn.config.activation_checkpointing = mode
        traced = graph.trace(*args)
        assert all(traced is not other for other in seen[-1:])
        seen.append(traced)
        selective = mode == "selective"
        assert traced.options["selective_checkpointing"] == (attns if selective else [])
        assert traced.options["activation_checkpointing"] == ([] if selective else attns)
        attrs = [a for op in traced.ops for a in op.attrs if a.startswith("pf.checkpoint")]
        assert attrs and set(attrs) == {"pf.checkpoint_selective" if selective else "pf.checkpoint"}
    assert seen[0].text() == seen[2].text() and seen[0].text() != seen[1].text()


def test_invalid_checkpointing_value_raises():
    graph, _ = gpt_graph(gpt_model.GPTConfig(), None, True, 0)
    with pytest.raises(ValueError, match="True, False or 'selective'.*'partial'"):
        graph.model.h[0].attn.config.activation_checkpointing = "partial"
    block = graph.model.h[0].attn.config
    block.activation_checkpointing = "selective"
    assert block.activation_checkpointing == "selective"
    block.activation_checkpointing = 1
    assert block.activation_checkpointing is True
