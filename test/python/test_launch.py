"""python3 -m pipeflow.distributed.launch under MPICH's mpiexec."""

import os
import re
import subprocess
import sys
import time

import pytest
from conftest import PYTHON_DIR, mpiexec_available

from pipeflow.distributed import _worker, launch

needs_mpiexec = pytest.mark.skipif(not mpiexec_available(), reason="mpiexec (MPICH) is not installed")

SCRIPT = """
import os, sys, time
import pipeflow as flow
rank, world = flow.env.get_rank(), flow.env.get_world_size()
print(f"rank {rank} of {world} local {flow.env.get_local_rank()} env {os.environ['RANK']}/{os.environ['WORLD_SIZE']}/{os.environ['LOCAL_RANK']} args {sys.argv[1:]}", flush=True)
codes = [int(c) for c in os.environ.get("EXIT_CODES", "0,0").split(",")]
delays = [float(d) for d in os.environ.get("DELAYS", "0,0").split(",")]
time.sleep(delays[rank])
if codes[rank] < 0:
    os.kill(os.getpid(), -codes[rank])
sys.exit(codes[rank])
"""


def run_launch(tmp_path, *args, env=None):
    script = tmp_path / "ranks.py"
    script.write_text(SCRIPT)
    full_env = dict(os.environ, **(env or {}))
    full_env.pop("PYTHONPATH", None)  # the launcher must make pipeflow importable itself
    return subprocess.run([sys.executable, "-m", "pipeflow.distributed.launch", *args, str(script), "--flag", "x"],
                          cwd=PYTHON_DIR, env=full_env, capture_output=True, text=True, timeout=120)


@needs_mpiexec
def test_two_ranks_see_their_rank_and_world(tmp_path):
    proc = run_launch(tmp_path, "--nproc_per_node", "2")
    assert proc.returncode == 0, proc.stderr
    # The ranks share stdout: one's line may run into the other's.
    lines = sorted(re.findall(r"rank \d of 2 local \d env \S+ args \['--flag', 'x'\]", proc.stdout))
    assert lines == [
        "rank 0 of 2 local 0 env 0/2/0 args ['--flag', 'x']",
        "rank 1 of 2 local 1 env 1/2/1 args ['--flag', 'x']"]


@needs_mpiexec
def test_exit_code_of_the_first_failing_rank(tmp_path):
    proc = run_launch(tmp_path, "--nproc_per_node", "2", env={"EXIT_CODES": "0,3"})
    assert proc.returncode == 3
    assert "pipeflow.distributed.launch: rank 1 exited with code 3; the job was ended" in proc.stderr
    # rank 1 fails first with 5; rank 0 would fail with 7 long after the
    # grace period (a 2 s gap was too small for ranks that start seconds
    # apart on a loaded machine), so the launcher stops it and reports rank 1.
    start = time.monotonic()
    proc = run_launch(tmp_path, "--nproc_per_node", "2", env={"EXIT_CODES": "7,5", "DELAYS": "40,0"})
    assert proc.returncode == 5, proc.stderr
    assert "rank 1 exited with code 5" in proc.stderr
    assert "rank 0" not in proc.stderr.replace("rank 0 of 2", "")
    assert time.monotonic() - start < 35


@needs_mpiexec
def test_a_killed_rank_is_named_and_ends_the_job(tmp_path):
    """Rank 0 is killed (SIGKILL) while rank 1 would run for a minute: the
    job ends at once, naming rank 0 and the signal."""
    start = time.monotonic()
    proc = run_launch(tmp_path, "--nproc_per_node", "2", env={"EXIT_CODES": "-9,0", "DELAYS": "0.5,60"})
    assert proc.returncode == 128 + 9
    assert "pipeflow.distributed.launch: rank 0 was killed by SIGKILL (9); the job was ended" in proc.stderr
    assert time.monotonic() - start < 30


def test_other_nodes_have_nothing_to_do(tmp_path):
    proc = run_launch(tmp_path, "--nproc_per_node", "2", "--nnodes", "2", "--node_rank", "1", "--hosts", "a,b")
    assert proc.returncode == 0 and "nothing to do" in proc.stderr


def test_argument_validation(tmp_path):
    proc = run_launch(tmp_path, "--nnodes", "2")
    assert proc.returncode == 2 and "--hostfile or --hosts" in proc.stderr
    proc = run_launch(tmp_path, "--nproc_per_node", "0")
    assert proc.returncode == 2


@needs_mpiexec
def test_multi_node_command_line():
    args = launch.parse_args(["--nproc_per_node", "4", "--nnodes", "2", "--hosts", "n0,n1", "train.py", "--lr", "1"])
    cmd = launch.mpiexec_command(args, "/tmp/status")
    assert cmd[1:3] == ["-n", "8"] and cmd[3:7] == ["-hosts", "n0,n1", "-ppn", "4"]
    assert cmd[-3:] == ["train.py", "--lr", "1"]
    args = launch.parse_args(["--nproc_per_node", "2", "--nnodes", "3", "--hostfile", "hosts.txt", "t.py"])
    assert launch.mpiexec_command(args, "/s")[3:7] == ["-f", "hosts.txt", "-ppn", "2"]


def test_worker_environment_from_hydra():
    env = _worker.rank_environment({"PMI_RANK": "5", "PMI_SIZE": "8", "MPI_LOCALRANKID": "1",
                                    "MPI_LOCALNRANKS": "4"})
    assert (env["RANK"], env["WORLD_SIZE"], env["LOCAL_RANK"], env["LOCAL_WORLD_SIZE"]) == ("5", "8", "1", "4")
    env = _worker.rank_environment({"PMI_RANK": "5", "PMI_SIZE": "8", "LOCAL_WORLD_SIZE": "4"})
    assert env["LOCAL_RANK"] == "1"


@needs_mpiexec
def test_a_rank_failing_before_mpi_stops_the_others(tmp_path):
    """Hydra does not end a job when a process that never initialised MPI
    fails; the launcher stops the others after its grace period."""
    start = time.monotonic()
    proc = run_launch(tmp_path, "--nproc_per_node", "2", "--grace_period", "1",
                      env={"EXIT_CODES": "4,0", "DELAYS": "0,60"})
    assert proc.returncode == 4
    assert time.monotonic() - start < 30
