"""ZeRO (issue 39, item 1): ``graph.config.enable_zero(True, stage=1|2|3,
shard_min_size=...)`` splits, over every axis where a parameter is
replicated, its optimizer states (stage 1), its gradients (2) and the
parameter itself (3); SBP inference then updates each shard where it lives
(pf-optimizer's ``zero-stage``; test/Dialect/PF/Transforms/optimizer-zero.mlir
shows the collectives).

Under the launcher, a three-layer MLP trained by AdamW with gradient
accumulation (2 micro-batches) and clipping by global norm: on DP2, DP4,
2 x 2 (data x tensor parallel) and PP2 x DP2, every stage's losses and
trained parameters and optimizer states equal plain data parallelism's
within 1e-5, and each rank's memory plan (``graph.memory_report()``) holds
the closed forms: the states (and at stage 3 the parameters) divided by the
data-parallel ranks, padding aside. A stage-3 checkpoint written under DP4
resumes under TP2 with the uninterrupted run's losses. Fresh seeds each run
(PF_TEST_SEEDS="D P" replays one)."""

import json

import numpy as np
import pytest
from conftest import line_of, mpiexec_available
from jobs import run_script
from test_run import fresh_seeds

import pipeflow as flow
from pipeflow import nn

needs_mpiexec = pytest.mark.skipif(not mpiexec_available(), reason="needs mpiexec (MPICH)")
TOL = 1e-5
# Every buffer of the memory plan starts on a 64-byte boundary.
PAD = 64
SIZES = {"l0": (64, 32), "l1": (48, 64), "l2": (10, 48)}

JOB = r"""
import json
import sys

import numpy as np

import pipeflow as flow
from pipeflow import nn

layout, pseed, dseed, mode, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
ckpt = sys.argv[6] if len(sys.argv) > 6 else None
B, S0, S1 = flow.sbp.broadcast, flow.sbp.split(0), flow.sbp.split(1)
rank = flow.env.get_rank()
PL = flow.placement("cpu", ranks={"dp2": [0, 1], "dp4": [0, 1, 2, 3], "hybrid": [[0, 1], [2, 3]],
                                  "ppdp": [0, 1], "tp2": [0, 1]}[layout])
P1 = flow.placement("cpu", ranks=[2, 3])


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.l0, self.l1, self.l2 = nn.Linear(32, 64), nn.Linear(64, 48), nn.Linear(48, 10)
        if layout == "hybrid":  # data x tensor parallel: Megatron's column, then row layer
            self.l0.to_global(PL, [B, S0])
            self.l1.to_global(PL, [B, B])
            self.l1.weight = nn.Parameter(self.l1.weight.to_global(PL, [B, S1]))
            self.l2.to_global(PL, [B, B])
        elif layout == "tp2":
            self.l0.to_global(PL, [S0])
            self.l1.to_global(PL, [B])
            self.l1.weight = nn.Parameter(self.l1.weight.to_global(PL, [S1]))
            self.l2.to_global(PL, [B])
        elif layout == "ppdp":  # stage 0 on ranks 0, 1; stage 1 on 2, 3; each data parallel
            self.l0.to_global(PL, [B])
            self.l1.to_global(P1, [B])
            self.l2.to_global(P1, [B])
        else:
            self.to_global(PL, [B])

    def forward(self, x):
        h = self.l0(x).relu()
        if layout == "ppdp":
            h = h.to_global(placement=P1, sbp=[S0])
        return self.l2(self.l1(h).relu())


class Train(nn.Graph):
    def __init__(self, model, stage, min_size):
        super().__init__()
        self.model, self.loss_fn = model, nn.CrossEntropyLoss()
        self.config.set_gradient_accumulation_steps(2)
        if stage:
            self.config.enable_zero(True, stage=stage, shard_min_size=min_size)
        self.add_optimizer(flow.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.1))

    def build(self, x, y):
        loss = self.loss_fn(self.model(x), y)
        loss.backward()
        nn.utils.clip_grad_norm_(self.model.parameters(), 0.5)
        return loss


rng = np.random.default_rng(dseed)
X = rng.standard_normal((16, 32)).astype(np.float32)
Y = rng.integers(0, 10, 16).astype(np.int64)
split = {"hybrid": [S0, B], "tp2": [B]}.get(layout, [S0])
x = flow.tensor(X, placement=PL, sbp=split)
y = flow.tensor(Y, placement=P1 if layout == "ppdp" else PL, sbp=split)


def train(stage, min_size, steps, load=None):
    flow.manual_seed(pseed)
    graph = Train(MLP(), stage, min_size)
    if load is not None:
        graph.load_state_dict(flow.load(load))
    losses = [graph(x, y).to_local().numpy().reshape(-1).tolist() for _ in range(steps)]
    return graph, losses


def values(graph):
    state = graph.state_dict()
    flat = {f"model.{k}": v for k, v in state["model"].items()}
    flat.update({k: v for k, v in state.items() if k not in ("model", "loss_fn") and k.startswith("model.")})
    return {k: v.numpy().tolist() for k, v in flat.items()}


records = {}
if mode == "stages":
    for stage, min_size in ((0, 0), (1, 0), (2, 0), (3, 0), (1, 1024)):
        graph, losses = train(stage, min_size, 3)
        records[f"{stage}/{min_size}"] = {"losses": losses, "values": values(graph),
                                          "memory": graph.memory_report()[rank]}
elif mode == "save":
    _, records["whole"] = train(3, 0, 4)
    graph, _ = train(3, 0, 2)
    graph.save_checkpoint(ckpt)
else:
    _, records["resumed"] = train(0, 0, 2, load=ckpt)
with open(f"{out}/{layout}.{mode}.rank{rank}.json", "w") as f:
    json.dump(records, f)
"""

RANKS = {"dp2": 2, "dp4": 4, "hybrid": 4, "ppdp": 4, "tp2": 2}


def run(tmp_path, backend, layout, mode, pseed, dseed, ckpt=None):
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    args = [layout, pseed, dseed, mode, out] + ([ckpt] if ckpt else [])
    run_script(tmp_path, "zero.py", JOB, args, RANKS[layout], backend, 600)
    return [json.loads((out / f"{layout}.{mode}.rank{r}.json").read_text()) for r in range(RANKS[layout])]


def rel(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-30))


def elements(names):
    return sum(int(np.prod(SIZES[n])) + SIZES[n][0] for n in names)


@needs_mpiexec
@pytest.mark.parametrize("layout", ["dp2", "dp4", "hybrid", "ppdp"])
def test_zero_stages_equal_plain_data_parallelism(backend, tmp_path, layout):
    dseed, pseed = fresh_seeds()
    where = f"{layout}, PF_TEST_SEEDS='{dseed} {pseed}'"
    dp = {"dp2": 2, "dp4": 4, "hybrid": 2, "ppdp": 2}[layout]
    for rank, record in enumerate(run(tmp_path, backend, layout, "stages", pseed, dseed)):
        plain = record["0/0"]
        for key in ("1/0", "2/0", "3/0", "1/1024"):
            got = record[key]
            for step, (a, b) in enumerate(zip(got["losses"], plain["losses"], strict=True)):
                if b:  # ranks of the first pipeline stage have no loss
                    assert rel(a, b) < TOL, (where, rank, key, step, a, b)
            assert set(got["values"]) == set(plain["values"])
            for name, want in plain["values"].items():
                assert rel(got["values"][name], want) < TOL, (where, rank, key, name)
        memory = {k: r["memory"] for k, r in record.items()}
        states, params = memory["0/0"]["state_bytes"], memory["0/0"]["parameter_bytes"]
        # Plain data parallelism: AdamW's two states per parameter, whole.
        assert states >= 2 * params - 2 * 6 * PAD, (where, rank, memory["0/0"])
        for key in ("1/0", "2/0", "3/0"):
            assert memory[key]["state_bytes"] <= states / dp + 6 * PAD, (where, rank, key, memory[key])
        assert memory["1/0"]["parameter_bytes"] == params, (where, rank)
        assert memory["3/0"]["parameter_bytes"] <= params / dp + 6 * PAD, (where, rank, memory["3/0"])
        # Stage 2's gradients are shards too: its plan is smaller than stage 1's.
        assert memory["2/0"]["arena_bytes"] < memory["0/0"]["arena_bytes"], (where, rank)
        if layout in ("dp2", "dp4"):
            # The closed forms: 8 bytes of state per parameter over the ranks;
            # under shard_min_size=1024 the biases and l2 (480) stay whole.
            n = elements(SIZES)
            assert abs(memory["1/0"]["state_bytes"] - 8 * n / dp) <= 6 * PAD, (where, memory["1/0"])
            assert abs(memory["3/0"]["parameter_bytes"] - 4 * n / dp) <= 6 * PAD, (where, memory["3/0"])
            whole = 64 + 48 + 480 + 10
            big = 64 * 32 + 48 * 64
            assert abs(memory["1/1024"]["state_bytes"] - (8 * big / dp + 8 * whole)) <= 6 * PAD, \
                (where, memory["1/1024"])


@needs_mpiexec
def test_stage3_checkpoint_from_dp4_resumes_under_tp2(backend, tmp_path):
    """save_checkpoint writes the logical values, whatever the shards: the
    ZeRO-3 DP4 run's state after 2 steps, loaded into a tensor-parallel
    graph on two ranks without ZeRO, gives the uninterrupted run's next
    two losses."""
    dseed, pseed = fresh_seeds()
    where = f"PF_TEST_SEEDS='{dseed} {pseed}'"
    ckpt = tmp_path / "ckpt"
    saved = run(tmp_path, backend, "dp4", "save", pseed, dseed, ckpt)
    whole = saved[0]["whole"]
    for rank, record in enumerate(run(tmp_path, backend, "tp2", "resume", pseed, dseed, ckpt)):
        assert rel(record["resumed"], whole[2:]) < TOL, (where, rank, record["resumed"], whole)
    assert rel(whole[0], whole[3]) > 1e-3, "the model trains: later losses differ"


def test_enable_zero_checks_its_arguments():
    config = flow.nn.Graph().config
    assert config.zero_stage == 0
    config.enable_zero(True, stage=2, shard_min_size=10)
    assert (config.zero_stage, config.zero_min_size) == (2, 10)
    config.enable_zero(False)
    assert config.zero_stage == 0
    for kwargs, match in ((dict(stage=4), "ZeRO stage must be 1, 2 or 3"),
                          (dict(stage=True), "ZeRO stage must be 1, 2 or 3"),
                          (dict(shard_min_size=-1), "shard_min_size must be a non-negative integer")):
        with pytest.raises(ValueError, match=match):
            config.enable_zero(True, **kwargs)


def test_a_plan_larger_than_the_device_is_refused_at_its_line(backend):
    """config.set_device_memory: a program whose plan needs more on a rank
    is a CompileError naming the rank, the bytes and the plan's categories,
    at the setting's line; with room it trains."""
    P0 = flow.placement("cpu", ranks=[0])
    rng = np.random.default_rng()
    x = flow.tensor(rng.standard_normal((8, 32)).astype(np.float32), placement=P0, sbp=[flow.sbp.broadcast])
    y = flow.tensor(rng.integers(0, 10, 8), placement=P0, sbp=[flow.sbp.broadcast])

    def graph(limit):
        model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10)).to_global(P0, [flow.sbp.broadcast])

        class Train(nn.Graph):
            def __init__(self):
                super().__init__()
                self.model, self.loss_fn = model, nn.CrossEntropyLoss()
                self.add_optimizer(flow.optim.Adam(model.parameters(), lr=1e-3))
                self.config.set_device_memory(limit)  # <-- limit

            def build(self, x, y):
                loss = self.loss_fn(self.model(x), y)
                loss.backward()
                return loss
        return Train()

    roomy = graph(1 << 30)
    assert np.isfinite(roomy(x, y).numpy()).all()
    need = roomy.memory_report()[0]["arena_bytes"]
    params = (32 * 64 + 64 + 64 * 10 + 10) * 4
    assert roomy.memory_report()[0]["parameter_bytes"] >= params
    with pytest.raises(flow.CompileError, match=rf"rank 0's memory plan needs {need} bytes .* but the device "
                                                rf"has {need - 1}") as info:
        graph(need - 1)(x, y)
    assert info.value.lineno == line_of(__file__, "limit")
    assert "optimizer states" in str(info.value) and "enable_zero" in str(info.value)
    with pytest.raises(ValueError, match="positive number of bytes"):
        flow.nn.Graph().config.set_device_memory(0)
