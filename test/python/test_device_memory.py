"""The memory answer against the GPU's own size (issue 39, item 3): a graph
for GPU ranks whose memory plan needs more than the GPU has is a
CompileError naming the rank and its bytes, before anything runs, without
``config.set_device_memory``. Here the GPU is libpfrt's host emulation
(``PFRT_CUDA_FAKE=1``), whose devices have ``PFRT_CUDA_FAKE_MEMORY`` bytes;
on a GPU machine it is the driver's ``cuDeviceTotalMem`` (a device check).
"""

import numpy as np
import pytest
from conftest import line_of

import pipeflow as flow
from pipeflow import config, nn


def train_graph(placement, device_memory=...):
    model = nn.Sequential(nn.Linear(32, 256), nn.ReLU(), nn.Linear(256, 10)).to_global(
        placement, flow.sbp.broadcast)

    class Train(nn.Graph):
        def __init__(self):
            super().__init__()
            self.model, self.loss_fn = model, nn.CrossEntropyLoss()
            self.add_optimizer(flow.optim.AdamW(model.parameters(), lr=1e-3))
            if device_memory is not ...:
                self.config.set_device_memory(device_memory)

        def build(self, x, y):
            loss = self.loss_fn(self.model(x), y)
            loss.backward()
            return loss
    return Train()


def inputs(placement):
    rng = np.random.default_rng()
    x = flow.tensor(rng.standard_normal((64, 32)).astype(np.float32), placement=placement,
                    sbp=flow.sbp.broadcast)
    y = flow.tensor(rng.integers(0, 10, 64), placement=placement, sbp=flow.sbp.broadcast)
    return x, y


@pytest.fixture
def emulated_gpu(monkeypatch):
    monkeypatch.setattr(config, "gpu_available", lambda: True)
    monkeypatch.setenv("PFRT_CUDA_FAKE", "1")
    return monkeypatch


def test_a_gpu_plan_larger_than_the_gpu_is_refused(pf_opt, emulated_gpu):
    gpu = flow.placement("cuda", [0])
    x, y = inputs(gpu)
    emulated_gpu.setenv("PFRT_CUDA_FAKE_MEMORY", str(1 << 40))
    plans = train_graph(gpu).memory_report(x, y)
    need = plans[0]["arena_bytes"]
    assert 4 * (32 * 256 + 256 + 2560 + 10) < need < 1 << 24
    # One byte short of the plan: refused, naming the rank, its bytes and the GPU's.
    emulated_gpu.setenv("PFRT_CUDA_FAKE_MEMORY", str(need - 1))
    assert config.gpu_memory() == need - 1
    with pytest.raises(flow.CompileError) as info:
        train_graph(gpu).memory_report(x, y)  # <-- report
    text = str(info.value)
    assert f"rank 0's memory plan needs {need} bytes" in text, text
    assert f"but the GPU has {need - 1} " in text and "GPU's own memory" in text, text
    assert info.value.lineno == line_of(__file__, "report")  # the question's line
    # The first call refuses it the same way, before anything runs.
    with pytest.raises(flow.CompileError, match=f"needs {need} bytes"):
        train_graph(gpu)(x, y)
    # Exactly the plan fits; an explicit limit replaces the GPU's, None checks nothing.
    emulated_gpu.setenv("PFRT_CUDA_FAKE_MEMORY", str(need))
    assert train_graph(gpu).memory_report(x, y)[0]["arena_bytes"] == need
    emulated_gpu.setenv("PFRT_CUDA_FAKE_MEMORY", "1024")
    assert train_graph(gpu, device_memory=None).memory_report(x, y) == plans
    with pytest.raises(flow.CompileError, match="but the device has 2048 "):
        train_graph(gpu, device_memory=2048).memory_report(x, y)


def test_cpu_ranks_are_not_checked_against_a_gpu(pf_opt, emulated_gpu):
    emulated_gpu.setenv("PFRT_CUDA_FAKE_MEMORY", "1024")
    cpu = flow.placement("cpu", [0])
    plans = train_graph(cpu).memory_report(*inputs(cpu))
    assert plans[0]["arena_bytes"] > 1024
