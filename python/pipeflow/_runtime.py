"""Running compiled steps in this process: ``librank<r>.so`` through ctypes.

Each rank of a job loads the shared object of its own rank from a graph's
artifacts (``compiler.build_cpu_artifacts``). The object carries the rank's
whole program and its own copy of libpfrt (linked statically), so every
loaded object has its own parameters, optimizer state and step arena; MPI is
shared by the process (the first object's ``pfrt_init`` initialises it, and
its ``pfrt_finalize``, run last at exit, finalises it).

The C ABI (runtime/include/pfrt/pfrt.h): ``pfrt_init``/``pfrt_finalize``,
``pfrt_rank``/``pfrt_world_size``, ``pf_init_params(seed)``,
``pfrt_scalar(name)``, ``pfrt_begin_step(step)``,
``pfrt_use_user_inputs(on)``, ``pfrt_set_input(index, data, bytes)``,
``pf_step(step)``, ``pfrt_end_step()``, ``pfrt_loss_count()``/``pfrt_loss_value(k)``,
libpfrt's collectives that the front end uses between steps to assemble
and forward inputs and share losses (:meth:`Program.all_gather`,
:meth:`Program.broadcast`, :meth:`Program.broadcast_exact`):
``pfrt_box_all_gather`` (bit-exact for every dtype), ``pfrt_broadcast`` and
``pfrt_broadcast_i64`` (when exported), and the registry of the rank's
persistent tensors (parameters, optimizer states, batch-norm statistics; see
``pipeflow._state``): ``pfrt_state_count``/``pfrt_state_name``,
``pfrt_state_gather`` (a collective over the whole job), ``pfrt_state_set``
(this rank only), ``pfrt_state_save`` and ``pfrt_state_load`` (collectives).
Like every collective, each member of the group must make the same calls in
the same order.

A runtime error (a missing input, a size mismatch) is fatal to the whole job
(``MPI_Abort``), so :class:`Program` checks everything it can before calling
in. In a job of several processes, an uncaught Python exception ends this
process at once after printing its traceback (``os._exit(1)``, skipping the
collective ``pfrt_finalize``), so that the launcher stops the other ranks
instead of leaving them waiting for messages from this one.
"""

import atexit
import ctypes
import os
import shutil
import sys
import tempfile

import numpy as np

from ._errors import BackendUnavailable

DTYPES = {"f32": np.dtype(np.float32), "i64": np.dtype(np.int64)}
# libpfrt's element types (PFRT_DTYPE_F32, _I64, _I32): data movement is bit-exact.
_PFRT_DTYPES = {np.dtype(np.float32): 0, np.dtype(np.int64): 1, np.dtype(np.int32): 2}
_I64_ARRAY = ctypes.POINTER(ctypes.c_int64)

_SIGNATURES = {
    "pfrt_init": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p]),
    "pfrt_finalize": (ctypes.c_int, []),
    "pfrt_rank": (ctypes.c_int, []),
    "pfrt_world_size": (ctypes.c_int, []),
    "pfrt_set_num_threads": (ctypes.c_int, [ctypes.c_int]),
    "pf_init_params": (None, [ctypes.c_uint64]),
    "pfrt_scalar": (ctypes.POINTER(ctypes.c_float), [ctypes.c_char_p]),
    "pfrt_begin_step": (None, [ctypes.c_int64]),
    "pfrt_use_user_inputs": (None, [ctypes.c_int32]),
    "pfrt_set_input": (ctypes.c_int, [ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64]),
    "pf_step": (None, [ctypes.c_int64]),
    "pfrt_end_step": (None, []),
    "pfrt_loss_count": (ctypes.c_int32, []),
    "pfrt_loss_value": (ctypes.c_float, [ctypes.c_int32]),
    "pfrt_box_all_gather": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32, ctypes.c_int64,
                                           _I64_ARRAY, ctypes.c_int64, _I64_ARRAY, ctypes.c_int64]),
    "pfrt_broadcast": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, _I64_ARRAY,
                                      ctypes.c_int64]),
}

# Bound when the object exports them (objects linked with an older libpfrt
# may not; the front end then falls back to a bit-exact all-gather).
_OPTIONAL_SIGNATURES = {
    "pfrt_broadcast_i64": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, _I64_ARRAY,
                                          ctypes.c_int64]),
}

# The persistent-state registry (runtime/include/pfrt/pfrt.h, "Persistent
# state"); bound when the object exports it (programs linked with an older
# libpfrt do not, and only reading or loading state needs it).
_STATE_SIGNATURES = {
    "pfrt_state_count": (ctypes.c_int64, []),
    "pfrt_state_name": (ctypes.c_char_p, [ctypes.c_int64]),
    "pfrt_state_gather": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_int64]),
    "pfrt_state_set": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_int64]),
    "pfrt_state_save": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_int64]),
    "pfrt_state_load": (ctypes.c_int, [ctypes.c_char_p, _I64_ARRAY]),
}

_in_use = set()          # real paths of the shared objects loaded by this process
_private_dir = None      # copies of objects loaded a second time (another graph)
_abort_hook_installed = False


def _private_copy(path):
    """A copy of ``path`` that dlopen loads as a separate object."""
    global _private_dir
    if _private_dir is None:
        _private_dir = tempfile.mkdtemp(prefix="pipeflow-so-")
        atexit.register(shutil.rmtree, _private_dir, True)
    n = len(os.listdir(_private_dir))
    copy = os.path.join(_private_dir, f"{n}-{os.path.basename(path)}")
    shutil.copy2(path, copy)
    return copy


def _install_abort_hook():
    """Several processes: an uncaught exception must not wait in pfrt_finalize."""
    global _abort_hook_installed
    if _abort_hook_installed:
        return
    _abort_hook_installed = True
    previous = sys.excepthook

    def hook(kind, value, traceback):
        try:
            previous(kind, value, traceback)
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(1)

    sys.excepthook = hook


def _finalize(lib):
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    lib.pfrt_finalize()


class Program:
    """One rank's compiled step, loaded from ``librank<r>.so``.

    ``seed`` initialises the parameters (``pf_init_params``); the program
    then takes its inputs from :meth:`step` (``pfrt_use_user_inputs(1)``).
    """

    def __init__(self, path, rank, world_size, seed, threads=None):
        real = os.path.realpath(path)
        if not os.path.exists(real):
            raise BackendUnavailable(f"the compiled program {path} does not exist")
        if real in _in_use:
            # Another graph of this process runs the same program: it gets its
            # own copy, so the two do not share parameters.
            real = _private_copy(real)
        try:
            lib = ctypes.CDLL(real)
        except OSError as err:
            raise BackendUnavailable(f"cannot load the compiled program {path}: {err}") from None
        missing = [name for name in _SIGNATURES if not hasattr(lib, name)]
        if missing:
            raise BackendUnavailable(
                f"{path} does not export {', '.join(missing)}: it was built with an older "
                "compiler or runtime; rebuild them (build/bin) and run again (the compile cache "
                "notices the new tools)")
        for name, (restype, argtypes) in _SIGNATURES.items():
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = restype, argtypes
        for name, (restype, argtypes) in _OPTIONAL_SIGNATURES.items():
            if hasattr(lib, name):
                fn = getattr(lib, name)
                fn.restype, fn.argtypes = restype, argtypes
        self.has_state = all(hasattr(lib, name) for name in _STATE_SIGNATURES)
        if self.has_state:
            for name, (restype, argtypes) in _STATE_SIGNATURES.items():
                fn = getattr(lib, name)
                fn.restype, fn.argtypes = restype, argtypes
        _in_use.add(real)
        self.path = real
        self.lib = lib
        if lib.pfrt_init(None, None) != 0:
            raise BackendUnavailable(f"pfrt_init failed in {path}")
        atexit.register(_finalize, lib)
        if lib.pfrt_world_size() != world_size or lib.pfrt_rank() != rank:
            raise BackendUnavailable(
                f"MPI says this process is rank {lib.pfrt_rank()} of {lib.pfrt_world_size()}, but "
                f"the environment says rank {rank} of {world_size}: start the job with "
                "python3 -m pipeflow.distributed.launch (or mpiexec)")
        if world_size > 1:
            _install_abort_hook()
        if threads is None:
            threads = int(os.environ.get("PIPEFLOW_NUM_THREADS", "1") or 1)
        lib.pfrt_set_num_threads(max(1, threads))
        lib.pf_init_params(int(seed) & 0xFFFFFFFFFFFFFFFF)
        lib.pfrt_use_user_inputs(1)
        self._scalars = {"lr": lib.pfrt_scalar(b"lr")}

    def scalar(self, name):
        """The run-time scalar ``name`` (``pfrt_scalar``: a float the host writes)."""
        ptr = self._scalars.get(name)
        if ptr is None:
            ptr = self._scalars[name] = self.lib.pfrt_scalar(name.encode())
        return ptr

    def step(self, step, lr, inputs):
        """Runs step ``step`` on ``inputs`` (``(index, C-contiguous array)`` pairs,
        this rank's local data) with the learning rate ``lr``: a number (the
        scalar "lr") or ``{scalar name: value}`` (every parameter group's, see
        ``pf.optimizer``); returns the losses this rank reported, one per
        micro-batch (empty elsewhere)."""
        lib = self.lib
        lib.pfrt_begin_step(step)
        scalars = lr if isinstance(lr, dict) else {"lr": lr}
        for name, value in scalars.items():
            self.scalar(name)[0] = float(value)
        for index, array in inputs:
            if lib.pfrt_set_input(index, array.ctypes.data, array.nbytes) != 0:
                raise BackendUnavailable(f"pfrt_set_input({index}) failed")
        lib.pf_step(step)
        lib.pfrt_end_step()
        count = lib.pfrt_loss_count()
        return np.array([lib.pfrt_loss_value(k) for k in range(count)], dtype=np.float32)

    def all_gather(self, array, ranks):
        """Every member's ``array`` (same size and dtype on all of them): an array
        of shape ``(len(ranks), array.size)`` whose row ``p`` comes from
        ``ranks[p]``. A collective over the world ranks ``ranks``, which must hold
        this rank; the data is moved bit for bit (int64 labels included)."""
        flat = np.ascontiguousarray(array).reshape(-1)
        code = _PFRT_DTYPES.get(flat.dtype)
        if code is None:
            raise BackendUnavailable(f"internal error: cannot gather {flat.dtype} data between ranks")
        group = _group(ranks)
        out = np.empty((len(group), flat.size), dtype=flat.dtype)
        if flat.size:
            shape = (ctypes.c_int64 * 1)(flat.size)
            if self.lib.pfrt_box_all_gather(flat.ctypes.data, out.ctypes.data, code, 1, shape, 0,
                                            group, len(group)) != 0:
                raise BackendUnavailable("pfrt_box_all_gather failed")
        return out

    def broadcast(self, array, root, ranks):
        """``root``'s float32 ``array`` on every member of ``ranks`` (world ranks,
        ``root`` among them); a collective. Returns the array (a new one on
        the members other than ``root``)."""
        buf = np.array(array, dtype=np.float32, copy=True).reshape(-1)
        group = _group(ranks)
        if buf.size and self.lib.pfrt_broadcast(buf.ctypes.data, buf.size, int(root), group,
                                                len(group)) != 0:
            raise BackendUnavailable("pfrt_broadcast failed")
        return buf.reshape(np.shape(array))

    def broadcast_exact(self, array, root, ranks):
        """``root``'s ``array`` (float32, int64 or int32, moved bit for bit) on
        every member of ``ranks`` (world ranks, ``root`` among them); a
        collective. The members other than ``root`` pass an array of the same
        shape and dtype, which is overwritten and returned."""
        buf = np.array(array, copy=True, order="C")
        group = _group(ranks)
        if buf.size == 0:
            return buf
        if buf.dtype == np.float32:
            code = self.lib.pfrt_broadcast(buf.ctypes.data, buf.size, int(root), group, len(group))
        elif buf.dtype == np.int64 and hasattr(self.lib, "pfrt_broadcast_i64"):
            code = self.lib.pfrt_broadcast_i64(buf.ctypes.data, buf.size, int(root), group, len(group))
        else:
            rows = self.all_gather(buf, [int(r) for r in group])
            return rows[[int(r) for r in group].index(int(root))].reshape(buf.shape)
        if code != 0:
            raise BackendUnavailable("pfrt_broadcast failed")
        return buf

    # Persistent state ---------------------------------------------------------------

    def _need_state(self):
        if not self.has_state:
            raise BackendUnavailable(
                f"{self.path} does not export pfrt_state_*: it was linked with an older runtime; "
                "rebuild the runtime (build/runtime) and run again (the compile cache notices)")

    def state_names(self):
        """The names of the persistent tensors this rank holds, sorted."""
        self._need_state()
        lib = self.lib
        return [lib.pfrt_state_name(k).decode() for k in range(lib.pfrt_state_count())]

    def state_gather(self, name, shape, dtype):
        """The logical value of ``name`` (``shape``, ``dtype``) on every rank: a
        collective over the whole job (every process, same name, same order)."""
        self._need_state()
        out = np.empty(tuple(shape), dtype=dtype)
        if self.lib.pfrt_state_gather(name.encode(), out.ctypes.data, out.nbytes) != 0:
            raise BackendUnavailable(f"pfrt_state_gather({name!r}) failed")
        return out

    def state_set(self, name, logical):
        """Copies this rank's box of ``name`` out of its whole logical value (not a
        collective); the caller checks that this rank holds ``name`` and the size."""
        self._need_state()
        data = np.ascontiguousarray(logical)
        if self.lib.pfrt_state_set(name.encode(), data.ctypes.data, data.nbytes) != 0:
            raise BackendUnavailable(f"pfrt_state_set({name!r}) failed")

    def state_save(self, directory, step):
        """Writes a checkpoint of every rank's persistent tensors (a collective;
        world rank 0 writes)."""
        self._need_state()
        if self.lib.pfrt_state_save(os.fsencode(directory), int(step)) != 0:
            raise BackendUnavailable(f"pfrt_state_save({directory!r}) failed")

    def __repr__(self):
        return f"Program({self.path!r})"


def _group(ranks):
    ranks = [int(r) for r in ranks]
    return (ctypes.c_int64 * len(ranks))(*ranks)
