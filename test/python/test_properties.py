"""Property-based tests of the front end (issue 35): hypothesis draws small
programs (a chain of 2-5 traced ops on small shapes, in an inference graph
or a training graph with SGD, local or on a one-rank placement, with or
without the compiler's generated kernels), compiles and runs them, and
compares the results with a float64 NumPy interpreter of the same op list
(training: the losses of two SGD steps and the trained parameters, the
reference stepping with central-difference gradients).

A world-size-1 process runs only one-rank placements (a placement of
several ranks needs the launcher), so the in-process property draws its
layouts from those; ``test_launched_programs`` runs a few fixed programs
on 2 and 4 ranks (data parallel inputs, split parameters) under the
launcher against the same interpreter.

The search is derandomized and keeps no database, so CI runs the same
examples every time within a fixed budget; a failure prints the program
(``note``) as a ``PROGRAM = {...}`` literal that ``run_program`` replays.
"""

import functools
import json
import math
import os
import sys

import mlp_reference as ref
import numpy as np
import pytest
from conftest import PYTHON_DIR, line_of, mpiexec_available, run_job

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, example, given, note, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import pipeflow as flow  # noqa: E402
from pipeflow import nn  # noqa: E402

HERE = os.path.abspath(__file__)
LR = 0.1
MAX_ELEMENTS = 48  # of any intermediate value: keeps the finite differences cheap

# In-process examples; each costs a compile (about 0.3-1 s) and two steps.
# CI runs the fixed, derandomized budget; PF_PROPERTY_EXAMPLES=500
# PF_PROPERTY_RANDOM=1 searches further with fresh draws.
EXAMPLES = int(os.environ.get("PF_PROPERTY_EXAMPLES", "80"))
RANDOM = os.environ.get("PF_PROPERTY_RANDOM", "") not in ("", "0")

PROPERTY_SETTINGS = settings(
    max_examples=EXAMPLES, derandomize=not RANDOM, database=None, deadline=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.filter_too_much, HealthCheck.function_scoped_fixture])

# Programs ---------------------------------------------------------------------------
#
# A program is a dict of plain values (so it prints and replays):
#   shape   the input's shape
#   ops     a list of op tuples (below), applied in order to the input
#   train   a training graph (loss = mean(out * c), SGD) or an inference graph
#   layout  "local", or a placement (of one rank in process): "B" (inputs and
#           parameters broadcast), "S0" (the input split along axis 0), "W"
#           (weights split along their output features)
#   generated  config.enable_generated_kernels
#   seed    numpy seed of the inputs, parameters and host constants
#
# Ops (h is the running value):
#   ("linear", n, bias)          nn.Linear(h.shape[-1], n)
#   ("matmul", n, form)          a matmul with a parameter W: "right" h @ W, W [h.shape[-1], n];
#                                "left" W @ h, W [n, h.shape[-2]] (h a vector: [n, h.shape[-1]]);
#                                "batched" h @ W, W [b, h.shape[-1], n], b 2 for a vector or
#                                matrix h, else 1 (batch axes broadcast)
#   ("act", kind)                relu, gelu, gelu_tanh, tanh, sigmoid
#   ("binary", kind, operand, shape, reverse)
#                                h kind v (v kind h if reverse); kind add/sub/mul/div;
#                                operand "param", "host" (a host constant) or "scalar";
#                                shape broadcasts with h's; div only by host/scalar
#   ("reduce", kind, dim, keepdim)   sum/mean over one axis
#   ("reshape", shape)           (a -1 stands for one axis)
#   ("transpose", d0, d1)
#   ("softmax", dim)
#   ("layer_norm", affine)       over the last axis
#   ("masked_fill", shape, value)  a host bool mask of a shape that broadcasts to h's

ACTS = ("relu", "gelu", "gelu_tanh", "tanh", "sigmoid")


def _size(shape):
    return int(np.prod(shape, dtype=np.int64)) if shape else 1


def out_shape(op, shape):
    """The shape of ``op`` applied to a value of ``shape``."""
    kind = op[0]
    if kind == "linear":
        return shape[:-1] + (op[1],)
    if kind == "matmul":
        w = np.zeros(_params_of(op, shape)[0][1])
        return (w @ np.zeros(shape) if op[2] == "left" else np.zeros(shape) @ w).shape
    if kind == "binary":
        return tuple(np.broadcast_shapes(shape, tuple(op[3])))
    if kind == "reduce":
        _, _, dim, keepdim = op
        return tuple(1 if i == dim else d for i, d in enumerate(shape) if keepdim or i != dim)
    if kind == "reshape":
        new = list(op[1])
        if -1 in new:
            new[new.index(-1)] = _size(shape) // -_size(new)
        return tuple(new)
    if kind == "transpose":
        s = list(shape)
        s[op[1]], s[op[2]] = s[op[2]], s[op[1]]
        return tuple(s)
    return shape


def _params_of(op, shape):
    """(name suffix, shape) of the parameters ``op`` makes on an input of ``shape``."""
    kind = op[0]
    if kind == "linear":
        return [("weight", (op[1], shape[-1]))] + ([("bias", (op[1],))] if op[2] else [])
    if kind == "matmul":
        k = shape[-1] if op[2] != "left" else shape[-2] if len(shape) > 1 else shape[0]
        batch = 2 if len(shape) <= 2 else 1  # broadcasts against h's batch axes
        return [("w", (op[1], k) if op[2] == "left" else (k, op[1]) if op[2] == "right"
                 else (batch, k, op[1]))]
    if kind == "binary" and op[2] == "param":
        return [("p", tuple(op[3]))]
    if kind == "layer_norm" and op[1]:
        return [("weight", (shape[-1],)), ("bias", (shape[-1],))]
    return []


def _away_from_zero(rng, shape):
    return rng.uniform(0.5, 2.0, shape) * rng.choice([-1.0, 1.0], shape)


def values_of(program):
    """The program's inputs (two steps), parameters and host constants, all
    float32 (the float64 reference reads the same values), drawn in a fixed
    order from ``program["seed"]``."""
    rng = np.random.default_rng(program["seed"])
    shape = tuple(program["shape"])
    params, consts = {}, {}
    for i, op in enumerate(program["ops"]):
        for name, pshape in _params_of(op, shape):
            scale = 1.0 / math.sqrt(pshape[-1 if op[0] == "linear" else -2]) \
                if op[0] in ("linear", "matmul") else 1.0
            if op[0] == "layer_norm" and name == "weight":
                value = 1.0 + 0.5 * rng.standard_normal(pshape)
            else:
                value = scale * rng.standard_normal(pshape)
            params[f"op{i}.{name}"] = np.asarray(value, np.float32)
        if op[0] == "binary" and op[2] == "host":
            value = _away_from_zero(rng, op[3]) if op[1] == "div" else rng.standard_normal(op[3])
            consts[f"op{i}"] = np.asarray(value, np.float32)
        if op[0] == "binary" and op[2] == "scalar":
            value = _away_from_zero(rng, ()) if op[1] == "div" else rng.standard_normal()
            consts[f"op{i}"] = float(np.float32(value))
        if op[0] == "masked_fill":
            consts[f"op{i}"] = rng.random(op[1]) < 0.4
        shape = out_shape(op, shape)
    inputs = [rng.standard_normal(program["shape"]).astype(np.float32) for _ in range(2)]
    loss_weight = rng.standard_normal(shape).astype(np.float32)
    return inputs, params, consts, loss_weight


# The float64 reference ---------------------------------------------------------------

_erf = np.vectorize(math.erf, otypes=[np.float64])
_REF_ACTS = {
    "relu": lambda v: np.maximum(v, 0.0),
    "gelu": lambda v: 0.5 * v * (1.0 + _erf(v / math.sqrt(2.0))),
    "gelu_tanh": lambda v: 0.5 * v * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (v + 0.044715 * v ** 3))),
    "tanh": np.tanh,
    "sigmoid": lambda v: 1.0 / (1.0 + np.exp(-v)),
}
_REF_BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide}


def reference(program, params, consts, x):
    """The program's output in float64 NumPy."""
    h = np.asarray(x, np.float64)
    for i, op in enumerate(program["ops"]):
        kind = op[0]
        if kind == "linear":
            h = h @ params[f"op{i}.weight"].T
            if op[2]:
                h = h + params[f"op{i}.bias"]
        elif kind == "matmul":
            h = params[f"op{i}.w"] @ h if op[2] == "left" else h @ params[f"op{i}.w"]
        elif kind == "act":
            h = _REF_ACTS[op[1]](h)
        elif kind == "binary":
            v = params[f"op{i}.p"] if op[2] == "param" else np.asarray(consts[f"op{i}"], np.float64)
            h = _REF_BINARY[op[1]](v, h) if op[4] else _REF_BINARY[op[1]](h, v)
        elif kind == "reduce":
            h = (np.sum if op[1] == "sum" else np.mean)(h, axis=op[2], keepdims=op[3])
        elif kind == "reshape":
            h = h.reshape(op[1])
        elif kind == "transpose":
            h = np.swapaxes(h, op[1], op[2])
        elif kind == "softmax":
            z = np.exp(h - h.max(op[1], keepdims=True))
            h = z / z.sum(op[1], keepdims=True)
        elif kind == "layer_norm":
            m = h.mean(-1, keepdims=True)
            h = (h - m) / np.sqrt(((h - m) ** 2).mean(-1, keepdims=True) + 1e-5)
            if op[1]:
                h = h * params[f"op{i}.weight"] + params[f"op{i}.bias"]
        elif kind == "masked_fill":
            h = np.where(consts[f"op{i}"], op[2], h)
        else:
            raise AssertionError(f"unknown op {op!r}")
    return h


# The program in the front end --------------------------------------------------------

class Program(nn.Module):
    """The op list as a module whose parameters have the drawn values."""

    def __init__(self, program, params, consts):
        super().__init__()
        self.ops = [tuple(op) for op in program["ops"]]
        self.consts = consts
        shape = tuple(program["shape"])
        for i, op in enumerate(self.ops):
            if op[0] == "linear":
                lin = nn.Linear(shape[-1], op[1], bias=op[2])
                lin.weight = nn.Parameter(flow.tensor(params[f"op{i}.weight"]))
                if op[2]:
                    lin.bias = nn.Parameter(flow.tensor(params[f"op{i}.bias"]))
                setattr(self, f"op{i}", lin)
            elif op[0] == "layer_norm":
                ln = nn.LayerNorm(shape[-1], elementwise_affine=op[1])
                if op[1]:
                    ln.weight = nn.Parameter(flow.tensor(params[f"op{i}.weight"]))
                    ln.bias = nn.Parameter(flow.tensor(params[f"op{i}.bias"]))
                setattr(self, f"op{i}", ln)
            else:
                holder = None
                for name, _ in _params_of(op, shape):
                    holder = holder or nn.Module()
                    holder.register_parameter(name, nn.Parameter(flow.tensor(params[f"op{i}.{name}"])))
                if holder is not None:
                    setattr(self, f"op{i}", holder)
            shape = out_shape(op, shape)

    def forward(self, h):
        for i, op in enumerate(self.ops):
            kind = op[0]
            if kind in ("linear", "layer_norm"):
                h = getattr(self, f"op{i}")(h)
            elif kind == "matmul":
                w = getattr(self, f"op{i}").w
                h = flow.matmul(w, h) if op[2] == "left" else h @ w
            elif kind == "act":
                h = nn.functional.relu(h) if op[1] == "relu" else \
                    nn.functional.gelu(h, approximate="tanh") if op[1] == "gelu_tanh" else \
                    getattr(nn.functional, op[1])(h)
            elif kind == "binary":
                if op[2] == "param":
                    v = getattr(self, f"op{i}").p
                elif op[2] == "host":
                    v = flow.tensor(self.consts[f"op{i}"])
                else:
                    v = self.consts[f"op{i}"]
                a, b = (v, h) if op[4] else (h, v)
                h = {"add": flow.add, "sub": flow.sub, "mul": flow.mul, "div": flow.div}[op[1]](a, b) \
                    if isinstance(a, flow.Tensor) else \
                    {"add": a + b, "sub": a - b, "mul": a * b, "div": a / b}[op[1]]
            elif kind == "reduce":
                h = h.sum(op[2], op[3]) if op[1] == "sum" else h.mean(dim=op[2], keepdim=op[3])
            elif kind == "reshape":
                h = h.reshape(*op[1])
            elif kind == "transpose":
                h = h.transpose(op[1], op[2])
            elif kind == "softmax":
                h = nn.functional.softmax(h, dim=op[1])
            elif kind == "masked_fill":
                h = h.masked_fill(flow.tensor(self.consts[f"op{i}"]), op[2])
        return h


class InferGraph(nn.Graph):
    def __init__(self, model, generated, whole_on=None):
        super().__init__()
        self.config.enable_generated_kernels(generated)
        self.model = model
        self.whole_on = whole_on  # a placement of several ranks: the result made whole (B) there

    def build(self, x):
        y = self.model(x)
        return y if self.whole_on is None else y.to_global(self.whole_on, [flow.sbp.broadcast])


class TrainGraph(nn.Graph):
    def __init__(self, model, loss_weight, generated):
        super().__init__()
        self.config.enable_generated_kernels(generated)
        self.model = model
        self.loss_weight = loss_weight
        self.add_optimizer(flow.optim.SGD(model.parameters(), lr=LR))

    def build(self, x):
        loss = (self.model(x) * flow.tensor(self.loss_weight)).mean()
        loss.backward()
        return loss


def _layout(program, ranks=(0,)):
    """(placement, parameter SBP, input SBP) of the program's layout, or None
    for local. "B": all broadcast; "S0": the input split along axis 0 (data
    parallel); "W": the weights of linear and right matmul split along
    their output features (model parallel; set by ``_split_weights``)."""
    layout = program["layout"]
    if layout == "local":
        return None
    placement = flow.placement("cpu", ranks=list(ranks))
    B = flow.sbp.broadcast
    return placement, [B], [flow.sbp.split(0) if layout == "S0" else B]


def _split_weights(model, program, placement):
    for i, op in enumerate(program["ops"]):
        if op[0] == "linear":
            lin = getattr(model, f"op{i}")
            lin.weight = nn.Parameter(lin.weight.to_global(placement, [flow.sbp.split(0)]))
        elif op[0] == "matmul" and op[2] == "right":
            holder = getattr(model, f"op{i}")
            holder.w = nn.Parameter(holder.w.to_global(placement, [flow.sbp.split(1)]))


def _value(t):
    """A result's value: its logical value, or the (whole) local of a rank of its placement."""
    try:
        return t.numpy()
    except flow.BackendUnavailable:
        return t.to_local().numpy()


def _close(got, want, what, rtol, atol):
    scale = max(1.0, float(np.max(np.abs(want))) if np.size(want) else 1.0)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol * scale, err_msg=what)


def run_program(program, ranks=(0,)):
    """Compiles and runs ``program`` in this process and checks it against
    the reference; returns nothing, raises on a mismatch."""
    inputs, params, consts, loss_weight = values_of(program)
    model = Program(program, params, consts)
    layout = _layout(program, ranks)
    if layout is not None:
        model.to_global(layout[0], layout[1])
        if program["layout"] == "W":
            _split_weights(model, program, layout[0])

    def put(a):
        # Every process has the whole input: made with its global layout (not
        # from locals, which under S(0) would be shards).
        return flow.tensor(a) if layout is None else flow.tensor(a, placement=layout[0], sbp=layout[2])

    p64 = {k: np.array(v, np.float64) for k, v in params.items()}
    if not program["train"]:
        graph = InferGraph(model, program["generated"], layout[0] if len(ranks) > 1 else None)
        for step, x in enumerate(inputs):
            out = graph(put(x))
            want = reference(program, p64, consts, x)
            assert tuple(out.shape) == want.shape, f"step {step}: shape {tuple(out.shape)} != {want.shape}"
            _close(_value(out), want, f"step {step} output", 1e-4, 1e-5)
        return
    graph = TrainGraph(model, loss_weight, program["generated"])
    w64 = loss_weight.astype(np.float64)
    for step, x in enumerate(inputs):
        def f(p, x=x):
            return float((reference(program, p, consts, x) * w64).mean())

        loss = graph(put(x))
        # The second loss is after an update computed in float32: a looser tolerance.
        _close(float(_value(loss)), f(p64), f"step {step} loss", 1e-4 if step == 0 else 1e-3,
               1e-5 if step == 0 else 1e-4)
        grads = ref.numeric_grads(f, p64)
        p64 = {k: np.array(v - LR * grads[k], np.float64) for k, v in p64.items()}
    trained = {k: v.numpy() for k, v in graph.state_dict()["model"].items()}
    assert sorted(trained) == sorted(p64), (sorted(trained), sorted(p64))
    for key, want in p64.items():
        _close(trained[key], want, f"trained {key}", 1e-3, 1e-4)


# The strategy ------------------------------------------------------------------------

def _broadcast_shape(draw, shape):
    """A shape that broadcasts with ``shape`` without growing it, or one with
    a leading axis of 2 of its own (which grows the result)."""
    n = draw(st.integers(0, len(shape)))
    tail = [draw(st.sampled_from([1, d])) for d in shape[len(shape) - n:]]
    if n == len(shape) and len(shape) < 4 and draw(st.booleans()):
        return [2] + tail
    return tail


def _reshape(draw, shape):
    s = list(shape)
    moves = []
    if len(s) >= 2:
        moves.append("merge")
    if len(s) < 4 and any(d >= 4 and any(d % a == 0 for a in range(2, d)) for d in s):
        moves.append("split")
    moves.append("flatten" if len(s) > 1 else "unsqueeze")
    move = draw(st.sampled_from(moves))
    if move == "merge":
        i = draw(st.integers(0, len(s) - 2))
        new = s[:i] + [s[i] * s[i + 1]] + s[i + 2:]
    elif move == "split":
        i = draw(st.sampled_from([i for i, d in enumerate(s)
                                  if d >= 4 and any(d % a == 0 for a in range(2, d))]))
        a = draw(st.sampled_from([a for a in range(2, s[i]) if s[i] % a == 0]))
        new = s[:i] + [a, s[i] // a] + s[i + 1:]
    elif move == "flatten":
        new = [_size(s)]
    else:
        new = [1] + s
    if len(new) > 1 and draw(st.booleans()):
        new[draw(st.integers(0, len(new) - 1))] = -1
    return new


@st.composite
def ops_for(draw, shape):
    """One op that applies to a value of ``shape``."""
    nd = len(shape)
    choices = ["linear", "matmul", "act", "binary", "softmax", "layer_norm", "masked_fill", "reshape"]
    if nd >= 2:
        choices += ["reduce", "transpose"]
    kind = draw(st.sampled_from(choices))
    if kind == "linear":
        return ("linear", draw(st.integers(1, 6)), draw(st.booleans()))
    if kind == "matmul":
        return ("matmul", draw(st.integers(1, 6)), draw(st.sampled_from(["right", "left", "batched"])))
    if kind == "act":
        return ("act", draw(st.sampled_from(ACTS)))
    if kind == "binary":
        op = draw(st.sampled_from(["add", "sub", "mul", "div"]))
        operand = draw(st.sampled_from(["host", "scalar"] if op == "div" else ["param", "host", "scalar"]))
        oshape = [] if operand == "scalar" else _broadcast_shape(draw, shape)
        return ("binary", op, operand, oshape, draw(st.booleans()) and op != "div")
    if kind == "reduce":
        return ("reduce", draw(st.sampled_from(["sum", "mean"])), draw(st.integers(0, nd - 1)),
                draw(st.booleans()))
    if kind == "transpose":
        d0, d1 = draw(st.lists(st.integers(0, nd - 1), min_size=2, max_size=2, unique=True))
        return ("transpose", d0, d1)
    if kind == "softmax":
        return ("softmax", draw(st.integers(-nd, nd - 1)))
    if kind == "layer_norm":
        return ("layer_norm", draw(st.booleans()))
    if kind == "masked_fill":
        return ("masked_fill", [draw(st.sampled_from([1, d])) for d in shape], draw(
            st.sampled_from([0.0, -1.5, 2.0])))
    return ("reshape", _reshape(draw, shape))


def _fits(op, shape):
    new = out_shape(op, shape)
    if not 1 <= len(new) <= 4 or _size(new) > MAX_ELEMENTS:
        return False
    return sum(_size(s) for _, s in _params_of(op, shape)) <= 36


@st.composite
def programs(draw, layouts=("local", "B", "S0", "W")):
    nd = draw(st.integers(1, 3))
    shape = tuple(draw(st.integers(1, 6)) for _ in range(nd))
    if _size(shape) > MAX_ELEMENTS:
        shape = shape[:-1] + (1,)
    train = draw(st.booleans())
    ops, cur = [], shape
    for _ in range(draw(st.integers(2, 5))):
        op = draw(ops_for(cur).filter(functools.partial(_fits, shape=cur)))
        ops.append(op)
        cur = out_shape(op, cur)
    if train and not any(_params_of(op, s) for op, s in _shapes_along(shape, ops)):
        ops.insert(0, ("binary", "mul", "param", [shape[-1]], False))
    return {"shape": list(shape), "ops": ops, "train": train,
            "layout": draw(st.sampled_from(layouts)), "generated": draw(st.booleans()),
            "seed": draw(st.integers(0, 2 ** 16))}


def _shapes_along(shape, ops):
    for op in ops:
        yield op, shape
        shape = out_shape(op, shape)


def program_text(program):
    return "PROGRAM = " + repr(program)


# Found by the property (issue 35): a traced nn.Linear rejected a vector
# input, and a traced matmul rejected vectors and batch axes that broadcast
# (other than a 2-D right operand), both of which torch and eager take.
FOUND = [
    {"shape": [1], "ops": [("linear", 1, False), ("linear", 1, False)], "train": False,
     "layout": "local", "generated": False, "seed": 0},
    {"shape": [3], "ops": [("linear", 5, True), ("act", "relu"), ("matmul", 2, "left")],
     "train": True, "layout": "local", "generated": False, "seed": 1},
    {"shape": [3, 4], "ops": [("matmul", 3, "batched"), ("act", "gelu"), ("matmul", 2, "left")],
     "train": True, "layout": "B", "generated": False, "seed": 2},
    {"shape": [2, 3, 4], "ops": [("matmul", 3, "left"), ("layer_norm", True)], "train": True,
     "layout": "W", "generated": True, "seed": 3},
]


def _with_examples(test):
    for program in reversed(FOUND):
        test = example(program=program)(test)
    return test


@PROPERTY_SETTINGS
@_with_examples
@given(program=programs())
def test_random_programs_match_numpy(backend, program):
    note(program_text(program))
    run_program(program)


class MatmulCases(nn.Graph):
    def build(self, v, m, t):
        return (flow.matmul(v, v), flow.matmul(v, m), flow.matmul(m.T, v), flow.matmul(m.T, t),
                flow.matmul(t[:1], t.transpose(1, 2)), flow.matmul(v, t))


def test_traced_matmul_takes_vectors_and_broadcasts_batch_axes(backend):
    rng = np.random.default_rng(5)
    v, m, t = (rng.standard_normal(s).astype(np.float32) for s in ((3,), (3, 4), (2, 3, 4)))
    got = MatmulCases()(flow.tensor(v), flow.tensor(m), flow.tensor(t))
    wants = (v @ v, v @ m, m.T @ v, m.T @ t, t[:1] @ t.transpose(0, 2, 1), v @ t)
    for i, (g, want) in enumerate(zip(got, wants, strict=True)):
        assert tuple(g.shape) == want.shape, i
        np.testing.assert_allclose(g.numpy(), want, rtol=1e-5, atol=1e-5, err_msg=str(i))


class BadBatch(nn.Graph):
    def build(self, a, b):
        return flow.matmul(a, b)  # <-- bad-batch


def test_traced_matmul_batch_axes_that_do_not_broadcast_are_an_error_at_the_line():
    a, b = np.zeros((2, 3, 4), np.float32), np.zeros((3, 4, 5), np.float32)
    with pytest.raises(flow.CompileError, match=r"batch dimensions .* cannot be broadcast") as info:
        BadBatch().trace(flow.tensor(a), flow.tensor(b))
    assert info.value.filename == HERE and info.value.lineno == line_of(HERE, "bad-batch")


# Several ranks, under the launcher ------------------------------------------------------

LAUNCHED = [
    # 2 ranks, data parallel: the input split along its batch axis
    ({"shape": [4, 3], "ops": [("linear", 4, True), ("act", "gelu"), ("layer_norm", True),
                               ("binary", "mul", "param", [4], False)],
      "train": True, "layout": "S0", "generated": False, "seed": 11}, 2),
    ({"shape": [4, 2, 3], "ops": [("matmul", 4, "right"), ("softmax", -1), ("reduce", "sum", 1, False)],
      "train": False, "layout": "S0", "generated": True, "seed": 12}, 2),
    # 2 ranks, model parallel: weights split along their output features
    ({"shape": [3, 5], "ops": [("linear", 4, False), ("act", "tanh"), ("matmul", 2, "right"),
                               ("masked_fill", [3, 1], -1.5)],
      "train": True, "layout": "W", "generated": False, "seed": 13}, 2),
    # 4 ranks
    ({"shape": [4, 4], "ops": [("linear", 4, True), ("act", "relu"), ("transpose", 0, 1),
                               ("binary", "sub", "host", [4, 1], True), ("reshape", [2, -1])],
      "train": True, "layout": "S0", "generated": False, "seed": 14}, 4),
    ({"shape": [2, 4], "ops": [("linear", 8, True), ("act", "sigmoid"), ("linear", 4, True)],
      "train": True, "layout": "W", "generated": True, "seed": 15}, 4),
]

RANK_SCRIPT = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import test_properties
program, ranks = json.loads(sys.argv[2]), int(sys.argv[3])
test_properties.run_program(program, ranks=tuple(range(ranks)))
import pipeflow
# A file a rank (the ranks' stdout lines may interleave).
open(f"ok.{pipeflow.env.get_rank()}", "w").close()
"""


@pytest.mark.skipif(not mpiexec_available(), reason="mpiexec (MPICH) is not installed")
@pytest.mark.parametrize("program,ranks", LAUNCHED, ids=[f"{r}ranks-{p['layout']}-{i}"
                                                          for i, (p, r) in enumerate(LAUNCHED)])
def test_launched_programs_match_numpy(backend, tmp_path, program, ranks):
    """Fixed programs on placements of 2 and 4 ranks, every rank checking
    its results against the reference."""
    script = tmp_path / "rank.py"
    script.write_text(RANK_SCRIPT)
    env = dict(os.environ, PIPEFLOW_CACHE=str(tmp_path / "cache"), PYTHONPATH=PYTHON_DIR)
    cmd = [sys.executable, "-m", "pipeflow.distributed.launch", "--nproc_per_node", str(ranks),
           str(script), os.path.dirname(HERE), json.dumps(program), str(ranks)]
    proc = run_job(cmd, 240, cwd=str(tmp_path), env=env)
    done = sorted(p.name for p in tmp_path.glob("ok.*"))
    assert proc.returncode == 0 and done == [f"ok.{r}" for r in range(ranks)], \
        f"{program_text(program)}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
