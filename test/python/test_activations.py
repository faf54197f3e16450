"""GELU (both forms), tanh, sigmoid, softmax and log-softmax: eager values,
traced training
against a float64 NumPy reference (forward, backward through the
activation, SGD), on fresh random data."""
import math

import mlp_reference as ref
import numpy as np
import pytest
from graphs import Train

import pipeflow as flow
from pipeflow import nn

ERF = np.vectorize(math.erf)
C = math.sqrt(2.0 / math.pi)

# f and f' in float64, independent of the implementation under test.
REFERENCE = {
    "gelu": (lambda v: 0.5 * v * (1 + ERF(v / math.sqrt(2))),
             lambda v: 0.5 * (1 + ERF(v / math.sqrt(2))) + v * np.exp(-v * v / 2) / math.sqrt(2 * math.pi)),
    "gelu_tanh": (lambda v: 0.5 * v * (1 + np.tanh(C * (v + 0.044715 * v ** 3))),
                  lambda v: 0.5 * (1 + np.tanh(C * (v + 0.044715 * v ** 3)))
                  + 0.5 * v * (1 - np.tanh(C * (v + 0.044715 * v ** 3)) ** 2) * C * (1 + 3 * 0.044715 * v * v)),
    "tanh": (np.tanh, lambda v: 1 - np.tanh(v) ** 2),
    "sigmoid": (lambda v: 1 / (1 + np.exp(-v)), lambda v: np.exp(-v) / (1 + np.exp(-v)) ** 2),
}


def _softmax(v):
    z = v - v.max(1, keepdims=True)
    return np.exp(z) / np.exp(z).sum(1, keepdims=True)


def _batches():
    """Three fresh batches: 8 standard-normal rows of 6 and labels in [0, 3)."""
    rng = np.random.default_rng()
    return [(rng.standard_normal((8, 6)).astype(np.float32), rng.integers(0, 3, (8,))) for _ in range(3)]


def _traced(model, batches, keys, generated=False):
    """A training graph over ``model`` (SGD, lr 0.5) traced with the first of
    ``batches``, and the initial values of its parameters ``keys`` (float64)."""
    graph = Train(model, lr=0.5, generated=generated)
    graph.trace(flow.tensor(batches[0][0]), flow.tensor(batches[0][1]))
    sd = model.state_dict()
    return graph, [sd[k].numpy().astype(np.float64) for k in keys]


def _run(graph, batches):
    """Calls ``graph`` on each batch; yields its loss and the batch (the
    inputs as float64)."""
    for a, labels in batches:
        yield graph(flow.tensor(a), flow.tensor(labels)), a.astype(np.float64), labels


def _xent_grad(loss, logits, labels):
    """Checks the graph's ``loss`` against the mean cross-entropy of the
    float64 ``logits``; returns its gradient with respect to the logits."""
    p = _softmax(logits)
    n = len(labels)
    np.testing.assert_allclose(float(loss.numpy()), -np.log(p[np.arange(n), labels]).mean(), rtol=1e-5)
    dz = p.copy()
    dz[np.arange(n), labels] -= 1
    return dz / n


MODULES = {
    "gelu": lambda: nn.GELU(),
    "gelu_tanh": lambda: nn.GELU(approximate="tanh"),
    "tanh": lambda: nn.Tanh(),
    "sigmoid": lambda: nn.Sigmoid(),
}


def _step(params, a, labels, lr, kind):
    f, df = REFERENCE[kind]
    loss, grads = ref.two_layer_grads(params, a, labels, act=f, dact=df)
    return loss, [w - lr * g for w, g in zip(params, grads, strict=True)]


@pytest.mark.parametrize("kind", sorted(REFERENCE))
def test_eager_activation_matches_numpy(backend, kind):
    a = np.random.default_rng().standard_normal((5, 7)).astype(np.float32) * 3
    got = MODULES[kind]()(flow.tensor(a)).numpy()
    np.testing.assert_allclose(got, REFERENCE[kind][0](a.astype(np.float64)), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("generated", [False, True], ids=["libpfrt", "generated"])
@pytest.mark.parametrize("kind", sorted(REFERENCE))
def test_training_through_the_activation_matches_numpy(backend, kind, generated):
    """With generated=True the activation and its gradient run in the
    compiler's generated kernels (the host twins of its GPU kernels)."""
    model = nn.Sequential(nn.Linear(6, 5), MODULES[kind](), nn.Linear(5, 3))
    batches = _batches()
    graph, params = _traced(model, batches, ("0.weight", "0.bias", "2.weight", "2.bias"), generated)
    losses = []
    for loss, a, labels in _run(graph, batches):
        want, params = _step(params, a, labels, 0.5, kind)
        np.testing.assert_allclose(float(loss.numpy()), want, rtol=1e-5)
        losses.append(want)
    trained = graph.state_dict()["model"]
    np.testing.assert_allclose(trained["0.weight"].numpy(), params[0], rtol=1e-4, atol=1e-5)


def test_unknown_gelu_form_is_an_error(backend):
    with pytest.raises(ValueError, match="approximate must be 'none' or 'tanh'"):
        nn.GELU(approximate="cubic")


@pytest.mark.parametrize("log", [False, True])
def test_eager_softmax_matches_numpy(backend, log):
    a = np.random.default_rng().standard_normal((4, 9)).astype(np.float32) * 4
    f = nn.functional.log_softmax if log else nn.functional.softmax
    want = _softmax(a.astype(np.float64))
    np.testing.assert_allclose(f(flow.tensor(a), dim=-1).numpy(), np.log(want) if log else want,
                               rtol=1e-5, atol=1e-6)


def test_training_through_softmax_matches_numpy(backend):
    """Linear -> Softmax(dim=1) -> Linear -> cross-entropy, 3 SGD steps."""
    model = nn.Sequential(nn.Linear(6, 5), nn.Softmax(dim=1), nn.Linear(5, 3))
    batches = _batches()
    graph, (w0, b0, w1, b1) = _traced(model, batches, ("0.weight", "0.bias", "2.weight", "2.bias"))
    for loss, a, labels in _run(graph, batches):
        s = _softmax(a @ w0.T + b0)
        dz = _xent_grad(loss, s @ w1.T + b1, labels)
        ds = dz @ w1
        dh = s * (ds - (ds * s).sum(1, keepdims=True))
        w0, b0, w1, b1 = (w0 - 0.5 * dh.T @ a, b0 - 0.5 * dh.sum(0), w1 - 0.5 * dz.T @ s, b1 - 0.5 * dz.sum(0))
    np.testing.assert_allclose(graph.state_dict()["model"]["0.weight"].numpy(), w0, rtol=1e-4, atol=1e-5)


def _ln(v, eps=1e-5):
    m = v.mean(-1, keepdims=True)
    return (v - m) / np.sqrt(((v - m) ** 2).mean(-1, keepdims=True) + eps)


def test_eager_layer_norm_matches_numpy(backend):
    a = np.random.default_rng().standard_normal((4, 7)).astype(np.float32) * 3 + 1
    np.testing.assert_allclose(nn.LayerNorm(7)(flow.tensor(a)).numpy(), _ln(a.astype(np.float64)),
                               rtol=1e-5, atol=1e-5)


def test_training_through_layer_norm_matches_numpy(backend):
    """Linear -> LayerNorm -> Linear -> cross-entropy, 3 SGD steps: the
    layer norm's input, weight and bias gradients against NumPy."""
    model = nn.Sequential(nn.Linear(6, 5), nn.LayerNorm(5), nn.Linear(5, 3))
    batches = _batches()
    graph, (w0, b0, g, be, w1, b1) = _traced(model, batches, ("0.weight", "0.bias", "1.weight", "1.bias",
                                                              "2.weight", "2.bias"))
    for loss, a, labels in _run(graph, batches):
        h = a @ w0.T + b0
        xhat = _ln(h)
        r = xhat * g + be
        dz = _xent_grad(loss, r @ w1.T + b1, labels)
        dr = dz @ w1
        c = h.shape[1]
        invstd = 1 / np.sqrt(h.var(-1, keepdims=True) + 1e-5)
        gg = dr * g
        dh = invstd / c * (c * gg - gg.sum(-1, keepdims=True) - xhat * (gg * xhat).sum(-1, keepdims=True))
        w0, b0, g, be, w1, b1 = (w0 - 0.5 * dh.T @ a, b0 - 0.5 * dh.sum(0), g - 0.5 * (dr * xhat).sum(0),
                                 be - 0.5 * dr.sum(0), w1 - 0.5 * dz.T @ r, b1 - 0.5 * dz.sum(0))
    trained = graph.state_dict()["model"]
    np.testing.assert_allclose(trained["1.weight"].numpy(), g, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(trained["0.weight"].numpy(), w0, rtol=1e-4, atol=1e-5)


def test_training_through_embedding_matches_numpy(backend):
    """Embedding -> Flatten -> Linear -> cross-entropy, 3 SGD steps, ids
    repeating within a batch (the table gradient is a scatter-add)."""
    V, D, T = 7, 4, 3
    model = nn.Sequential(nn.Embedding(V, D), nn.Flatten(), nn.Linear(T * D, 3))
    rng = np.random.default_rng()
    batches = [(rng.integers(0, V, (8, T)), rng.integers(0, 3, (8,))) for _ in range(3)]
    graph, (table, w, b) = _traced(model, batches, ("0.weight", "2.weight", "2.bias"))
    for ids, labels in batches:
        loss = graph(flow.tensor(ids), flow.tensor(labels))
        e = table[ids].reshape(8, T * D)
        dz = _xent_grad(loss, e @ w.T + b, labels)
        de = (dz @ w).reshape(8, T, D)
        dt = np.zeros_like(table)
        np.add.at(dt, ids, de)
        table, w, b = table - 0.5 * dt, w - 0.5 * dz.T @ e, b - 0.5 * dz.sum(0)
    np.testing.assert_allclose(graph.state_dict()["model"]["0.weight"].numpy(), table, rtol=1e-4, atol=1e-5)


def test_embedding_id_out_of_range_is_an_error(backend):
    with pytest.raises(ValueError, match=r"ids must be in \[0, 5\)"):
        nn.Embedding(5, 2)(flow.tensor(np.array([1, 5])))


class Gated(nn.Module):
    """a(x) * sigmoid(g(x)): the element-wise product of two traced tensors."""

    def __init__(self):
        super().__init__()
        self.a, self.g, self.out = nn.Linear(6, 5), nn.Linear(6, 5), nn.Linear(5, 3)

    def forward(self, x):
        return self.out(self.a(x) * nn.functional.sigmoid(self.g(x)))


def test_training_through_a_product_matches_numpy(backend):
    model = Gated()
    batches = _batches()
    graph, (wa, ba, wg, bg, wo, bo) = _traced(model, batches, ("a.weight", "a.bias", "g.weight", "g.bias",
                                                              "out.weight", "out.bias"))
    for loss, a, labels in _run(graph, batches):
        u, s = a @ wa.T + ba, 1 / (1 + np.exp(-(a @ wg.T + bg)))
        h = u * s
        dz = _xent_grad(loss, h @ wo.T + bo, labels)
        dh = dz @ wo
        du, dg = dh * s, dh * u * s * (1 - s)
        wa, ba, wg, bg, wo, bo = (wa - 0.5 * du.T @ a, ba - 0.5 * du.sum(0), wg - 0.5 * dg.T @ a,
                                  bg - 0.5 * dg.sum(0), wo - 0.5 * dz.T @ h, bo - 0.5 * dz.sum(0))
    np.testing.assert_allclose(graph.state_dict()["model"]["g.weight"].numpy(), wg, rtol=1e-4, atol=1e-5)
