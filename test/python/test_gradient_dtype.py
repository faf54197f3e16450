"""Low-precision gradient all-reduce (issue 36, item 3):
``graph.config.set_gradient_dtype(flow.bfloat16 | flow.float16)`` rounds
each rank's float32 gradient to the low type, sums the ranks' values in it
(the runtime's pairwise float32 sum rounded to nearest even) and widens the
sum back; gradients, buffers and optimizer states stay float32.

Under the launcher, a DP2 MLP trained by SGD equals a NumPy reference that
rounds the two ranks' gradients, adds them in float32 and rounds the sum
(losses within 1e-6), and differs from the float32 all-reduce run, which
equals the plain float32 reference. The boxing report counts 2 bytes an
element for the gradients' all-reduces (the loss's stays float32).

Under ZeRO-2 (``enable_zero(True, stage=2)``) the gradients are
reduce-scattered instead: in bf16 the DP2 run equals the same NumPy
reference (two ranks' shards sum the same rounded values) and differs from
the float32 ZeRO-2 run, and the report counts 2 bytes an element for the
reduce-scatters."""

import json
import re

import numpy as np
import pytest
from conftest import mpiexec_available
from graphs import MLP, Train
from jobs import run_script
from test_run import fresh_seeds

import pipeflow as flow
from pipeflow import dtypes

needs_mpiexec = pytest.mark.skipif(not mpiexec_available(), reason="needs mpiexec (MPICH)")
IN, HID, OUT, BATCH, STEPS, LR = 16, 32, 4, 8, 6, 0.1
ROUND = {"bf16": dtypes.round_to_bfloat16,
         "f16": lambda a: np.asarray(a, np.float32).astype(np.float16).astype(np.float32),
         "f32": lambda a: np.asarray(a, np.float32)}

JOB = r"""
import json
import sys

import numpy as np

import pipeflow as flow
from pipeflow import nn

dtype, pseed, dseed, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
zero = int(sys.argv[5])
IN, HID, OUT, BATCH, STEPS, LR = 16, 32, 4, 8, 6, 0.1
PL = flow.placement("cpu", ranks=[0, 1])
B, S0 = flow.sbp.broadcast, flow.sbp.split(0)


from graphs import MLP, Train

flow.manual_seed(pseed)
model = MLP(IN, HID, OUT)
init = {k: v.numpy().tolist() for k, v in model.state_dict().items()}
model.to_global(PL, [B])
graph = Train(model, lr=LR, gradient_dtype={"bf16": flow.bfloat16, "f16": flow.float16,
                                           "f32": flow.float32}[dtype])
if zero:
    graph.config.enable_zero(True, stage=zero, shard_min_size=0)
rng = np.random.default_rng(dseed)
losses = []
for _ in range(STEPS):
    X = rng.standard_normal((BATCH, IN)).astype(np.float32)
    Y = rng.integers(0, OUT, BATCH).astype(np.int64)
    loss = graph(flow.tensor(X, placement=PL, sbp=[S0]), flow.tensor(Y, placement=PL, sbp=[S0]))
    losses.append(float(loss.to_local().numpy().reshape(-1)[0]))
final = {k: v.numpy().tolist() for k, v in graph.state_dict()["model"].items()}
with open(f"{out}/{dtype}.zero{zero}.rank{flow.env.get_rank()}.json", "w") as f:
    json.dump({"losses": losses, "init": init, "final": final}, f)
"""


def run(tmp_path, backend, dtype, pseed, dseed, zero=0):
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    run_script(tmp_path, f"grad_{dtype}.py", JOB, [dtype, pseed, dseed, out, zero], 2, backend, 600)
    return [json.loads((out / f"{dtype}.zero{zero}.rank{r}.json").read_text()) for r in range(2)]


def reference(init, dseed, low):
    """SGD on the DP2 MLP in float32: each rank's gradient (its half of the
    batch, divided by the whole batch) rounded by ``low``, the two added in
    float32 and the sum rounded again, as the runtime's all-reduce does."""
    r = ROUND[low]
    p = {k: np.asarray(v, np.float32) for k, v in init.items()}
    rng = np.random.default_rng(dseed)
    losses, half = [], BATCH // 2
    for _ in range(STEPS):
        x = rng.standard_normal((BATCH, IN)).astype(np.float32)
        y = rng.integers(0, OUT, BATCH)
        h = x @ p["fc1.weight"].T + p["fc1.bias"]
        a = np.maximum(h, 0)
        z = (a @ p["fc2.weight"].T + p["fc2.bias"]).astype(np.float64)
        e = np.exp(z - z.max(axis=1, keepdims=True))
        s = e / e.sum(axis=1, keepdims=True)
        losses.append(float(-np.log(s[np.arange(BATCH), y]).mean()))
        dz = s.copy()
        dz[np.arange(BATCH), y] -= 1
        dz = (dz / BATCH).astype(np.float32)
        total = None
        for rows in (slice(0, half), slice(half, BATCH)):
            dzr, ar, xr, hr = dz[rows], a[rows], x[rows], h[rows]
            dh = (dzr @ p["fc2.weight"]) * (hr > 0)
            g = {"fc2.weight": dzr.T @ ar, "fc2.bias": dzr.sum(0),
                 "fc1.weight": dh.T @ xr, "fc1.bias": dh.sum(0)}
            g = {k: r(v) for k, v in g.items()}
            total = g if total is None else {k: r(total[k] + g[k]) for k in g}
        p = {k: (v - np.float32(LR) * total[k]).astype(np.float32) for k, v in p.items()}
    return np.array(losses), p


@needs_mpiexec
@pytest.mark.parametrize("low", ["bf16", "f16"])
def test_dp2_low_gradient_all_reduce_equals_numpy(backend, tmp_path, low):
    dseed, pseed = fresh_seeds()
    where = f"PF_TEST_SEEDS='{dseed} {pseed}'"
    got = run(tmp_path, backend, low, pseed, dseed)
    f32 = run(tmp_path, backend, "f32", pseed, dseed)
    for record in got + f32:
        assert record["init"] == got[0]["init"], where
    init = got[0]["init"]
    want, params = reference(init, dseed, low)
    want32, _ = reference(init, dseed, "f32")
    for rank in range(2):
        np.testing.assert_allclose(got[rank]["losses"], want, rtol=1e-6, err_msg=where)
        np.testing.assert_allclose(f32[rank]["losses"], want32, rtol=1e-5, err_msg=where)
        assert got[rank]["final"] == got[0]["final"], where  # replicas agree bit for bit
        for k, v in params.items():
            # A gradient element whose f32 rounding noise crosses a rounding
            # boundary of the low type moves by one of its ulps times LR.
            np.testing.assert_allclose(got[rank]["final"][k], v, rtol=0, atol=2e-5, err_msg=f"{where} {k}")
    # The low sum is not float32's.
    assert not np.allclose(got[0]["losses"], f32[0]["losses"], rtol=1e-7, atol=0), where
    assert got[0]["final"] != f32[0]["final"], where


@needs_mpiexec
def test_dp2_zero2_bf16_reduce_scatter_equals_numpy(backend, tmp_path):
    """ZeRO-2: each rank's shard of the gradient is reduce-scattered in
    bf16; on two ranks it is round(round(g0) + round(g1)), the all-reduce's
    values, so the all-reduce's NumPy reference holds."""
    dseed, pseed = fresh_seeds()
    where = f"PF_TEST_SEEDS='{dseed} {pseed}'"
    got = run(tmp_path, backend, "bf16", pseed, dseed, zero=2)
    f32 = run(tmp_path, backend, "f32", pseed, dseed, zero=2)
    init = got[0]["init"]
    assert f32[0]["init"] == init, where
    want, params = reference(init, dseed, "bf16")
    want32, _ = reference(init, dseed, "f32")
    for rank in range(2):
        np.testing.assert_allclose(got[rank]["losses"], want, rtol=1e-6, err_msg=where)
        np.testing.assert_allclose(f32[rank]["losses"], want32, rtol=1e-5, err_msg=where)
        assert got[rank]["final"] == got[0]["final"], where
        for k, v in params.items():
            np.testing.assert_allclose(got[rank]["final"][k], v, rtol=0, atol=2e-5, err_msg=f"{where} {k}")
    assert not np.allclose(got[0]["losses"], f32[0]["losses"], rtol=1e-7, atol=0), where
    assert got[0]["final"] != f32[0]["final"], where


LINE = re.compile(r"^\s*(all_reduce|reduce_scatter) (\S+) .*: (\d+) bytes/rank")


def report(dtype, zero=0):
    """The boxing report's bytes by (collective, shape), and its text."""
    pl = flow.placement("cpu", ranks=[0, 1])
    flow.manual_seed(0)
    model = MLP(IN, HID, OUT)
    model.to_global(pl, [flow.sbp.broadcast])
    x = flow.tensor(np.zeros((BATCH, IN), np.float32), placement=pl, sbp=[flow.sbp.split(0)])
    y = flow.tensor(np.zeros(BATCH, np.int64), placement=pl, sbp=[flow.sbp.split(0)])
    graph = Train(model, lr=LR, gradient_dtype=dtype)
    if zero:
        graph.config.enable_zero(True, stage=zero, shard_min_size=0)
    text = graph.debug_report(x, y)
    return {(m[1], m[2]): int(m[3]) for m in map(LINE.match, text.splitlines()) if m}, text


@pytest.mark.parametrize("dtype,name", [(flow.bfloat16, "bf16"), (flow.float16, "f16")])
def test_boxing_report_counts_two_bytes_an_element(backend, dtype, name):
    f32, text32 = report(None)
    low, text = report(dtype)
    shapes = ["32x16", "32", "4x32", "4"]
    for shape in shapes:
        assert low["all_reduce", f"{shape}x{name}"] * 2 == f32["all_reduce", f"{shape}xf32"], text
        assert f"{shape}x{name}" not in text32
    assert low["all_reduce", "f32"] == f32["all_reduce", "f32"] == 4, text  # the loss's all-reduce


def test_boxing_report_counts_two_bytes_for_zero2_reduce_scatters(backend):
    f32, text32 = report(None, zero=2)
    low, text = report(flow.bfloat16, zero=2)
    for shape in ["32x16", "32", "4x32", "4"]:
        assert low["reduce_scatter", f"{shape}xbf16"] * 2 == f32["reduce_scatter", f"{shape}xf32"], text
        assert ("all_reduce", f"{shape}xbf16") not in low, text
        assert "bf16" not in text32
    # Only the loss's all-reduce, float32 in both.
    assert [k for k in low if k[0] == "all_reduce"] == [("all_reduce", "f32")], text
    assert low["all_reduce", "f32"] == f32["all_reduce", "f32"] == 4, text


def test_gradient_dtype_is_checked():
    cfg = Train(MLP(IN, HID, OUT), lr=LR).config
    assert cfg.gradient_dtype == "f32"
    cfg.set_gradient_dtype(flow.bfloat16)
    assert cfg.gradient_dtype == "bf16"
    with pytest.raises(ValueError, match="flow.float32, flow.bfloat16 or flow.float16"):
        cfg.set_gradient_dtype(flow.int64)
