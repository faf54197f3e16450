"""The GPT of examples/python/models/gpt_model.py trains like eager PyTorch (issue 16).

The model file is written against the torch API; here it runs twice, once
as it is (``import pipeflow as flow``, compiled by nn.Graph) and once with
its imports pointed at torch (Debian's python3-torch), from the same initial
weights on the same batches of the licence text, with AdamW. The losses of
every step agree within 1e-4 relative (float32 on both sides; the orders of
the sums differ). Some targets are -1, which cross-entropy ignores.
"""

import os
import re
import sys
import types

import numpy as np
import pytest
import torch
from conftest import mpiexec_available, torch_twin
from test_examples import run

import pipeflow as flow

needs_mpiexec = pytest.mark.skipif(not mpiexec_available(), reason="mpiexec (MPICH) is not installed")

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(HERE)), "examples", "python")
MODEL = os.path.join(EXAMPLES, "models", "gpt_model.py")
sys.path.insert(0, EXAMPLES)
sys.path.insert(0, os.path.dirname(MODEL))
import gpt  # noqa: E402  (the training script: batches, build_graph)
import gpt_model  # noqa: E402


def torch_module():
    """gpt_model.py with its imports pointed at torch."""
    return torch_twin(MODEL, "gpt_model_torch", "import pipeflow.nn as nn")


def data(seed, batch, block, steps):
    """The training batches, with about one target in eight set to -1."""
    rng = np.random.default_rng(seed + 1)
    for x, y in gpt.batches(seed, batch, block, steps):
        y = y.copy()
        y[rng.random(y.shape) < 0.125] = -1
        yield x, y


def torch_losses(config, weights, batches, lr, autocast=False):
    """gpt_model.py under torch from ``weights``, AdamW; the forward under
    ``torch.autocast("cpu", bfloat16)`` with ``autocast``."""
    tg = torch_module()
    torch.manual_seed(0)
    model = tg.GPT(tg.GPTConfig(**config.__dict__))
    state = model.state_dict()
    for name, value in weights.items():
        assert state[name].shape == value.shape, name
        state[name] = torch.from_numpy(value)
    model.load_state_dict(state)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.1)
    losses = []
    for x, y in batches:
        with torch.autocast(device_type="cpu", dtype=torch.bfloat16, enabled=autocast):
            loss = model(torch.from_numpy(x), torch.from_numpy(y))
        opt.zero_grad()
        loss.float().backward()
        opt.step()
        losses.append(float(loss.float().item()))
    return np.array(losses)


def pipeflow_losses(seed, config, args, batches):
    """The losses of gpt.py's graph for ``args`` on ``batches`` in one
    process, and the initial weights it trained from."""
    flow.manual_seed(seed)
    model = gpt_model.GPT(config)
    graph, place = gpt.build_graph(model, args)
    # Traced, the parameters hold the compiled program's initial values.
    graph.compile(*place(flow.tensor(batches[0][0]), flow.tensor(batches[0][1])))
    weights = {name: p.numpy().copy() for name, p in model.named_parameters()}
    ours = np.array([float(graph(*place(flow.tensor(x), flow.tensor(y))).numpy().mean())
                     for x, y in batches])
    return ours, weights


@pytest.mark.parametrize("tie", [False, True])
def test_gpt_losses_equal_eager_torch(pf_opt, tie):
    seed = int(np.random.default_rng().integers(1 << 30))
    args = types.SimpleNamespace(layout="one", schedule="1f1b", micro_batches=1, lr=1e-3)
    config = gpt_model.GPTConfig(block_size=16, n_layer=2, n_head=4, n_embd=32, tie=tie)
    batches = list(data(seed, 4, config.block_size, 10))
    ours, weights = pipeflow_losses(seed, config, args, batches)
    theirs = torch_losses(config, weights, batches, args.lr)
    err = np.abs(ours - theirs) / np.abs(theirs)
    assert err.max() < 1e-4, f"seed {seed}: losses {ours} vs torch {theirs}"
    assert theirs[-1] < theirs[0], "the loss falls over the steps"


def printed_losses(stdout):
    """{step: loss} of ``gpt.py``'s "step i: loss x" lines (ranks that hold
    the loss each print it; they must agree)."""
    losses = {}
    # Ranks share stdout, so lines may run into each other.
    for step, value in re.findall(r"step (\d+): loss (-?\d+\.\d{8})", stdout):
        assert losses.setdefault(int(step), float(value)) == float(value), stdout
    return losses


@needs_mpiexec
def test_gpt_pp_tp_larger_micro_batches_equal_one_rank(pf_opt, tmp_path):
    """PP2 x TP2 with micro-batches of 4 sequences of 32 tokens: SBP inference
    keeps stage 1's activations batch-split there, so the grouped (fused
    q/k/v) weight is gathered and its gradients reduce-scattered into the
    grouped split (pf-lower-boxing through a reshape); the losses and trained
    weights equal the one-rank run."""
    seed = str(np.random.default_rng().integers(2**31))
    args = ("--seed", seed, "--steps", "2", "--layers", "2", "--micro-batches", "4",
            "--batch", "16", "--block", "32", "--checksum")
    path = os.path.join(EXAMPLES, "gpt.py")
    many = run(path, *args, "--layout", "pp_tp", "--schedule", "1f1b", cache=tmp_path, ranks=4)
    one = run(path, *args, cache=tmp_path)
    assert many.returncode == 0 and one.returncode == 0, many.stderr + one.stderr
    got, want = printed_losses(many.stdout), printed_losses(one.stdout)
    assert sorted(got) == sorted(want) == [0, 1]
    err = max(abs(got[k] - want[k]) / abs(want[k]) for k in want)
    assert err < 1e-5, (seed, got, want)


@needs_mpiexec
@pytest.mark.parametrize("layout,ranks,schedule", [
    ("dp", 2, "1f1b"), ("pp", 2, "1f1b"), ("pp", 2, "interleaved-1f1b"),
    ("pp", 2, "zb-h1"), ("pp", 2, "gpipe"), ("pp_dp", 4, "1f1b"), ("tp", 2, "1f1b"),
    ("tp_dp", 4, "1f1b"), ("pp_tp", 4, "zb-h1")])
def test_gpt_layouts_equal_one_rank(pf_opt, tmp_path, layout, ranks, schedule):
    """examples/python/gpt.py under the launcher (data parallel, two pipeline
    stages under every schedule, PP x DP on 4 ranks, Megatron's tensor
    parallelism alone, on a 2 x 2 mesh with data parallelism and under two
    pipeline stages; 4 micro-batches) and in one process, same fresh seed:
    every step's loss equal within 1e-5, and so the trained weights, read
    back by every process (a position-weighted checksum)."""
    seed = str(np.random.default_rng().integers(2**31))
    args = ("--seed", seed, "--steps", "3", "--layers", "4", "--micro-batches", "4",
            "--batch", "8", "--block", "16", "--checksum")
    path = os.path.join(EXAMPLES, "gpt.py")
    many = run(path, *args, "--layout", layout, "--schedule", schedule, cache=tmp_path, ranks=ranks)
    one = run(path, *args, cache=tmp_path)
    assert many.returncode == 0 and one.returncode == 0, many.stderr + one.stderr
    got, want = printed_losses(many.stdout), printed_losses(one.stdout)
    assert sorted(got) == sorted(want) == [0, 1, 2]
    err = max(abs(got[k] - want[k]) / abs(want[k]) for k in want)
    assert err < 1e-5, (seed, got, want)
    # The trained weights read back in logical form (state_dict gathers the
    # parts of grouped and vocabulary splits) match element by element.
    checksum = r"weights checksum (-?\d\.\d{10}e[+-]\d+)"  # ranks' lines may run together
    sums = [float(v) for v in re.findall(checksum, many.stdout)]
    (ref,) = [float(v) for v in re.findall(checksum, one.stdout)]
    assert len(sums) == ranks and all(abs(v - ref) <= 1e-5 * abs(ref) for v in sums), (seed, sums, ref)


@needs_mpiexec
@pytest.mark.parametrize("layout,ranks,zero", [("tp", 2, 0), ("pp_tp_dp", 8, 1)])
def test_gpt_with_heads_tp_does_not_divide_equals_one_rank(pf_opt, tmp_path, layout, ranks, zero):
    """Five heads on two tensor-parallel ranks (GPT-2 XL's 25 under TP2 in
    small): the fused q/k/v projection keeps its grouped column split, and
    attention, whose heads do not divide, reads it gathered (boxing of the
    grouped split on a mesh). Under TP2 alone, and under PP2 x TP2 x DP2
    (8 ranks) with ZeRO-1, whose states must not split the grouped axis
    again: losses and trained weights equal one rank's within 1e-5."""
    seed = str(np.random.default_rng().integers(2**31))
    args = ("--seed", seed, "--steps", "2", "--layers", "2", "--micro-batches", "2",
            "--batch", "8", "--block", "16", "--heads", "5", "--width", "40", "--checksum")
    path = os.path.join(EXAMPLES, "gpt.py")
    many = run(path, *args, "--layout", layout, "--zero", str(zero), cache=tmp_path, ranks=ranks)
    one = run(path, *args, cache=tmp_path)
    assert many.returncode == 0 and one.returncode == 0, many.stderr + one.stderr
    got, want = printed_losses(many.stdout), printed_losses(one.stdout)
    err = max(abs(got[k] - want[k]) / abs(want[k]) for k in want)
    assert sorted(got) == sorted(want) == [0, 1] and err < 1e-5, (seed, got, want)
    checksum = r"weights checksum (-?\d\.\d{10}e[+-]\d+)"
    sums = [float(v) for v in re.findall(checksum, many.stdout)]
    (ref,) = [float(v) for v in re.findall(checksum, one.stdout)]
    assert len(sums) == ranks and all(abs(v - ref) <= 1e-5 * abs(ref) for v in sums), (seed, sums, ref)


@needs_mpiexec
@pytest.mark.parametrize("layout,ranks", [("tp", 2), ("pp", 2), ("pp_tp", 4)])
def test_gpt_with_dropout_layouts_equal_one_rank(pf_opt, tmp_path, layout, ranks):
    """Dropout 0.2 (attention probabilities inside the fused pf.attention,
    residual and embedding): every layout draws the same logical elements
    (heads split, two stages with 2 micro-batches, both), so the losses
    equal the one-rank run's within 1e-5. (gpt.py's data-parallel layouts
    give every rank the one-rank batch, a logical batch twice as large, so
    their dropout draws differ by design.)"""
    seed = str(np.random.default_rng().integers(2**31))
    args = ("--seed", seed, "--steps", "2", "--layers", "2", "--micro-batches", "2",
            "--batch", "8", "--block", "16", "--dropout", "0.2")
    path = os.path.join(EXAMPLES, "gpt.py")
    many = run(path, *args, "--layout", layout, cache=tmp_path, ranks=ranks)
    one = run(path, *args, cache=tmp_path)
    plain = run(path, *args[:-2], cache=tmp_path)
    assert many.returncode == 0 and one.returncode == 0, many.stderr + one.stderr
    got, want, off = (printed_losses(r.stdout) for r in (many, one, plain))
    err = max(abs(got[k] - want[k]) / abs(want[k]) for k in want)
    assert sorted(got) == sorted(want) == [0, 1] and err < 1e-5, (seed, got, want)
    # Dropout acts (at initialisation every loss is near log(vocab), so the
    # second step shows it).
    assert abs(want[1] - off[1]) > 1e-4 * abs(off[1]), (want, off)


def test_gpt_tensor_parallel_boxing_is_megatrons(pf_opt):
    """The TP2 GPT's boxing report (Megatron's weight layouts, nothing else
    given): per block one all-reduce of the [batch, block, n_embd]
    activations where attention's output joins the residual stream and one
    where the MLP's does, forward and backward; one where the
    vocabulary-split token embedding's output is summed and one for the
    gradient of the vocabulary-split head's input; the cross-entropy split
    by class all-reduces its rows' max and sums (forward and backward, a
    few numbers per row); nothing else moves a byte (no gathered logits, no
    gradient all-reduces of replicated weights)."""
    flow.manual_seed(int(np.random.default_rng().integers(2**31)))
    layers, batch, block = 3, 4, 16
    model = gpt_model.GPT(gpt_model.GPTConfig(block_size=block, n_layer=layers))
    args = types.SimpleNamespace(layout="tp", schedule="1f1b", micro_batches=1, lr=1e-3, tie=False)
    graph, place_inputs = gpt.build_graph(model, args)
    x, y = next(gpt.batches(0, batch, block, 1))
    report = graph.debug_report(*place_inputs(flow.tensor(x), flow.tensor(y)))
    moving = [line for line in report.splitlines()
              if re.search(r": [1-9]\d* bytes/rank", line) and not line.strip().startswith("total")]
    source = open(MODEL).read().splitlines()

    def lines_of(*statements):
        found = {i + 1 for i, line in enumerate(source) if line.strip() in statements}
        assert len(found) == len(statements)
        return found

    joins = lines_of("x = x + self.attn(self.ln_1(x))", "x = x + self.mlp(self.ln_2(x))",
                     "x = self.drop(self.wte(idx) + self.wpe(pos))", "x = self.ln_f(x)")
    (loss_line,) = lines_of("return F.cross_entropy(logits.view(-1, logits.size(-1)), "
                            "targets.view(-1), ignore_index=-1)")
    activations = [line for line in moving if line.strip().startswith("all_reduce")]
    losses = [line for line in moving if not line.strip().startswith("all_reduce")]
    assert len(activations) == 4 * layers + 2, report
    for line in activations:
        assert line.strip().startswith(f"all_reduce {batch}x{block}x64xf32"), report
        assert int(re.search(r'gpt_model.py":(\d+)', line).group(1)) in joins, line
    rows, vocab = batch * block, 256
    assert [line.split()[0] for line in losses] == ["softmax_cross_entropy",
                                                    "softmax_cross_entropy_grad"], report
    for line in losses:
        assert f"{rows}x{vocab}xf32" in line and "[S(1)]> split by class" in line, line
        assert int(re.search(r'gpt_model.py":(\d+)', line).group(1)) == loss_line, line
    # Per row: a float max and two double sums forward, a max and a sum
    # backward, all-reduced over 2 ranks (2 (n - 1) / n = 1 of the bytes).
    small = rows * (4 + 16) + rows * (4 + 8)
    assert f"total: {(4 * layers + 2) * batch * block * 64 * 4 + small} bytes/rank per step" in report
