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
the same order. Every function is bound with the signature of its row in
``runtime/include/pfrt/pfrt_abi.def`` (see ``pipeflow._abi``), so a changed
row fails at the Python call instead of passing garbage.

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

from . import _abi
from ._errors import BackendUnavailable

# The manifest's element types (its inputs' and outputs' "dtype").
DTYPES = {"f32": np.dtype(np.float32), "i64": np.dtype(np.int64), "i32": np.dtype(np.int32),
          "bool": np.dtype(np.bool_),
          # 16-bit storage types: bfloat16 as its bits (NumPy has no bfloat16).
          "bf16": np.dtype(np.uint16), "f16": np.dtype(np.float16)}
# libpfrt's element types (PFRT_DTYPE_F32, _I64, _I32, _BOOL): data movement is bit-exact.
_PFRT_DTYPES = {np.dtype(np.float32): 0, np.dtype(np.int64): 1, np.dtype(np.int32): 2,
                np.dtype(np.bool_): 3}

# The functions this module calls; their signatures come from pfrt_abi.def
# (pipeflow._abi), the generated pf_* ones from _abi.GENERATED.
REQUIRED = ("pfrt_init", "pfrt_finalize", "pfrt_rank", "pfrt_world_size", "pfrt_set_num_threads",
            "pf_init_params", "pfrt_scalar", "pfrt_begin_step", "pfrt_use_user_inputs",
            "pfrt_set_input", "pf_step", "pfrt_end_step", "pfrt_loss_count", "pfrt_loss_value",
            "pfrt_box_all_gather", "pfrt_broadcast")
# Bound when the object exports them (objects linked with an older libpfrt
# may not; the front end then falls back to a bit-exact all-gather).
OPTIONAL = ("pfrt_init_program", "pfrt_broadcast_i64", "pfrt_output_count", "pfrt_output_bytes", "pfrt_output_copy",
            "pfrt_cuda_active", "pfrt_cuda_run_step")
# The persistent-state registry (pfrt.h, "Persistent state"); bound when the
# object exports all of it (only reading or loading state needs it).
STATE = ("pfrt_state_count", "pfrt_state_name", "pfrt_state_gather", "pfrt_state_set",
         "pfrt_state_save", "pfrt_state_load")
FUNCTIONS = REQUIRED + OPTIONAL + STATE

# What this module passes in the .def's PTR slots, where it is more than a
# void pointer (names as bytes, rank lists as int64 arrays, typed results).
POINTERS = {
    "pfrt_scalar": {"result": ctypes.POINTER(ctypes.c_float), 0: ctypes.c_char_p},
    "pfrt_box_all_gather": {4: _abi.I64_ARRAY, 6: _abi.I64_ARRAY},
    "pfrt_broadcast": {3: _abi.I64_ARRAY},
    "pfrt_broadcast_i64": {3: _abi.I64_ARRAY},
    "pfrt_state_name": {"result": ctypes.c_char_p},
    "pfrt_state_gather": {0: ctypes.c_char_p},
    "pfrt_state_set": {0: ctypes.c_char_p},
    "pfrt_state_save": {0: ctypes.c_char_p},
    "pfrt_state_load": {0: ctypes.c_char_p, 1: _abi.I64_ARRAY},
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


def _finalize(fn):
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    fn.pfrt_finalize()


_BYTE = ctypes.c_byte


def _address(array):
    """The address of a C-contiguous array's data (``array.ctypes.data``,
    cheaper through the buffer protocol where the array is writable)."""
    try:
        return ctypes.addressof(_BYTE.from_buffer(array))
    except (TypeError, ValueError, BufferError):  # read-only, empty
        return array.ctypes.data


class Program:
    """One rank's compiled step, loaded from ``librank<r>.so``.

    ``seed`` initialises the parameters (``pf_init_params``); the program
    then takes its inputs from :meth:`step` (``pfrt_use_user_inputs(1)``).
    """

    def __init__(self, path, rank, world_size, seed, threads=None, job_size=None):
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
        missing = [name for name in REQUIRED if not hasattr(lib, name)]
        if missing:
            raise BackendUnavailable(
                f"{path} does not export {', '.join(missing)}: it was built with an older "
                "compiler or runtime; rebuild them (build/bin) and run again (the compile cache "
                "notices the new tools)")
        # Signatures from runtime/include/pfrt/pfrt_abi.def (see pipeflow._abi).
        fn = _abi.bind(lib, REQUIRED, POINTERS)
        _abi.bind(lib, [name for name in OPTIONAL if hasattr(lib, name)], POINTERS, into=fn)
        self.has_state = all(hasattr(lib, name) for name in STATE)
        if self.has_state:
            _abi.bind(lib, STATE, POINTERS, into=fn)
        _in_use.add(real)
        self.path = real
        self.lib = lib
        self.fn = fn
        if job_size is not None and job_size != world_size:
            # A program on ranks 0..world_size-1 of a larger job: its own communicator.
            if not hasattr(fn, "pfrt_init_program"):
                raise BackendUnavailable(
                    f"{path} does not export pfrt_init_program (a program on part of the job): "
                    "it was linked with an older runtime; rebuild the runtime and run again")
            if fn.pfrt_init_program(world_size) != 0:
                raise BackendUnavailable(f"pfrt_init_program failed in {path}")
        elif fn.pfrt_init(None, None) != 0:
            raise BackendUnavailable(f"pfrt_init failed in {path}")
        atexit.register(_finalize, fn)
        if fn.pfrt_world_size() != world_size or fn.pfrt_rank() != rank:
            raise BackendUnavailable(
                f"MPI says this process is rank {fn.pfrt_rank()} of {fn.pfrt_world_size()}, but "
                f"the environment says rank {rank} of {world_size}: start the job with "
                "python3 -m pipeflow.distributed.launch (or mpiexec)")
        if world_size > 1:
            _install_abort_hook()
        if threads is None:
            threads = int(os.environ.get("PIPEFLOW_NUM_THREADS", "1") or 1)
        fn.pfrt_set_num_threads(max(1, threads))
        fn.pf_init_params(int(seed) & 0xFFFFFFFFFFFFFFFF)
        fn.pfrt_use_user_inputs(1)
        self._scalars = {"lr": fn.pfrt_scalar(b"lr")}
        # A step's calls, their argument counts checked once (see step).
        self._begin_step = fn.pfrt_begin_step.checked(1)
        self._set_input = fn.pfrt_set_input.checked(3)
        self._end_step = fn.pfrt_end_step.checked(0)
        self._loss_count = fn.pfrt_loss_count.checked(0)
        self._loss_value = fn.pfrt_loss_value.checked(1)
        self._cuda_active = fn.pfrt_cuda_active.checked(0) if hasattr(fn, "pfrt_cuda_active") else None
        self.run_step = fn.pf_step.checked(1)  # the compiled step (the C function)

    def scalar(self, name):
        """The run-time scalar ``name`` (``pfrt_scalar``: a float the host writes)."""
        ptr = self._scalars.get(name)
        if ptr is None:
            ptr = self._scalars[name] = self.fn.pfrt_scalar(name.encode())
        return ptr

    def step(self, step, lr, inputs):
        """Runs step ``step`` on ``inputs`` (``(index, C-contiguous array)`` pairs,
        this rank's local data) with the learning rate ``lr``: a number (the
        scalar "lr") or ``{scalar name: value}`` (every parameter group's, see
        ``pf.optimizer``); returns the losses this rank reported, one per
        micro-batch (empty elsewhere)."""
        self._begin_step(step)
        scalars = lr if isinstance(lr, dict) else {"lr": lr}
        for name, value in scalars.items():
            self.scalar(name)[0] = float(value)
        for index, array in inputs:
            if self._set_input(index, _address(array), array.nbytes) != 0:
                raise BackendUnavailable(f"pfrt_set_input({index}) failed")
        if self._cuda_active is not None and self._cuda_active():
            # A GPU rank: its second step is captured as a CUDA graph, then
            # replayed (libpfrt loads the inputs and reports around it).
            self.fn.pfrt_cuda_run_step(ctypes.cast(self.lib.pf_step, ctypes.c_void_p), step)
        else:
            self.run_step(step)
        self._end_step()
        count = self._loss_count()
        return np.fromiter(map(self._loss_value, range(count)), np.float32, count)

    def outputs(self):
        """The step results this rank reported in the last step
        (``pfrt_report_output``): ``{index: bytes}``; empty when the object
        reports none or predates the entry points."""
        fn = self.fn
        if not hasattr(fn, "pfrt_output_count"):
            return {}
        found = {}
        for index in range(fn.pfrt_output_count()):
            size = fn.pfrt_output_bytes(index)
            if size < 0:
                continue
            buf = np.empty((size,), np.uint8)
            if fn.pfrt_output_copy(index, buf.ctypes.data, size) != 0:
                raise BackendUnavailable(f"pfrt_output_copy({index}) failed")
            found[index] = buf
        return found

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
            if self.fn.pfrt_box_all_gather(flat.ctypes.data, out.ctypes.data, code, 1, shape, 0,
                                            group, len(group)) != 0:
                raise BackendUnavailable("pfrt_box_all_gather failed")
        return out

    def broadcast(self, array, root, ranks):
        """``root``'s float32 ``array`` on every member of ``ranks`` (world ranks,
        ``root`` among them); a collective. Returns the array (a new one on
        the members other than ``root``)."""
        buf = np.array(array, dtype=np.float32, copy=True).reshape(-1)
        group = _group(ranks)
        if buf.size and self.fn.pfrt_broadcast(buf.ctypes.data, buf.size, int(root), group,
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
            code = self.fn.pfrt_broadcast(buf.ctypes.data, buf.size, int(root), group, len(group))
        elif buf.dtype == np.int64 and hasattr(self.fn, "pfrt_broadcast_i64"):
            code = self.fn.pfrt_broadcast_i64(buf.ctypes.data, buf.size, int(root), group, len(group))
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
        fn = self.fn
        return [fn.pfrt_state_name(k).decode() for k in range(fn.pfrt_state_count())]

    def state_gather(self, name, shape, dtype):
        """The logical value of ``name`` (``shape``, ``dtype``) on every rank: a
        collective over the whole job (every process, same name, same order)."""
        self._need_state()
        out = np.empty(tuple(shape), dtype=dtype)
        if self.fn.pfrt_state_gather(name.encode(), out.ctypes.data, out.nbytes) != 0:
            raise BackendUnavailable(f"pfrt_state_gather({name!r}) failed")
        return out

    def state_set(self, name, logical):
        """Copies this rank's box of ``name`` out of its whole logical value (not a
        collective); the caller checks that this rank holds ``name`` and the size."""
        self._need_state()
        data = np.ascontiguousarray(logical)
        if self.fn.pfrt_state_set(name.encode(), data.ctypes.data, data.nbytes) != 0:
            raise BackendUnavailable(f"pfrt_state_set({name!r}) failed")

    def state_save(self, directory, step):
        """Writes a checkpoint of every rank's persistent tensors (a collective;
        world rank 0 writes)."""
        self._need_state()
        if self.fn.pfrt_state_save(os.fsencode(directory), int(step)) != 0:
            raise BackendUnavailable(f"pfrt_state_save({directory!r}) failed")

    def __repr__(self):
        return f"Program({self.path!r})"


def _group(ranks):
    ranks = [int(r) for r in ranks]
    return (ctypes.c_int64 * len(ranks))(*ranks)
