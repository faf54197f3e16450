"""nn.Dropout in a compiled graph: the mask comes from the program's
counter-based generator at logical indices, so a float64 NumPy reference
that draws the same masks with the generator's bit-exact twin
(runtime/python/pfrt_philox.py) reproduces every loss; eval mode removes it."""

import os
import sys

import mlp_reference as ref
import numpy as np
import pytest
from seed_pipeline import P0, B, Stage0Module, Stage1Module
from test_run import TOL, fresh_seeds

import pipeflow as flow
from pipeflow import nn

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "runtime", "python"))
import pfrt_philox as ph  # noqa: E402

P_DROP = 0.3


class Stage0(Stage0Module):
    """The seed's stage 0, dropout after its ReLU."""

    def __init__(self):
        super().__init__()
        self.drop0 = nn.Dropout(P_DROP)

    def forward(self, x):
        return self.drop0(super().forward(x))


class Stage1(Stage1Module):
    """The seed's stage 1, dropout between its two layers."""

    def __init__(self):
        super().__init__()
        self.drop1 = nn.Dropout(P_DROP)

    def forward(self, x):
        return self.relu2(self.linear2(self.drop1(self.relu1(self.linear1(x)))))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.m_stage0 = Stage0()
        self.m_stage1 = Stage1()
        self.to_global(P0, B)

    def forward(self, x):
        return self.m_stage1(self.m_stage0(x))


class Graph(nn.Graph):
    def __init__(self, model, m):
        super().__init__()
        self.module_pipeline = model  # the reference's parameter names
        self.loss_fn = nn.CrossEntropyLoss()
        self.config.set_gradient_accumulation_steps(m)
        self.add_optimizer(flow.optim.SGD(model.parameters(), lr=0.05))

    def build(self, x, y):
        loss = self.loss_fn(self.module_pipeline(x), y)
        loss.backward()
        return loss


def masks(seed):
    """The program's dropout multipliers: layer j's (j = 0, 1: streams 1, 2,
    in trace order) in step `step`, micro-batch k."""
    def dropout(j, step, k, shape):
        if j >= 2:
            return None
        stream = ph.stream_for_step(ph.stream_for_step(j + 1, step), k)
        u = ph.init_param(ph.INIT_UNIFORM, 0.0, 1.0, seed, stream, shape)
        return np.where(u >= np.float32(P_DROP), np.float64(np.float32(1 / (1 - P_DROP))), 0.0)
    return dropout


def run(pseed, dseed, steps, m, eval_mode=False):
    flow.manual_seed(pseed)
    model = Model()
    if eval_mode:
        model.eval()
    graph = Graph(model, m)
    rng = np.random.default_rng(dseed)
    x = rng.standard_normal((16, 1, 28, 28)).astype(np.float32)
    y = rng.integers(0, 10, 16).astype(np.int64)
    gx, gy = flow.tensor(x).to_global(P0, B), flow.tensor(y).to_global(P0, B)
    losses = [np.atleast_1d(graph(gx, gy).to_local().numpy()) for _ in range(steps)]
    return np.array(losses), x, y


@pytest.mark.parametrize("m", [1, 2])
def test_dropout_training_equals_numpy_with_the_same_masks(backend, m):
    pseed, dseed = fresh_seeds()
    steps = 3
    losses, x, y = run(pseed, dseed, steps, m)
    params = [ref.linear_init(pseed, name, i, o) for name, i, o in ref.SEED_LAYERS]
    opt = ref.Optimizer("sgd")
    want = ref.train(params, x, y, [0.05] * steps, m, opt, dropout=masks(pseed))
    err = ref.max_relative_error(losses, want)
    assert err < TOL, f"seeds {pseed} {dseed}: {err:.2e}\n{losses}\n{np.array(want)}"
    # The masks matter: without them the reference is far off.
    plain = ref.train(params, x, y, [0.05] * steps, m, ref.Optimizer("sgd"))
    assert ref.max_relative_error(losses, plain) > 1e-3


def test_eval_mode_has_no_dropout(backend):
    pseed, dseed = fresh_seeds()
    losses, x, y = run(pseed, dseed, 2, 2, eval_mode=True)
    params = [ref.linear_init(pseed, name, i, o) for name, i, o in ref.SEED_LAYERS]
    want = ref.train(params, x, y, [0.05] * 2, 2, ref.Optimizer("sgd"))
    assert ref.max_relative_error(losses, want) < TOL
