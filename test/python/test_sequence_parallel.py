"""Megatron-LM's sequence parallelism (issue 38, item 3):
``graph.config.enable_sequence_parallel(True)`` on the tensor-parallel GPT of
examples/python/gpt.py.

- TP2 with sequence parallelism (and dropout) trains like one rank: every
  step's loss within 1e-5, and the trained weights (layer norms' included,
  whose gradients are partial sums of the sequence shards).
- The boxing report: every activation all-reduce of TP2 becomes a
  reduce-scatter and an all-gather of half its bytes each, so activations
  move the same bytes.
- The rank programs the memory plan sizes its buffers from: layer norm,
  dropout and the residual adds hold half the tokens.
- Bad configurations are CompileErrors at a line of the user's program.
"""

import os
import re
import subprocess
import sys
import types

import numpy as np
import pytest
from conftest import mpiexec_available
from test_examples import run

import pipeflow as flow
from pipeflow import compiler

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(HERE)), "examples", "python")
MODEL = os.path.join(EXAMPLES, "models", "gpt_model.py")
sys.path.insert(0, EXAMPLES)
sys.path.insert(0, os.path.dirname(MODEL))
import gpt  # noqa: E402
import gpt_model  # noqa: E402

LAYERS, HEADS, WIDTH, BATCH, BLOCK = 2, 4, 32, 4, 16


def printed(stdout, pattern):
    """Every match of ``pattern`` (one group, a float) in ``stdout``."""
    return [float(v) for v in re.findall(pattern, stdout)]


@pytest.mark.skipif(not mpiexec_available(), reason="mpiexec (MPICH) is not installed")
def test_gpt_tp2_sequence_parallel_equals_one_rank(pf_opt, tmp_path):
    seed = str(np.random.default_rng().integers(2**31))
    args = ("--seed", seed, "--steps", "3", "--layers", str(LAYERS), "--heads", str(HEADS),
            "--width", str(WIDTH), "--batch", str(BATCH), "--block", str(BLOCK),
            "--dropout", "0.1", "--checksum")
    path = os.path.join(EXAMPLES, "gpt.py")
    many = run(path, *args, "--layout", "tp", "--sequence-parallel", cache=tmp_path, ranks=2)
    one = run(path, *args, cache=tmp_path)
    assert many.returncode == 0 and one.returncode == 0, many.stderr + one.stderr
    loss = r"step \d+: loss (-?\d+\.\d{8})"
    got, want = printed(many.stdout, loss), printed(one.stdout, loss)
    assert len(want) == 3 and len(got) == 6, (many.stdout, one.stdout)  # both ranks print
    for i, ref in enumerate(want):
        steps = [v for v in got if abs(v - ref) <= 1e-5 * abs(ref)]
        assert len(steps) == 2, (seed, i, got, want)
    checksum = r"weights checksum (-?\d\.\d{10}e[+-]\d+)"
    sums, (ref,) = printed(many.stdout, checksum), printed(one.stdout, checksum)
    assert len(sums) == 2 and all(abs(v - ref) <= 1e-5 * abs(ref) for v in sums), (seed, sums, ref)


def tp_graph(sequence_parallel, block=BLOCK, layout="tp"):
    """gpt.py's graph of the small GPT on ``layout`` (dropout 0.1) and its inputs."""
    flow.manual_seed(int(np.random.default_rng().integers(2**31)))
    config = gpt_model.GPTConfig(block_size=block, n_layer=LAYERS, n_head=HEADS, n_embd=WIDTH,
                                 dropout=0.1)
    args = types.SimpleNamespace(layout=layout, schedule="1f1b", micro_batches=1, lr=1e-3,
                                 tie=False, sequence_parallel=sequence_parallel)
    graph, place = gpt.build_graph(gpt_model.GPT(config), args)
    x, y = next(gpt.batches(0, BATCH, block, 1))
    return graph, place(flow.tensor(x), flow.tensor(y))


def activation_collectives(report):
    """(kind, bytes per rank) of every boxing op of a [batch, block, width]
    activation in a boxing report."""
    shape = f"{BATCH}x{BLOCK}x{WIDTH}xf32"
    return [(kind, int(nbytes)) for kind, nbytes in
            re.findall(rf"^\s*(\w+) {shape} .*: (\d+) bytes/rank", report, re.M)]


def test_sequence_parallel_moves_the_all_reduces_bytes(pf_opt):
    """Under TP2 each activation all-reduce (T bytes a rank, T the
    activation's size) is replaced by a reduce-scatter and an all-gather (T/2
    each); the free slice of the residual stream entering the first block
    moves nothing."""
    reports = {}
    for sp in (False, True):
        graph, inputs = tp_graph(sp)
        reports[sp] = graph.debug_report(*inputs)
    plain, sp = (activation_collectives(reports[k]) for k in (False, True))
    full = BATCH * BLOCK * WIDTH * 4
    # Per block 2 all-reduces each way, and one for the embeddings' sum and
    # one for the head's input gradient.
    assert plain == [("all_reduce", full)] * (4 * LAYERS + 2), reports[False]
    assert {kind for kind, _ in sp} == {"reduce_scatter", "all_gather", "shard"}, reports[True]
    scatters = [b for kind, b in sp if kind == "reduce_scatter"]
    gathers = [b for kind, b in sp if kind == "all_gather"]
    assert scatters == gathers == [full // 2] * (4 * LAYERS + 2), reports[True]
    assert sum(b for _, b in sp) == sum(b for _, b in plain)
    # The layer norms' and the row-parallel biases' gradients, computed on
    # sequence shards, are partial sums all-reduced at the update.
    small = re.findall(rf"all_reduce {WIDTH}xf32 .*\[P\]> -> #pf.sbp<\[B\]>", reports[True])
    assert len(small) == 2 * (2 * LAYERS + 1) + 2 * LAYERS, reports[True]


RESULT = re.compile(r"^\s*%\S+ = pf\.(layer_norm|dropout|add) .*-> !pf\.global<([\dx]+)xf32,")


def rank_activation_bytes(graph, inputs):
    """{op name: bytes} of the forward results of layer norm, dropout and the
    adds (the residual stream) in rank 0's program, the per-rank program the
    memory plan gives its buffers from (pf-compile-to=rank)."""
    compiled = graph.compile(*inputs)
    traced = graph.trace(*inputs)
    _, _, pipeline = graph._pipeline(traced, None)
    proc = subprocess.run([compiler.find_pf_opt(), compiled.ir_path,
                           f"-pf-compile-cpu-pipeline={pipeline} pf-compile-to=rank"],
                          capture_output=True, text=True, timeout=300, check=True)
    rank0 = proc.stdout.split("module @", 2)[1]
    sizes = {}
    for line in rank0.splitlines():
        m = RESULT.match(line)
        if m and "pf.phase" not in line:
            sizes.setdefault(m[1], []).append(4 * int(np.prod([int(d) for d in m[2].split("x")])))
    return sizes


def test_sequence_parallel_halves_norm_dropout_residual_buffers(pf_opt):
    """Rank 0's layer-norm, dropout and residual-add results (forward) take
    1/TP of their bytes under sequence parallelism; the planned step peak
    does not grow."""
    graphs = [tp_graph(sp) for sp in (False, True)]
    plain, sp = (rank_activation_bytes(*g) for g in graphs)
    # Every block's two norms and the final one; the embeddings' dropout and
    # each block's two residual dropouts (attention's is inside pf.attention).
    assert len(plain["layer_norm"]) == 2 * LAYERS + 1 and len(plain["dropout"]) == 2 * LAYERS + 1
    for kind in ("layer_norm", "dropout", "add"):
        assert len(sp[kind]) == len(plain[kind]), (kind, sp, plain)
        assert sum(plain[kind]) == 2 * sum(sp[kind]), (kind, sp, plain)
    peaks = [graph.memory_report(*inputs)[0]["step_peak_bytes"] for graph, inputs in graphs]
    assert peaks[1] <= peaks[0], peaks


def test_sequence_parallel_without_tensor_parallelism_is_an_error(pf_opt):
    """Data parallelism alone has nothing to split the sequence over: a
    CompileError at the line that asks for sequence parallelism."""
    graph, inputs = tp_graph(True, layout="dp")
    with pytest.raises(flow.CompileError, match="sequence parallelism needs tensor parallelism") as err:
        graph.memory_report(*inputs)
    line = next(i + 1 for i, text in enumerate(open(os.path.join(EXAMPLES, "gpt.py")))
                if "enable_sequence_parallel(True)" in text)
    assert f"gpt.py:{line}" in str(err.value), str(err.value)


def test_sequence_parallel_with_an_odd_sequence_is_an_error(pf_opt):
    """A block of 15 tokens does not divide over two tensor-parallel ranks:
    a CompileError at the model's line whose partial sum would be scattered."""
    graph, inputs = tp_graph(True, block=15)
    with pytest.raises(flow.CompileError, match=r"sequence axis \(axis 1, 15 long\)") as err:
        graph.memory_report(*inputs)
    assert "gpt_model.py" in str(err.value), str(err.value)
