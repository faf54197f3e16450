"""Runs a script once per rank through MPICH's ``mpiexec``.

::

    python3 -m pipeflow.distributed.launch --nproc_per_node 2 train.py --lr 0.1

starts ``nproc_per_node * nnodes`` processes with ``mpiexec -n``. Every
process sees ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK`` and
``LOCAL_WORLD_SIZE`` (``pipeflow.env`` reads them), plus ``MASTER_ADDR`` and
``MASTER_PORT`` for compatibility (MPI does its own bootstrap). The exit
code is that of the first process to fail, or 0; the launcher then names
that rank and how it ended on stderr (``rank 1 exited with code 3``,
``rank 0 was killed by SIGKILL (9)``: each rank runs under a small wrapper
that records it).

When a process fails, the others are stopped after a grace period
(``--grace_period``, default 3 s, for them to report their own errors):
MPICH's Hydra ends the job by itself only when a process that initialised
MPI dies, so a rank failing earlier (say, in Python before its first step)
would otherwise leave the others waiting forever for its messages.

Several nodes: MPI starts every rank from one ``mpiexec``, so the launch on
node 0 (``--node_rank 0``) starts them all on the hosts of ``--hostfile``
(MPICH's ``-f``, one host per line) or ``--hosts a,b`` with
``--nproc_per_node`` ranks per host (``-ppn``); a launch with another
``--node_rank`` has nothing to do and exits 0.
"""

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

_PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_worker.py")


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m pipeflow.distributed.launch",
                                description="Run a PipeFlow script once per rank with mpiexec.")
    p.add_argument("--nproc_per_node", "--nproc-per-node", type=int, default=1,
                   help="processes per node (default 1)")
    p.add_argument("--nnodes", type=int, default=1, help="number of nodes (default 1)")
    p.add_argument("--node_rank", "--node-rank", type=int, default=0, help="this node's index")
    p.add_argument("--master_addr", "--master-addr", default="127.0.0.1",
                   help="exported as MASTER_ADDR (MPI needs no rendezvous address)")
    p.add_argument("--master_port", "--master-port", type=int, default=29500, help="exported as MASTER_PORT")
    hosts = p.add_mutually_exclusive_group()
    hosts.add_argument("--hostfile", help="MPICH host file for several nodes (mpiexec -f)")
    hosts.add_argument("--hosts", help="comma-separated host names for several nodes (mpiexec -hosts)")
    p.add_argument("--mpiexec", default=os.environ.get("PIPEFLOW_MPIEXEC", "mpiexec"),
                   help="the mpiexec to use (default: mpiexec on PATH)")
    p.add_argument("--grace_period", "--grace-period", type=float, default=3.0,
                   help="seconds the other processes get to finish after one fails (default 3)")
    p.add_argument("script", help="the Python script to run")
    p.add_argument("script_args", nargs=argparse.REMAINDER, help="arguments of the script")
    args = p.parse_args(argv)
    if args.nproc_per_node < 1 or args.nnodes < 1:
        p.error("--nproc_per_node and --nnodes must be positive")
    if not 0 <= args.node_rank < args.nnodes:
        p.error(f"--node_rank must be in [0, {args.nnodes})")
    if args.nnodes > 1 and not (args.hostfile or args.hosts):
        p.error("--nnodes > 1 needs --hostfile or --hosts: mpiexec on node 0 starts every rank")
    return args


def mpiexec_command(args, status_dir):
    """The mpiexec command line that starts every rank under the worker wrapper."""
    mpiexec = shutil.which(args.mpiexec)
    if mpiexec is None:
        raise FileNotFoundError(f"cannot find {args.mpiexec!r}: install MPICH or pass --mpiexec PATH")
    world = args.nproc_per_node * args.nnodes
    cmd = [mpiexec, "-n", str(world)]
    if args.hostfile:
        cmd += ["-f", args.hostfile, "-ppn", str(args.nproc_per_node)]
    elif args.hosts:
        cmd += ["-hosts", args.hosts, "-ppn", str(args.nproc_per_node)]
    # The worker runs as a plain script: it needs no numpy, so it starts fast.
    cmd += [sys.executable, _WORKER, status_dir, args.script]
    return cmd + list(args.script_args)


def first_failure(status_dir):
    """The first rank that failed (by time) as ``(rank, exit code, signal)``
    (signal 0 when it exited by itself), or None."""
    failures = []
    for name in os.listdir(status_dir):
        if name.endswith(".json"):
            with open(os.path.join(status_dir, name)) as f:
                status = json.load(f)
            if status["code"] != 0:
                failures.append((status["time"], status["rank"], status["code"], status.get("signal", 0)))
    return min(failures)[1:] if failures else None


def describe_failure(failure):
    """What the launcher says about the rank that ended the job."""
    rank, code, signum = failure
    try:
        name = signal.Signals(signum).name if signum else ""
    except ValueError:
        name = f"signal {signum}"
    how = f"was killed by {name} ({signum})" if signum else f"exited with code {code}"
    return f"pipeflow.distributed.launch: rank {rank} {how}; the job was ended"


def _failed(status_dir):
    """Whether some rank has recorded a non-zero exit code."""
    try:
        names = os.listdir(status_dir)
    except OSError:
        return False
    for name in names:
        if name.endswith(".json"):
            try:
                with open(os.path.join(status_dir, name)) as f:
                    if json.load(f)["code"] != 0:
                        return True
            except (OSError, ValueError, KeyError):
                continue
    return False


def run_job(cmd, env, status_dir, grace_period):
    """Runs mpiexec; stops the job ``grace_period`` s after a rank fails."""
    proc = subprocess.Popen(cmd, env=env)
    failed_at = None
    try:
        while True:
            try:
                return proc.wait(timeout=0.2)
            except subprocess.TimeoutExpired:
                pass
            if failed_at is None and _failed(status_dir):
                failed_at = time.monotonic()
            if failed_at is not None and time.monotonic() - failed_at > grace_period:
                proc.terminate()  # Hydra passes the signal on to every process
                try:
                    return proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    return proc.wait()
    except KeyboardInterrupt:
        proc.send_signal(signal.SIGINT)
        return proc.wait()


def main(argv=None):
    args = parse_args(argv)
    if args.node_rank != 0:
        print(f"pipeflow.distributed.launch: node_rank {args.node_rank}: mpiexec on node 0 starts "
              "every rank; nothing to do here", file=sys.stderr)
        return 0
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_PYTHON_DIR, env.get("PYTHONPATH")) if p)
    env.update(MASTER_ADDR=args.master_addr, MASTER_PORT=str(args.master_port),
               PIPEFLOW_NNODES=str(args.nnodes), LOCAL_WORLD_SIZE=str(args.nproc_per_node))
    with tempfile.TemporaryDirectory(prefix="pipeflow-launch-") as status_dir:
        cmd = mpiexec_command(args, status_dir)
        code = run_job(cmd, env, status_dir, args.grace_period)
        failed = first_failure(status_dir)
    if failed:
        print(describe_failure(failed), file=sys.stderr)
        return failed[1]
    return code


if __name__ == "__main__":
    sys.exit(main())
