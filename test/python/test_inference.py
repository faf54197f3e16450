"""Inference graphs (build() without backward) and local graphs, against NumPy."""

import os

import numpy as np
import pytest

import pipeflow as flow
from pipeflow import nn
from pipeflow.nn._graph import tracing
from conftest import line_of

HERE = os.path.abspath(__file__)
B = [flow.sbp.broadcast]
P0 = flow.placement("cpu", ranks=[0])


def _mlp():
    return nn.Sequential(nn.Linear(6, 5), nn.ReLU(), nn.Linear(5, 3))


def _reference(model, a):
    sd = model.state_dict()
    w0, b0, w1, b1 = (sd[k].numpy() for k in ("0.weight", "0.bias", "2.weight", "2.bias"))
    return np.maximum(a @ w0.T + b0, 0) @ w1.T + b1


class Infer(nn.Graph):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def build(self, x):
        return self.model(x)


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
