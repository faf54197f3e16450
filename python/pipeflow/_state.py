"""The persistent state of a running graph's compiled program, seen from Python.

Once an ``nn.Graph`` has run, its compiled program owns the parameters,
buffers and optimizer states it uses. The runtime keeps a registry of them
on every rank (``pfrt_state_*``, registered by the generated
``pf_init_params`` under the compiled names: a parameter's symbol, e.g.
``model.linear.weight``, and ``<symbol>.momentum_buffer``, ``.exp_avg``,
``.exp_avg_sq`` for the optimizer's states). :class:`ProgramState` is that
registry for one graph on this process:

- ``names``: every name registered on any rank of the job, sorted. Each
  rank knows only its own, so the union is exchanged once, when the program
  is loaded (every process loads it at the graph's first call), and later
  decisions that depend on it agree on every rank.
- :meth:`gather_all` reads every tensor back in logical form. It is a
  collective over the whole job (``pfrt_state_gather``): every process
  calls it, which is why ``nn.Graph.state_dict()`` must be called on every
  process, as in OneFlow. In a process running alone nothing waits for
  anyone, so a single tensor is also read back on demand (:meth:`sync`,
  used by ``param.numpy()`` and ``module.state_dict()``).
- :meth:`set` copies a logical value into this rank's box
  (``pfrt_state_set``), without communication: every process passes the
  whole logical value and keeps its part.

Values read back or set are cached with the program's version (a counter
of its steps and of loads that change its step) and written into the Python
parameters and buffers, which are then readable until the next step
(``_synced_step`` holds the version).
"""

import numpy as np

from . import dtypes as dt
from ._errors import BackendUnavailable
from .tensor import Tensor

# Optimizer states by the compiled name's suffix (torch.optim's state keys).
OPTIMIZER_STATES = ("momentum_buffer", "exp_avg", "exp_avg_sq")
# A dynamic grad scaler's flag of the last step (pf-optimizer): 0, or NaN
# when a gradient was not finite. Not part of the graph's state dict.
FOUND_INF = "pf.found_inf"


class ProgramState:
    """The persistent tensors of one running graph (see the module docstring)."""

    def __init__(self, run, program, objects, world, collective):
        self.run = run
        self.graph_name = run.graph_name
        self.program = program
        self.objects = dict(objects)        # compiled name -> Parameter or buffer
        self.world = world
        self.cache = {}                     # name -> (step, logical array)
        self.writes = 0                     # set() calls (other graphs' copies go stale)
        self.symbol = {id(obj): name for name, obj in self.objects.items()}
        self.problem = None
        if program is None:
            self.problem = (f"this process (rank {run.rank}) runs no part of {self.graph_name}'s "
                            "compiled program")
            self.local, self.names = set(), []
        elif not program.has_state:
            self.problem = (f"{program.path} does not export pfrt_state_*: it was linked with an "
                            "older runtime; rebuild the runtime and run again")
            self.local, self.names = set(), []
        else:
            self.local = set(program.state_names())
            if world == 1:
                self.names = sorted(self.local)
            elif collective:
                self.names = _union(program, sorted(self.local), world)
            else:
                self.problem = (f"some ranks of the job run no part of {self.graph_name}'s compiled "
                                "program, so its state cannot be gathered")
                self.names = sorted(self.local)
        self.has_found_inf = FOUND_INF in self.names
        self.names = [n for n in self.names if n != FOUND_INF]
        self.info = {name: self._describe(name) for name in self.names}

    # What a name is ---------------------------------------------------------------------

    def _describe(self, name):
        """``(shape, numpy dtype, parameter symbol, optimizer-state kind or None)``;
        ``None`` for a name the front end cannot place."""
        obj = self.objects.get(name)
        if obj is not None:
            return tuple(obj.shape), obj.dtype.numpy, name, None
        base, _, kind = name.rpartition(".")
        obj = self.objects.get(base)
        if obj is not None:
            return tuple(obj.shape), obj.dtype.numpy, base, kind
        return None

    def shape_of(self, name):
        info = self.info.get(name)
        return None if info is None else info[0]

    def optimizer_states(self, symbol):
        """``{kind: compiled name}`` of the optimizer states of parameter ``symbol``."""
        return {info[3]: name for name, info in self.info.items()
                if info is not None and info[3] is not None and info[2] == symbol}

    def tensor(self, name, array):
        """``array`` as a tensor with the layout of ``name``'s parameter."""
        obj = self.objects[self.info[name][2]]
        if obj.placement is None:
            return Tensor._new(dt.from_numpy_dtype(array.dtype), array.shape, local=array)
        return Tensor._new(dt.from_numpy_dtype(array.dtype), array.shape, logical=array,
                           placement=obj.placement, sbp=obj.sbp)

    @property
    def step(self):
        """The number of steps the program has taken (the step of a checkpoint)."""
        return self.run.steps

    @property
    def version(self):
        """Changes whenever the program's state may have changed (every step)."""
        return self.run.version

    def set_step(self, step):
        """Makes the program go on from step ``step`` (Adam's bias correction and
        the step of the next checkpoint count from it)."""
        if int(step) != self.run.steps:
            self.run.steps = int(step)
            self.run.version += 1

    def _require(self, what):
        if self.problem is not None:
            raise BackendUnavailable(f"{what}: {self.problem}")

    # Reading back --------------------------------------------------------------------------

    def _gather(self, name, what):
        info = self.info.get(name)
        if info is None:
            raise BackendUnavailable(
                f"{what}: internal error: the compiled program of {self.graph_name} holds a "
                f"tensor '{name}' that belongs to no parameter or buffer of the graph")
        array = self.program.state_gather(name, info[0], info[1])
        self.cache[name] = (self.version, array)
        self._write_back(name, array)
        return array

    def found_inf(self):
        """Whether the last step found a non-finite gradient (a dynamic grad
        scaler's flag; a collective over the job, as :meth:`gather_all`)."""
        if not self.has_found_inf or self.problem is not None:
            return False
        flag = self.program.state_gather(FOUND_INF, (), np.dtype(np.float32))
        return not bool(np.isfinite(flag).all())

    def gather_all(self, what):
        """Every tensor's logical value, read back on every process: a collective
        over the whole job (every process must call it at the same point)."""
        self._require(what)
        for name in self.names:
            if self.info.get(name) is None:
                self._gather(name, what)  # raises on every rank alike
        return {name: self._gather(name, what) for name in self.names}

    def value(self, name, what):
        """The current logical value of ``name``: cached for this step, else read
        back when that needs no other process (a job of one process)."""
        cached = self.cache.get(name)
        if cached is not None and cached[0] == self.version:
            return cached[1]
        self._require(what)
        if self.world == 1:
            return self._gather(name, what)
        raise BackendUnavailable(
            f"{what}: '{name}' is trained by the compiled graph {self.graph_name}, which runs on "
            f"{self.world} processes, and its value was not read back since its last step; call "
            f"{self.graph_name}.state_dict() on every process first (reading the trained values "
            "back is a collective): it returns them and writes them into the modules, where they "
            "stay readable until the next step")

    def shared_value(self, name, what):
        """The current logical value of ``name`` for another graph's program
        (pipeflow.nn._graph.sharing): cached for this version, else read back,
        a collective over the job on several processes (every process's
        graph asks at the same step)."""
        cached = self.cache.get(name)
        if cached is not None and cached[0] == self.version:
            return cached[1]
        self._require(what)
        return self._gather(name, what)

    def sync(self, tensor, what):
        """Makes the Python value of a parameter or buffer the program trains current."""
        if tensor.__dict__.get("_synced_step") == self.version:
            return
        name = tensor.__dict__.get("_symbol")
        if name not in self.info:
            # Not in the program (a parameter no rank holds): its Python value stands.
            return
        array = self.value(name, what)
        if tensor.__dict__.get("_synced_step") != self.version:
            self._write_back(name, array)

    def _write_back(self, name, array):
        obj = self.objects.get(name)
        if obj is None:
            return
        if obj.placement is None:
            obj._local = array
        else:
            obj._logical = array
        obj.__dict__["_synced_step"] = self.version

    # Setting -------------------------------------------------------------------------------

    def check(self, name, array, what):
        """``array`` as ``name``'s dtype, or a ValueError naming the mismatch."""
        info = self.info.get(name)
        if info is None:
            raise KeyError(name)
        shape, dtype = info[0], info[1]
        if tuple(np.shape(array)) != tuple(shape):
            raise ValueError(f"size mismatch for '{name}': copying a value of shape "
                             f"{list(np.shape(array))}, {what} has shape {list(shape)}")
        return np.array(array, dtype=dtype, copy=True, order="C")

    def set(self, name, array, what):
        """Sets the logical value of ``name`` (checked with :meth:`check` first):
        this rank copies its box; the Python object takes the value."""
        self._require(what)
        array = self.check(name, array, what)
        if name in self.local:
            self.program.state_set(name, array)
        self.writes += 1
        self.cache[name] = (self.version, array)
        self._write_back(name, array)

    def save(self, directory, what):
        """``pfrt_state_save``: a checkpoint of every tensor (a collective of
        the program's ranks; a rank outside them has nothing to write)."""
        if getattr(self.run, "outside", False):
            return
        self._require(what)
        self.program.state_save(directory, self.step)


def _union(program, names, world):
    """Every process's sorted names, merged: two all-gathers over the job."""
    blob = "\0".join(names).encode()
    sizes = program.all_gather(np.array([len(blob)], np.int64), range(world)).reshape(-1)
    width = (int(sizes.max()) + 7) // 8 * 8
    padded = np.zeros(max(width, 8), np.uint8)
    padded[:len(blob)] = np.frombuffer(blob, np.uint8)
    rows = program.all_gather(padded.view(np.int64), range(world))
    out = set()
    for size, row in zip(sizes, rows, strict=True):
        text = row.view(np.uint8)[:int(size)].tobytes().decode()
        out.update(n for n in text.split("\0") if n)
    return sorted(out)
