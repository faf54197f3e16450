"""This process's part in a job of several processes, for the front end itself.

MPICH's ``MPI_Init`` is a collective of the whole job: a process that never
initialises MPI keeps every other one waiting in it. A graph's compiled
program initialises MPI when it is loaded (``pfrt_init``), but a graph whose
placements use ranks ``0..n-1`` of a job of more processes has no program on
the ranks ``n..`` (they take no part in it, as in OneFlow). So in a job of
several processes started by ``mpiexec`` (``pipeflow.distributed.launch``)
the front end initialises MPI itself at the first thing that needs it on
any process (a graph's first call, :func:`all_gather`), and finalises it at
exit, after the programs' ``pfrt_finalize`` (see ``pipeflow._runtime``).

It also gives the front end one collective of its own between graphs,
:func:`all_gather` of int64 rows over the whole job, on a private
duplicate of ``MPI_COMM_WORLD``: ``Tensor.to_global``'s check of the
logical shape and dtype (OneFlow's ``check_meta``) uses it.

MPICH only (the launcher's MPI): its handles are the ``int`` constants of
``mpi.h``.
"""

import atexit
import ctypes
import ctypes.util
import os
import sys

import numpy as np

from . import _runtime, env
from ._errors import BackendUnavailable, CompileError
from ._source import user_location

# mpi.h (MPICH): handles are ints.
_MPI_COMM_WORLD = 0x44000000
_MPI_INT64_T = 0x4C00083A
_MPI_THREAD_FUNNELED = 1

_lib = None
_comm = None  # the front end's duplicate of MPI_COMM_WORLD
_owns = False


def launched():
    """Whether this process is one of several that ``mpiexec`` started (Hydra's
    ``PMI_SIZE``, or the launcher's ``WORLD_SIZE`` with Hydra's ``PMI_RANK``)."""
    return env.get_world_size() > 1 and ("PMI_RANK" in os.environ or "PMI_SIZE" in os.environ)


def _library():
    global _lib
    if _lib is None:
        names = [ctypes.util.find_library("mpich"), "libmpich.so.12", ctypes.util.find_library("mpi")]
        for name in names:
            if not name:
                continue
            try:
                _lib = ctypes.CDLL(name, mode=ctypes.RTLD_GLOBAL)
                break
            except OSError:
                continue
        if _lib is None:
            raise BackendUnavailable("cannot load MPICH's libmpich (the MPI of the compiled programs)")
        for fn in ("MPI_Initialized", "MPI_Finalized", "MPI_Init_thread", "MPI_Finalize",
                   "MPI_Comm_dup", "MPI_Comm_free", "MPI_Allgather"):
            getattr(_lib, fn).restype = ctypes.c_int
    return _lib


def _flag(fn):
    value = ctypes.c_int(0)
    fn(ctypes.byref(value))
    return bool(value.value)


def join():
    """Initialises MPI in this process unless it is: every process of a
    launched job calls it (at its first graph call or :func:`all_gather`),
    so that programs on part of the job start without the others."""
    global _owns
    if not launched():
        return
    lib = _library()
    if _flag(lib.MPI_Initialized):
        return
    provided = ctypes.c_int(0)
    if lib.MPI_Init_thread(None, None, _MPI_THREAD_FUNNELED, ctypes.byref(provided)) != 0:
        raise BackendUnavailable("MPI_Init_thread failed")
    _owns = True
    # Registered before any program's pfrt_finalize: it runs after them.
    atexit.register(_leave)
    # An uncaught exception must not wait in MPI_Finalize.
    _runtime._install_abort_hook()


def _leave():
    global _comm
    lib = _lib
    if lib is None or _flag(lib.MPI_Finalized):
        return
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    if _comm is not None:
        lib.MPI_Comm_free(ctypes.byref(_comm))
        _comm = None
    if _owns:
        lib.MPI_Finalize()


def all_gather(row):
    """Every process's int64 ``row`` (the same length on all): an array of
    shape ``(world size, len(row))``, row ``r`` from rank ``r``. A collective
    of the whole launched job; a process running alone gets its own row."""
    global _comm
    row = np.ascontiguousarray(row, np.int64).reshape(-1)
    if not launched():
        return row.reshape(1, -1).copy()
    join()
    lib = _library()
    if _comm is None:
        comm = ctypes.c_int(0)
        if lib.MPI_Comm_dup(_MPI_COMM_WORLD, ctypes.byref(comm)) != 0:
            raise BackendUnavailable("MPI_Comm_dup failed")
        _comm = comm
    out = np.empty((env.get_world_size(), row.size), np.int64)
    if lib.MPI_Allgather(ctypes.c_void_p(row.ctypes.data), row.size, _MPI_INT64_T,
                         ctypes.c_void_p(out.ctypes.data), row.size, _MPI_INT64_T,
                         _comm.value) != 0:
        raise BackendUnavailable("MPI_Allgather failed")
    return out


_MAX_DIMS = 16


def placement_meta(shape, dtype, placement, what):
    """OneFlow's ``check_meta`` of a local tensor made global on ``placement``:
    one all-gather over the launched job of every process's local shape and
    dtype (``dtype``: a numpy dtype). The placement's ranks must agree (a
    CompileError at the user's line, on every process alike, names the
    first difference); returns the shape and numpy dtype of the placement's
    first rank, which the processes outside it take. Every process of the
    job makes the call at the same point (as OneFlow's to_global)."""
    if len(shape) > _MAX_DIMS:
        raise ValueError(f"{what}: a tensor of {len(shape)} dimensions (at most {_MAX_DIMS})")
    row = [len(shape), ord(np.dtype(dtype).char)] + list(shape) + [0] * (_MAX_DIMS - len(shape))
    rows = all_gather(np.array(row, np.int64))
    members = [int(r) for r in placement.flat_ranks]

    def describe(r):
        ndim = int(rows[r, 0])
        return [int(d) for d in rows[r, 2:2 + ndim]], np.dtype(chr(int(rows[r, 1])))

    first_shape, first_dtype = describe(members[0])
    for r in members[1:]:
        other_shape, other_dtype = describe(r)
        if (other_shape, other_dtype) != (first_shape, first_dtype):
            raise CompileError.at(
                user_location(),
                f"{what}: the ranks of {placement!r} pass local tensors of different shapes or "
                f"dtypes: rank {members[0]} {first_shape} {first_dtype}, rank {r} {other_shape} "
                f"{other_dtype}",
                ["every rank of the placement passes its local part, all of the same shape and "
                 "dtype; the ranks outside it may pass anything (an empty tensor): they take the "
                 "placement's"])
    return tuple(first_shape), first_dtype
