"""Tracing ``nn.Graph.build`` into pf IR.

While a :class:`Tracer` is active, ops on lazy tensors append pf ops to one
function. Every op carries the user's source location, the stage of the
innermost enclosing module that has one (``pf.stage``) and ``pf.checkpoint``
when the innermost module with a checkpointing setting asked for activation
checkpointing (``pf.checkpoint_selective`` when it asked for
``"selective"``). Ops outside any staged module take the latest stage of
their operands; ``pf.to_global`` outside a staged module gets no stage (it
is the hand-over between stages).

The tracer records which parameters and buffers the step reads
(``param_objects``); the graph then makes their Python values the compiled
program's initial values (``nn.parameter.set_runtime_init``). Host tensors
(made in ``build``, captured from outside it, and buffers without an
initializer the compiler can reproduce, such as a causal mask) are not
states: used by a traced op, their value becomes a dense ``pf.constant``
(:meth:`Tracer.value`). Tensor methods
reach :func:`to_global`, :func:`mark_loss` and :func:`unsupported` through
``pipeflow._registry`` (``tensor`` sits below this module).
"""

import hashlib

import numpy as np

from . import _layout, _random, _registry, amp, dtypes, env, ir
from . import config as config_mod
from . import sbp as sbp_mod
from ._errors import CompileError
from ._source import user_location
from .placement import placement as Placement
from .tensor import Tensor

_active = None


def current():
    """The active tracer, or ``None`` outside ``nn.Graph.build``."""
    return _active


def fail(message, notes=()):
    """Raises a located CompileError while tracing, else a ValueError."""
    if _active is not None:
        raise CompileError.at(user_location(), message, notes)
    raise ValueError(message)


def unsupported(what):
    raise CompileError.at(user_location(), f"{what} is not supported yet")


class Tracer:
    """Records one step function; see the module docstring for the rules."""

    def __init__(self, graph_name, names, configs, module_names, buffers=frozenset()):
        self.graph_name = graph_name
        self.names = names                  # id(param or buffer) -> symbol name
        self.buffers = buffers              # ids of the buffers among them
        self.configs = configs              # id(module) -> ModuleConfig
        self.module_names = module_names    # id(module) -> dotted path
        self.module = ir.Module()
        self.func = None
        self.scopes = []
        self.reads = {}                     # id(param) -> ir.Value
        self.param_objects = {}             # symbol -> Parameter
        self.value_stage = {}               # id(ir.Value) -> producing stage
        self.value_loc = {}
        self.stage_locs = {}                # stage -> first op location
        self.loss = None
        # A local graph: where its local parameters live (else None).
        self.local_placement = None
        self.loss_loc = None
        # nn.utils.clip_grad_norm_ calls: (parameters, max_norm, location).
        self.clip_requests = []
        self.seed = _random.initial_seed()  # the compiled program's parameter seed
        # Micro-batches the compiler cuts the step into (pf-microbatch):
        # counts taken from a traced shape must follow the cut.
        self.microbatches = 1
        self._placements = {}
        # Host constants of buffers without initializer: (id, placement) -> value.
        self.constants = {}
        self.constant_values = {}          # equal large host constants: one pf.constant
        self.constant_buffers = {}          # id(buffer) -> name, once used as a constant
        self.operand_placement = None       # the placement of the last op's traced operands

    def __enter__(self):
        global _active
        if _active is not None:
            raise RuntimeError("nn.Graph.build() cannot trace another graph while tracing")
        _active = self
        return self

    def __exit__(self, *exc):
        global _active
        _active = None

    # Types ---------------------------------------------------------------------

    def resolve(self, placement):
        """The IR placement of a user placement ("cuda" -> "cpu" on opt-in)."""
        found = self._placements.get(placement)
        if found is not None:
            return found
        device = placement.type
        if device == "cuda" and not config_mod.gpu_available():
            if not config_mod.cuda_as_cpu_enabled():
                raise CompileError.at(
                    placement._loc or user_location(),
                    f"{placement!r} places tensors on 'cuda' but this machine has no GPU",
                    ["to run the program on CPUs instead, set PIPEFLOW_CUDA_AS_CPU=1 or call "
                     "pipeflow.config.cuda_as_cpu(True) before compiling"])
            device = "cpu"
        elif device == "cuda" and config_mod.cuda_as_cpu_enabled():
            device = "cpu"
        world = env.get_world_size()
        if world > 1 and max(placement.flat_ranks) >= world:
            raise CompileError.at(
                placement._loc or user_location(),
                f"{placement!r} uses rank {max(placement.flat_ranks)} but the job has only {world} processes")
        found = ir.Placement(device, placement.hierarchy, placement.flat_ranks)
        self._placements[placement] = found
        return found

    def global_type(self, shape, dtype, placement, sbp=None):
        return ir.GlobalType(shape, dtype.mlir, self.resolve(placement),
                             None if sbp is None else [s.mlir() for s in sbp])

    def lazy(self, value, dtype, placement, sbp=None):
        return Tensor._new(dtype, value.type.shape, placement=placement, sbp=sbp, node=value)

    # Scopes --------------------------------------------------------------------

    def enter(self, module, args, kwargs):
        """Enters ``module``'s scope; returns its arguments, a lazy tensor on
        another placement than the module's stage moved there (as OneFlow's
        ``set_stage(stage_id, placement)`` does): a ``pf.to_global`` keeping
        the layout when it is known and fits, else leaving it to the
        compiler's SBP inference."""
        config = self.configs.get(id(module))
        target = config.stage_placement if config is not None else None
        if target is not None:
            args = [self._move(a, target) for a in args]
            kwargs = {k: self._move(v, target) for k, v in kwargs.items()}
        self.scopes.append((module, config))
        return args, kwargs

    def _move(self, tensor, placement):
        if getattr(tensor, "_node", None) is None or tensor.placement == placement:
            return tensor
        sbp = tensor.sbp if tensor.sbp is not None and len(tensor.sbp) == placement.ndim else None
        result = self.global_type(tensor.shape, tensor.dtype, placement, sbp)
        op = self.emit("pf.to_global", [self.value(tensor)], [result])
        return self.lazy(op.result, tensor.dtype, placement, sbp)

    def exit(self):
        self.scopes.pop()

    def module_name(self, module):
        return self.module_names.get(id(module), f"<unregistered {type(module).__name__}>")

    def stage(self):
        for _, config in reversed(self.scopes):
            if config is not None and config.stage_id is not None:
                return config.stage_id
        return None

    def stage_scope_name(self):
        for module, config in reversed(self.scopes):
            if config is not None and config.stage_id is not None:
                return self.module_name(module)
        return None

    def checkpointing(self):
        for _, config in reversed(self.scopes):
            if config is not None and config.activation_checkpointing is not None:
                return config.activation_checkpointing
        return False

    # Emission ------------------------------------------------------------------

    def emit(self, name, operands, result_types, attrs=None, *, symbol=None):
        loc = user_location()
        explicit = self.stage()
        stages = [self.value_stage.get(id(v)) for v in operands]
        known = [s for s in stages if s is not None]
        if explicit is not None:
            for value, stage in zip(operands, stages, strict=True):
                if stage is not None and stage > explicit:
                    raise CompileError.at(
                        loc,
                        f"stage cycle: this op is in stage {explicit} (module "
                        f"'{self.stage_scope_name()}') but uses a value computed in the later "
                        f"stage {stage}; a pipeline stage can only feed later stages",
                        [f"the value was computed at {self.value_loc.get(id(value))}"])
        stage = explicit
        if stage is None and name not in ("pf.to_global",):
            stage = max(known) if known else None
        attrs = dict(attrs or {})
        if stage is not None:
            attrs["pf.stage"] = stage
        checkpointing = self.checkpointing()
        if name not in ("pf.read_param", "pf.write_param") and checkpointing:
            # "selective": pf-selective-checkpoint picks the ops to recompute.
            selective = checkpointing == "selective"
            attrs["pf.checkpoint_selective" if selective else "pf.checkpoint"] = ir.UNIT
        if name not in ("pf.read_param", "pf.write_param") and amp.current() is not None:
            attrs["pf.autocast"] = amp.current()
        op = ir.Op(name, operands, result_types, attrs, loc, symbol)
        self.func.ops.append(op)
        produced = None if name == "pf.read_param" else (stage if stage is not None else (max(known) if known else None))
        for result in op.results:
            self.value_stage[id(result)] = produced
            self.value_loc[id(result)] = loc
        if stage is not None:
            self.stage_locs.setdefault(stage, loc)
        return op

    # Parameters, buffers and host constants -------------------------------------

    def is_host_constant(self, tensor):
        """A buffer without an initializer the compiler can reproduce (a causal
        mask made with ``flow.tril``): the step uses its Python value as a
        constant, and ops on it alone compute with numpy at trace time
        (``buffer[:, :t] == 0``)."""
        return (id(tensor) in self.buffers and getattr(tensor, "_init", None) is None
                and tensor._node is None)

    def is_traced(self, tensor):
        """Whether an op on ``tensor`` is traced: a lazy tensor, or a parameter
        or buffer the step reads (not a host constant)."""
        return tensor._node is not None or (
            id(tensor) in self.names and not self.is_host_constant(tensor))

    def value(self, tensor, placement=None):
        """The IR value of a tensor used by an op: lazy, a parameter/buffer
        read, or a host tensor as a dense ``pf.constant`` on ``placement``
        (the traced operands' placement; see :meth:`constant`)."""
        if tensor._node is not None:
            return tensor._node
        read = self.reads.get(id(tensor))
        if read is not None:
            return read
        name = self.names.get(id(tensor))
        if name is None or self.is_host_constant(tensor):
            return self._host_value(tensor, name, placement)
        placement, sbp = tensor.placement, tensor.sbp
        if not tensor.is_global:
            if self.local_placement is None:
                raise CompileError.at(
                    user_location(),
                    f"parameter '{name}' is a local tensor, but the graph's inputs are global",
                    ["make its module global first: module.to_global(placement=..., sbp=...)",
                     "or call the graph with local tensors (a local graph)"])
            placement, sbp = self.local_placement, (sbp_mod.broadcast,)
        if tensor.dtype in dtypes.LOW:
            raise CompileError.at(
                getattr(tensor, "_loc", None) or user_location(),
                f"parameter '{name}' has dtype {tensor.dtype}; compiled graphs keep f32 parameters "
                "(master weights)", ["for mixed precision: graph.config.enable_amp(True, "
                                     "dtype=flow.bfloat16) or with flow.autocast(...)"])
        type = self.global_type(tensor.shape, tensor.dtype, placement, sbp)
        buffer = id(tensor) in self.buffers
        # The initializer depends on the code only, never on what a process
        # did with the value, so every process compiles the same program. A
        # parameter compiled with its value (not ``uses_recipe``) receives it
        # before the first step (nn._graph.state.load_initial).
        init = getattr(tensor, "_init", None) or "#pf.init<zeros>"
        self.module.params[name] = ir.Param(name, type, init, buffer, getattr(tensor, "_loc", None))
        self.param_objects[name] = tensor
        value = self.emit("pf.read_param", [], [type], symbol=name).result
        self.reads[id(tensor)] = value
        return value

    def _host_value(self, tensor, name, placement):
        """A host tensor (made in build(), captured from outside, or a buffer
        without initializer) as a constant on ``placement``: its value is
        frozen into the step, as OneFlow does with free eager tensors."""
        array = tensor._local if tensor._placement is None else tensor._logical
        if array is None:
            what = f"buffer '{name}' has no initializer the compiler can reproduce and" if name else \
                f"a global tensor of shape {list(tensor.shape)} that is neither a graph input nor a " \
                "parameter or buffer of this graph is used in build(), and"
            raise CompileError.at(
                user_location(),
                f"{what} its value is spread over processes, so it cannot be a constant of the step",
                ["pass it to the graph as an input, or register it on a module with a value every "
                 "process knows (a broadcast layout)"])
        if placement is None:
            placement = tensor.placement or self.local_placement
        key = (id(tensor), placement)
        if name is not None and key in self.constants:
            return self.constants[key]
        # Equal large constants are one: every block of a GPT registers its
        # own causal mask (nanoGPT's "bias" buffer), 1024 x 1024 and 6.8 MB
        # of IR text each, the same in all 48 of GPT-2 XL's layers.
        same = None
        if array.size >= 4096:
            same = (tensor.dtype, array.shape, placement, self.stage(), self.checkpointing(),
                    hashlib.sha256(np.ascontiguousarray(array).tobytes()).digest())
        value = self.constant_values.get(same) if same is not None else None
        if value is None:
            value = self.constant(array, tensor.dtype, placement)
            if same is not None:
                self.constant_values[same] = value
        if name is not None:
            self.constants[key] = value
            self.constant_buffers[id(tensor)] = name
        return value

    def constant(self, array, dtype, placement, shape=None):
        """A ``pf.constant`` broadcast on ``placement``: the numpy ``array``, or
        a one-element ``array`` splat to ``shape``."""
        array = np.ascontiguousarray(array, dtype=dtype.numpy)
        shape = array.shape if shape is None else tuple(shape)
        value = array if array.shape == shape else array.reshape(-1)[0].item()
        sbp = (sbp_mod.broadcast,) * placement.ndim
        type = self.global_type(shape, dtype, placement, sbp)
        return self.emit("pf.constant", [], [type], {"value": ir.Dense(value, shape, dtype.mlir)}).result

    def write(self, tensor, value):
        """``pf.write_param`` of a new value into a parameter or buffer."""
        name = self.constant_buffers.get(id(tensor))
        if name is not None or self.is_host_constant(tensor):
            raise CompileError.at(
                user_location(),
                f"buffer '{name or self.names.get(id(tensor))}' is written in build() but has no "
                "initializer the compiler can reproduce (its value is used as a constant)",
                ["give it one with pipeflow.nn.init (e.g. nn.init.zeros_(buffer))"])
        self.value(tensor)
        self.emit("pf.write_param", [value], [], symbol=self.names[id(tensor)])


def to_global(tensor, placement, sbp):
    """``Tensor.to_global`` on a lazy tensor: an explicit ``pf.to_global``."""
    tracer = _active
    placement = tensor.placement if placement is None else placement
    if not isinstance(placement, Placement):
        fail(f"to_global() expects a pipeflow.placement, got {placement!r}")
    if sbp is None:
        if tensor.sbp is None or placement.ndim != tensor.placement.ndim:
            fail("to_global() needs an sbp here: the tensor's layout is not fixed yet")
        sbp = tensor.sbp
    try:
        sbp = sbp_mod.normalize(sbp, placement.ndim)
        _layout.check_layout(tensor.shape, placement, sbp)
    except (TypeError, ValueError) as err:
        fail(f"to_global(): {err}")
    result = tracer.global_type(tensor.shape, tensor.dtype, placement, sbp)
    op = tracer.emit("pf.to_global", [tracer.value(tensor)], [result])
    return tracer.lazy(op.result, tensor.dtype, placement, sbp)


def mark_loss(tensor):
    """``loss.backward()`` inside build: the scalar to minimise."""
    tracer = _active
    loc = user_location()
    if tracer is None:
        raise RuntimeError("backward() on a traced tensor outside nn.Graph.build()")
    if tracer.loss is not None:
        raise CompileError.at(loc, "backward() is called twice in build(); the graph has one loss",
                              [f"the first backward() is at {tracer.loss_loc}"])
    if tensor.shape != () or not tensor.dtype.is_floating_point:
        raise CompileError.at(
            loc, f"backward() needs a floating-point scalar loss, got shape {list(tensor.shape)} "
                 f"and dtype {tensor.dtype}")
    tracer.loss = tensor
    tracer.loss_loc = loc


_registry.trace.provide(to_global=to_global, mark_loss=mark_loss, unsupported=unsupported)
