"""Tracing a graph's ``build`` into a :class:`TracedGraph`.

A graph is traced for the kind of inputs of a call (their :func:`signature`:
shape, dtype, placement and SBP of each) and for its settings (the
:func:`fingerprint`); ``Graph.trace`` keeps the last trace and traces again
when either changes. When ``build`` returns, the parameters and buffers it
read take the compiled program's initial values as their Python values
(unless a value was loaded into them), the pipeline settings are checked
against the trace (``checks``) and the compile options derived (``options``).
"""

from ... import _random, _trace, dtypes, ir
from ... import config as config_mod
from ... import sbp as sbp_mod
from ..._errors import CompileError
from ..._source import code_location
from ...placement import placement as Placement
from ...tensor import Tensor
from ..parameter import Parameter, set_runtime_init, uses_recipe
from . import checks, options


class TracedGraph:
    """The result of tracing ``build``: the IR module plus what the options need."""

    def __init__(self, module, function, signature, options, tracer=None):
        self.module = module
        self.function = function
        self.signature = signature
        self.options = options
        self.param_objects = dict(tracer.param_objects) if tracer else {}
        self.seed = tracer.seed if tracer else _random.initial_seed()
        self.loss = tracer.loss if tracer else None
        self.loss_loc = tracer.loss_loc if tracer else None
        # The run-time learning-rate scalars: (name, optimizer index, group index).
        self.lr_scalars = []
        # An optimizer setting the compiled step cannot apply: (loc, message).
        self.rule_error = None
        # What build() returned (see rebuild): indices into the results.
        self.structure = None
        self.local = False  # a local graph: local inputs and outputs
        # Parameters and buffers compiled with their Python value (set before
        # the first step), not computed from their initializer.
        self.given = []

    @property
    def ops(self):
        return self.function.ops

    @property
    def params(self):
        return self.module.params

    def text(self):
        return ir.print_module(self.module)


def naming(graph):
    """The symbols of the graph's parameters and buffers (``{id: dotted name}``,
    the first name of a shared one) and the dotted paths of its modules."""
    names, module_names = {}, {}
    for attr, module in graph._modules.items():
        for pname, p in module.named_parameters(prefix=attr):
            names.setdefault(id(p), pname)
        for bname, b in module.named_buffers(prefix=attr):
            names.setdefault(id(b), bname)
        for mname, m in module.named_modules(prefix=attr):
            module_names.setdefault(id(m), mname)
    return names, module_names


def _buffer_ids(graph):
    """The ids of the graph's buffers (what the tracer declares as ``buffer``)."""
    return frozenset(id(b) for module in graph._modules.values() for b in module.buffers()
                     if not isinstance(b, Parameter))


def local_placement(device):
    """Where a local graph runs: rank 0 of the tensors' device, as OneFlow runs
    a graph over local tensors on their device."""
    return Placement(device, ranks=[0])


def is_local_call(args):
    """Whether ``args`` are local tensors (a local graph's inputs)."""
    return bool(args) and all(isinstance(a, Tensor) and not a.is_lazy and not a.is_global
                              for a in args)


def as_global(args):
    """A local graph's inputs as the global tensors it compiles for (the
    placement of :func:`local_placement`, broadcast); global ones unchanged."""
    return tuple(a.to_global(placement=local_placement(a.device), sbp=[sbp_mod.broadcast])
                 if isinstance(a, Tensor) and not a.is_lazy and not a.is_global else a
                 for a in args)


def signature(args, loc):
    """What a graph is compiled for per input: ``(shape, dtype name, placement,
    sbp)``; the inputs must be tensors made outside any trace, all global or
    all local (a local graph: placement cpu [0], broadcast)."""
    sig = []
    kinds = {a.is_global for a in args if isinstance(a, Tensor) and not a.is_lazy}
    for i, a in enumerate(args):
        if not isinstance(a, Tensor):
            raise CompileError.at(loc, f"graph input {i} is a {type(a).__name__}; inputs must be tensors")
        if a.is_lazy:
            raise CompileError.at(loc, f"graph input {i} is a traced tensor of another graph")
        if a.dtype not in dtypes.COMPILED:
            raise CompileError.at(
                loc, f"graph input {i} (shape {list(a.shape)}) has dtype {a.dtype}; a compiled "
                     "graph takes float32, bfloat16, float16, int64, int32 and bool tensors",
                ["convert it before the call: x.float(), x.long(), x.int() or x.bool()"])
        if not a.is_global:
            if len(kinds) > 1:
                raise CompileError.at(
                    loc, f"graph input {i} (shape {list(a.shape)}) is a local tensor but other "
                         "inputs are global; an nn.Graph takes all local or all global inputs",
                    ["convert it: x = x.to_global(placement=..., sbp=...), or pass only local tensors"])
            sig.append((tuple(a.shape), a.dtype.name, local_placement(a.device),
                        (sbp_mod.broadcast,)))
            continue
        sig.append((tuple(a.shape), a.dtype.name, a.placement, a.sbp))
    return tuple(sig)


def fingerprint(graph):
    """Everything besides the inputs that tracing depends on (a changed
    setting, module mode or parameter layout means tracing again)."""
    cfg = graph.config
    modules = []
    for name, module in graph._modules.items():
        modules.append((name, id(module)))
        modules.extend((id(m), m.training) for m in module.modules())
        for tensor in list(module.parameters()) + list(module.buffers()):
            modules.append((id(tensor), tensor.placement, tensor.sbp, getattr(tensor, "_init", None)))
    configs = tuple(sorted((key, c.stage_id, c.stage_placement, c.activation_checkpointing)
                           for key, (_, c) in graph._configs.items()))
    settings = (cfg.gradient_accumulation_steps, cfg.pipeline_schedule, cfg.num_chunks,
                cfg.pipeline_stages, cfg.balance, config_mod.cuda_as_cpu_enabled())
    optimizers = tuple(
        (id(o), id(s), tuple((tuple(id(p) for p in g["params"]), options.group_settings(g))
                             for g in o.param_groups))
        for o, s, _ in graph._optimizers)
    return (tuple(modules), configs, settings, optimizers)


def trace(graph, args, sig, loc):
    """Traces ``graph.build`` on lazy tensors like ``args``; ``sig`` is
    ``(signature(args), fingerprint(graph))``, ``loc`` the user's call."""
    names, module_names = naming(graph)
    configs = {key: cfg for key, (_, cfg) in graph._configs.items()}
    tracer = _trace.Tracer(graph.name, names, configs, module_names, _buffer_ids(graph))
    tracer.microbatches = graph.config.gradient_accumulation_steps
    local = is_local_call(args)
    if local:
        tracer.local_placement = local_placement(args[0].device)
    args = as_global(args)
    tracer.module.comments.append(f"pipeflow graph {graph.name}")
    with tracer:
        types = [tracer.global_type(a.shape, a.dtype, a.placement, a.sbp) for a in args]
        func = ir.Function("train_step", types)
        tracer.module.functions.append(func)
        tracer.func = func
        inputs = [tracer.lazy(v, a.dtype, a.placement, a.sbp) for v, a in zip(func.args, args, strict=True)]
        outputs = graph.build(*inputs)
    given = _adopt_initial_values(tracer)
    results, structure = _results(graph, outputs, tracer)
    func.name = "train_step" if tracer.loss is not None else "forward"
    func.results = results
    func.return_loc = code_location(type(graph).build)
    checks.check_pipeline(graph, tracer, args, loc)
    traced = TracedGraph(tracer.module, func, sig, options.compile_options(graph, tracer, func), tracer)
    traced.lr_scalars, traced.rule_error = options.update_rules(graph, tracer)
    traced.structure = structure
    traced.given = given
    traced.local = local
    traced.result_meta = tracer.result_meta
    traced.leaf_results = tracer.leaf_results
    return traced


def _adopt_initial_values(tracer):
    """What the compiled program starts from, for every parameter and buffer
    the step reads, and returns the names of those given by value.

    A parameter another compiled graph owns takes that program's current
    value before this one's first step (``sharing``). One nobody has set
    (``uses_recipe``) takes its initializer's value, which becomes its
    Python value too (``nn.parameter``). Every other one is compiled with
    exactly its Python value: ``state.load_initial`` sets it before the
    first step (on every process if any process gave it a value)."""
    given = []
    for name, obj in tracer.param_objects.items():
        if obj.__dict__.get("_trained_by") is not None:
            continue
        if uses_recipe(obj):
            set_runtime_init(obj, name, tracer.seed)
        else:
            given.append(name)
    return given


def _results(graph, outputs, tracer):
    """The IR values ``build`` returns (the loss first) and the structure of
    the returned value (see :func:`rebuild`)."""
    leaves = []
    structure = _flatten(graph, outputs, leaves)
    values = [out._node for out in leaves]
    tracer.result_meta = [(out.dtype, tuple(out.shape), out.placement) for out in leaves]
    if tracer.loss is not None:
        loss = tracer.loss._node
        values = [loss] + [v for v in values if v is not loss]
    # Each leaf's position among the function's results (the loss first).
    position = {id(v): j for j, v in enumerate(values)}
    tracer.leaf_results = [position[id(out._node)] for out in leaves]
    return values, structure


def _flatten(graph, out, leaves):
    """``out``'s tensors appended to ``leaves``; returns its structure: an
    index into them, or ``(kind, items)`` for tuples, lists and dicts."""
    if out is None:
        return ("none", None)
    if isinstance(out, (tuple, list)):
        return (type(out).__name__, [_flatten(graph, o, leaves) for o in out])
    if isinstance(out, dict):
        return ("dict", [(k, _flatten(graph, v, leaves)) for k, v in out.items()])
    if not isinstance(out, Tensor) or not out.is_lazy:
        raise CompileError.at(code_location(type(graph).build),
                              f"build() output {len(leaves)} is not a tensor computed in build() ({out!r})")
    leaves.append(out)
    return len(leaves) - 1


def rebuild(structure, tensors):
    """The value ``build`` returned, with ``tensors`` (in the order of the
    function's results) in place of its traced tensors."""
    if isinstance(structure, int):
        return tensors[structure]
    kind, items = structure
    if kind == "none":
        return None
    if kind == "dict":
        return {k: rebuild(v, tensors) for k, v in items}
    values = [rebuild(v, tensors) for v in items]
    return tuple(values) if kind == "tuple" else values
