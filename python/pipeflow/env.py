"""The calling process's place in the job, read from the launcher's environment.

``pipeflow.distributed.launch`` sets ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``
and ``LOCAL_WORLD_SIZE``; a bare ``mpiexec`` (MPICH's Hydra) sets
``PMI_RANK``/``PMI_SIZE`` and ``MPI_LOCALRANKID``/``MPI_LOCALNRANKS``.
Without either the process is rank 0 of a world of 1.
"""

import os


def _read(names, default):
    for name in names:
        value = os.environ.get(name)
        if value not in (None, ""):
            try:
                return int(value)
            except ValueError:
                raise RuntimeError(f"environment variable {name}={value!r} is not an integer") from None
    return default


def get_rank():
    """This process's global rank."""
    return _read(("RANK", "PMI_RANK"), 0)


def get_world_size():
    """The number of processes in the job."""
    return _read(("WORLD_SIZE", "PMI_SIZE"), 1)


def get_local_rank():
    """This process's rank among the processes of its node."""
    return _read(("LOCAL_RANK", "MPI_LOCALRANKID"), get_rank())


def get_local_world_size():
    """The number of processes on this node (``None`` when unknown)."""
    return _read(("LOCAL_WORLD_SIZE", "MPI_LOCALNRANKS"), None)


def get_node_size():
    """The number of nodes of the job (1 unless the launcher says otherwise)."""
    return _read(("PIPEFLOW_NNODES",), 1)
