"""Scripts the tests run as jobs of one process or of several ranks under
pipeflow's launcher, and the records their ranks write.

A script is written to a file whose first line puts this directory on
``sys.path``, so that it can import the shared test models (graphs.py,
seed_pipeline.py) like the tests do; it runs with pipeflow on PYTHONPATH
(or not, ``pythonpath=False``: then from ``cwd``) and a private compile
cache. Each rank writes its results to a file of its own: the ranks'
stdout lines may interleave.
"""

import json
import os
import sys

from conftest import PYTHON_DIR, run_job

TEST_DIR = os.path.dirname(os.path.abspath(__file__))


def write_script(path, text):
    """``text`` in ``path`` after a line that makes the test helpers importable."""
    path.write_text(f"import sys; sys.path.insert(0, {TEST_DIR!r})  # the test helpers\n" + text)
    return path


def job_env(tmp_path, pf_opt=None, pythonpath=True):
    env = dict(os.environ, PIPEFLOW_CACHE=str(tmp_path / "cache"))
    env.pop("PYTHONPATH", None)
    if pythonpath:
        env["PYTHONPATH"] = PYTHON_DIR
    if pf_opt is not None:
        env["PF_OPT"] = pf_opt
    return env


def run_script(tmp_path, name, text, args, ranks=1, pf_opt=None, timeout=240, cwd=None, pythonpath=True,
               check=True):
    """Runs ``text`` (saved as ``tmp_path/name``) with ``args`` in one process
    (``ranks`` 1) or under the launcher on ``ranks`` processes; with
    ``check``, fails with the job's stderr unless it succeeds."""
    script = write_script(tmp_path / name, text)
    cmd = [sys.executable, str(script), *map(str, args)]
    if ranks > 1:
        cmd[1:1] = ["-m", "pipeflow.distributed.launch", "--nproc_per_node", str(ranks)]
    proc = run_job(cmd, timeout, env=job_env(tmp_path, pf_opt, pythonpath), cwd=str(cwd or tmp_path))
    if check:
        assert proc.returncode == 0, f"{name} {' '.join(map(str, args))}:\n{proc.stderr}"
    return proc


def rank_records(prefix, ranks):
    """The JSON records ``<prefix>.rank<r>.json`` of ranks 0 to ``ranks`` - 1."""
    return [json.loads(open(f"{prefix}.rank{r}.json").read()) for r in range(ranks)]
