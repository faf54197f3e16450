"""nanoGPT as written (issue 35, item 5): examples/python/nanogpt/model.py and
the inner loop of its train.py run with torch replaced by pipeflow.

The model file runs twice: as it is (``import pipeflow as flow``, compiled
by nn.Graph; scaled_dot_product_attention composed of the traced ops) and
with its imports pointed at Debian's torch 1.13 (which has no
scaled_dot_product_attention, so it takes nanoGPT's manual branch with the
causal-mask buffer), from the same initial weights on the same batches.
Training (AdamW with decay and no-decay groups, warm-up + cosine learning
rates written into ``param_groups`` every iteration, gradient accumulation,
``clip_grad_norm_``) gives the same losses within 1e-5 relative, compiled
once; the eval-mode inference graph gives torch's eval loss;
``generate()`` gives the tokens of a NumPy reference of the same sampling
with the same draws, through one inference graph for every length;
``load_state_dict(strict=False)`` returns the missing and unexpected keys.
"""

import importlib.util
import math
import os
import pickle
import sys

import numpy as np
import pytest
import torch
from conftest import torch_twin
from graphs import Infer

import pipeflow as flow
from pipeflow import compiler, nn
from pipeflow.nn import functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
NANOGPT = os.path.join(os.path.dirname(os.path.dirname(HERE)), "examples", "python", "nanogpt")
MODEL = os.path.join(NANOGPT, "model.py")


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


sys.path.insert(0, NANOGPT)
train = _load("nanogpt_train", os.path.join(NANOGPT, "train.py"))  # imports model.py as ``model``


def torch_model():
    """model.py with its imports pointed at torch."""
    return torch_twin(MODEL, "nanogpt_model_torch", "from pipeflow import nn")


def small_config(module, **kw):
    args = dict(n_layer=2, n_head=2, n_embd=32, block_size=16, vocab_size=64, dropout=0.0, bias=True)
    args.update(kw)
    return module.GPTConfig(**args)


def torch_gpt(weights, **kw):
    """torch's GPT holding ``weights`` (a pipeflow state dict as numpy)."""
    tm = torch_model()
    model = tm.GPT(small_config(tm, **kw))
    state = model.state_dict()
    for name, value in weights.items():
        assert tuple(state[name].shape) == value.shape, name
        state[name] = torch.from_numpy(value.copy())
    model.load_state_dict(state)
    return model


@pytest.fixture
def count_compiles(monkeypatch):
    """The number of programs compiled (``compiler.build_cpu_artifacts`` calls)."""
    calls = []
    build = compiler.build_cpu_artifacts

    def counting(*args, **kwargs):
        calls.append(args)
        return build(*args, **kwargs)

    monkeypatch.setattr(compiler, "build_cpu_artifacts", counting)
    return calls


def write_tokens(path, n, vocab, rng):
    """uint16 tokens mostly following ``next = (5 * prev + 3) % vocab`` (one
    in eight random), so that the loss falls."""
    tokens = np.empty(n, dtype=np.uint16)
    tokens[0] = 0
    noise = rng.integers(0, vocab, n)
    keep = rng.random(n) < 0.875
    for i in range(1, n):
        tokens[i] = (5 * int(tokens[i - 1]) + 3) % vocab if keep[i] else noise[i]
    tokens.tofile(path)


@pytest.fixture
def data(tmp_path):
    rng = np.random.default_rng(int(np.random.default_rng().integers(1 << 30)))
    for split, n in (("train", 4000), ("val", 1000)):
        write_tokens(tmp_path / f"{split}.bin", n, 64, rng)
    with open(tmp_path / "meta.pkl", "wb") as f:
        pickle.dump({"vocab_size": 64}, f)
    return str(tmp_path)


# Training --------------------------------------------------------------------------------

STEPS, MICRO, BATCH, CLIP = 20, 2, 4, 1.0


def configure_train(data_dir):
    train.configure(data_dir=data_dir, batch_size=BATCH, block_size=16,
                    gradient_accumulation_steps=MICRO, learning_rate=3e-3, min_lr=3e-4,
                    warmup_iters=4, lr_decay_iters=STEPS, grad_clip=CLIP, weight_decay=0.1,
                    beta1=0.9, beta2=0.99)


def torch_training(weights, batches, bias):
    """nanoGPT's loop in torch: the micro-steps' ``loss / m`` backward,
    clip_grad_norm_, AdamW from configure_optimizers, get_lr into every
    group. Returns the micro-steps' losses, the gradient norms and the model."""
    model = torch_gpt(weights, bias=bias)
    optimizer = model.configure_optimizers(train.weight_decay, train.learning_rate,
                                           (train.beta1, train.beta2), "cpu")
    losses, norms = [], []
    for it, (x, y) in enumerate(batches):
        lr = train.get_lr(it)
        for group in optimizer.param_groups:
            group["lr"] = lr
        step = []
        for micro in range(MICRO):
            rows = slice(micro * BATCH, (micro + 1) * BATCH)
            _, loss = model(torch.from_numpy(x[rows]), torch.from_numpy(y[rows]))
            step.append(loss.item())
            (loss / MICRO).backward()
        norms.append(float(torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP)))
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(step)
    return np.array(losses), np.array(norms), model


@pytest.mark.parametrize("bias,flash", [(True, True), (False, True), (True, False)],
                         ids=["bias", "no-bias", "manual-attention"])
def test_nanogpt_trains_like_torch(backend, data, count_compiles, monkeypatch, bias, flash):
    """20 steps of train.py's TrainGraph (2 micro-steps, clipping, the
    warm-up + cosine learning rate set in param_groups every iteration)
    equal torch's losses within 1e-5 relative; the step compiles once.
    Then the eval-mode EvalGraph's loss on validation batches equals
    torch's eval loss of the trained model (the graphs share the
    parameters), and compiles once more."""
    seed = int(np.random.default_rng().integers(1 << 30))
    configure_train(data)
    if not flash:
        # nanoGPT's manual branch: the causal mask buffer, masked_fill, softmax
        monkeypatch.delattr(flow.nn.functional, "scaled_dot_product_attention")
    flow.manual_seed(seed)
    model = train.GPT(small_config(train, bias=bias))
    assert model.transformer.h[0].attn.flash is flash
    assert model.transformer.wte.weight is model.lm_head.weight
    # Parameters from values (LayerNorm's flow.ones, the tied table) and
    # nn.init's draws: the state dict read now is what the program starts from.
    weights = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    optimizer = model.configure_optimizers(train.weight_decay, train.learning_rate,
                                           (train.beta1, train.beta2), "cpu")
    assert [len(g["params"]) for g in optimizer.param_groups] == [10, 18 if bias else 5]
    graph = train.TrainGraph(model, optimizer, MICRO, CLIP)
    ours, batches = [], []
    for it in range(STEPS):
        lr = train.get_lr(it)
        for group in optimizer.param_groups:
            group["lr"] = lr
        xs, ys = zip(*[train.get_batch("train") for _ in range(MICRO)], strict=True)
        x, y = flow.cat(xs), flow.cat(ys)
        ours.append(graph(x, y).numpy().copy())
        batches.append((x.numpy().copy(), y.numpy().copy()))
    ours = np.array(ours)
    theirs, norms, tmodel = torch_training(weights, batches, bias)
    err = np.abs(ours - theirs) / np.abs(theirs)
    assert err.max() < 1e-5, f"seed {seed}: losses {ours} vs torch {theirs}"
    assert theirs[-1].mean() < theirs[0].mean() - 0.3, "the loss falls over the steps"
    assert (norms > CLIP).any(), f"clipping acts in some step: norms {norms}"
    assert len(count_compiles) == 1, "the learning rate changes every step without recompiling"

    # model.eval() and an inference graph: torch's eval loss of the trained model.
    evaluate = train.EvalGraph(model)
    tmodel.eval()
    model.eval()
    for _ in range(2):
        x, y = train.get_batch("val")
        got = float(evaluate(x, y).numpy())
        with torch.no_grad():
            _, want = tmodel(torch.from_numpy(x.numpy()), torch.from_numpy(y.numpy()))
        assert abs(got - want.item()) <= 1e-5 * abs(want.item()), (seed, got, want.item())
    model.train()
    assert len(count_compiles) == 2


def test_train_script_runs(backend, data, capsys):
    """train.py's main(): evaluation, warm-up + cosine learning rates,
    gradient accumulation, clipping, on its memmapped uint16 tokens."""
    model = train.main([f"--data_dir={data}", "--max_iters=3", "--eval_interval=2", "--eval_iters=1",
                        "--n_embd=32", "--block_size=16", "--batch_size=2"])
    out = capsys.readouterr().out
    assert "step 0: train loss" in out and "step 2: train loss" in out, out
    assert [line.split(":")[0] for line in out.splitlines() if line.startswith("iter ")] == \
        [f"iter {i}" for i in range(4)], out
    assert model.config.vocab_size == 64  # from meta.pkl


# Generation --------------------------------------------------------------------------------

def reference_generate(tmodel, idx, steps, temperature, top_k, seed, block):
    """nanoGPT's sampling in NumPy on torch's logits (the context cropped to
    the block, never padded), drawing as flow.multinomial documents: one
    uniform of numpy.random.default_rng(seed) per row and sample, the first
    category whose cumulative probability (float64) exceeds it."""
    rng = np.random.default_rng(seed)
    idx = idx.copy()
    for _ in range(steps):
        ctx = idx[:, -block:]
        with torch.no_grad():
            logits, _ = tmodel(torch.from_numpy(ctx))
        logits = logits[:, -1, :].numpy() / np.float32(temperature)
        kth = np.sort(logits, axis=-1)[:, -top_k][:, None]
        logits = np.where(logits < kth, -np.inf, logits).astype(np.float32)
        z = logits.astype(np.float64) - logits.max(-1, keepdims=True)
        probs = (np.exp(z) / np.exp(z).sum(-1, keepdims=True)).astype(np.float32)
        nxt = []
        for row in probs.astype(np.float64):
            cdf = np.cumsum(row)
            nxt.append(min(int(np.searchsorted(cdf, rng.random() * cdf[-1], side="right")),
                           int(np.flatnonzero(row > 0)[-1])))
        idx = np.concatenate([idx, np.array(nxt, dtype=np.int64)[:, None]], axis=1)
    return idx


def test_generate_equals_numpy_reference_compiled_once(backend, count_compiles):
    """generate() with temperature and top-k, from 3 tokens to 3 + 15 (past
    the block of 16, so the context is cropped): the tokens of the NumPy
    reference on torch's logits with the same draws; one sampler graph,
    compiled once for every length. (Fixed seeds: a logit a rounding away
    from a draw's threshold would flip a token.)"""
    flow.manual_seed(5)
    model = train.GPT(small_config(train))
    state = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    # A peaked distribution: a larger tied table.
    state["transformer.wte.weight"] = state["lm_head.weight"] = state["lm_head.weight"] * 25
    model.load_state_dict(state)
    idx = np.random.default_rng(7).integers(0, 64, (2, 3))
    out = model.generate(flow.tensor(idx), 15, temperature=0.8, top_k=10,
                         generator=flow.Generator().manual_seed(11))
    assert model.training, "generate() leaves the model's mode as it was"
    want = reference_generate(torch_gpt(state), idx, 15, 0.8, 10, 11, 16)
    np.testing.assert_array_equal(out.numpy(), want)
    assert out.shape == (2, 18) and out.dtype is flow.int64
    assert len(count_compiles) == 1 and len(model._samplers) == 1
    # Again: the same graph, no compile; the same generator seed, the same tokens.
    again = model.generate(flow.tensor(idx), 4, temperature=0.8, top_k=10,
                           generator=flow.Generator().manual_seed(11))
    np.testing.assert_array_equal(again.numpy(), want[:, :7])
    assert len(count_compiles) == 1


# State dicts ---------------------------------------------------------------------------------

def test_load_state_dict_not_strict_returns_missing_and_unexpected_keys(backend):
    """torch's state dict (manual attention: an ``attn.bias`` mask buffer per
    block) loads into the flash model with strict=False: the buffers come
    back as unexpected keys, a key left out as missing (as torch reports
    them); the loaded values are what the compiled model computes with."""
    flow.manual_seed(3)
    model = train.GPT(small_config(train))
    tmodel = torch_gpt({})
    torch.manual_seed(4)
    with torch.no_grad():
        for p in tmodel.parameters():
            p.normal_(0.0, 0.1)
    state = {k: v.numpy().copy() for k, v in tmodel.state_dict().items()}
    kept = state.pop("transformer.ln_f.bias")
    with pytest.raises(flow.StateDictError, match="unexpected keys: transformer.h.0.attn.bias"):
        model.load_state_dict(state)
    result = model.load_state_dict(state, strict=False)
    assert result.missing_keys == ["transformer.ln_f.bias"]
    assert result.unexpected_keys == ["transformer.h.0.attn.bias", "transformer.h.1.attn.bias"]
    missing, unexpected = result
    np.testing.assert_array_equal(model.transformer.h[1].mlp.c_fc.weight.numpy(),
                                  state["transformer.h.1.mlp.c_fc.weight"])
    assert kept.shape == (32,) and not model.transformer.ln_f.bias.numpy().any()
    # torch, loading the flash model's state dict, reports the converse; then
    # it holds the same values (ln_f.bias: the flash model's own zeros).
    theirs = tmodel.load_state_dict(
        {k: torch.from_numpy(v.numpy().copy()) for k, v in model.state_dict().items()}, strict=False)
    assert theirs.missing_keys == unexpected and theirs.unexpected_keys == []
    assert missing == ["transformer.ln_f.bias"]
    # The eval graph computes with the loaded values.
    model.eval()
    tmodel.eval()
    x = np.random.default_rng(1).integers(0, 64, (2, 16))
    y = np.random.default_rng(2).integers(0, 64, (2, 16))
    got = float(train.EvalGraph(model)(flow.tensor(x), flow.tensor(y)).numpy())
    with torch.no_grad():
        _, want = tmodel(torch.from_numpy(x), torch.from_numpy(y))
    assert abs(got - want.item()) <= 1e-5 * abs(want.item())


# The pieces -----------------------------------------------------------------------------------

def _sdpa_reference(q, k, v, mask=None, causal=False):
    s = q.astype(np.float64) @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    if causal:
        mask = np.tril(np.ones(s.shape[-2:], bool))
    if mask is not None:
        s = np.where(mask, s, -np.inf) if mask.dtype == bool else s + mask
    p = np.exp(s - s.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ v


def test_scaled_dot_product_attention_eager_matches_numpy():
    rng = np.random.default_rng()
    q, k, v = (rng.standard_normal((2, 3, 5, 4)).astype(np.float32) for _ in range(3))
    bool_mask = rng.random((5, 5)) < 0.7
    bool_mask[:, 0] = True  # every query attends somewhere
    float_mask = rng.standard_normal((1, 3, 5, 5)).astype(np.float32)
    tq, tk, tv = flow.tensor(q), flow.tensor(k), flow.tensor(v)
    for kwargs, want in [({"is_causal": True}, _sdpa_reference(q, k, v, causal=True)),
                         ({}, _sdpa_reference(q, k, v)),
                         ({"attn_mask": flow.tensor(bool_mask)}, _sdpa_reference(q, k, v, bool_mask)),
                         ({"attn_mask": flow.tensor(float_mask)}, _sdpa_reference(q, k, v, float_mask))]:
        got = F.scaled_dot_product_attention(tq, tk, tv, **kwargs)
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6, err_msg=str(kwargs))
    got = F.scaled_dot_product_attention(tq, tk, tv, scale=0.5, is_causal=True)
    np.testing.assert_allclose(got.numpy(), _sdpa_reference(q * 0.5 * 2, k, v, causal=True),
                               rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="either attn_mask or is_causal"):
        F.scaled_dot_product_attention(tq, tk, tv, attn_mask=flow.tensor(bool_mask), is_causal=True)
    with pytest.raises(NotImplementedError):
        F.scaled_dot_product_attention(tq, tk, tv, dropout_p=0.1)


class Attend(nn.Module):
    def __init__(self, **kwargs):
        super().__init__()
        self.proj = nn.Linear(8, 24)
        self.kwargs = kwargs

    def forward(self, x):
        q, k, v = self.proj(x).view(2, 5, 3, 8).permute(2, 0, 1, 3).split(1, dim=0)
        return F.scaled_dot_product_attention(q, k, v, **self.kwargs).sum()


class AttendGraph(nn.Graph):
    def __init__(self, model):
        super().__init__()
        self.model = model
        self.add_optimizer(flow.optim.SGD(model.parameters(), lr=0.1))

    def build(self, x):
        loss = self.model(x)
        loss.backward()
        return loss


@pytest.mark.parametrize("kwargs,attrs", [
    ({"is_causal": True, "dropout_p": 0.1}, ["causal", "dropout_p = 0.1 : f64", "stream = 1"]),
    ({"attn_mask": flow.tensor(np.zeros((5, 5), np.float32))}, ["scale = 0.3535533905932"])])
def test_scaled_dot_product_attention_traces_the_fused_op(pf_opt, kwargs, attrs):
    """Traced, attention is one pf.attention (a float host mask as a rank-4
    constant operand), no [T, T] softmax; pf-opt verifies the training
    step."""
    graph = AttendGraph(Attend(**kwargs))
    compiled = graph.compile(flow.randn(2, 5, 8))
    text = graph.ir()
    assert "pf.attention" in text and "pf.softmax" not in text
    assert text.count("pf.matmul") == 1  # the projection's
    line = next(x for x in text.splitlines() if "pf.attention" in x)
    for attr in attrs:
        assert attr in line, (attr, line)
    if "attn_mask" in kwargs:
        assert "tensor<1x1x5x5xf32>" in text
    assert compiled.verified_ir


def test_module_dict_api():
    d = nn.ModuleDict(dict(a=nn.Linear(2, 3), b=nn.ReLU()))
    d["c"] = nn.Linear(3, 1)
    d.update([("e", nn.Identity())])
    d.update(nn.ModuleDict({"f": nn.GELU()}))
    assert list(d.keys()) == ["a", "b", "c", "e", "f"] and len(d) == 5 and "c" in d
    assert d.a is d["a"] and [k for k in d] == list(d.keys())
    assert [type(m).__name__ for m in d.values()] == ["Linear", "ReLU", "Linear", "Identity", "GELU"]
    assert [n for n, _ in d.named_parameters()] == ["a.weight", "a.bias", "c.weight", "c.bias"]
    assert isinstance(d.pop("e"), nn.Identity) and "e" not in d
    del d["f"]
    assert list(dict(d.items())) == ["a", "b", "c"]
    d.clear()
    assert len(d) == 0 and not list(d.parameters())
    with pytest.raises(TypeError, match="pair"):
        d.update([nn.ReLU()])


def test_layer_norm_without_bias_and_nanogpt_layer_norm():
    x = np.random.default_rng().standard_normal((2, 3, 8)).astype(np.float32)
    w = np.random.default_rng().standard_normal(8).astype(np.float32)
    want = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * w
    got = F.layer_norm(flow.tensor(x), (8,), flow.tensor(w), bias=None, eps=1e-5)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)
    ln = train.GPT.__init__.__globals__["LayerNorm"](8, bias=False)
    assert ln.bias is None and [n for n, _ in ln.named_parameters()] == ["weight"]
    np.testing.assert_array_equal(ln.weight.numpy(), np.ones(8, np.float32))


def test_topk_multinomial_and_generators():
    logits = flow.tensor([[0.5, 2.0, -1.0, 2.0, 1.0], [3.0, 0.0, 1.0, 2.0, -2.0]])
    values, indices = flow.topk(logits, 3)
    np.testing.assert_array_equal(values.numpy(), [[2.0, 2.0, 1.0], [3.0, 2.0, 1.0]])
    np.testing.assert_array_equal(indices.numpy(), [[1, 3, 4], [0, 3, 2]])
    assert indices.dtype is flow.int64
    low = flow.topk(logits, 2, dim=0, largest=False)
    np.testing.assert_array_equal(low.indices.numpy(), [[0, 1, 0, 0, 1], [1, 0, 1, 1, 0]])
    # nanoGPT's top-k crop, on a host tensor
    v, _ = flow.topk(logits, 2)
    logits[logits < v[:, [-1]]] = -float("Inf")
    assert np.isinf(logits.numpy()).sum() == 6
    probs = F.softmax(logits, dim=-1)
    a = flow.multinomial(probs, num_samples=1, generator=flow.Generator().manual_seed(3))
    b = flow.multinomial(probs, num_samples=1, generator=flow.Generator().manual_seed(3))
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert a.shape == (2, 1) and a.dtype is flow.int64
    assert set(a.numpy()[0]) <= {1, 3} and set(a.numpy()[1]) <= {0, 3}
    # Without replacement every draw is a different category; with it the
    # frequencies follow the weights.
    g = flow.Generator().manual_seed(int(np.random.default_rng().integers(1 << 30)))
    drawn = flow.multinomial(flow.tensor([1.0, 0.0, 2.0, 1.0]), 3, generator=g).numpy()
    assert sorted(drawn) == [0, 2, 3]
    many = flow.multinomial(flow.tensor([1.0, 0.0, 2.0, 1.0]), 4000, replacement=True, generator=g)
    np.testing.assert_allclose(np.bincount(many.numpy(), minlength=4) / 4000, [0.25, 0, 0.5, 0.25],
                               atol=0.04)
    with pytest.raises(ValueError, match="without replacement"):
        flow.multinomial(flow.tensor([1.0, 0.0]), 2)
    with pytest.raises(ValueError, match="non-negative"):
        flow.multinomial(flow.tensor([1.0, -1.0]), 1)
    # A Generator is NumPy's default_rng(seed) underneath.
    g = flow.Generator().manual_seed(42)
    assert g.initial_seed() == 42 and g.random() == np.random.default_rng(42).random()
    np.testing.assert_array_equal(flow.randn(3, generator=flow.Generator().manual_seed(1)).numpy(),
                                  np.random.default_rng(1).standard_normal(3).astype(np.float32))


def test_host_tensor_conveniences():
    @flow.no_grad()
    def double(x):
        return x * 2

    with flow.no_grad():
        assert double(flow.tensor([1.0])).item() == 2.0
    losses = flow.zeros(3)
    for k in range(3):
        losses[k] = float(k + 1)
    assert f"{losses.mean():.4f}" == "2.0000"
    data = np.arange(10)
    i = flow.tensor(3)
    assert list(data[i:i + 2]) == [3, 4] and int(i) == 3 and float(i) == 3.0
    s = flow.stack([flow.tensor([1, 2]), flow.tensor([3, 4])], dim=1)
    np.testing.assert_array_equal(s.numpy(), [[1, 3], [2, 4]])
    np.testing.assert_array_equal(flow.cat((flow.tensor([[1]]), flow.tensor([[2]])), dim=1).numpy(), [[1, 2]])


class LastPosition(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 6)

    def forward(self, x):
        return self.lin(x[:, [-1], :]), x[:, [1, 2], :]


def test_traced_index_by_a_list_of_consecutive_positions(backend):
    """nanoGPT's ``x[:, [-1], :]`` (the last position, its axis kept) traces
    to pf.slice; an inference graph returns what eager numpy does."""
    model = LastPosition()
    x = np.random.default_rng().standard_normal((2, 5, 4)).astype(np.float32)
    graph = Infer(model)
    assert "pf.slice" in graph.ir(flow.tensor(x))
    last, mid = graph(flow.tensor(x))
    w, b = model.lin.weight.numpy(), model.lin.bias.numpy()
    np.testing.assert_allclose(last.numpy(), x[:, [-1], :] @ w.T + b, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(mid.numpy(), x[:, 1:3, :])
    with pytest.raises(flow.CompileError, match="consecutive"):
        Infer(LastPositionGap()).ir(flow.tensor(x))


class LastPositionGap(nn.Module):
    def forward(self, x):
        return x[:, [0, 2], :]
