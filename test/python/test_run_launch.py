"""nn.Graph across processes: the seed pipeline on two ranks under the launcher.

The two-rank run (stage 0 on rank 0, stage 1 on rank 1) must give the same
losses as the single-rank run of the same model (both stages on rank 0,
world size 1) and as the float64 NumPy reference, from fresh seeds, with
the default schedule (1F1B) and with the schedules set explicitly.
"""

import json
import os
import random
import sys

import mlp_reference as ref
import numpy as np
import pytest
from conftest import PYTHON_DIR, mpiexec_available, run_job
from jobs import run_script

needs_mpiexec = pytest.mark.skipif(not mpiexec_available(), reason="mpiexec (MPICH) is not installed")

SCRIPT = r'''
import json, sys
import numpy as np
import pipeflow as flow
from seed_pipeline import B, PipelineGraph, PipelineModule

ranks, pseed, dseed, steps, m, fail_rank = (int(a) for a in sys.argv[1:7])
out_dir, schedules = sys.argv[7], sys.argv[8].split(",")
P0 = flow.placement("cpu", ranks=[0])
P1 = flow.placement("cpu", ranks=[1]) if ranks == 2 else P0
flow.manual_seed(pseed)
rng = np.random.default_rng(dseed)
x = flow.tensor(rng.standard_normal((16, 1, 28, 28)).astype(np.float32)).to_global(P0, B)
y = flow.tensor(rng.integers(0, 10, 16)).to_global(P1, B)
rank = flow.env.get_rank()
for schedule in schedules:
    module = PipelineModule(P0, P1)
    graph = PipelineGraph(module, flow.optim.SGD(module.parameters(), lr=0.01), m=m, p0=P0, p1=P1,
                          schedule=None if schedule == "default" else schedule)
    for step in range(steps):
        if rank == fail_rank and step == 2:
            raise ValueError(f"rank {rank} fails on purpose at step {step}")
        loss = graph(x, y)
        local = loss.to_local().numpy()
        # one file per rank and step: the ranks' stdout lines may interleave
        with open(f"{out_dir}/{schedule}.rank{rank}.step{step}.json", "w") as f:
            json.dump({"schedule": schedule, "rank": rank, "step": step, "shape": list(loss.shape),
                       "local": [float(v) for v in local.reshape(-1)]}, f)
'''


def run(tmp_path, ranks, pseed, dseed, steps, m, fail_rank=-1, schedules=("default",), timeout=120):
    """The seed pipeline on ``ranks`` processes: one without the launcher, two
    under it, run from python/ without PYTHONPATH."""
    out_dir = tmp_path / f"out{ranks}"
    out_dir.mkdir()
    proc = run_script(tmp_path, "pipeline_job.py", SCRIPT,
                      [ranks, pseed, dseed, steps, m, fail_rank, out_dir, ",".join(schedules)], ranks=ranks,
                      timeout=timeout, cwd=PYTHON_DIR if ranks > 1 else None, pythonpath=ranks == 1, check=False)
    proc.records = {}
    for path in out_dir.iterdir():
        r = json.loads(path.read_text())
        proc.records[(r["schedule"], r["rank"], r["step"])] = r
    return proc


@needs_mpiexec
def test_seed_pipeline_two_ranks_equals_one_rank_and_numpy(tmp_path):
    pseed, dseed, steps, m = random.randrange(2**31), random.randrange(2**31), 5, 4
    schedules = ("default", "gpipe", "zb-h1")
    two = run(tmp_path, 2, pseed, dseed, steps, m, schedules=schedules)
    assert two.returncode == 0, two.stderr
    one = run(tmp_path, 1, pseed, dseed, steps, m)
    assert one.returncode == 0, one.stderr
    r2, r1 = two.records, one.records
    got1 = np.array([r1[("default", 0, s)]["local"] for s in range(steps)])
    rng = np.random.default_rng(dseed)
    x = rng.standard_normal((16, 1, 28, 28)).astype(np.float32)
    y = rng.integers(0, 10, 16)
    params = [ref.linear_init(pseed, name, i, o) for name, i, o in ref.SEED_LAYERS]
    want = ref.train(params, x, y, [0.01] * steps, m, ref.Optimizer("sgd"))
    for schedule in schedules:
        for step in range(steps):
            assert r2[(schedule, 0, step)]["local"] == []  # rank 0 does not hold the loss
            assert r2[(schedule, 0, step)]["shape"] == r2[(schedule, 1, step)]["shape"] == [m]
        got2 = np.array([r2[(schedule, 1, s)]["local"] for s in range(steps)])
        where = f"schedule {schedule}, seeds {pseed} {dseed}"
        assert ref.max_relative_error(got2, got1) < 1e-5, f"{where}:\n{got2}\n{got1}"
        assert ref.max_relative_error(got2, want) < 1e-5, f"{where}:\n{got2}\n{np.array(want)}"
        assert got2[-1].sum() < got2[0].sum(), where


@needs_mpiexec
def test_a_failing_rank_ends_the_job(tmp_path):
    """Rank 0 raises while rank 1 waits for its activations: the job must end
    (with rank 0's traceback and a failure code), not hang."""
    proc = run(tmp_path, 2, 1, 2, steps=5, m=2, fail_rank=0, timeout=90)
    assert proc.returncode != 0
    assert "ValueError: rank 0 fails on purpose at step 2" in proc.stderr
    assert ("default", 1, 1) in proc.records and ("default", 1, 3) not in proc.records


INTERLEAVED = r'''
import json, sys
import numpy as np
import pipeflow as flow
from pipeflow import nn

ranks, out = [int(r) for r in sys.argv[1].split(",")], sys.argv[2]
B = [flow.sbp.broadcast]
P = [flow.placement("cpu", ranks=[r]) for r in ranks]


class Block(nn.Module):
    def __init__(self, i, o):
        super().__init__()
        self.fc = nn.Linear(i, o)
        self.act = nn.ReLU()

    def forward(self, x):
        return self.act(self.fc(x))


class Chain(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(Block(32, 64), Block(64, 64), Block(64, 64), Block(64, 10))
        for block, p in zip(self.blocks, P):
            block.to_global(p, B)

    def forward(self, x):
        for block, p in zip(self.blocks, P):
            x = block(x.to_global(p, B))
        return x


flow.manual_seed(int(sys.argv[3]))
model = Chain()


class ChainGraph(nn.Graph):
    def __init__(self):
        super().__init__()
        self.model = model
        for i, p in enumerate(P):
            self.model.blocks[i].config.set_stage(i, p)
        self.loss_fn = nn.CrossEntropyLoss()
        self.config.set_gradient_accumulation_steps(4)
        if len(set(ranks)) > 1:
            self.config.set_pipeline_schedule("interleaved-1f1b", num_chunks=2)
        self.add_optimizer(flow.optim.SGD(model.parameters(), lr=0.05, momentum=0.9))

    def build(self, x, y):
        loss = self.loss_fn(self.model(x), y)
        loss.backward()
        return loss


graph = ChainGraph()
rng = np.random.default_rng(int(sys.argv[3]))
x = flow.tensor(rng.standard_normal((16, 32)).astype(np.float32)).to_global(P[0], B)
y = flow.tensor(rng.integers(0, 10, 16)).to_global(P[-1], B)
losses = [graph(x, y).to_local().numpy().tolist() for _ in range(4)]
if flow.env.get_rank() == ranks[-1]:
    with open(out, "w") as f:
        json.dump(losses, f)
'''


@needs_mpiexec
def test_interleaved_1f1b_equals_one_rank(tmp_path):
    """Four stages on ranks 0, 1, 0, 1 (two virtual chunks per rank) with the
    interleaved 1F1B schedule give the losses of all four stages on rank 0."""
    script = tmp_path / "chain.py"
    script.write_text(INTERLEAVED)
    seed = str(random.randrange(2**31))
    env = dict(os.environ, PIPEFLOW_CACHE=str(tmp_path / "cache"), PYTHONPATH=PYTHON_DIR)
    two = run_job([sys.executable, "-m", "pipeflow.distributed.launch", "--nproc_per_node", "2",
                   str(script), "0,1,0,1", str(tmp_path / "two.json"), seed], 120, env=env)
    assert two.returncode == 0, two.stderr
    one = run_job([sys.executable, str(script), "0,0,0,0", str(tmp_path / "one.json"), seed], 120, env=env)
    assert one.returncode == 0, one.stderr
    got2 = json.loads((tmp_path / "two.json").read_text())
    got1 = json.loads((tmp_path / "one.json").read_text())
    assert np.array(got2).shape == (4, 4)
    assert ref.max_relative_error(got2, got1) < 1e-5, (seed, got2, got1)
