"""Graphs on part of a job (issue 35, items 3 and 4), under the launcher.

A graph whose placements use some of the job's ranks runs on them alone: the
ranks outside take no part (no program, no collective, no wait) and get
empty results of the logical shape. Several graphs on different parts of
one job (training on [0, 1, 2, 3], evaluation on [0]; a graph on [2, 3]).
``local.to_global(placement, sbp)`` takes the logical shape and dtype from
the placement's ranks (OneFlow's check_meta), so a rank outside may pass an
empty tensor; the placement's ranks must agree. Every number is checked
against a float64 NumPy reference on fresh random data.
"""

import json
import os
import sys

import numpy as np
import pytest
from conftest import PYTHON_DIR, mpiexec_available, run_job
from jobs import write_script
from test_run import fresh_seeds

import pipeflow as flow

pytestmark = pytest.mark.skipif(not mpiexec_available(), reason="needs mpiexec (MPICH)")
LR = 0.1

# Shared by the scripts: a linear layer trained with SGD on the mean squared
# error, its initial parameters and data drawn from the seeds.
PRELUDE = r"""
import json
import sys

import numpy as np

from graphs import Infer

import pipeflow as flow
from pipeflow import nn

pseed, dseed, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
rank = flow.env.get_rank()
B, S0 = flow.sbp.broadcast, flow.sbp.split(0)
LR = 0.1
prng = np.random.default_rng(pseed)
W0 = prng.standard_normal((3, 4)).astype(np.float32)
B0 = prng.standard_normal((3,)).astype(np.float32)
drng = np.random.default_rng(dseed)
X = drng.standard_normal((8, 4)).astype(np.float32)
Y = drng.standard_normal((8, 3)).astype(np.float32)
record = {}


def linear(placement, sbp):
    model = nn.Linear(4, 3)
    model.load_state_dict({"weight": flow.tensor(W0), "bias": flow.tensor(B0)})
    return model.to_global(placement, sbp)


class Train(nn.Graph):
    def __init__(self, model):
        super().__init__()
        self.model = model
        self.add_optimizer(flow.optim.SGD(model.parameters(), lr=LR))

    def build(self, x, y):
        d = self.model(x) - y
        loss = (d * d).mean()
        loss.backward()
        return loss


def local(t):
    return t.to_local().numpy().tolist()


def finish():
    with open(f"{out}/{rank}.json", "w") as f:
        json.dump(record, f)
"""

# A 4-process job: training on [0, 1] (data parallel, the inputs made global
# from each rank's rows, ranks 2 and 3 passing empty tensors), then an
# inference graph on [2, 3].
PARTS = PRELUDE + r"""
P01, P23 = flow.placement("cpu", ranks=[0, 1]), flow.placement("cpu", ranks=[2, 3])
inside = rank in (0, 1)
rows = slice(4 * rank, 4 * rank + 4)
# The ranks outside pass empty tensors of another dtype: they take the placement's.
x = flow.tensor(X[rows] if inside else np.empty((0,), np.int64)).to_global(P01, [S0])
y = flow.tensor(Y[rows] if inside else np.empty((0,), np.int64)).to_global(P01, [S0])
record["x"] = [list(x.shape), str(x.dtype), len(x.to_local().numpy().reshape(-1))]
model = linear(P01, [B])
train = Train(model)
record["losses"] = [local(train(x, y)) for _ in range(3)]
record["loss_shape"] = list(train(x, y).shape)  # a fourth step
state = train.state_dict()["model"]
train.save_checkpoint(f"{out}/checkpoint")  # written by [0, 1]; nothing to do on 2, 3
record["weight"] = state["weight"].to_local().numpy().tolist()
record["bias"] = state["bias"].to_local().numpy().tolist()
other = linear(P23, [B])
logits = Infer(other)(flow.tensor(X, placement=P23, sbp=[B]))
record["logits"] = local(logits)
record["logits_shape"] = list(logits.shape)
finish()
"""

# Training on the whole job (2 x 2: data x model rows) and evaluation of the
# trained values on [0] alone, alternating, in one script.
TRAIN_EVAL = PRELUDE + r"""
P4 = flow.placement("cpu", ranks=[[0, 1], [2, 3]])
P0 = flow.placement("cpu", ranks=[0])
model = linear(P4, [B, B])
train = Train(model)
x = flow.tensor(X, placement=P4, sbp=[S0, B])
y = flow.tensor(Y, placement=P4, sbp=[S0, B])
evaluator = nn.Linear(4, 3).to_global(P0, [B])
infer = Infer(evaluator)
xe = flow.tensor(X, placement=P0, sbp=[B])
record["losses"], record["evals"] = [], []
for round in range(2):
    record["losses"].append([local(train(x, y)) for _ in range(2)])
    trained = train.state_dict()["model"]  # logical values on every rank
    infer.load_state_dict({"model": {k: v.numpy() for k, v in trained.items()}})
    record["evals"].append(local(infer(xe)))
finish()
"""

# Errors: members of a placement passing different local shapes; a placement
# naming a rank beyond the job. Each is a located CompileError on every rank.
ERRORS = PRELUDE + r"""
P01 = flow.placement("cpu", ranks=[0, 1])
try:
    flow.tensor(X[: 3 + rank]).to_global(P01, [S0])  # <-- mismatch
except flow.CompileError as err:
    record["mismatch"] = [str(err), err.lineno]
P5 = flow.placement("cpu", ranks=[0, 5])  # <-- beyond
try:
    Infer(linear(P5, [B]))(flow.tensor(X, placement=P5, sbp=[B]))
except flow.CompileError as err:
    record["beyond"] = [str(err), err.lineno]
finish()
"""


def launch(tmp_path, backend, script, ranks=4):
    pseed, dseed = fresh_seeds()
    path = write_script(tmp_path / "script.py", script)  # graphs.py importable
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    env = dict(os.environ, PIPEFLOW_CACHE=str(tmp_path / "cache"), PYTHONPATH=PYTHON_DIR,
               PF_OPT=backend)
    cmd = [sys.executable, "-m", "pipeflow.distributed.launch", "--nproc_per_node", str(ranks),
           str(path), str(pseed), str(dseed), str(out)]
    proc = run_job(cmd, 240, env=env, cwd=str(tmp_path))
    assert proc.returncode == 0, f"seeds {pseed} {dseed}: {proc.stderr[-3000:]}"
    records = [json.loads((out / f"{r}.json").read_text()) for r in range(ranks)]
    return records, pseed, dseed


def reference(pseed, dseed):
    prng = np.random.default_rng(pseed)
    w = prng.standard_normal((3, 4)).astype(np.float32).astype(np.float64)
    b = prng.standard_normal((3,)).astype(np.float32).astype(np.float64)
    drng = np.random.default_rng(dseed)
    x = drng.standard_normal((8, 4)).astype(np.float32).astype(np.float64)
    y = drng.standard_normal((8, 3)).astype(np.float32).astype(np.float64)
    return w, b, x, y


def sgd(w, b, x, y, steps):
    """Mean squared error, SGD: the losses and the parameters after ``steps``."""
    losses = []
    for _ in range(steps):
        d = x @ w.T + b - y
        losses.append(float((d * d).mean()))
        g = 2 * d / d.size
        w, b = w - LR * g.T @ x, b - LR * g.sum(0)
    return losses, w, b


def test_graph_on_ranks_0_1_of_4_and_another_on_2_3(backend, tmp_path):
    records, pseed, dseed = launch(tmp_path, backend, PARTS)
    w, b, x, y = reference(pseed, dseed)
    losses, w4, b4 = sgd(w, b, x, y, 4)
    saved = flow.load(str(tmp_path / "out" / "checkpoint"))
    np.testing.assert_allclose(saved["model.weight"].numpy(), w4, rtol=1e-5, atol=1e-6)
    for rank, rec in enumerate(records):
        # to_global's shape and dtype come from [0, 1] on every rank.
        assert rec["x"][:2] == [[8, 4], "pipeflow.float32"], (rank, rec["x"])
        assert rec["x"][2] == (16 if rank < 2 else 0), (rank, rec["x"])
        assert rec["loss_shape"] == []
        if rank < 2:
            np.testing.assert_allclose(rec["losses"], losses[:3], rtol=1e-5, err_msg=f"rank {rank}")
            np.testing.assert_allclose(rec["weight"], w4, rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(rec["bias"], b4, rtol=1e-5, atol=1e-6)
        else:  # outside [0, 1]: empty results, nothing materialised
            assert rec["losses"] == [[], [], []] and rec["weight"] == [] and rec["bias"] == []
        assert rec["logits_shape"] == [8, 3]
        if rank >= 2:
            np.testing.assert_allclose(rec["logits"], x @ w.T + b, rtol=1e-5, atol=1e-6)
        else:
            assert rec["logits"] == []


def test_training_on_4_ranks_and_evaluation_on_rank_0(backend, tmp_path):
    records, pseed, dseed = launch(tmp_path, backend, TRAIN_EVAL)
    w, b, x, y = reference(pseed, dseed)
    losses, _, _ = sgd(w, b, x, y, 4)
    for rank, rec in enumerate(records):
        got = [v for pair in rec["losses"] for v in pair]
        np.testing.assert_allclose(got, losses, rtol=1e-5, err_msg=f"rank {rank}")
    for k, steps in enumerate((2, 4)):
        _, wk, bk = sgd(w, b, x, y, steps)
        np.testing.assert_allclose(records[0]["evals"][k], x @ wk.T + bk, rtol=1e-5, atol=1e-6)
        assert all(rec["evals"][k] == [] for rec in records[1:])


def test_errors_are_located(backend, tmp_path):
    records, _, _ = launch(tmp_path, backend, ERRORS)
    script = (tmp_path / "script.py").read_text().splitlines()  # as it ran
    mismatch = 1 + next(i for i, s in enumerate(script) if "<-- mismatch" in s)
    beyond = 1 + next(i for i, s in enumerate(script) if "<-- beyond" in s)
    for rec in records:
        message, line = rec["mismatch"]
        assert "pass local tensors of different shapes or dtypes" in message
        assert "rank 0 [3, 4] float32, rank 1 [4, 4] float32" in message
        assert line == mismatch
        message, line = rec["beyond"]
        assert "uses rank 5 but the job has only 4 processes" in message and line == beyond
