"""Process-wide front-end options.

``cuda_as_cpu(True)`` (or ``PIPEFLOW_CUDA_AS_CPU=1``) compiles placements on
``"cuda"`` to ``"cpu"`` so that GPU programs run on machines without a GPU.
It is opt-in: without it, compiling a ``"cuda"`` program on a machine with no
GPU is a :class:`pipeflow.CompileError`.
"""

import ctypes
import os
import shutil

_cuda_as_cpu = None
CUDA_AS_CPU_VARIABLE = "PIPEFLOW_CUDA_AS_CPU"


def cuda_as_cpu(enable=True):
    """Map ``"cuda"`` placements to ``"cpu"`` when compiling (opt-in)."""
    global _cuda_as_cpu
    _cuda_as_cpu = bool(enable)


def cuda_as_cpu_enabled():
    """Whether ``"cuda"`` placements compile to ``"cpu"``.

    ``cuda_as_cpu()`` wins over the environment variable.
    """
    if _cuda_as_cpu is not None:
        return _cuda_as_cpu
    return os.environ.get(CUDA_AS_CPU_VARIABLE, "").strip().lower() in ("1", "true", "yes", "on")


def gpu_available():
    """A best-effort check for an NVIDIA GPU on this machine."""
    if os.environ.get("CUDA_VISIBLE_DEVICES", None) in ("", "-1"):
        return False
    return os.path.exists("/dev/nvidia0") or shutil.which("nvidia-smi") is not None


def gpu_memory():
    """The memory in bytes of this machine's smallest visible GPU (what each
    GPU rank's memory plan must fit), or ``None`` where no GPU can be asked.
    The driver's ``cuDeviceTotalMem`` (libcuda through ctypes; the toolkit's
    stub library answers no device); under libpfrt's host emulation of the
    GPU (``PFRT_CUDA_FAKE=1``) the emulated devices' memory, as their
    ``cuMemGetInfo`` reports it: ``PFRT_CUDA_FAKE_MEMORY`` bytes, 16 GiB by
    default."""
    if os.environ.get("PFRT_CUDA_FAKE", "") == "1":
        text = os.environ.get("PFRT_CUDA_FAKE_MEMORY", "").strip()
        return int(text) if text.isdigit() and int(text) > 0 else 1 << 34
    if not gpu_available():
        return None
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None
    count = ctypes.c_int(0)
    if lib.cuInit(0) != 0 or lib.cuDeviceGetCount(ctypes.byref(count)) != 0:
        return None
    sizes = []
    for ordinal in range(count.value):
        device, total = ctypes.c_int(0), ctypes.c_size_t(0)
        if (lib.cuDeviceGet(ctypes.byref(device), ordinal) != 0
                or lib.cuDeviceTotalMem_v2(ctypes.byref(total), device) != 0):
            return None
        sizes.append(total.value)
    return min(sizes) if sizes else None


def cache_dir():
    """Where compiled graphs are cached: ``$PIPEFLOW_CACHE`` or ``~/.cache/pipeflow``."""
    path = os.environ.get("PIPEFLOW_CACHE")
    if path:
        return os.path.abspath(os.path.expanduser(path))
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "pipeflow")
