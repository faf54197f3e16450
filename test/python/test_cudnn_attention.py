"""cuDNN's fused flash attention on GPU ranks (issue 37 item 2): the GPT
in bf16 (examples/python/gpt_model.py, F.scaled_dot_product_attention) on
libpfrt's emulated GPU (PFRT_CUDA_FAKE=1), its attention lowered to
pfrt_cuda_cudnn_attention(_grad) (pf-select-cudnn-attention), tracks the
same GPT's CPU bf16 ranks (widened attention, the float32 flash kernel)
within bf16's tolerance over a few steps; and the GPU run does call cuDNN
(with the library emulated absent it stops, naming it). Each run draws a
fresh seed and prints it on failure."""

import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# One run of the GPT's graph: argv = device seed steps; prints the losses.
RUN = r"""
import sys, types
import pipeflow as flow
from pipeflow import config as fconfig
from test_gpt import data, gpt_model, pipeflow_losses
device, seed, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
if device == "cuda":
    fconfig.gpu_available = lambda: True
    cpu_placement = flow.placement
    flow.placement = lambda d, ranks=None, **kw: cpu_placement("cuda", ranks=ranks, **kw)
args = types.SimpleNamespace(layout="one", schedule="1f1b", micro_batches=1, lr=1e-3,
                             amp="bf16")
config = gpt_model.GPTConfig(block_size=16, n_layer=2, n_head=4, n_embd=32)
batches = list(data(seed, 4, config.block_size, steps))
losses, _ = pipeflow_losses(seed, config, args, batches)
print("losses", *[repr(float(x)) for x in losses])
"""


def run(device, seed, steps, **env):
    full = dict(os.environ, **env)
    full["PYTHONPATH"] = os.pathsep.join(
        [os.path.join(ROOT, "python"), os.path.join(ROOT, "examples", "python"), HERE,
         full.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-c", RUN, device, str(seed), str(steps)],
                          capture_output=True, text=True, env=full, timeout=600)


def losses(done):
    assert done.returncode == 0, done.stderr[-2000:]
    line = [x for x in done.stdout.splitlines() if x.startswith("losses ")][-1]
    return np.array([float(x) for x in line.split()[1:]])


def test_bf16_gpt_attention_through_cudnn_on_emulated_gpus_tracks_cpu(pf_opt):
    seed = int(np.random.default_rng().integers(1 << 30))
    cpu = losses(run("cpu", seed, 5))
    gpu = losses(run("cuda", seed, 5, PFRT_CUDA_FAKE="1"))
    assert len(cpu) == len(gpu) == 5
    # bf16's torch.testing tolerance (rtol 1.6e-2, atol 1e-5), every step.
    err = np.abs(gpu - cpu)
    assert (err <= 1e-5 + 1.6e-2 * np.abs(cpu)).all(), (seed, cpu, gpu)
    assert gpu[-1] < gpu[0], (seed, gpu)
    # The GPU run's attention is cuDNN's: without the library it stops.
    absent = run("cuda", seed, 1, PFRT_CUDA_FAKE="1", PFRT_CUDA_FAKE_NO_CUDNN="1")
    assert absent.returncode != 0, (seed, absent.stdout)
    assert "no cuDNN (libcudnn.so.9 not found in: emulated" in absent.stderr, absent.stderr
