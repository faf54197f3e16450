"""graph.debug() and graph.debug_report(): the compiled program's stages,
layouts and boxing as the compiler reports them, at the user's lines."""
import os
import re

import numpy as np
from conftest import line_of

import pipeflow as flow
from pipeflow import nn

HERE = os.path.abspath(__file__)
P2 = flow.placement("cpu", ranks=[0, 1])
B, S0 = [flow.sbp.broadcast], [flow.sbp.split(0)]


class Train(nn.Graph):
    def __init__(self, model):
        super().__init__()
        self.model = model
        self.loss_fn = nn.CrossEntropyLoss()
        self.add_optimizer(flow.optim.SGD(model.parameters(), lr=0.1))

    def build(self, x, y):  # <-- build-line
        loss = self.loss_fn(self.model(x), y)
        loss.backward()
        return loss


def test_data_parallel_report_shows_one_all_reduce_per_gradient(backend):
    model = nn.Sequential(nn.Linear(6, 5), nn.ReLU(), nn.Linear(5, 3)).to_global(P2, B)  # <-- model
    rng = np.random.default_rng()
    x = flow.tensor(rng.standard_normal((8, 6)).astype(np.float32), placement=P2, sbp=S0)
    y = flow.tensor(rng.integers(0, 3, (8,)), placement=P2, sbp=S0)
    report = Train(model).debug_report(x, y)
    reduces = re.findall(r"all_reduce (\S+) #pf.placement<\"cpu\", \[0, 1\]> #pf.sbp<\[P\]> -> "
                         r"#pf.sbp<\[B\]> groups \[\[0, 1\]\]: (\d+) bytes/rank at \"([^\"]+)\":(\d+)",
                         report)
    grads = {shape: (int(b), int(line)) for shape, b, f, line in reduces if f == HERE}
    model_line = line_of(HERE, "model")
    # Ring all-reduce over 2 ranks moves 2 (n-1)/n of the tensor per rank.
    assert grads["5x6xf32"] == (120, model_line) and grads["5xf32"] == (20, model_line)
    assert grads["3x5xf32"] == (60, model_line) and grads["3xf32"] == (12, model_line)
    # the loss, made replicated to be reported: located at build()
    assert grads["f32"] == (4, line_of(HERE, "build-line"))
    assert "pf boxing report: 5 communication op(s)" in report
    assert "total: 216 bytes/rank per step" in report


def test_debug_prints_the_report_on_the_first_call(backend, capsys):
    model = nn.Sequential(nn.Linear(6, 5), nn.ReLU(), nn.Linear(5, 3))
    graph = Train(model)
    graph.debug(0)
    rng = np.random.default_rng()
    x = flow.tensor(rng.standard_normal((4, 6)).astype(np.float32))
    y = flow.tensor(rng.integers(0, 3, (4,)))
    graph(x, y)
    first = capsys.readouterr().out
    assert first.startswith(f"{graph.name}:\n") and "pf boxing report:" in first
    graph(x, y)
    assert "pf boxing report" not in capsys.readouterr().out  # once, at compile time


def test_debug_off_prints_nothing(backend, capsys):
    graph = Train(nn.Sequential(nn.Linear(6, 3)))
    graph.debug(0)
    graph.debug(-1)
    rng = np.random.default_rng()
    graph(flow.tensor(rng.standard_normal((4, 6)).astype(np.float32)),
          flow.tensor(rng.integers(0, 3, (4,))))
    assert "pf boxing report" not in capsys.readouterr().out
