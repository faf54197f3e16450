"""Comparisons and boolean tensors in graphs (issue 35, item 2).

Before: ``att.masked_fill(mask == 0, float("-inf"))`` with ``mask`` a graph
input was refused ("comparing traced tensors ('==') is not supported"), and
a bool graph input failed inside pf-opt ("internal error: ... the memory
plan has no size for 'i1'"). Now ``==, !=, <, <=, >, >=`` (tensor/tensor
with broadcasting, tensor/number on either side), ``logical_and/or/xor/
not`` (``&``, ``|``, ``^``, ``~`` on bool tensors), ``where``,
``masked_fill`` with a traced mask and casts compile to ``pf.compare``,
``pf.logical_*``, ``pf.where`` and ``pf.cast``; bool and int32 tensors go
in and come out of graphs; every dtype the front end accepts either
compiles or raises a located ``CompileError`` at the user's line.

Results against NumPy on fresh random data; training (a causal mask given
as an input, gradients through ``where``) against a float64 NumPy
reference with central-difference gradients, on one rank and in jobs of
two processes (data parallel S(0) and a model-parallel S(1) split).
"""

import json
import math
import os

import mlp_reference as ref
import numpy as np
import pytest
from conftest import line_of, mpiexec_available
from jobs import run_script

import pipeflow as flow
from pipeflow import nn

HERE = os.path.abspath(__file__)
B = [flow.sbp.broadcast]
P0 = flow.placement("cpu", ranks=[0])
needs_mpiexec = pytest.mark.skipif(not mpiexec_available(), reason="needs mpiexec (MPICH)")


def rng():
    return np.random.default_rng()


def rand(*shape):
    return rng().standard_normal(shape).astype(np.float32)


def on_p0(array):
    return flow.tensor(array, placement=P0, sbp=B)


class Fn(nn.Graph):
    """An inference graph of ``fn(*inputs)``."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def build(self, *xs):
        return self.fn(*xs)


def run(fn, *arrays):
    """``fn`` traced and run on global tensors of ``arrays``: numpy results."""
    out = Fn(fn)(*[on_p0(a) for a in arrays])
    outs = out if isinstance(out, (tuple, list)) else [out]
    return [o.numpy() for o in outs], [o.dtype for o in outs]


# Eager ----------------------------------------------------------------------------------

def test_eager_logical_ops_where_and_casts():
    a, b = rand(3, 4), rand(4)
    ta, tb = flow.tensor(a), flow.tensor(b)
    m, k = ta > 0, tb < 0
    cases = {"&": (m & k, (a > 0) & (b < 0)), "|": (m | k, (a > 0) | (b < 0)),
             "^": (m ^ k, (a > 0) ^ (b < 0)), "~": (~m, ~(a > 0)),
             "and": (flow.logical_and(ta, tb), np.logical_and(a, b)),
             "or": (m.logical_or(0), a > 0), "not": (flow.logical_not(ta), a == 0),
             "xor": (flow.logical_xor(m, True), ~(a > 0))}
    for name, (got, want) in cases.items():
        assert got.dtype is flow.bool, name
        np.testing.assert_array_equal(got.numpy(), want, err_msg=name)
    w = flow.where(m, ta, tb)
    assert w.dtype is flow.float32
    np.testing.assert_array_equal(w.numpy(), np.where(a > 0, a, b))
    np.testing.assert_array_equal(flow.where(m, ta, 0.0).numpy(), np.where(a > 0, a, 0.0))
    np.testing.assert_array_equal(ta.where(m, tb).numpy(), np.where(a > 0, a, b))
    assert m.int().dtype is flow.int32 and m.float().dtype is flow.float32
    np.testing.assert_array_equal(ta.bool().numpy(), a != 0)
    assert (flow.arange(0, 4) == 2).dtype is flow.bool


# Traced comparisons, logical ops, where, casts: one rank ------------------------------

def test_comparisons_tensor_tensor_and_tensor_number():
    a, b = rand(3, 4), rand(4)
    i = rng().integers(-3, 3, (3, 4)).astype(np.int32)
    j = rng().integers(-3, 3, (4,)).astype(np.int64)

    def fn(x, y, n, m):
        return (x == y, x != y, x < y, x <= y, x > y, x >= y, x < 0.25, 0.25 <= x, x == 0,
                n == 2, n > m, 1 >= n, n != x, m.eq(m), x.gt(y))

    got, dtypes = run(fn, a, b, i, j)
    want = [a == b, a != b, a < b, a <= b, a > b, a >= b, a < 0.25, 0.25 <= a, a == 0,
            i == 2, i > j, 1 >= i, i != a, j == j, a > b]
    assert all(d is flow.bool for d in dtypes)
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        assert g.dtype == np.bool_, k
        np.testing.assert_array_equal(g, w, err_msg=f"result {k}")


def test_comparisons_with_nan_and_equal_values():
    a = np.array([np.nan, 1.0, 2.0, -0.0, np.inf], np.float32)
    b = np.array([np.nan, 1.0, 3.0, 0.0, np.inf], np.float32)
    got, _ = run(lambda x, y: (x == y, x != y, x < y, x <= y, x > y, x >= y), a, b)
    for g, w in zip(got, [a == b, a != b, a < b, a <= b, a > b, a >= b], strict=True):
        np.testing.assert_array_equal(g, w)


def test_logical_ops_and_where_in_a_graph():
    a, b = rand(2, 3, 4), rand(3, 4)
    p, q = rng().random((2, 3, 4)) < 0.5, rng().random((3, 4)) < 0.5

    def fn(x, y, m, k):
        return (m & k, m | k, m ^ k, ~m, flow.logical_and(x > 0, k), flow.logical_not(x),
                flow.logical_or(m, False), flow.where(m, x, y), flow.where(k, x, 0.5),
                flow.where(x > y, 1.0, y), x.masked_fill(m, -2.0), x.masked_fill(k, 3.0))

    got, dtypes = run(fn, a, b, p, q)
    want = [p & q, p | q, p ^ q, ~p, (a > 0) & q, a == 0, p, np.where(p, a, b),
            np.where(q, a, 0.5), np.where(a > b, 1.0, b), np.where(p, -2.0, a), np.where(q, 3.0, a)]
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        np.testing.assert_array_equal(g, w.astype(g.dtype), err_msg=f"result {k}")
    assert dtypes[:7] == [flow.bool] * 7 and dtypes[7:] == [flow.float32] * 5


@pytest.mark.parametrize("dtype", [np.bool_, np.int32])
def test_bool_and_int32_inputs_and_outputs_round_trip(dtype):
    v = rng().integers(-5, 5, (4, 6)).astype(dtype)
    f = rand(4, 6)

    def fn(x, y):
        return x, x.reshape(6, 4), x[:, 1:4], x.long(), x.float() * y, (y > 0).to(x.dtype)

    got, dtypes = run(fn, v, f)
    want = [v, v.reshape(6, 4), v[:, 1:4], v.astype(np.int64), v.astype(np.float32) * f,
            (f > 0).astype(dtype)]
    assert [d.numpy for d in dtypes] == [np.dtype(dtype)] * 3 + [np.dtype(np.int64)] + \
        [np.dtype(np.float32), np.dtype(dtype)]
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        assert g.dtype == w.dtype, k
        np.testing.assert_array_equal(g, w, err_msg=f"result {k}")


def test_casts_between_compiled_types():
    a = np.array([[-2.7, -0.5, 0.0, 0.5, 2.7, 3e9], [np.nan, -np.inf, np.inf, 1.0, -1.0, 7.0]],
                 np.float32)
    got, dtypes = run(lambda x: (x.int(), x.long(), x.bool(), x.bool().float(), x.int().bool(),
                                 x.long().int(), x.int().float()), a)
    i32 = np.array([[-2, 0, 0, 0, 2, 2147483647], [0, -2147483648, 2147483647, 1, -1, 7]], np.int32)
    i64 = np.array([[-2, 0, 0, 0, 2, 3000000000],
                    [0, -2**63, 2**63 - 1, 1, -1, 7]], np.int64)
    want = [i32, i64, a != 0, (a != 0).astype(np.float32), i32 != 0, i64.astype(np.int32),
            i32.astype(np.float32)]
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        assert g.dtype == w.dtype, k
        np.testing.assert_array_equal(g, w, err_msg=f"cast {k}")


def test_arithmetic_promotes_traced_integers_and_bools():
    """torch's promotion: a traced integer or bool meeting a float is cast."""
    a = rand(3, 4)
    i = rng().integers(-3, 3, (3, 4)).astype(np.int64)
    m = rng().random((4,)) < 0.5
    got, dtypes = run(lambda x, n, k: (x + n, k * x, x / (n.float() + 10), 1.5 - k), a, i, m)
    want = [a + i, m * a, a / (i + 10), 1.5 - m]
    assert dtypes == [flow.float32] * 4
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w.astype(np.float32), rtol=1e-6)


class AccumulatingSelect(nn.Graph):
    """Comparisons with numbers (broadcast rank-0 constants, which the
    micro-batches resize), where, and a bool result of every micro-batch
    (packed [m, ...] like the losses)."""

    def __init__(self, values):
        super().__init__()
        self.model = Selector(values).to_global(P0, B)
        self.add_optimizer(flow.optim.SGD(self.model.parameters(), lr=0.2))
        self.config.set_gradient_accumulation_steps(2)

    def build(self, x, keep, labels):
        logits = self.model(x, keep)
        loss = nn.functional.cross_entropy(logits, labels)
        loss.backward()
        return loss, logits > 0.25


def test_gradient_accumulation_with_comparisons_and_bool_results():
    r = rng()
    values = select_values(r)
    graph = AccumulatingSelect(values)
    # (Every input of an accumulating graph is cut along its axis 0.)
    x, keep, labels = rand(6, 4), r.random((6, 4)) < 0.7, r.integers(0, K, 6)
    loss, bigger = graph(on_p0(x), on_p0(keep), on_p0(labels))
    p = {k: v.astype(np.float64) for k, v in values.items()}
    halves = [slice(0, 3), slice(3, 6)]
    want = [select_loss(p, x[h].astype(np.float64), keep[h], labels[h]) for h in halves]
    np.testing.assert_allclose(loss.numpy(), want, rtol=1e-5)
    h1, h2 = x @ values["w1"], x @ values["w2"]
    y = np.where(keep, np.where(h1 < h2, np.where(x > 0, h1, h2), 0.5 * h1), 0.0)
    assert bigger.dtype is flow.bool and tuple(bigger.shape) == (2, 3, K)
    np.testing.assert_array_equal(bigger.numpy().reshape(6, K), y @ values["head"] > 0.25)


def test_attention_with_a_traced_bool_mask():
    """F.scaled_dot_product_attention's bool attn_mask (True takes part) as a
    graph input."""
    q, k, v = rand(2, 4, 3), rand(2, 5, 3), rand(2, 5, 3)
    keep = (rng().random((4, 5)) < 0.5) | (np.arange(5) == 0)
    (got,), _ = run(lambda *t: nn.functional.scaled_dot_product_attention(*t[:3], attn_mask=t[3]),
                    q, k, v, keep)
    att = np.where(keep, q.astype(np.float64) @ k.transpose(0, 2, 1) / math.sqrt(3), -np.inf)
    np.testing.assert_allclose(got, _softmax(att) @ v, rtol=1e-5, atol=1e-6)


def test_traced_ir_uses_the_new_ops(verify):
    class M(nn.Module):
        def forward(self, x, m):
            return flow.where(m == 0, x, -x), (x > 1.0).float() * x, ~(x < m)

    graph = Fn(M())
    text = graph.ir(on_p0(rand(3, 4)), on_p0(rand(4)))
    for op in ('pf.compare', 'predicate = "eq"', 'predicate = "gt"', 'predicate = "lt"',
               "pf.where", "pf.cast", "pf.logical_not", "pf.broadcast_to"):
        assert op in text, op
    assert "xi1," in text
    verify(text)


# Training: a causal mask input, gradients through where ------------------------------

T, C, K = 4, 3, 3


class ValuesModule(nn.Module):
    """A module whose parameters are ``values`` (name -> array, in its
    order)."""

    def __init__(self, values):
        super().__init__()
        for name, value in values.items():
            setattr(self, name, nn.Parameter(flow.tensor(value)))


class MaskedAttention(ValuesModule):
    """Scores of a learned projection, masked by the graph's mask input
    (``masked_fill(mask == 0, -inf)``, or ``~keep`` for a bool one), then
    softmax and a head."""

    def forward(self, x, mask):
        q, k = x @ self.wq, x @ self.wk
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(C))
        drop = ~mask if mask.dtype is flow.bool else mask == 0
        att = att.masked_fill(drop, float("-inf"))  # <-- masked_fill
        y = nn.functional.softmax(att, dim=-1) @ x
        return y.reshape(-1, C) @ self.head


class TrainGraph(nn.Graph):
    """Trains ``model(x, aux)`` (``aux``: MaskedAttention's mask, Selector's
    kept columns) by SGD at ``lr`` on the cross-entropy against ``labels``."""

    def __init__(self, model, lr):
        super().__init__()
        self.model = model
        self.add_optimizer(flow.optim.SGD(model.parameters(), lr=lr))

    def build(self, x, aux, labels):
        loss = nn.functional.cross_entropy(self.model(x, aux), labels)
        loss.backward()
        return loss


def _softmax(z):
    z = z - z.max(-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(-1, keepdims=True)


def attention_loss(p, x, mask, labels):
    q, k = x @ p["wq"], x @ p["wk"]
    att = q @ k.transpose(0, 2, 1) / math.sqrt(C)
    att = np.where(mask != 0, att, -np.inf)
    z = (_softmax(att) @ x).reshape(-1, C) @ p["head"]
    return -np.log(_softmax(z)[np.arange(len(labels)), labels]).mean()


def train_against_numpy(graph, params, batches, reference, lr, put=on_p0):
    """Each step's loss and the trained parameters against ``reference``
    (float64 NumPy) under SGD on central-difference gradients."""
    params = {k: v.astype(np.float64) for k, v in params.items()}
    for step, inputs in enumerate(batches, 1):
        loss = graph(*[put(a) for a in inputs])

        def f(p, inputs=inputs):
            return reference(p, *[a.astype(np.float64) if a.dtype == np.float32 else a
                                  for a in inputs])

        np.testing.assert_allclose(float(loss.numpy()), f(params), rtol=1e-5, err_msg=f"step {step}")
        grads = ref.numeric_grads(f, params)
        params = {k: v - lr * grads[k] for k, v in params.items()}
    trained = graph.state_dict()["model"]
    for key, want in params.items():
        np.testing.assert_allclose(trained[key].numpy(), want, rtol=1e-4, atol=1e-5, err_msg=key)


def random_mask(dtype):
    """A random mask that keeps each row's diagonal (no row all -inf)."""
    keep = (rng().random((T, T)) < 0.5) | np.eye(T, dtype=bool)
    return keep.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_])
def test_causal_mask_input_trains_like_numpy(dtype):
    r = rng()
    values = {"wq": r.standard_normal((C, C)).astype(np.float32),
              "wk": r.standard_normal((C, C)).astype(np.float32),
              "head": r.standard_normal((C, K)).astype(np.float32)}
    model = MaskedAttention(values).to_global(P0, B)
    graph = TrainGraph(model, lr=0.3)
    # The case first: a causal mask, then fresh random ones.
    masks = [np.tril(np.ones((T, T))).astype(dtype)] + [random_mask(dtype) for _ in range(2)]
    batches = [(rand(2, T, C), m, r.integers(0, K, 2 * T)) for m in masks]
    train_against_numpy(graph, values, batches, attention_loss, lr=0.3)


class Selector(ValuesModule):
    """Two projections of the input, picked by comparisons (of the input and
    of a hidden value) with ``where``: the gradient reaches each projection
    where it was picked."""

    def forward(self, x, keep):
        h1, h2 = x @ self.w1, x @ self.w2
        y = flow.where(x > 0, h1, h2)                  # tensor/number condition
        y = flow.where(h1 < h2, y, 0.5 * h1)          # tensor/tensor condition
        y = flow.where(keep, y, 0.0)                   # a bool input, broadcast
        return y @ self.head


def select_loss(p, x, keep, labels):
    h1, h2 = x @ p["w1"], x @ p["w2"]
    y = np.where(x > 0, h1, h2)
    y = np.where(h1 < h2, y, 0.5 * h1)
    y = np.where(keep, y, 0.0)
    z = y @ p["head"]
    return -np.log(_softmax(z)[np.arange(len(labels)), labels]).mean()


def select_values(r, n=4):
    return {"w1": r.standard_normal((n, n)).astype(np.float32),
            "w2": r.standard_normal((n, n)).astype(np.float32),
            "head": r.standard_normal((n, K)).astype(np.float32)}


def test_gradients_through_where_match_numpy():
    r = rng()
    values = select_values(r)
    graph = TrainGraph(Selector(values).to_global(P0, B), lr=0.2)
    batches = [(rand(6, 4), r.random(4) < 0.7, r.integers(0, K, 6)) for _ in range(3)]
    train_against_numpy(graph, values, batches, select_loss, lr=0.2)


# Two processes: data parallel S(0), model parallel S(1) ---------------------------------

SCRIPT = r"""
import json
import sys

import numpy as np

import pipeflow as flow
from pipeflow import nn

layout, seed, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rank = flow.env.get_rank()
PL = flow.placement("cpu", ranks=[0, 1])
B, S0, S1 = flow.sbp.broadcast, flow.sbp.split(0), flow.sbp.split(1)
r = np.random.default_rng(seed)
N, K = 4, 3
V = {"w1": r.standard_normal((N, N)).astype(np.float32),
     "w2": r.standard_normal((N, N)).astype(np.float32),
     "head": r.standard_normal((N, K)).astype(np.float32)}
batches = [(r.standard_normal((6, N)).astype(np.float32), r.random(N) < 0.7,
            r.integers(0, K, 6)) for _ in range(3)]
# Model parallel: the projections split by columns (their results, the
# comparisons and selections S(1)), the head by rows (a partial sum).
SBP = {"w1": S1, "w2": S1, "head": S0} if layout == "mp" else {k: B for k in V}


class Selector(nn.Module):
    def __init__(self):
        super().__init__()
        for k, v in V.items():
            setattr(self, k, nn.Parameter(flow.tensor(v).to_global(PL, [B]).to_global(sbp=[SBP[k]])))

    def forward(self, x, keep):
        h1, h2 = x @ self.w1, x @ self.w2
        y = flow.where(x > 0, h1, h2)
        y = flow.where(h1 < h2, y, 0.5 * h1)
        y = flow.where(keep, y, 0.0)
        return y @ self.head, (h1 > h2), keep.int()


class SelectGraph(nn.Graph):
    def __init__(self, model):
        super().__init__()
        self.model = model
        self.add_optimizer(flow.optim.SGD(model.parameters(), lr=0.2))

    def build(self, x, keep, labels):
        logits, bigger, ints = self.model(x, keep)
        loss = nn.functional.cross_entropy(logits, labels)
        loss.backward()
        return loss, bigger, ints


graph = SelectGraph(Selector())
xsbp = S0 if layout == "dp" else B
record = {"losses": [], "bigger": [], "ints": [], "sbp": []}
for x, keep, labels in batches:
    args = [flow.tensor(x).to_global(PL, [B]).to_global(sbp=[xsbp]),
            flow.tensor(keep).to_global(PL, [B]),
            flow.tensor(labels).to_global(PL, [B]).to_global(sbp=[xsbp])]
    loss, bigger, ints = graph(*args)
    local = loss.to_local().numpy().reshape(-1)
    record["losses"].append(float(local[0]) if local.size else None)
    assert bigger.dtype is flow.bool and ints.dtype is flow.int32
    record["bigger"].append(bigger.to_local().numpy().tolist())
    record["ints"].append(ints.to_local().numpy().tolist())
    record["sbp"].append([repr(s) for s in bigger.sbp + ints.sbp])
state = graph.state_dict()["model"]
record["final"] = {k: state[k].numpy().tolist() for k in V}
with open(f"{out}/{layout}.{rank}.json", "w") as f:
    json.dump(record, f)
"""


@needs_mpiexec
@pytest.mark.parametrize("layout", ["dp", "mp"])
def test_two_ranks_train_like_numpy(tmp_path, backend, layout):
    seed = int(rng().integers(1 << 30))
    out = tmp_path / "out"
    out.mkdir()
    run_script(tmp_path, "select.py", SCRIPT, [layout, seed, out], 2, backend, 300)
    records = [json.loads((out / f"{layout}.{rank}.json").read_text()) for rank in range(2)]
    # The script's data, drawn again.
    r = np.random.default_rng(seed)
    values = select_values(r)
    batches = [(r.standard_normal((6, 4)).astype(np.float32), r.random(4) < 0.7,
                r.integers(0, K, 6)) for _ in range(3)]
    params = {k: v.astype(np.float64) for k, v in values.items()}
    # Data parallel splits the rows (S(0)); model parallel the projections'
    # columns (S(1)): the comparison h1 > h2 comes back so.
    axis = 0 if layout == "dp" else 1
    for step, (x, keep, labels) in enumerate(batches):
        def f(p, x=x, keep=keep, labels=labels):
            return select_loss(p, x.astype(np.float64), keep, labels)

        losses = [rec["losses"][step] for rec in records if rec["losses"][step] is not None]
        assert losses, f"step {step}: no rank holds the loss"
        for loss in losses:
            np.testing.assert_allclose(loss, f(params), rtol=1e-5, err_msg=f"step {step}")
        h1, h2 = x.astype(np.float64) @ params["w1"], x.astype(np.float64) @ params["w2"]
        for rank, rec in enumerate(records):
            assert rec["sbp"][step][0] == f"pipeflow.sbp.split(dim={axis})", rec["sbp"][step]
            bigger = np.array(rec["bigger"][step], dtype=np.bool_)
            want = np.split(h1 > h2, 2, axis=axis)[rank]
            clear = np.abs(np.split(h1 - h2, 2, axis=axis)[rank]) > 1e-4  # float32 ties aside
            np.testing.assert_array_equal(bigger[clear], want[clear], err_msg=f"rank {rank}")
            np.testing.assert_array_equal(rec["ints"][step], keep.astype(np.int32))
        grads = ref.numeric_grads(f, params)
        params = {k: v - 0.2 * grads[k] for k, v in params.items()}
    for key, want in params.items():
        np.testing.assert_allclose(records[0]["final"][key], want, rtol=1e-4, atol=1e-5, err_msg=key)


# Every dtype compiles or fails at the user's line ------------------------------------

ALL_DTYPES = [flow.float16, flow.float32, flow.float64, flow.int8, flow.uint8, flow.int32,
              flow.int64, flow.bool]


def values_of(dtype):
    return (rng().integers(0, 2, (2, 3)) if dtype is flow.bool else
            rng().integers(-4, 4, (2, 3))).astype(dtype.numpy)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: d.name)
def test_every_dtype_as_an_input_compiles_or_fails_at_the_call(dtype):
    v = values_of(dtype)
    graph = Fn(lambda x: (x.reshape(3, 2), x == x))
    if dtype in flow.dtypes.COMPILED:
        same, eq = graph(on_p0(v))
        assert same.dtype is dtype and eq.dtype is flow.bool
        np.testing.assert_array_equal(same.numpy(), v.reshape(3, 2))
        assert eq.numpy().all()
        return
    with pytest.raises(flow.CompileError) as info:
        graph(on_p0(v))  # <-- call
    err = info.value
    assert "internal error" not in str(err)
    assert f"has dtype {dtype}" in err.message
    assert (err.filename, err.lineno) == (HERE, line_of(HERE, "call"))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: d.name)
def test_every_dtype_as_a_cast_compiles_or_fails_at_the_cast(dtype):
    a = rand(2, 3) * 3

    def fn(x):
        return x.to(dtype)  # <-- cast

    if dtype in flow.dtypes.COMPILED:
        (got,), (gdt,) = run(fn, a)
        assert gdt is dtype
        want = a != 0 if dtype is flow.bool else a.astype(dtype.numpy)
        np.testing.assert_array_equal(got, want)
        return
    with pytest.raises(flow.CompileError) as info:
        run(fn, a)
    err = info.value
    assert "internal error" not in str(err) and f"casting to {dtype}" in err.message
    assert (err.filename, err.lineno) == (HERE, line_of(HERE, "cast"))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: d.name)
def test_every_dtype_as_a_host_operand_compiles(dtype):
    """A host tensor of any dtype meets a traced one in its promoted type."""
    a, v = rand(2, 3), values_of(dtype)
    host = flow.tensor(v)
    got, _ = run(lambda x: (x == host, flow.where(x > 0, x, host), x.masked_fill(host, 1.0)), a)
    vf = v.astype(np.float32)
    np.testing.assert_array_equal(got[0], a == vf)
    np.testing.assert_array_equal(got[1], np.where(a > 0, a, vf))
    np.testing.assert_array_equal(got[2], np.where(v != 0, 1.0, a).astype(np.float32))


class Holder(nn.Module):
    def __init__(self, dtype):
        super().__init__()
        self.p = nn.Parameter(flow.tensor(values_of(dtype)))  # <-- parameter

    def forward(self, x):
        return x == self.p


@pytest.mark.parametrize("dtype", [d for d in ALL_DTYPES if d is not flow.float32],
                         ids=lambda d: d.name)
def test_a_parameter_of_another_dtype_fails_where_it_is_made(dtype):
    """Parameters (and optimizer states) are float32: another one's error
    names the line that made it, never an internal error."""
    with pytest.raises(flow.CompileError) as info:
        Fn(Holder(dtype).to_global(P0, B))(on_p0(rand(2, 3)))
    err = info.value
    assert "internal error" not in str(err) and "f32 parameters" in err.message
    assert (err.filename, err.lineno) == (HERE, line_of(HERE, "parameter"))


@pytest.mark.parametrize("what", ["int_add", "int_neg", "bitwise_int", "invert_int", "transpose_bool"])
def test_what_a_graph_does_not_compute_is_a_located_error(what):
    ints = values_of(flow.int64)
    cases = {"int_add": lambda x: x + x,  # <-- int_add
             "int_neg": lambda x: -x,  # <-- int_neg
             "bitwise_int": lambda x: x & 1,  # <-- bitwise_int
             "invert_int": lambda x: ~x,  # <-- invert_int
             "transpose_bool": lambda x: (x > 0).transpose(0, 1)}  # <-- transpose_bool
    with pytest.raises(flow.CompileError) as info:
        run(cases[what], ints)
    err = info.value
    assert "internal error" not in str(err)
    assert (err.filename, err.lineno) == (HERE, line_of(HERE, what))
