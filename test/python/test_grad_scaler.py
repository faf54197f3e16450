"""Loss scaling for float16 (issue 36): ``graph.set_grad_scaler`` with
``flow.amp.GradScaler`` and ``StaticGradScaler`` against NumPy references
(the scaled loss gradient rounded where the step stores it, the unscale,
the update; the scale's evolution), a skipped step leaving parameters and
Adam states bit for bit, one rank's overflow skipping the step on both
ranks of a data-parallel job, and the scaler's state in state dicts and
checkpoints."""

import json
import random

import numpy as np
from jobs import run_script
from test_amp import BATCH, MLP, ROUND, Train

import pipeflow as flow

IN = 16


def fresh_batches(seed, steps):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((BATCH, IN)).astype(np.float32), rng.integers(0, 4, BATCH))
            for _ in range(steps)]


def reference(init, data, scale, lr=0.1):
    """test_amp's f16 MLP reference with SGD, the loss gradient times
    ``scale`` (rounded to f16 where the step stores it) and the parameters'
    gradients times 1/scale before the update."""
    r = ROUND["f16"]
    p = {k: v.astype(np.float32) for k, v in init.items()}
    inv = np.float32(1.0) / np.float32(scale)
    losses = []
    for x, y in data:
        xb, w1b, w2b = r(x), r(p["fc1.weight"]), r(p["fc2.weight"])
        hb = r(r(xb @ w1b.T) + r(p["fc1.bias"]))
        ab = r(np.maximum(hb, 0))
        z = r(r(ab @ w2b.T) + r(p["fc2.bias"])).astype(np.float64)
        e = np.exp(z - z.max(axis=1, keepdims=True))
        s = e / e.sum(axis=1, keepdims=True)
        losses.append(float(-np.log(s[np.arange(BATCH), y]).mean()))
        dz = s.copy()
        dz[np.arange(BATCH), y] -= 1
        dzb = r((dz / BATCH).astype(np.float32) * np.float32(scale))
        g = {"fc2.bias": r(dzb.sum(0)), "fc2.weight": r(dzb.T @ ab)}
        dh = r(dzb @ w2b) * (hb > 0)
        g["fc1.bias"] = r(dh.sum(0))
        g["fc1.weight"] = r(dh.T @ xb)
        p = {k: (v - np.float32(lr) * (g[k] * inv)).astype(np.float32) for k, v in p.items()}
    return np.array(losses)


def scale_reference(init, flags, growth=2.0, backoff=0.5, interval=3):
    """torch's rules: the scale before each step."""
    scale, tracker, out = float(init), 0, []
    for bad in flags:
        out.append(scale)
        if bad:
            scale, tracker = scale * backoff, 0
        else:
            tracker += 1
            if tracker == interval:
                scale, tracker = scale * growth, 0
    out.append(scale)
    return out


def make(scaler, opt="sgd", seed=0):
    flow.manual_seed(seed)
    model = MLP()
    init = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    optim = (flow.optim.SGD(model.parameters(), lr=0.1) if opt == "sgd"
             else flow.optim.Adam(model.parameters(), lr=1e-3))
    graph = Train(model, optim, flow.float16)
    graph.set_grad_scaler(scaler)
    return graph, init


def test_f16_mlp_with_grad_scaler_equals_numpy():
    data = fresh_batches(random.randrange(2**31), 4)
    for scaler, scale in ((flow.amp.GradScaler(init_scale=2.0**10, growth_interval=1000), 2.0**10),
                          (flow.amp.StaticGradScaler(128.0), 128.0)):
        graph, init = make(scaler)
        losses = [float(graph(flow.tensor(x), flow.tensor(y)).numpy()) for x, y in data]
        np.testing.assert_allclose(losses, reference(init, data, scale), rtol=1e-6)
        assert scaler.get_scale() == scale


def _states(graph):
    return {k: v.numpy().copy() for k, v in graph.state_dict().items()
            if k.startswith("model.") and not k.startswith("System")} | {
        f"model.{k}": v.numpy().copy() for k, v in graph.state_dict()["model"].items()}


def test_overflow_skips_the_step_and_the_scale_backs_off_then_grows():
    data = fresh_batches(random.randrange(2**31), 7)
    bad = [False, False, True, False, False, False, True]
    for i, flag in enumerate(bad):
        if flag:  # inf in f16: the step's gradients are not finite
            data[i][0][1, 3] = 1e6
    scaler = flow.amp.GradScaler(init_scale=256.0, growth_factor=2.0, backoff_factor=0.5,
                                 growth_interval=3)
    graph, _ = make(scaler, "adam")
    want = scale_reference(256.0, bad)
    for i, (x, y) in enumerate(data):
        assert scaler.get_scale() == want[i]
        before = _states(graph) if i else None
        graph(flow.tensor(x), flow.tensor(y))
        assert scaler.found_inf == bad[i]
        after = _states(graph)
        assert any(k.endswith("exp_avg_sq") for k in after)
        if bad[i]:
            for k, v in before.items():
                assert v.tobytes() == after[k].tobytes(), k
        elif before is not None:
            assert any(v.tobytes() != after[k].tobytes() for k, v in before.items())
    assert scaler.get_scale() == want[-1] == 128.0  # grew back to 256, then backed off


def test_scaler_state_round_trips(tmp_path):
    data = fresh_batches(random.randrange(2**31), 3)
    data[1][0][0, 0] = 1e6
    scaler = flow.amp.GradScaler(init_scale=512.0, growth_interval=5)
    graph, _ = make(scaler, "adam")
    for x, y in data:
        graph(flow.tensor(x), flow.tensor(y))
    assert (scaler.get_scale(), scaler._growth_tracker) == (256.0, 1)
    state = graph.state_dict()
    graph.save_checkpoint(str(tmp_path / "ckpt"))
    for load in (lambda g: g.load_state_dict(state),
                 lambda g: g.load_checkpoint(str(tmp_path / "ckpt"))):
        other = flow.amp.GradScaler(init_scale=8.0, growth_interval=5)
        g2, _ = make(other, "adam", seed=1)
        load(g2)
        assert (other.get_scale(), other._growth_tracker) == (256.0, 1)
        g2(flow.tensor(data[0][0]), flow.tensor(data[0][1]))  # loads into the program
        assert (other.get_scale(), other._growth_tracker) == (256.0, 2)
        w = g2.state_dict()["model"]["fc1.weight"].numpy()
        assert np.isfinite(w).all()


JOB = r"""
import json
import sys

import numpy as np

import pipeflow as flow
from pipeflow import nn
from test_amp import MLP

dseed, out = int(sys.argv[1]), sys.argv[2]
rank = flow.env.get_rank()
PL = flow.placement("cpu", ranks=[0, 1])
B, S0 = flow.sbp.broadcast, flow.sbp.split(0)
flow.manual_seed(0)
model = MLP()
model.to_global(PL, [B])


class Train(nn.Graph):
    def __init__(self):
        super().__init__()
        self.model, self.loss_fn = model, nn.CrossEntropyLoss()
        self.add_optimizer(flow.optim.Adam(model.parameters(), lr=1e-3))
        self.config.enable_amp(True, dtype=flow.float16)
        self.set_grad_scaler(flow.amp.GradScaler(init_scale=256.0, growth_interval=2))

    def build(self, x, y):
        loss = self.loss_fn(self.model(x), y)
        loss.backward()
        return loss


graph = Train()
rng = np.random.default_rng(dseed)
records = []
for step in range(4):
    X = rng.standard_normal((8, 16)).astype(np.float32)
    Y = rng.integers(0, 4, 8).astype(np.int64)
    if step == 2:
        X[6, 1] = 1e6  # in rank 1's shard (rows 4..7) only
    x = flow.tensor(X, placement=PL, sbp=[S0])
    y = flow.tensor(Y, placement=PL, sbp=[S0])
    graph(x, y)
    state = graph.state_dict()
    values = {k: v.numpy().tobytes().hex() for k, v in state.items()
              if k.startswith("model.")}
    values.update({k: v.numpy().tobytes().hex() for k, v in state["model"].items()})
    records.append({"scale": graph._grad_scaler.get_scale(), "found_inf": graph._grad_scaler.found_inf,
                    "values": values})
with open(f"{out}/gs.rank{rank}.json", "w") as f:
    json.dump(records, f)
"""


def test_one_ranks_overflow_skips_the_step_on_both_ranks(tmp_path, backend):
    out = tmp_path / "out"
    out.mkdir()
    run_script(tmp_path, "gs.py", JOB, [random.randrange(2**31), out], 2, backend, 600)
    ranks = [json.loads((out / f"gs.rank{r}.json").read_text()) for r in range(2)]
    for records in ranks:
        assert [r["found_inf"] for r in records] == [False, False, True, False]
        assert [r["scale"] for r in records] == [256.0, 512.0, 256.0, 256.0]
        assert records[2]["values"] == records[1]["values"]
        assert records[3]["values"] != records[2]["values"]
    assert ranks[0] == ranks[1]
