"""A graph's state: ``state_dict``, ``load_state_dict`` and the values loaded
before the first call.

Before a graph's first call its state is the modules' values plus what
``load_state_dict`` queued for the program (optimizer states, the step;
``graph._pending_state`` and ``graph._pending_step``), which
:func:`load_initial` puts into the program once it is loaded. After the first
call the compiled program owns the values: they are read back and set
through its ``pipeflow._state.ProgramState`` (``run.state``).
"""

from collections import OrderedDict

import numpy as np

from ... import _checkpoint, _feed, _grad_scaler, _layout, _state
from ... import dtypes as dt
from ..._errors import StateDictError
from ...tensor import Tensor
from ..module import IncompatibleKeys
from ..parameter import Parameter, storage
from . import tracing


def _local_tensor(array):
    return Tensor._new(dt.from_numpy_dtype(array.dtype), array.shape, local=array)


def _step_tensor(step):
    return _local_tensor(np.array([int(step)], np.int64))


def _kind_of(tensor):
    return "parameter" if isinstance(tensor, Parameter) else "buffer"


def module_entries(graph):
    """Every module state entry by its flat key ``attr.key``: ``(attr, key, tensor)``."""
    out = OrderedDict()
    for attr, module in graph._modules.items():
        for key, value in module._state_entries():
            out.setdefault(f"{attr}.{key}", (attr, key, value))
    return out


def state_dict(graph):
    """See ``Graph.state_dict``."""
    out = _state_dict(graph)
    scaler = graph._grad_scaler
    if scaler is not None:
        # The grad scaler's state (pipeflow._grad_scaler), as [1] tensors.
        out[_grad_scaler.SCALE_KEY] = _local_tensor(np.array([scaler._scale], np.float64))
        out[_grad_scaler.GROWTH_KEY] = _step_tensor(scaler._growth_tracker)
    return out


def _state_dict(graph):
    run = graph._run
    if run is None:
        out = OrderedDict((name, m.state_dict()) for name, m in graph._modules.items())
        for name, (value, _) in graph._pending_state.items():
            out[name] = _local_tensor(value)
        if graph._pending_step is not None:
            out[_checkpoint.STEP_KEY] = _step_tensor(graph._pending_step[0])
        return out
    if run.outside:
        # A rank outside the program's: the modules' values, whose parameters
        # placed on the program's ranks hold nothing here (as OneFlow's).
        out = OrderedDict((name, m.state_dict()) for name, m in graph._modules.items())
        out[_checkpoint.STEP_KEY] = _step_tensor(run.steps)
        return out
    state = run.state
    values = state.gather_all(f"{graph.name}.state_dict()")
    out = OrderedDict((name, m.state_dict()) for name, m in graph._modules.items())
    for name in state.names:
        if name not in state.objects:
            out[name] = state.tensor(name, values[name])
    out[_checkpoint.STEP_KEY] = _step_tensor(run.steps)
    return out


def load_state_dict(graph, state_dict, strict, loc):
    """See ``Graph.load_state_dict``; ``loc`` is the user's call."""
    if not isinstance(state_dict, dict):
        raise TypeError(f"{graph.name}.load_state_dict() expects a dict, got {type(state_dict).__name__}")
    if graph._run is not None and graph._run.outside:
        return IncompatibleKeys([], [])  # no part of the program here: nothing to load
    loader = _Loader(graph, loc)
    for key, value in state_dict.items():
        loader.read(key, value)
    missing = loader.check(strict)
    loader.apply()
    return IncompatibleKeys(missing, loader.unexpected)


class _Loader:
    """One ``load_state_dict`` call: every entry checked and sorted into the
    tensor it sets, so that nothing is loaded unless all of it can be."""

    def __init__(self, graph, loc):
        self.graph, self.loc = graph, loc
        self.run = graph._run
        self.state = self.run.state if self.run is not None else None
        if self.state is not None:
            self.state._require(f"{graph.name}.load_state_dict()")
        self.entries = module_entries(graph)
        self.names = {} if self.state is not None else tracing.naming(graph)[0]
        # key -> (kind "state" | "module" | "pending", target, array)
        self.targets = OrderedDict()
        self.given, self.unexpected, self.errors = set(), [], []
        self.step = None
        self.scaler = {}  # the grad scaler's entries (pipeflow._grad_scaler.KEYS)

    def _array(self, key, value):
        array = value.numpy() if isinstance(value, Tensor) else np.asarray(value)
        if array.dtype.kind not in "biuf":
            self.errors.append(f"'{key}' holds {array.dtype} values, not numbers")
            return None
        return array

    def _module_entry(self, key, obj, value):
        array = self._array(key, value)
        if array is None:
            return
        if tuple(array.shape) != tuple(obj.shape):
            self.errors.append(f"size mismatch for '{key}': copying a value of shape "
                               f"{list(array.shape)}, the {_kind_of(obj)} has shape {list(obj.shape)}")
            return
        self.given.add(id(obj))
        state = self.state
        name = state.symbol.get(id(obj)) if state is not None else None
        if name is not None and name in state.info:
            self.targets[name] = ("state", name, array)
        else:
            self.targets[("module", id(obj))] = ("module", obj, array)

    def _optimizer_entry(self, key, name, shape, value):
        array = self._array(key, value)
        if array is None:
            return
        if tuple(array.shape) != tuple(shape):
            self.errors.append(f"size mismatch for '{key}': copying a value of shape "
                               f"{list(array.shape)}, the optimizer state has shape {list(shape)}")
            return
        self.targets[name] = ("state" if self.state is not None else "pending", name, array)

    def _step_entry(self, key, value):
        array = self._array(key, value)
        if array is not None and (array.size != 1 or array.dtype.kind not in "iu"
                                  or int(array.reshape(-1)[0]) < 0):
            self.errors.append(f"'{key}' must hold one non-negative integer, got {array!r}")
        elif array is not None:
            self.step = int(array.reshape(-1)[0])

    def read(self, key, value):
        """Sorts one entry of the state dict (nested per module attribute or flat)."""
        state, entries = self.state, self.entries
        if key == _checkpoint.STEP_KEY:
            self._step_entry(key, value)
        elif key in _grad_scaler.KEYS and self.graph._grad_scaler is not None:
            array = self._array(key, value)
            if array is not None:
                self.scaler[key] = array.reshape(-1)[0]
        elif key == _state.FOUND_INF:
            pass  # the last step's flag (a checkpoint of the runtime's): not state
        elif key in self.graph._modules and isinstance(value, dict):
            for sub, v in value.items():
                flat = f"{key}.{sub}"
                if flat in entries:
                    self._module_entry(flat, entries[flat][2], v)
                else:
                    self.unexpected.append(flat)
        elif not isinstance(key, str):
            self.unexpected.append(repr(key))
        elif key in entries:
            self._module_entry(key, entries[key][2], value)
        elif state is not None and state.info.get(key) is not None:
            info = state.info[key]
            if info[3] is None:
                self._module_entry(key, state.objects[key], value)
            else:
                self._optimizer_entry(key, key, info[0], value)
        else:
            base, _, kind = key.rpartition(".")
            if state is None and base in entries and kind in _state.OPTIMIZER_STATES:
                obj = entries[base][2]
                self._optimizer_entry(key, f"{self.names.get(id(obj), base)}.{kind}", obj.shape, value)
            else:
                self.unexpected.append(key)

    def check(self, strict):
        """Raises the first problem (the others as notes); returns the missing keys."""
        missing = [flat for flat, (_, _, obj) in self.entries.items() if id(obj) not in self.given]
        errors, unexpected, graph = self.errors, self.unexpected, self.graph
        if unexpected:
            errors.append(f"unexpected key{'s' if len(unexpected) > 1 else ''} "
                          + ", ".join(f"'{k}'" for k in unexpected)
                          + f": {graph.name} has no parameter, buffer or optimizer state of that name")
        if strict and missing:
            errors.append("missing key" + ("s " if len(missing) > 1 else " ")
                          + ", ".join(f"'{k}'" for k in missing))
        if errors:
            notes = []
            if unexpected:
                example = next(iter(self.entries), "model.weight")
                notes.append(f"its keys are module attributes holding their modules' state dicts "
                             f"({', '.join(graph._modules)}), or flat names such as '{example}', "
                             f"optimizer states '<parameter>.momentum_buffer' (or '.exp_avg', "
                             f"'.exp_avg_sq') and '{_checkpoint.STEP_KEY}'")
            raise StateDictError.at(self.loc, f"{graph.name}.load_state_dict(): " + errors[0],
                                    errors[1:] + notes)
        return missing

    def apply(self):
        """Loads the checked values: into the program after the first call,
        else into the modules and the graph's queue for the first call."""
        scaler = self.graph._grad_scaler
        if _grad_scaler.SCALE_KEY in self.scaler:
            scaler._scale = float(self.scaler[_grad_scaler.SCALE_KEY])
        if _grad_scaler.GROWTH_KEY in self.scaler:
            scaler._growth_tracker = int(self.scaler[_grad_scaler.GROWTH_KEY])
        if self.run is None:
            for kind, target, array in self.targets.values():
                if kind == "module":
                    storage(target)[...] = array
                    target._loaded = True
                    target._loaded_loc = self.loc
                else:
                    self.graph._pending_state[target] = (array, self.loc)
            if self.step is not None:
                object.__setattr__(self.graph, "_pending_step", (self.step, self.loc))
            return
        if self.step is not None:
            self.state.set_step(self.step)
        for kind, target, array in self.targets.values():
            if kind == "state":
                self.state.set(target, array, "the graph's tensor")
            else:
                storage(target)[...] = array


def load_initial(graph, run, traced):
    """Before the first step: the values loaded into the modules, the graph
    (optimizer states, the step) and the optimizer go into the program."""
    state = run.state
    if run.outside:
        graph._pending_state.clear()  # no part of the program here
        object.__setattr__(graph, "_pending_step", None)
        return
    loaded = given_values(run, traced)
    pending = list(graph._pending_state.items())
    optim = [(o, id_, kind, value) for o in run.optimizers
             for id_, kinds in o._pending_state.items() for kind, value in kinds.items()]
    steps = [s for s in [graph._pending_step] + [o._pending_step for o in run.optimizers]
             if s is not None]
    if not (loaded or pending or optim or steps):
        return
    state._require(f"{graph.name}'s first call")
    for (name, _), value in zip(loaded, agreed_values(run, loaded), strict=True):
        state.set(name, value, "the parameter")
    for name, (value, loc) in pending:
        if name not in state.info:
            raise StateDictError.at(
                loc, f"the state dict loaded into {graph.name} holds '{name}', but its compiled "
                     "program keeps no such tensor (its optimizer has no state of that kind)",
                [f"{graph.name} is first called at {run.first_call}"])
        state.set(name, value, "the optimizer state")
    for o, id_, kind, (value, loc) in optim:
        name = f"{state.symbol.get(id_)}.{kind}"
        if name not in state.info:
            raise StateDictError.at(
                loc, f"the optimizer state dict loaded into {type(o).__name__} holds "
                     f"'{kind}' for parameter '{state.symbol.get(id_)}', but the compiled program "
                     "keeps no such state", [f"{graph.name} is first called at {run.first_call}"])
        state.set(name, value, "the optimizer state")
    for step, _ in steps:
        state.set_step(step)
    graph._pending_state.clear()
    object.__setattr__(graph, "_pending_step", None)
    for o in run.optimizers:
        o._pending_state.clear()
        o._pending_step = None


def given_values(run, traced):
    """``(name, tensor)`` of the parameters and buffers the program must start
    from their value (``traced.given``, or loaded since the trace), sorted.
    In a job of several processes one all-gather makes it the union of every
    process's list, so that every process sets the same ones (one process
    may have read a parameter that the others left untouched)."""
    state, given = run.state, set(traced.given)
    candidates = [(name, traced.param_objects[name]) for name in sorted(traced.param_objects)
                  if name in state.info and traced.param_objects[name].__dict__.get("_trained_by") is None]
    mine = [name in given or getattr(obj, "_loaded", False) for name, obj in candidates]
    if run.world > 1 and state.problem is None and candidates:
        rows = run.program.all_gather(_bits(mine), range(run.world))
        mine = [bool(np.bitwise_or.reduce(rows[:, i // 63] >> (i % 63)) & 1)
                for i in range(len(candidates))]
    return [item for item, chosen in zip(candidates, mine, strict=True) if chosen]


def _bits(flags):
    """Booleans packed 63 to an int64 (non-negative words)."""
    words = np.zeros(((len(flags) + 62) // 63,) or (1,), np.int64)
    for i, flag in enumerate(flags):
        if flag:
            words[i // 63] |= np.int64(1) << np.int64(i % 63)
    return words


def agreed_values(run, items):
    """The logical values of the parameters and buffers ``items`` (``(name,
    tensor)``, the same list on every process) that the program starts from.

    In a process running alone, each tensor's value. In a job of several
    processes, as OneFlow's ``to_global`` does with a broadcast layout, the
    value of the placement's first rank: every process would otherwise keep
    its own draw of an unseeded initialisation. A tensor whose logical value
    that rank does not know (a local tensor made global under a split) is
    assembled from the local parts of the placement's ranks first. Which
    processes know which value is agreed by one all-gather; every process
    makes the same collectives in the same order.
    """
    if run.world == 1 or not items:
        return [_known_value(obj) for _, obj in items]
    program, rank = run.program, run.rank
    rows = program.all_gather(_bits([_known_value(obj) is not None for _, obj in items]),
                              range(run.world))
    out = []
    for i, (name, obj) in enumerate(items):
        known = [int(r) for r in np.flatnonzero((rows[:, i // 63] >> (i % 63)) & 1)]
        placement = obj.placement or tracing.local_placement(obj.device)
        members = placement.flat_ranks
        root = members[0]
        value = _known_value(obj)
        if root not in known:
            value = _assembled(program, obj, name, placement, rank)
        if value is None or tuple(value.shape) != tuple(obj.shape):
            value = np.zeros(tuple(obj.shape), obj.dtype.numpy)
        out.append(program.broadcast_exact(np.ascontiguousarray(value, obj.dtype.numpy), root,
                                           [root] + [r for r in range(run.world) if r != root]))
    return out


def _known_value(obj):
    """The logical value this process holds of a parameter or buffer, or ``None``."""
    value = obj._storage()
    return value if isinstance(value, np.ndarray) else None


def _assembled(program, obj, name, placement, rank):
    """The logical value from the local parts of ``placement``'s ranks (an
    all-gather over them), on its members; ``None`` elsewhere."""
    if rank not in placement.flat_ranks:
        return None
    local = obj._local if isinstance(obj._local, np.ndarray) else None
    want = _layout.local_shape(tuple(obj.shape), placement, obj.sbp)
    if local is None or tuple(local.shape) != tuple(want):
        raise StateDictError.at(
            getattr(obj, "_loc", None),
            f"'{name}' is a global tensor whose value is spread over the processes, but on rank "
            f"{rank} its local part has shape {list(np.shape(local)) if local is not None else None}, "
            f"not {list(want)} ({tuple(obj.sbp)} on {placement})")
    blocks = program.all_gather(np.ascontiguousarray(local, obj.dtype.numpy), placement.flat_ranks)
    return _feed.assemble(blocks, tuple(obj.shape), placement, obj.sbp)
