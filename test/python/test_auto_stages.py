"""Automatic pipeline stages: ``config.set_pipeline_stages(n, balance)``.

A model written on one placement P, with no module's stage set, is cut by
the compiler (pf-auto-stages) into ``n`` (x ``num_chunks``) balanced stages
on P shifted to ``n`` pipeline ranks. The jobs here compare such runs under
the launcher with the same model run in one process without stages (fresh
seeds; losses and trained parameters within 1e-5), and check the located
errors and the launcher's message.
"""

import os
import random

import graphs
import mlp_reference as ref
import numpy as np
import pytest
from conftest import line_of, mpiexec_available
from graphs import Train
from jobs import rank_records, run_script

import pipeflow as flow
from pipeflow import compiler, nn

HERE = os.path.abspath(__file__)
GRAPHS = os.path.abspath(graphs.__file__)
B = [flow.sbp.broadcast]
P0 = flow.placement("cpu", ranks=[0])
P1 = flow.placement("cpu", ranks=[1])
TOL = 1e-5

needs_mpiexec = pytest.mark.skipif(not mpiexec_available(), reason="mpiexec (MPICH) is not installed")




class MLP(nn.Module):
    def __init__(self, widths=(32, 64, 48, 64, 32, 10)):
        super().__init__()
        layers = []
        for i, (a, b) in enumerate(zip(widths[:-1], widths[1:], strict=True)):
            layers.append(nn.Linear(a, b))
            if i < len(widths) - 2:
                layers.append(nn.ReLU())
        self.layers = nn.Sequential(*layers)

    def forward(self, x):
        return self.layers(x)


class AutoGraph(Train):
    def __init__(self, model, stages=2, m=4, balance="flops", chunks=1):
        super().__init__(model, flow.optim.SGD(model.parameters(), lr=0.05, momentum=0.9), m=m, stages=stages,
                         balance=balance, chunks=chunks)


def inputs(placement=P0, batch=16, labels=None):
    # on several ranks: data parallel, the batch split (S(0)). Replicated (B)
    # activations over a stage of several ranks with micro-batches do not
    # compile yet (pf-apply-schedule: "the schedule runs this op before the
    # op that computes its operand"), with explicit stages too.
    sbp = B if placement.size == 1 else [flow.sbp.split(0)]
    x = flow.randn(batch, 32).to_global(placement, sbp)
    y = flow.randint(0, 10, (batch,)).to_global(labels or placement, sbp)
    return x, y


# Compiling ---------------------------------------------------------------------------

def test_auto_stages_trace_unstaged_and_pass_the_compiler_options(backend):
    graph = AutoGraph(MLP().to_global(P0, B), stages=2, balance="params")
    x, y = inputs()
    traced = graph.trace(x, y)
    assert "pf.stage" not in traced.text()
    assert traced.options["pipeline"]["auto_stages"] is True
    _, _, pipeline = graph._pipeline(traced, None)
    assert "auto-stages=2 balance=params" in pipeline and "schedule=1f1b" in pipeline
    report = graph.stage_report()
    assert 'stage 0 on #pf.placement<"cpu", [0]>' in report
    assert 'stage 1 on #pf.placement<"cpu", [1]>' in report and "balance=params" in report
    # the artifacts: rank 0 reads x, rank 1 (the last stage) the labels and reports the loss
    artifacts = compiler.build_cpu_artifacts(graph._compiled, pipeline)
    assert artifacts.world_size == 2
    assert [e["index"] for e in artifacts.rank(0)["inputs"]] == [0]
    assert [e["index"] for e in artifacts.rank(1)["inputs"]] == [1]
    assert artifacts.rank(1)["reports_loss"] and not artifacts.rank(0)["reports_loss"]

    interleaved = AutoGraph(MLP().to_global(P0, B), stages=2, chunks=2)
    _, _, pipeline = interleaved._pipeline(interleaved.trace(x, y), None)
    assert "schedule=interleaved-1f1b num-chunks=2" in pipeline and "auto-stages=2" in pipeline
    assert "stage 3 on" in interleaved.stage_report()

    one = AutoGraph(MLP().to_global(P0, B), stages=1)
    _, _, pipeline = one._pipeline(one.trace(x, y), None)
    assert "schedule=none" in pipeline and "auto-stages=1" in pipeline
    explicit = AutoGraph(MLP().to_global(P0, B), stages=None)
    assert explicit.trace(x, y).options["pipeline"]["auto_stages"] is False
    with pytest.raises(ValueError, match="no automatic stages"):
        explicit.stage_report()


@pytest.mark.parametrize("placement, nproc", [([0], 2), ([0, 1], 4)])
def test_auto_stages_run_alone_names_the_process_count(backend, placement, nproc):
    p = flow.placement("cpu", ranks=placement)
    graph = AutoGraph(MLP().to_global(p, B), stages=2)
    x, y = inputs(p)
    with pytest.raises(flow.CompileError, match=rf"runs on {nproc} ranks .*set_pipeline_stages\(2\).*"
                                                 r"runs alone") as info:
        graph(x, y)  # <-- auto-alone
    assert info.value.filename == HERE and info.value.lineno == line_of(HERE, "auto-alone")
    assert f"python3 -m pipeflow.distributed.launch --nproc_per_node {nproc} " in str(info.value)


class TwoPlacements(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(32, 16).to_global(P0, B)
        self.b = nn.Linear(16, 10).to_global(P1, B)

    def forward(self, x):
        h = self.a(x).to_global(placement=P1, sbp=B)  # <-- second-placement
        return self.b(h).to_global(placement=P0, sbp=B)


def test_auto_stages_need_one_placement(backend):
    graph = AutoGraph(TwoPlacements())
    x, y = inputs()
    with pytest.raises(flow.CompileError, match=r"set_pipeline_stages\(2\) needs the whole graph on "
                                                r"one placement.*pf.to_global moves a value to "
                                                r'"cpu" ranks \[1\]') as info:
        graph.ir(x, y)
    assert info.value.filename == HERE and info.value.lineno == line_of(HERE, "second-placement")
    assert any("set_pipeline_stages(2) is at" in n for n in info.value.notes)
    # inputs on two placements: at the call
    class MovesLabels(AutoGraph):
        def build(self, x, y):
            loss = self.loss_fn(self.model(x), y.to_global(placement=P0, sbp=B))
            loss.backward()
            return loss

    graph = MovesLabels(MLP().to_global(P0, B))
    with pytest.raises(flow.CompileError, match=r"graph input 1 is on \"cpu\" ranks \[1\]") as info:
        graph.ir(x, y.to_global(P1, B))  # <-- inputs-two-placements
    assert info.value.lineno == line_of(HERE, "inputs-two-placements")


def test_auto_stages_need_an_op_per_stage(backend):
    graph = AutoGraph(nn.Linear(32, 10).to_global(P0, B), stages=8)
    with pytest.raises(flow.CompileError, match=r"cannot cut .* compute ops into 8 stages") as info:
        graph.ir(*inputs())
    assert info.value.filename == GRAPHS and info.value.lineno == line_of(GRAPHS, "set-pipeline-stages")


class TwoStages(nn.Module):
    def __init__(self):
        super().__init__()
        self.s0 = MLP((32, 16)).to_global(P0, B)
        self.s1 = MLP((16, 10)).to_global(P1, B)

    def forward(self, x):
        return self.s1(self.s0(x).to_global(placement=P1, sbp=B))


def test_explicit_stages_and_set_pipeline_stages_disagree(backend):
    model = TwoStages()
    graph = AutoGraph(model, stages=3)
    graph.model.s0.config.set_stage(0, P0)
    graph.model.s1.config.set_stage(1, P1)
    with pytest.raises(flow.CompileError, match=r"set_pipeline_stages\(3\) disagrees with the 2 stages") as info:
        graph.ir(*inputs(labels=P1))
    assert info.value.filename == GRAPHS and info.value.lineno == line_of(GRAPHS, "set-pipeline-stages")
    # agreeing explicit stages stay explicit: no auto-stages option
    graph = AutoGraph(TwoStages(), stages=2)
    graph.model.s0.config.set_stage(0, P0)
    graph.model.s1.config.set_stage(1, P1)
    traced = graph.trace(*inputs(labels=P1))
    assert not traced.options["pipeline"]["auto_stages"] and "pf.stage = 1" in traced.text()
    assert "auto-stages" not in graph._pipeline(traced, None)[2]


# Running under the launcher -------------------------------------------------------------

SCRIPT = r'''
import json, sys
import numpy as np
import pipeflow as flow
from graphs import Train
from pipeflow import _runtime, nn

ranks = [int(r) for r in sys.argv[1].split(",")]
stages, chunks, balance = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
pseed, dseed, steps, m, out, how = int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7]), int(sys.argv[8]), sys.argv[9], sys.argv[10]
P = flow.placement("cpu", ranks=ranks)
B, S0 = [flow.sbp.broadcast], [flow.sbp.split(0)]
rank, world = flow.env.get_rank(), flow.env.get_world_size()

broadcasts = []
_bcast = _runtime.Program.broadcast_exact
_runtime.Program.broadcast_exact = lambda self, *a: broadcasts.append(1) or _bcast(self, *a)

flow.manual_seed(pseed)
widths = (32, 64, 48, 96, 32, 10)
layers = []
for i, (a, b) in enumerate(zip(widths[:-1], widths[1:])):
    layers += [nn.Linear(a, b)] + ([nn.ReLU()] if i < len(widths) - 2 else [])
model = nn.Sequential(*layers)
model.to_global(P, B)
graph = Train(model, flow.optim.SGD(model.parameters(), lr=0.05, momentum=0.9), m=m, stages=stages, balance=balance,
              chunks=chunks)
rng = np.random.default_rng(dseed)
X = rng.standard_normal((16, 32)).astype(np.float32)
Y = rng.integers(0, 10, 16).astype(np.int64)
if how == "global":        # known on every process (no forwarding needed)
    x, y = flow.tensor(X, placement=P, sbp=B), flow.tensor(Y, placement=P, sbp=B)
elif how == "locals":      # each rank of P passes its own rows (S(0)); others a shard's shape
    k = P.size
    i = ranks.index(rank) if rank in ranks else 0
    part = lambda a: np.ascontiguousarray(a[i * len(a) // k:(i + 1) * len(a) // k])
    x, y = flow.tensor(part(X)).to_global(P, S0), flow.tensor(part(Y)).to_global(P, S0)
else:                      # "to_global": the local value becomes P's (unknown outside P)
    x, y = flow.tensor(X).to_global(P, B), flow.tensor(Y).to_global(P, B)
losses, placements = [], []
for step in range(steps):
    loss = graph(x, y)
    losses.append(loss.to_local().numpy().reshape(-1).tolist())
    placements.append(loss.placement.ranks)
state = graph.state_dict()["model"]
with open(f"{out}.rank{rank}.json", "w") as f:
    json.dump({"losses": losses, "placements": placements, "shape": list(loss.shape),
               "broadcasts": len(broadcasts),
               "params": {k: v.numpy().tolist() for k, v in state.items()}}, f)
'''


def run(tmp_path, pf_opt, name, nproc, ranks, stages, chunks, balance, pseed, dseed, steps, m, how):
    args = [",".join(map(str, ranks)), stages, chunks, balance, pseed, dseed, steps, m, tmp_path / name, how]
    run_script(tmp_path, "auto.py", SCRIPT, args, nproc, pf_opt)
    return rank_records(tmp_path / name, nproc)


def close(got, want):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert got.shape == want.shape
    return float(np.max(np.abs(got - want)) / max(np.max(np.abs(want)), 1e-30))


# case: (user placement, processes, stages, chunks, balance, how the inputs are made,
#        ranks holding the loss, broadcasts per step per process of the forwarding group)
CASES = {
    "1f1b": ([0], 2, 2, 1, "flops", "to_global", [1], 1),
    "interleaved": ([0], 2, 2, 2, "flops", "global", [1], 0),
    "params": ([0], 2, 2, 1, "params", "to_global", [1], 1),
    "pp-x-dp": ([0, 1], 4, 2, 1, "flops", "locals", [2, 3], 1),
}


@needs_mpiexec
@pytest.mark.parametrize("case", sorted(CASES))
def test_auto_stages_train_like_one_process_without_stages(backend, tmp_path, case):
    """A 5-layer MLP on P with set_pipeline_stages(2) (1F1B by default;
    interleaved 1F1B with 2 chunks; balanced by parameters; data parallel on
    [0, 1] becoming 2 stages x 2 ranks) trains under the launcher like the same
    model on rank 0 of a single process without stages: the losses (on the
    last stage's ranks, with its placement) and the parameters that
    graph.state_dict() reads back. The labels, read on the last stage, reach it
    by a broadcast when the last stage's processes do not know them."""
    placement, nproc, stages, chunks, balance, how, holders, bcasts = CASES[case]
    pseed, dseed = random.randrange(2**31), random.randrange(2**31)
    steps, m = 4, 4
    got = run(tmp_path, backend, case, nproc, placement, stages, chunks, balance, pseed, dseed, steps, m, how)
    want = run(tmp_path, backend, "one", 1, [0], 0, 1, "flops", pseed, dseed, steps, m, "global")[0]
    where = f"{case}, seeds {pseed} {dseed}"
    assert np.array(want["losses"]).shape == (steps, m), where
    for r, record in enumerate(got):
        assert record["shape"] == [m], where
        assert all(p == holders for p in record["placements"]), (where, r, record["placements"])
        if r in holders:
            err = ref.max_relative_error(record["losses"], want["losses"])
            assert err < TOL, f"{where}, rank {r}: error {err:.2e}\n{record['losses']}\n{want['losses']}"
        else:
            assert record["losses"] == [[]] * steps, (where, r)
        # rank 0 of P and the last stage's ranks forward the labels (when they must)
        forwards = bcasts if r == placement[0] or r in holders else 0
        assert record["broadcasts"] == forwards * steps, (where, r, record["broadcasts"])
        assert sorted(record["params"]) == sorted(want["params"]), where
        for name, value in want["params"].items():
            err = close(record["params"][name], value)
            assert err < TOL, f"{where}, rank {r}: {name} differs by {err:.2e}"
    first = np.array(got[holders[0]]["losses"])
    assert first[-1].sum() < first[0].sum(), (where, first)
