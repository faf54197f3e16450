"""Shared setup of the front-end tests: pipeflow on sys.path, pf-opt, a clean env."""

import os
import shutil
import subprocess
import sys
import time

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PYTHON_DIR = os.path.join(REPO, "python")
sys.path.insert(0, PYTHON_DIR)

# Tools given by relative paths (PF_OPT=build/bin/pf-opt) must still be found by
# the jobs the tests start in other directories.
for _name in ("PF_OPT", "PF_TRANSLATE", "PF_BUILD_DIR"):
    if os.environ.get(_name):
        os.environ[_name] = os.path.abspath(os.environ[_name])

import pipeflow  # noqa: E402
from pipeflow import compiler, config  # noqa: E402

_ENV_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "PMI_RANK", "PMI_SIZE",
             "MPI_LOCALRANKID", "MPI_LOCALNRANKS", "PIPEFLOW_CUDA_AS_CPU", "PIPEFLOW_NNODES")


def _find_pf_opt(wait_s=120):
    """pf-opt as the front end finds it; waits a while if the build directory
    exists but the binary is missing (the compiler is being rebuilt)."""
    deadline = time.time() + wait_s
    while True:
        try:
            return compiler.find_pf_opt()
        except pipeflow.CompilerNotFound:
            build = os.environ.get("PF_BUILD_DIR") or os.path.join(REPO, "build")
            if not os.path.isdir(build) or time.time() > deadline:
                return None
            time.sleep(5)


@pytest.fixture(scope="session")
def pf_opt():
    """The pf-opt driver; tests that need it skip only when it truly is absent."""
    path = _find_pf_opt()
    if path is None:
        pytest.skip("pf-opt not found (build/bin/pf-opt, PATH or $PF_OPT): build the compiler")
    return path


@pytest.fixture(autouse=True)
def clean_env(monkeypatch, tmp_path_factory):
    """Every test runs as rank 0 of 1, without cuda->cpu, with a private compile cache."""
    for name in _ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PIPEFLOW_CACHE", str(tmp_path_factory.getbasetemp() / "pipeflow-cache"))
    monkeypatch.setattr(config, "_cuda_as_cpu", None)
    pipeflow.manual_seed(0)
    yield


@pytest.fixture(scope="session")
def backend():
    """pf-opt and pf-translate, for tests that compile and run graphs; skips
    only when the compiler is truly absent."""
    import pipeflow as flow
    from pipeflow import compiler
    try:
        pf_opt = compiler.find_pf_opt()
        compiler.find_pf_translate(pf_opt)
    except flow.CompilerNotFound as err:
        pytest.skip(str(err))
    return pf_opt


@pytest.fixture
def verify(pf_opt):
    """Runs pf-opt on IR text; returns its output or fails with its diagnostics."""
    def run(text):
        proc = subprocess.run([pf_opt, "-", "-o", "-"], input=text, capture_output=True, text=True)
        assert proc.returncode == 0, f"pf-opt rejected the IR:\n{proc.stderr}\n{text}"
        return proc.stdout
    return run


def line_of(path, marker):
    """The 1-based number of the line of ``path`` that ends with ``# <-- marker``."""
    with open(path) as f:
        hits = [i for i, line in enumerate(f, 1) if line.rstrip().endswith("# <-- " + marker)]
    assert len(hits) == 1, f"marker {marker!r} found {len(hits)} times in {path}"
    return hits[0]


def mpiexec_available():
    return shutil.which("mpiexec") is not None


def run_job(cmd, timeout, **kwargs):
    """subprocess.run in a session of its own: on a timeout the whole job
    (launcher, mpiexec, its proxies and ranks) is killed, not just the launcher."""
    import signal
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, **kwargs)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        raise AssertionError(f"{' '.join(map(str, cmd))} did not finish in {timeout} s (killed)\n"
                             f"stdout:\n{out}\nstderr:\n{err}") from None
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def torch_twin(path, name, nn_import):
    """The model file ``path`` with its pipeflow imports pointed at torch,
    run as module ``name``; ``nn_import`` is how the file imports pipeflow.nn."""
    import types
    src = open(path).read()
    for ours, theirs in (("import pipeflow as flow", "import torch as flow"),
                         (nn_import, nn_import.replace("pipeflow", "torch")),
                         ("from pipeflow.nn import functional as F", "from torch.nn import functional as F")):
        assert ours in src, f"{path} no longer says {ours!r}"
        src = src.replace(ours, theirs)
    module = types.ModuleType(name)
    sys.modules[name] = module  # dataclasses look their module up
    exec(compile(src, path, "exec"), module.__dict__)
    return module
