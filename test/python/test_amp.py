"""Mixed precision (issue 36): ``graph.config.enable_amp`` and
``flow.autocast`` against float32 runs and a NumPy reference that rounds
where the compiled step does (the inputs and outputs of every GEMM, forward
and backward), ``.half()``/``.bfloat16()`` against NumPy, and float32
parameters, gradients and optimizer states (master weights)."""

import numpy as np
import pytest

import pipeflow as flow
from pipeflow import dtypes, nn

P0 = flow.placement("cpu", ranks=[0])
B = flow.sbp.broadcast
IN, HID, OUT, BATCH = 16, 32, 4, 8
ROUND = {"bf16": dtypes.round_to_bfloat16,
         "f16": lambda a: np.asarray(a, np.float32).astype(np.float16).astype(np.float32),
         None: lambda a: np.asarray(a, np.float32)}


class MLP(nn.Module):
    def __init__(self, region=None):
        super().__init__()
        self.fc1 = nn.Linear(IN, HID)
        self.fc2 = nn.Linear(HID, OUT)
        self.region = region  # autocast only around fc1

    def forward(self, x):
        if self.region is not None:
            with flow.autocast(device_type="cpu", dtype=self.region):
                h = self.fc1(x)
        else:
            h = self.fc1(x)
        return self.fc2(flow.relu(h))


class Train(nn.Graph):
    def __init__(self, model, opt, amp=None):
        super().__init__()
        self.model = model
        self.add_optimizer(opt)
        self.loss_fn = nn.CrossEntropyLoss()
        if amp is not None:
            self.config.enable_amp(True, dtype=amp)

    def build(self, x, y):
        loss = self.loss_fn(self.model(x), y)
        loss.backward()
        return loss


def batches(seed, steps):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((BATCH, IN)).astype(np.float32), rng.integers(0, OUT, BATCH))
            for _ in range(steps)]


def train(data, amp=None, region=None, lr=0.1):
    """Losses of ``data`` and the initial parameters (float32 NumPy)."""
    flow.manual_seed(0)
    model = MLP(region)
    init = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    graph = Train(model, flow.optim.SGD(model.parameters(), lr=lr), amp)
    losses = [float(graph(flow.tensor(x), flow.tensor(y)).numpy()) for x, y in data]
    return np.array(losses), init, model


def reference(init, data, low1, low2, lr=0.1):
    """The MLP trained with SGD in float32, layer k rounded by ``lowk``
    (None: float32) as autocast stores it: a linear layer is low as a whole
    (its GEMM's inputs and output, its bias and the bias-added result, as
    torch's addmm), ReLU follows its input, the cross-entropy is float32;
    backward, every gradient of a low value is rounded where it is stored
    (the cast of the loss gradient, the GEMMs' and the bias sums' results),
    and the parameters' gradients and the update are float32."""
    p = {k: v.astype(np.float32) for k, v in init.items()}
    losses = []
    for x, y in data:
        r1, r2 = ROUND[low1], ROUND[low2]
        xb, w1b, w2b = r1(x), r1(p["fc1.weight"]), r2(p["fc2.weight"])
        hb = r1(r1(xb @ w1b.T) + r1(p["fc1.bias"]))
        a = np.maximum(hb, 0)
        ab = r2(a)
        z = r2(r2(ab @ w2b.T) + r2(p["fc2.bias"]))
        z64 = z.astype(np.float64)
        e = np.exp(z64 - z64.max(axis=1, keepdims=True))
        s = e / e.sum(axis=1, keepdims=True)
        losses.append(float(-np.log(s[np.arange(BATCH), y]).mean()))
        dz = s.copy()
        dz[np.arange(BATCH), y] -= 1
        dz = (dz / BATCH).astype(np.float32)
        dzb = r2(dz)
        g = {"fc2.bias": r2(dzb.sum(0)), "fc2.weight": r2(dzb.T @ ab)}
        dh = r1(r2(dzb @ w2b)) * (hb > 0)
        g["fc1.bias"] = r1(dh.sum(0))
        g["fc1.weight"] = r1(dh.T @ xb)
        p = {k: (v - np.float32(lr) * g[k]).astype(np.float32) for k, v in p.items()}
    return np.array(losses)


def rel(a, b):
    return np.abs(a - b) / np.abs(b)


@pytest.mark.parametrize("amp,name,tol", [(flow.bfloat16, "bf16", 1e-6), (flow.float16, "f16", 1e-6)])
def test_mlp_tracks_float32_and_equals_numpy(amp, name, tol):
    data = batches({"bf16": 361, "f16": 362}[name], 24)
    f32, init, _ = train(data)
    low, init_low, model = train(data, amp)
    for k, v in init.items():
        np.testing.assert_array_equal(init_low[k], v)
    dev = rel(low, f32)
    assert dev.max() < 0.05 and dev[-1] < 0.02, dev
    np.testing.assert_allclose(f32, reference(init, data, None, None), rtol=1e-5)
    np.testing.assert_allclose(low, reference(init, data, name, name), rtol=tol)
    # Master weights: parameters stay float32.
    for k, v in model.state_dict().items():
        assert v.dtype is flow.float32 and v.numpy().dtype == np.float32, k


def test_autocast_region_changes_only_that_part():
    data = batches(363, 20)
    f32, init, _ = train(data)
    part, _, _ = train(data, region=flow.bfloat16)
    np.testing.assert_allclose(part, reference(init, data, "bf16", None), rtol=2e-3)
    assert not np.allclose(part, reference(init, data, "bf16", "bf16"), rtol=1e-7, atol=0)
    assert rel(part, f32).max() < 0.05


def test_amp_is_part_of_the_compile_key():
    data = batches(364, 2)
    f32, _, _ = train(data)
    bf, _, _ = train(data, flow.bfloat16)
    again, _, _ = train(data)
    np.testing.assert_array_equal(f32, again)
    assert not np.array_equal(f32, bf)


def test_adam_states_and_checkpoint_stay_float32(tmp_path):
    flow.manual_seed(0)
    model = MLP()
    opt = flow.optim.Adam(model.parameters(), lr=1e-3)
    graph = Train(model, opt, flow.bfloat16)
    for x, y in batches(365, 3):
        graph(flow.tensor(x), flow.tensor(y))
    flow.save(graph.state_dict(), str(tmp_path / "ckpt"))
    files = list((tmp_path / "ckpt").rglob("*.npy"))
    assert files
    for f in files:
        assert np.load(f).dtype == np.float32, f


class Fn(nn.Graph):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def build(self, *args):
        return self.fn(*args)


def test_half_and_bfloat16_round_trips_against_numpy():
    rng = np.random.default_rng(366)
    a = (rng.standard_normal((5, 7)) * 100).astype(np.float32)
    # Host tensors.
    np.testing.assert_array_equal(flow.tensor(a).half().numpy(), a.astype(np.float16))
    hb = flow.tensor(a).bfloat16()
    assert hb.dtype is flow.bfloat16 and hb.numpy().dtype == np.float32
    want = dtypes.round_to_bfloat16(a)
    np.testing.assert_array_equal(hb.numpy(), want)
    assert np.abs(want - a).max() <= np.abs(a).max() * 2.0 ** -8
    # In a graph: casts, and low-precision inputs and outputs.
    x = flow.tensor(a).to_global(P0, [B])
    outs = Fn(lambda t: (t.bfloat16().float(), t.half().float(), t.to(flow.bfloat16), t.half()))(x)
    np.testing.assert_array_equal(outs[0].numpy(), want)
    np.testing.assert_array_equal(outs[1].numpy(), a.astype(np.float16).astype(np.float32))
    assert outs[2].dtype is flow.bfloat16 and outs[3].dtype is flow.float16
    np.testing.assert_array_equal(outs[2].numpy(), want)
    np.testing.assert_array_equal(outs[3].numpy(), a.astype(np.float16))
    xb, xh = flow.tensor(a).bfloat16().to_global(P0, [B]), flow.tensor(a).half().to_global(P0, [B])
    u, v, w = Fn(lambda p, q: (p, q, p.float() * 2 + q.float()))(xb, xh)
    np.testing.assert_array_equal(u.numpy(), want)
    np.testing.assert_array_equal(v.numpy(), a.astype(np.float16))
    np.testing.assert_array_equal(w.numpy(), want * 2 + a.astype(np.float16).astype(np.float32))


def test_bfloat16_rounding_is_nearest_even():
    a = np.array([1.0, 1 + 2.0 ** -8, 1 + 3 * 2.0 ** -8, -2.5e-3, np.inf, -np.inf, 3.4e38],
                 np.float32)
    got = dtypes.round_to_bfloat16(a)
    np.testing.assert_array_equal(got[:4], np.array([1.0, 1.0, 1 + 2.0 ** -6, -0.00250244140625],
                                                    np.float32))
    assert np.isinf(got[4:]).all() and np.isnan(dtypes.round_to_bfloat16(np.float32("nan")))
    assert dtypes.promote(flow.bfloat16, flow.float16) is flow.float32
    assert dtypes.promote(flow.bfloat16, flow.float32) is flow.float32
    assert dtypes.promote(flow.bfloat16, flow.int64) is flow.bfloat16
    assert dtypes.promote(flow.float16, 2.0) is flow.float16
