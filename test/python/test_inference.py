"""Inference graphs (build() without backward) and local graphs, against NumPy."""

import os

import mlp_reference as ref
import numpy as np
import pytest
from conftest import line_of
from graphs import Infer, Train

import pipeflow as flow
from pipeflow import nn
from pipeflow.nn._graph import tracing

HERE = os.path.abspath(__file__)
B = [flow.sbp.broadcast]
P0 = flow.placement("cpu", ranks=[0])


def _mlp():
    return nn.Sequential(nn.Linear(6, 5), nn.ReLU(), nn.Linear(5, 3))


def _reference(model, a):
    sd = model.state_dict()
    w0, b0, w1, b1 = (sd[k].numpy() for k in ("0.weight", "0.bias", "2.weight", "2.bias"))
    return np.maximum(a @ w0.T + b0, 0) @ w1.T + b1


def test_inference_graph_returns_the_forward_output(backend):
    model = _mlp().to_global(P0, B)
    graph = Infer(model)
    rng = np.random.default_rng(7)
    for _ in range(3):  # fresh data every call, same compiled program
        a = rng.standard_normal((8, 6)).astype(np.float32)
        out = graph(flow.tensor(a, placement=P0, sbp=B))
        assert out.is_global and out.placement == P0 and tuple(out.sbp) == tuple(B)
        assert out.shape == (8, 3) and out.dtype == flow.float32
        np.testing.assert_allclose(out.numpy(), _reference(model, a), rtol=1e-5, atol=1e-6)
    assert graph._run.inference and graph._run.steps == 3


def test_inference_graph_keeps_parameters_unchanged(backend):
    model = _mlp().to_global(P0, B)
    graph = Infer(model)
    a = np.random.default_rng(3).standard_normal((4, 6)).astype(np.float32)
    x = flow.tensor(a, placement=P0, sbp=B)
    first = graph(x).numpy()
    np.testing.assert_array_equal(graph(x).numpy(), first)  # no optimizer, nothing moves


def test_inference_graph_with_micro_batches_is_an_error_at_the_setting(backend):
    graph = Infer(_mlp().to_global(P0, B))
    graph.config.set_gradient_accumulation_steps(2)  # <-- accumulation-line
    x = flow.tensor(np.random.default_rng(1).standard_normal((4, 6)).astype(np.float32),
                    placement=P0, sbp=B)
    with pytest.raises(flow.CompileError, match="inference graph.*no gradients") as info:
        graph(x)
    assert info.value.filename == HERE and info.value.lineno == line_of(HERE, "accumulation-line")


def test_rebuild_restores_tuples_lists_and_dicts():
    structure = ("dict", [("a", 0), ("b", ("tuple", [1, ("list", [2, 0])])), ("c", ("none", None))])
    got = tracing.rebuild(structure, ["x", "y", "z"])
    assert got == {"a": "x", "b": ("y", ["z", "x"]), "c": None}


def test_local_graph_runs_on_local_tensors_without_a_launcher(backend):
    model = _mlp()  # local module: no placement, no SBP
    graph = Infer(model)
    rng = np.random.default_rng(11)
    for _ in range(2):
        a = rng.standard_normal((5, 6)).astype(np.float32)
        out = graph(flow.tensor(a))
        assert not out.is_global and out.shape == (5, 3)
        np.testing.assert_allclose(out.numpy(), _reference(model, a), rtol=1e-5, atol=1e-6)
    assert graph._run.artifacts.world_size == 1


def _xent_sgd_reference(params, a, labels, lr):
    """One SGD step of the 2-layer MLP with mean cross-entropy (NumPy)."""
    loss, grads = ref.two_layer_grads(params, a, labels)
    return loss, [w - lr * g for w, g in zip(params, grads, strict=True)]


def test_local_training_graph_matches_numpy(backend):
    model = _mlp()
    graph = Train(model, lr=0.1)
    rng = np.random.default_rng(5)
    batches = [(rng.standard_normal((8, 6)).astype(np.float32), rng.integers(0, 3, (8,)))
               for _ in range(3)]
    graph.trace(flow.tensor(batches[0][0]), flow.tensor(batches[0][1]))  # the initial values
    sd = model.state_dict()
    params = [sd[k].numpy().astype(np.float64) for k in ("0.weight", "0.bias", "2.weight", "2.bias")]
    for a, labels in batches:
        loss = graph(flow.tensor(a), flow.tensor(labels))
        want, params = _xent_sgd_reference(params, a.astype(np.float64), labels, 0.1)
        np.testing.assert_allclose(float(loss.numpy()), want, rtol=1e-4)
    trained = graph.state_dict()["model"]
    np.testing.assert_allclose(trained["2.weight"].numpy(), params[2], rtol=1e-4, atol=1e-5)


def test_mixing_local_and_global_inputs_is_an_error_at_the_call(backend):
    graph = Train(_mlp().to_global(P0, B), lr=0.1)
    rng = np.random.default_rng(2)
    x = flow.tensor(rng.standard_normal((4, 6)).astype(np.float32), placement=P0, sbp=B)
    y = flow.tensor(rng.integers(0, 3, (4,)))
    with pytest.raises(flow.CompileError, match="local tensor but other inputs are global") as info:
        graph(x, y)  # <-- mixed-call
    assert info.value.filename == HERE and info.value.lineno == line_of(HERE, "mixed-call")


class InferMany(nn.Graph):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def build(self, x):
        h = self.model(x)
        return h, {"twice": h * 2.0, "relu": nn.functional.relu(h)}


def test_inference_graph_returns_several_results(backend):
    """Every result comes back (pfrt_report_output per result), in the
    structure build returned, each equal to NumPy."""
    model = _mlp().to_global(P0, B)
    graph = InferMany(model)
    a = np.random.default_rng().standard_normal((5, 6)).astype(np.float32)
    h, extra = graph(flow.tensor(a, placement=P0, sbp=B))
    want = _reference(model, a)
    np.testing.assert_allclose(h.numpy(), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(extra["twice"].numpy(), 2 * want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(extra["relu"].numpy(), np.maximum(want, 0), rtol=1e-5, atol=1e-6)
