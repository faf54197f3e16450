"""The seeds' programs under python/examples_draft trace and verify with pf-opt."""

import glob
import os
import subprocess
import sys

import pytest

from conftest import PYTHON_DIR

EXAMPLES = sorted(glob.glob(os.path.join(PYTHON_DIR, "examples_draft", "*.py")))


def run(path, *args, cache):
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR, PIPEFLOW_CUDA_AS_CPU="1", PIPEFLOW_CACHE=str(cache))
    return subprocess.run([sys.executable, path, *args], env=env, capture_output=True, text=True, timeout=300)


def test_examples_exist():
    names = {os.path.basename(p) for p in EXAMPLES}
    assert {"pipeline.py", "pipeline_consistent.py", "hybrid_mlp.py", "lenet_pipeline.py",
            "resnet50_pipeline.py"} <= names


@pytest.mark.parametrize("path", EXAMPLES, ids=os.path.basename)
def test_example_compiles(path, pf_opt, tmp_path):
    proc = run(path, "--compile-only", cache=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "// verified by pf-opt" in proc.stdout
    assert "func.func @train_step" in proc.stdout and '"cuda"' not in proc.stdout


def test_seed_003_spelling(pf_opt, tmp_path):
    path = os.path.join(PYTHON_DIR, "examples_draft", "pipeline.py")
    a = run(path, "--compile-only", cache=tmp_path)
    b = run(path, "--compile-only", "--graph-module", cache=tmp_path)
    assert a.returncode == b.returncode == 0
    assert a.stdout.splitlines()[:-1] == b.stdout.splitlines()[:-1]


def test_training_loop_says_the_backend_is_missing(pf_opt, tmp_path):
    proc = run(os.path.join(PYTHON_DIR, "examples_draft", "pipeline.py"), cache=tmp_path)
    assert proc.returncode != 0
    assert "BackendUnavailable" in proc.stderr and "CPU backend" in proc.stderr
