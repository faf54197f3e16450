"""Every layout change, run: an inference graph of one ``to_global`` on 4 CPU
ranks under the launcher (issues 17 and 18). Each case feeds a fresh random
logical tensor from every rank's own part (random addends under P), and each
rank checks that the result it gets back is exactly its part of the logical
tensor under the SBP the compiler reports (for P: the parts of the
placement's ranks add up to it). The cases: all 16 changes among B, P, S(0)
and S(1) within a placement of four ranks; changes on a 2x2 hierarchy, among
them the two whose split orders conflict ((B, S(0)) -> (S(0), S(0)) and
(S(0), S(1)) -> (S(1), S(0)), exchanged point to point); and moves to other
placements (partial sums reduce-scattered first, a broadcast from one rank,
a reduction to one rank, overlapping ranks). The boxing report's bytes for
the same changes are checked in unittests/BoxingCostTest.cpp.
"""
import json
import os
import sys

import numpy as np
import pytest
from conftest import PYTHON_DIR, mpiexec_available, run_job

needs_mpiexec = pytest.mark.skipif(not mpiexec_available(), reason="needs mpiexec (MPICH)")

# (source ranks, source SBP, destination ranks, destination SBP); ranks as
# nested lists give a hierarchy. Every case uses all four ranks (a program
# runs on exactly the ranks of its placements).
Q = [0, 1, 2, 3]
G = [[0, 1], [2, 3]]
ONE_D = [(Q, [a], Q, [b]) for a in ("B", "P", "S0", "S1") for b in ("B", "P", "S0", "S1")]
TWO_D = [
    (G, ["B", "S0"], G, ["S0", "S0"]),
    (G, ["S0", "S1"], G, ["S1", "S0"]),
    (G, ["S1", "B"], G, ["S0", "S1"]),
    (G, ["S0", "P"], G, ["B", "B"]),
    (G, ["P", "P"], G, ["S1", "S0"]),
    (G, ["S0", "S0"], G, ["B", "S1"]),
]
ACROSS = [
    ([0, 1], ["P"], [2, 3], ["B"]),
    ([0, 1], ["P"], [2, 3], ["S0"]),
    (Q, ["P"], [3, 1], ["S1"]),
    ([0, 1], ["S0"], [2, 3], ["S1"]),
    ([0, 1], ["B"], [2, 3], ["P"]),
    ([0, 1], ["S0"], [1, 2, 3, 0], ["B"]),
    ([0], ["B"], Q, ["B"]),
    ([0], ["B"], Q, ["S0"]),
    (Q, ["P"], [0], ["B"]),
    (G, ["P", "S0"], [1, 3], ["B"]),
]
CASES = ONE_D + TWO_D + ACROSS

SCRIPT = r"""
import json
import sys

import numpy as np

import pipeflow as flow
from pipeflow import nn, _layout

cases, seed, out_dir = json.loads(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
rank = flow.env.get_rank()
ENTRY = {"B": flow.sbp.broadcast, "P": flow.sbp.partial_sum, "S0": flow.sbp.split(0), "S1": flow.sbp.split(1)}


def addends(logical, placement, sbp, rng):
    # Every rank's own part; under P, random addends that sum to the value.
    parts = {r: _layout.local_of(logical, placement, sbp, r).astype(np.float64)
             for r in placement.flat_ranks}
    for d, entry in enumerate(sbp):
        if entry != flow.sbp.partial_sum:
            continue
        for r in placement.flat_ranks:
            c = placement.coordinates(r)
            if c[d] != 0:
                continue
            for k in range(1, placement.hierarchy[d]):
                peer = next(q for q in placement.flat_ranks
                            if placement.coordinates(q) == c[:d] + (k,) + c[d + 1:])
                noise = rng.standard_normal(parts[r].shape)
                parts[r] -= noise
                parts[peer] += noise
    return parts


class Move(nn.Graph):
    def __init__(self, placement, sbp):
        super().__init__()
        self.placement, self.sbp = placement, sbp

    def build(self, x):
        return x.to_global(placement=self.placement, sbp=self.sbp)


records = []
for i, (src, src_sbp, dst, dst_sbp) in enumerate(cases):
    rng = np.random.default_rng(seed + i)  # the same logical value on every rank
    ps, pd = flow.placement("cpu", ranks=src), flow.placement("cpu", ranks=dst)
    ss, sd = [ENTRY[e] for e in src_sbp], [ENTRY[e] for e in dst_sbp]
    logical = rng.standard_normal((8, 16)).astype(np.float32)
    parts = addends(logical.astype(np.float64), ps, ss, rng)
    local = parts.get(rank, np.zeros((0,), np.float64)).astype(np.float32)
    x = flow.tensor(local).to_global(ps, ss) if rank in ps.flat_ranks else \
        flow.tensor(np.zeros(_layout.local_of(logical, ps, ss, ps.flat_ranks[0]).shape,
                             np.float32)).to_global(ps, ss)
    out = Move(pd, sd)(x)
    record = {"case": i, "sbp": [e.mlir() for e in out.sbp], "shape": list(out.shape)}
    if rank in pd.flat_ranks:
        got = out.to_local().numpy()
        record["got"] = got.tolist()
        if flow.sbp.partial_sum not in out.sbp:
            want = _layout.local_of(logical, pd, tuple(out.sbp), rank)
            record["error"] = float(np.max(np.abs(got - want))) if got.shape == want.shape else None
        # numpy() is the logical value exactly when every rank holds all of it.
        if all(e == flow.sbp.broadcast for e in out.sbp):
            record["logical_error"] = float(np.max(np.abs(out.numpy() - logical)))
    records.append(record)
with open(f"{out_dir}/rank{rank}.json", "w") as f:
    json.dump(records, f)
"""


@needs_mpiexec
def test_every_layout_change_gives_each_rank_its_part(backend, tmp_path):
    seed = int.from_bytes(os.urandom(4), "little")
    script = tmp_path / "boxing.py"
    script.write_text(SCRIPT)
    out = tmp_path / "out"
    out.mkdir()
    env = dict(os.environ, PIPEFLOW_CACHE=str(tmp_path / "cache"), PYTHONPATH=PYTHON_DIR,
               PF_OPT=backend)
    cmd = [sys.executable, "-m", "pipeflow.distributed.launch", "--nproc_per_node", "4",
           str(script), json.dumps(CASES), str(seed), str(out)]
    proc = run_job(cmd, 600, env=env, cwd=str(tmp_path))
    assert proc.returncode == 0, f"seed {seed}: {proc.stderr[-4000:]}"
    ranks = [json.loads((out / f"rank{r}.json").read_text()) for r in range(4)]
    for i, (src, src_sbp, dst, dst_sbp) in enumerate(CASES):
        where = f"case {i}: {src} {src_sbp} -> {dst} {dst_sbp}, seed {seed}"
        flat = np.array(dst).reshape(-1).tolist()
        want_sbp = ["S(0)" if e == "S0" else "S(1)" if e == "S1" else e for e in dst_sbp]
        rng = np.random.default_rng(seed + i)
        logical = rng.standard_normal((8, 16)).astype(np.float32)
        total = np.zeros_like(logical, np.float64)
        for r in range(4):
            rec = ranks[r][i]
            assert rec["case"] == i and rec["shape"] == [8, 16], where
            assert rec["sbp"] == want_sbp, (where, rec["sbp"])
            if r not in flat:
                assert "got" not in rec, where
                continue
            if "P" not in dst_sbp:
                assert rec["error"] is not None and rec["error"] < 1e-5, (where, r, rec["error"])
            else:
                got = np.array(rec["got"], np.float64)
                assert got.shape == logical.shape, where
                total += got
            if all(e == "B" for e in dst_sbp):
                assert rec["logical_error"] < 1e-5, (where, r)
        if "P" in dst_sbp:
            # The parts add up to the logical tensor, and no single rank
            # holds all of it alone unless the others hold zeros.
            np.testing.assert_allclose(total, logical, rtol=1e-5, atol=1e-5, err_msg=where)
