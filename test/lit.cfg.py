# -*- Python -*-
# lit configuration of the PipeFlow test suite.

import os
import shutil
import subprocess
import sys

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "PIPEFLOW"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.pf_obj_root, "test")

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%pf_src_root", config.pf_src_root))
config.substitutions.append(("%pf_obj_root", config.pf_obj_root))
# Debian's Python: it has numpy (a pyenv python3 first on PATH may not).
config.substitutions.append(("%python", "/usr/bin/python3"))

llvm_config.with_system_environment(
    ["HOME", "INCLUDE", "LIB", "TMP", "TEMP", "CUDA_VISIBLE_DEVICES"])
llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

tool_dirs = [config.pf_tools_dir, config.llvm_tools_dir]
tools = ["pf-opt", "pf-translate", "pf-run", "FileCheck", "not", "count"]
llvm_config.add_tool_substitutions(tools, tool_dirs)

if shutil.which("dot"):
    config.available_features.add("graphviz")

# mpi: a launcher for jobs (pf-run's default, mpiexec on the tests' PATH).
# The build itself always needs MPI.
if shutil.which("mpiexec", path=config.environment["PATH"]):
    config.available_features.add("mpi")

# pidfd: this kernel lets pf-run watch its ranks (pidfd_open: Linux 5.3,
# not blocked by a seccomp profile); without it pf-run keeps MPICH's report.
try:
    os.close(os.pidfd_open(os.getpid()))
    config.available_features.add("pidfd")
except (AttributeError, OSError):
    pass

# cuda: the runtime's CUDA parts are built (PF_ENABLE_CUDA).
# cuda-device: and a CUDA device answers, found by running a probe that does
# what the runtime does (load libcuda at run time, cuInit, count devices):
# a toolkit, a driver library or nvidia-smi alone do not make it true.
CUDA_DEVICE_PROBE = r"""
import ctypes, sys
try:
    cuda = ctypes.CDLL("libcuda.so.1")
except OSError:
    sys.exit(1)
count = ctypes.c_int(0)
ok = cuda.cuInit(0) == 0 and cuda.cuDeviceGetCount(ctypes.byref(count)) == 0
sys.exit(0 if ok and count.value > 0 else 1)
"""


def has_cuda_device():
    try:
        probe = subprocess.run([sys.executable, "-c", CUDA_DEVICE_PROBE],
                               env=config.environment, timeout=60,
                               stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return probe.returncode == 0


if config.pf_enable_cuda:
    config.available_features.add("cuda")
    # %cuda_toolkit: what gpu-module-to-binary needs (ptxas, libdevice).
    config.substitutions.append(("%cuda_toolkit", config.cuda_toolkit))
    if has_cuda_device():
        config.available_features.add("cuda-device")
