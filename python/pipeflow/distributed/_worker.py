"""One rank of ``pipeflow.distributed.launch``: sets the rank variables from
MPICH's and runs the script, recording its exit code and time for the launcher.

Usage (by the launcher): ``python .../pipeflow/distributed/_worker.py STATUS_DIR SCRIPT ARGS...``
"""

import ctypes
import json
import os
import signal
import subprocess
import sys
import time


def rank_environment(environ):
    """``RANK``/``WORLD_SIZE``/``LOCAL_RANK``/``LOCAL_WORLD_SIZE`` from Hydra's PMI variables."""
    env = dict(environ)
    rank = env.get("PMI_RANK", env.get("RANK", "0"))
    env["RANK"] = rank
    env["WORLD_SIZE"] = env.get("PMI_SIZE", env.get("WORLD_SIZE", "1"))
    per_node = env.get("MPI_LOCALNRANKS", env.get("LOCAL_WORLD_SIZE"))
    if "MPI_LOCALRANKID" in env:
        env["LOCAL_RANK"] = env["MPI_LOCALRANKID"]
    elif per_node:
        env["LOCAL_RANK"] = str(int(rank) % int(per_node))
    else:
        env["LOCAL_RANK"] = rank
    if per_node:
        env["LOCAL_WORLD_SIZE"] = per_node
    return env


def _die_with_parent():
    """Linux: the script is killed when this wrapper dies (no orphans)."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def main(argv):
    status_dir, script, args = argv[0], argv[1], argv[2:]
    env = rank_environment(os.environ)
    child = subprocess.Popen([sys.executable, script] + args, env=env, close_fds=False,
                             preexec_fn=_die_with_parent)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda signum, frame: child.send_signal(signum))
    code = child.wait()
    signum = -code if code < 0 else 0
    if code < 0:
        code = 128 - code
    status = {"rank": int(env["RANK"]), "code": code, "signal": signum, "time": time.time()}
    path = os.path.join(status_dir, f"rank{env['RANK']}.json")
    with open(path + ".tmp", "w") as f:
        json.dump(status, f)
    os.replace(path + ".tmp", path)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
