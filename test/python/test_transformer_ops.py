"""The transformer ops of the front end (issue 16): broadcasting arithmetic,
masked fill, split/chunk/cat/indexing, sum/mean, host constants (a causal
mask buffer, ``flow.arange`` in build()).

Eager results against NumPy on fresh random data; errors at the user's
line; traced IR; and a tiny causal self-attention block trained in a graph
against a float64 NumPy reference (gradients by central differences)."""
import math
import os

import mlp_reference as ref
import numpy as np
import pytest
from conftest import line_of
from graphs import Infer, Train

import pipeflow as flow
from pipeflow import ir, nn

HERE = os.path.abspath(__file__)
B = [flow.sbp.broadcast]
P0 = flow.placement("cpu", ranks=[0])


def rand(*shape):
    return np.random.default_rng().standard_normal(shape).astype(np.float32)


def away_from_zero(*shape):
    rng = np.random.default_rng()
    return (rng.uniform(0.5, 2.0, shape) * rng.choice([-1.0, 1.0], shape)).astype(np.float32)


# Eager ------------------------------------------------------------------------------

SHAPES = [((2, 3, 4), (4,)), ((3, 1), (1, 4)), ((2, 3, 4), (3, 4)), ((1,), (2, 3)),
          ((2, 1, 3, 3), (1, 2, 3, 1)), ((5,), (5,))]


@pytest.mark.parametrize("sa,sb", SHAPES)
def test_eager_broadcast_arithmetic(sa, sb):
    a, b = rand(*sa), away_from_zero(*sb)
    ta, tb = flow.tensor(a), flow.tensor(b)
    cases = {"+": (ta + tb, a + b), "-": (ta - tb, a - b), "*": (ta * tb, a * b),
             "/": (ta / tb, a / b), "add": (flow.add(ta, tb), a + b), "sub": (flow.sub(ta, tb), a - b),
             "mul": (flow.mul(ta, tb), a * b), "div": (flow.div(ta, tb), a / b),
             "b-a": (tb - ta, b - a), "1/b": (1.0 / tb, 1.0 / b)}
    for name, (got, want) in cases.items():
        assert got.dtype is flow.float32, name
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6, atol=1e-6, err_msg=name)


def test_eager_scalar_arithmetic():
    a = away_from_zero(3, 4)
    t = flow.tensor(a)
    for got, want in [(t - 2.5, a - 2.5), (2.5 - t, 2.5 - a), (t / 4, a / 4), (3 / t, 3 / a),
                      (-t, -a), (t + 1, a + 1), (1 + t, 1 + a), (2 * t, 2 * a)]:
        assert got.dtype is flow.float32
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)
    i = flow.arange(0, 5)
    assert (i * 2).dtype is flow.int64 and (-i).dtype is flow.int64
    np.testing.assert_array_equal((i * 2 - 1).numpy(), np.arange(5) * 2 - 1)
    assert (i / 2).dtype is flow.float32


def test_eager_comparisons_and_identity_hash():
    a, b = rand(3, 4), rand(4)
    ta, tb = flow.tensor(a), flow.tensor(b)
    for got, want in [(ta == tb, a == b), (ta != 0, a != 0), (ta < tb, a < b), (ta <= 0.5, a <= 0.5),
                      (ta > tb, a > b), (ta >= tb, a >= b)]:
        assert got.dtype is flow.bool
        np.testing.assert_array_equal(got.numpy(), want)
    assert len({ta, tb, ta}) == 2 and (ta == "x") is False


def test_eager_masked_fill_broadcasts_the_mask():
    T = 5
    x = rand(2, 3, T, T)
    causal = flow.tril(flow.ones(T, T)).view(1, 1, T, T)
    x4 = x[:, :, :4, :4]
    got = flow.tensor(x4).masked_fill(causal[:, :, :4, :4] == 0, float("-inf"))
    want = np.where(np.tril(np.ones((4, 4))) == 0, -np.inf, x4)
    np.testing.assert_array_equal(got.numpy(), want)
    m = (np.random.default_rng().random((3, 1)) < 0.5).astype(np.float32)
    y = rand(3, 4)
    np.testing.assert_array_equal(flow.masked_fill(flow.tensor(y), flow.tensor(m), 7.5).numpy(),
                                  np.where(m != 0, np.float32(7.5), y))
    mi = flow.tensor(np.array([0, 3, 0, -1]))
    np.testing.assert_array_equal(flow.tensor(y).masked_fill(mi, 0.0).numpy(),
                                  np.where(mi.numpy() != 0, 0.0, y).astype(np.float32))


def test_eager_split_chunk_cat():
    x = rand(2, 7, 3)
    t = flow.tensor(x)
    parts = t.split(3, dim=1)
    assert [p.shape[1] for p in parts] == [3, 3, 1]
    for got, want in zip(parts, np.split(x, [3, 6], axis=1), strict=True):
        np.testing.assert_array_equal(got.numpy(), want)
    parts = flow.split(t, [2, 4, 1], dim=-2)
    for got, want in zip(parts, np.split(x, [2, 6], axis=1), strict=True):
        np.testing.assert_array_equal(got.numpy(), want)
    chunks = t.chunk(3, dim=1)
    assert [c.shape[1] for c in chunks] == [3, 3, 1]
    np.testing.assert_array_equal(flow.cat(chunks, dim=1).numpy(), x)
    y = rand(2, 2, 3)
    np.testing.assert_array_equal(flow.concat([t, flow.tensor(y)], dim=1).numpy(),
                                  np.concatenate([x, y], axis=1))
    np.testing.assert_array_equal(flow.cat([t, t], dim=-1).numpy(), np.concatenate([x, x], -1))


def test_eager_indexing():
    x = rand(3, 4, 5)
    t = flow.tensor(x)
    for index in [(slice(None), slice(1, 3)), (Ellipsis, slice(None, 2)), 1, (None, 2, slice(1, None)),
                  (slice(None), -1), (Ellipsis, None), (slice(0, 3), slice(None), slice(-2, None))]:
        np.testing.assert_array_equal(t[index].numpy(), x[index])


@pytest.mark.parametrize("dim", [None, 0, -1, (0, 2), [1]])
@pytest.mark.parametrize("keepdim", [False, True])
def test_eager_sum_mean(dim, keepdim):
    x = rand(2, 3, 4)
    t = flow.tensor(x)
    axis = tuple(dim) if isinstance(dim, list) else dim
    np.testing.assert_allclose(t.sum(dim, keepdim).numpy(), x.sum(axis, keepdims=keepdim), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(flow.mean(t, dim=dim, keepdim=keepdim).numpy(),
                               x.astype(np.float64).mean(axis, keepdims=keepdim), rtol=1e-5, atol=1e-6)
    assert flow.sum(t, dim=dim, keepdim=keepdim).shape == np.sum(x, axis, keepdims=keepdim).shape


def test_eager_factories_triangles_and_views():
    assert flow.ones(2, 3).numpy().tolist() == [[1, 1, 1], [1, 1, 1]]
    assert not flow.zeros(4).numpy().any()
    a = flow.arange(0, 4, dtype=flow.int64)
    assert a.dtype is flow.int64 and a.numpy().tolist() == [0, 1, 2, 3]
    x = rand(2, 4, 4)
    np.testing.assert_array_equal(flow.tril(flow.tensor(x)).numpy(), np.tril(x))
    np.testing.assert_array_equal(flow.triu(flow.tensor(x), 1).numpy(), np.triu(x, 1))
    np.testing.assert_array_equal(flow.tril(flow.tensor(x), -1).numpy(), np.tril(x, -1))
    y = rand(2, 3, 4, 6)
    t = flow.tensor(y)
    assert t.size(-1) == 6 and t.size(0) == 2 and t.contiguous() is t
    np.testing.assert_array_equal(t.transpose(-2, -1).numpy(), np.swapaxes(y, -2, -1))
    np.testing.assert_array_equal(t.view(2, 3, -1, 2, 3).numpy(), y.reshape(2, 3, 4, 2, 3))
    np.testing.assert_array_equal(t.transpose(1, 2).contiguous().view(2, 4, -1).numpy(),
                                  y.transpose(0, 2, 1, 3).reshape(2, 4, 18))


def test_linear_without_bias_and_adamw_exist():
    lin = nn.Linear(3, 2, bias=False)
    assert lin.bias is None and [n for n, _ in lin.named_parameters()] == ["weight"]
    x = rand(4, 3)
    np.testing.assert_allclose(lin(flow.tensor(x)).numpy(), x @ lin.weight.numpy().T, rtol=1e-6)
    assert flow.optim.AdamW(lin.parameters()).param_groups[0]["weight_decay"] == 0.01


# Errors at the user's line -------------------------------------------------------------

def test_eager_bad_broadcast_names_both_shapes():
    with pytest.raises(ValueError, match=r"shapes \[2, 3\] and \[4\] cannot be broadcast"):
        flow.tensor(rand(2, 3)) - flow.tensor(rand(4))
    with pytest.raises(ValueError, match=r"shapes \[2, 3\] and \[2\] cannot be broadcast"):
        flow.div(flow.tensor(rand(2, 3)), flow.tensor(rand(2)))


def test_eager_bad_split_sizes():
    t = flow.tensor(rand(2, 7))
    with pytest.raises(ValueError, match=r"sections \[3, 3\] add up to 6, but dimension 1 .* has size 7"):
        t.split([3, 3], dim=1)
    with pytest.raises(ValueError, match="split_size must be a positive integer, got 0"):
        t.split(0, dim=1)
    with pytest.raises(ValueError, match="chunks must be a positive integer"):
        t.chunk(0)
    with pytest.raises(ValueError, match=r"mask of shape \[3\] does not broadcast to the input's "
                                         r"shape \[2, 7\]"):
        t.masked_fill(flow.tensor(np.array([True, False, True])), 0.0)
    with pytest.raises(ValueError, match=r"cat along dim 0: shapes \[2, 7\] and \[2, 6\] differ"):
        flow.cat([t, flow.tensor(rand(2, 6))])


class BadBroadcast(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 3)

    def forward(self, x):
        h = self.lin(x)
        return h * x  # <-- bad-broadcast


class BadSplit(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 6)

    def forward(self, x):
        a, b = self.lin(x).split([2, 3], dim=-1)  # <-- bad-split
        return a


@pytest.mark.parametrize("model,marker,message", [
    (BadBroadcast, "bad-broadcast", r"shapes \[5, 3\] and \[5, 4\] cannot be broadcast"),
    (BadSplit, "bad-split", r"sections \[2, 3\] add up to 5, but dimension -1 .* \[5, 6\] has size 6"),
])
def test_traced_shape_errors_at_the_users_line(model, marker, message):
    graph = Infer(model())
    with pytest.raises(flow.CompileError, match=message) as info:
        graph.ir(flow.tensor(rand(5, 4)))
    assert info.value.filename == HERE and info.value.lineno == line_of(HERE, marker)


class WritesAConstantBuffer(nn.Module):
    """A batch norm whose running mean has no initializer (a plain tensor)."""

    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm1d(4)
        self.bn.running_mean = flow.tensor(rand(4))

    def forward(self, x):
        return self.bn(x)  # <-- constant-write


def test_a_buffer_without_initializer_is_never_silently_zero():
    """Read only, its value is a constant of the step; written (a running
    statistic), it is an error at the user's line, not a zero-initialised state."""
    graph = Infer(WritesAConstantBuffer())
    with pytest.raises(flow.CompileError, match="'model.bn.running_mean' is written in build") as info:
        graph.ir(flow.tensor(rand(5, 4)))
    assert info.value.lineno == line_of(HERE, "constant-write")
    model = WritesAConstantBuffer().eval()
    mean = model.bn.running_mean.numpy().copy()
    text = Infer(model).ir(flow.tensor(rand(5, 4)))
    assert "@model.bn.running_mean" not in text and "@model.bn.running_var" in text
    values = ", ".join(ir.format_float(v) for v in mean.tolist())
    assert f"pf.constant dense<[{values}]> : tensor<4xf32>" in text
    np.testing.assert_array_equal(model.bn.running_mean.numpy(), mean)


# Traced IR -----------------------------------------------------------------------------

class Ops(nn.Module):
    """One of each traced op on a [2, 3, 4] input."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4, bias=False)
        self.pos = nn.Parameter(flow.zeros(3, 4))
        nn.init.normal_(self.pos, 0.0, 1.0)
        self.register_buffer("mask", flow.tril(flow.ones(3, 3)))

    def forward(self, x):
        h = self.lin(x) + self.pos
        d = (h - x) / (2.0 - h * h)
        a, b = d.split(2, dim=-1)
        c = flow.cat([b, a[:, :, :1], a[:, :, 1:]], dim=2)
        att = c @ c.transpose(-2, -1)
        att = att.masked_fill(self.mask[:3, :3] == 0, float("-inf"))
        pos = flow.arange(0, 3, dtype=flow.int64)
        return att.sum(dim=-1, keepdim=True).mean() + (c[0, pos.shape[0] - 1] / 3.0).sum()


@pytest.mark.parametrize("layout", ["local", "global"])
def test_traced_ops_emit_pf_ops_that_verify(verify, layout):
    model = Ops()
    x = flow.tensor(rand(2, 3, 4))
    if layout == "global":
        model.to_global(P0, B)
        x = x.to_global(P0, B)
    text = Infer(model).ir(x)
    for op in ["pf.broadcast_to", "pf.add", "pf.sub", "pf.div", "pf.slice", "pf.concat",
               "pf.masked_fill", "pf.reduce_sum", "pf.mul_scalar"]:
        assert op + " " in text, op
    assert "value = 0xFFF0000000000000 : f64" in text
    # The host mask (a bool tensor) is a bool constant, one byte an element.
    assert "pf.constant dense<[[false, true, true], [false, false, true], [false, false, false]]> : " \
        "tensor<3x3xi1>" in text
    # 2.0 - h * h: the number is a rank-0 constant broadcast to h's shape,
    # which pf-microbatch resizes with the batch.
    assert "pf.constant dense<2.0> : tensor<1xf32>" in text
    assert "pf.constant dense<2.0> : tensor<2x3x4xf32>" not in text
    assert "@model.mask" not in text  # the buffer is a constant, not a state
    assert "pf.mul_scalar %" in text and "scalar = -1.0" not in text
    verify(text)


class GlobalPositions(nn.Module):
    def __init__(self):
        super().__init__()
        self.wpe = nn.Embedding(3, 4)

    def forward(self, x):
        pos = flow.arange(0, x.shape[1], dtype=flow.int64, placement=x.placement, sbp=B)
        return x + self.wpe(pos)[None, ...]


def test_global_tensor_made_in_build_is_a_constant(verify):
    model = GlobalPositions().to_global(P0, B)
    text = Infer(model).ir(flow.tensor(rand(2, 3, 4)).to_global(P0, B))
    assert "pf.constant dense<[0, 1, 2]> : tensor<3xi64>" in text and "pf.embedding" in text
    assert "pf.reshape" in text and "pf.broadcast_to" in text
    verify(text)


# Training a causal self-attention block against NumPy ------------------------------------

T, C, H, K = 3, 4, 2, 3


class CausalSelfAttention(nn.Module):
    """nanoGPT's attention with a learned position embedding (flow.arange
    ids), a broadcast position bias, a learned [1] offset and a classifier
    head."""

    def __init__(self):
        super().__init__()
        self.wpe = nn.Embedding(T, C)
        self.pos = nn.Parameter(flow.zeros(T, C))
        nn.init.normal_(self.pos, 0.0, 0.5)
        self.c_attn = nn.Linear(C, 3 * C, bias=False)
        self.c_proj = nn.Linear(C, C)
        self.head = nn.Linear(C, K)
        self.offset = nn.Parameter(flow.ones(1))
        nn.init.constant_(self.offset, 1.0)
        self.register_buffer("bias", flow.tril(flow.ones(T, T)).view(1, 1, T, T))

    def forward(self, x):
        b, t, c = x.size()
        pos = flow.arange(0, t, dtype=flow.int64)
        x = x + self.wpe(pos) + self.pos
        q, k, v = self.c_attn(x).split(c, dim=2)
        k = k.view(b, t, H, c // H).transpose(1, 2)
        q = q.view(b, t, H, c // H).transpose(1, 2)
        v = v.view(b, t, H, c // H).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :t, :t] == 0, float("-inf"))
        att = nn.functional.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, c)
        y = self.c_proj(y)
        y = y - y.mean(dim=-1, keepdim=True)
        y = y / ((y * y).mean(-1, keepdim=True) + self.offset)
        y = flow.cat([y[:, :, c // 2:], y[..., :c // 2] * 2.0], dim=2)
        return self.head(y.view(b * t, c)), y


class TrainAttention(nn.Graph):
    def __init__(self, model, optimizer):
        super().__init__()
        self.model = model
        self.add_optimizer(optimizer)

    def build(self, x, labels):
        logits, y = self.model(x)
        loss = nn.functional.cross_entropy(logits, labels) + 0.01 * (y * y).sum() + \
            0.1 * y[None, 1, -1].mean()
        loss.backward()
        return loss


def _softmax(z):
    z = z - z.max(-1, keepdims=True)
    return np.exp(z) / np.exp(z).sum(-1, keepdims=True)


def reference_loss(p, x, labels):
    """CausalSelfAttention's loss in float64 NumPy."""
    b = x.shape[0]
    h = x + p["wpe.weight"][np.arange(T)] + p["pos"]
    q, k, v = np.split(h @ p["c_attn.weight"].T, 3, axis=2)

    def heads(a):
        return a.reshape(b, T, H, C // H).transpose(0, 2, 1, 3)

    q, k, v = heads(q), heads(k), heads(v)
    att = q @ k.transpose(0, 1, 3, 2) / math.sqrt(C // H)
    att = np.where(np.tril(np.ones((T, T))) == 0, -np.inf, att)
    y = (_softmax(att) @ v).transpose(0, 2, 1, 3).reshape(b, T, C)
    y = y @ p["c_proj.weight"].T + p["c_proj.bias"]
    y = y - y.mean(-1, keepdims=True)
    y = y / ((y * y).mean(-1, keepdims=True) + p["offset"])
    y = np.concatenate([y[:, :, C // 2:], y[:, :, :C // 2] * 2.0], axis=2)
    z = y.reshape(b * T, C) @ p["head.weight"].T + p["head.bias"]
    ce = -np.log(_softmax(z)[np.arange(b * T), labels]).mean()
    return ce + 0.01 * (y * y).sum() + 0.1 * y[None, 1, -1].mean()


def test_eager_causal_self_attention_matches_numpy():
    """The block computed eagerly (numpy through the front end's ops) is the
    reference's forward pass."""
    model = CausalSelfAttention()
    rng = np.random.default_rng()
    x, labels = rng.standard_normal((2, T, C)).astype(np.float32), rng.integers(0, K, (2 * T,))
    logits, y = model(flow.tensor(x))
    loss = nn.functional.cross_entropy(logits, flow.tensor(labels)) + 0.01 * (y * y).sum() + \
        0.1 * y[None, 1, -1].mean()
    params = {k: v.numpy().astype(np.float64) for k, v in model.state_dict().items() if k != "bias"}
    want = reference_loss(params, x.astype(np.float64), labels)
    np.testing.assert_allclose(float(loss.numpy()), want, rtol=1e-5)


def _train(model, graph, batches, reference, make_reference, lr, put=flow.tensor):
    """Trains ``graph`` on ``batches``; checks each step's loss and the trained
    parameters against ``reference(params, x, labels)`` (float64) stepped by
    ``make_reference()``'s optimizer on its central-difference gradients."""
    graph.trace(put(batches[0][0]), put(batches[0][1]))
    params = {k: v.numpy().astype(np.float64) for k, v in model.named_parameters()}
    opt = make_reference()
    for step, (x, labels) in enumerate(batches, 1):
        loss = graph(put(x), put(labels))

        def f(p, x=x, labels=labels):
            return reference(p, x.astype(np.float64), labels)

        np.testing.assert_allclose(float(loss.numpy()), f(params), rtol=1e-5, err_msg=f"step {step}")
        grads = ref.numeric_grads(f, params)
        params = {k: opt.update(k, v, grads[k], lr, step) for k, v in params.items()}
    trained = graph.state_dict()["model"]
    for key, want in params.items():
        np.testing.assert_allclose(trained[key].numpy(), want, rtol=1e-4, atol=1e-5, err_msg=key)


def _train_attention(layout, make_optimizer, make_reference, steps=3, lr=0.5):
    model = CausalSelfAttention()
    graph = TrainAttention(model, make_optimizer(model.parameters()))
    rng = np.random.default_rng()
    batches = [(rng.standard_normal((2, T, C)).astype(np.float32), rng.integers(0, K, (2 * T,)))
               for _ in range(steps)]
    put = flow.tensor
    if layout == "global":
        model.to_global(P0, B)

        def put(a):
            return flow.tensor(a).to_global(P0, B)

    _train(model, graph, batches, reference_loss, make_reference, lr, put)
    np.testing.assert_array_equal(model.bias.numpy(), np.tril(np.ones((T, T))).reshape(1, 1, T, T))


@pytest.mark.parametrize("layout", ["local", "global"])
def test_training_causal_self_attention_matches_numpy(backend, layout):
    """SGD: every op of the block (broadcast adds, split, view/transpose to
    heads, batched matmuls, masked fill with the causal buffer, slices and
    concat, mean, sub, div, sum) has the gradient NumPy's differences give."""
    _train_attention(layout, lambda p: flow.optim.SGD(p, lr=0.5), lambda: ref.Optimizer("sgd"))


def test_training_causal_self_attention_with_adamw_matches_numpy(backend):
    _train_attention("local", lambda p: flow.optim.AdamW(p, lr=1e-2, weight_decay=0.1),
                     lambda: ref.Optimizer("adamw", weight_decay=0.1), lr=1e-2)


class ScalarOperands(nn.Module):
    """Python numbers on either side of + - / and a host float constant
    (``flow.arange`` in build()) as operands of differentiated ops."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, K)

    def forward(self, x):
        h = self.lin(x)
        u = (1.0 + h) * (2.0 - h) + 3.0 / (h * h + 1.5) - 0.25
        return u + flow.arange(0, K) * 0.5


def scalar_operands_loss(p, x, labels):
    h = x @ p["lin.weight"].T + p["lin.bias"]
    u = (1.0 + h) * (2.0 - h) + 3.0 / (h * h + 1.5) - 0.25 + np.arange(K) * 0.5
    return -np.log(_softmax(u)[np.arange(len(labels)), labels]).mean()


def test_training_through_scalar_and_host_constant_operands_matches_numpy(backend):
    """Splat and dense pf.constant operands of pf.add/pf.sub/pf.div on the
    differentiated path (the constants themselves get no gradient)."""
    model = ScalarOperands()
    graph = Train(model, lr=0.1)
    rng = np.random.default_rng()
    batches = [(rng.standard_normal((6, 4)).astype(np.float32), rng.integers(0, K, (6,)))
               for _ in range(3)]
    _train(model, graph, batches, scalar_operands_loss, lambda: ref.Optimizer("sgd"), 0.1)


def test_number_arithmetic_under_gradient_accumulation(backend):
    """``x + 1``, ``2 - x``, ``x / 4``, ``3 * x`` in a graph whose batch is
    cut into micro-batches: the number is a rank-0 constant broadcast, which
    pf-microbatch resizes with the batch (a splat of the whole batch's shape
    failed: "operand shapes differ: [2, 3] vs [4, 3]"). Each micro-batch's
    loss equals NumPy's."""
    P0, B = flow.placement("cpu", ranks=[0]), [flow.sbp.broadcast]
    rng = np.random.default_rng()
    x = rng.standard_normal((4, 3)).astype(np.float32)
    lin = nn.Linear(3, 3).to_global(P0, B)
    w, b = lin.weight.numpy().astype(np.float64), lin.bias.numpy().astype(np.float64)

    class Step(nn.Graph):
        def __init__(self):
            super().__init__()
            self.lin = lin
            self.config.set_gradient_accumulation_steps(2)
            self.add_optimizer(flow.optim.SGD(lin.parameters(), lr=0.1))

        def build(self, x):
            h = self.lin(x)
            z = ((h + 1.0) * 3.0 - (2.0 - h)) / 4.0 + 0.5
            loss = (z * z).mean()
            loss.backward()
            return loss

    got = Step()(flow.tensor(x, placement=P0, sbp=B)).numpy()
    x64 = x.astype(np.float64)
    h = x64 @ w.T + b
    z = ((h + 1.0) * 3.0 - (2.0 - h)) / 4.0 + 0.5
    per = (z ** 2).reshape(2, 2, 3).mean(axis=(1, 2))
    assert ref.max_relative_error(got, per) < 1e-5, (got, per)
    # The update: each micro-batch's mean over its own 6 elements, its
    # gradient seeded with 1/2 (nanoGPT's loss / accumulation steps).
    dh = 2.0 * z / 6.0 / 2.0
    want_w, want_b = w - 0.1 * dh.T @ x64, b - 0.1 * dh.sum(axis=0)
    assert ref.max_relative_error(lin.weight.numpy(), want_w) < 1e-5
    assert ref.max_relative_error(lin.bias.numpy(), want_b) < 1e-5
