"""``nn.Graph``: a training step traced to pf IR and compiled ahead of time.

Subclass it, assign modules as attributes in ``__init__``, configure stages
and micro-batches, and write the step in ``build``::

    class PipelineGraph(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            self.model.stage0.config.set_stage(stage_id=0, placement=P0)
            self.model.stage1.config.set_stage(stage_id=1, placement=P1)
            self.loss_fn = flow.nn.CrossEntropyLoss()
            self.config.set_gradient_accumulation_steps(2)
            self.add_optimizer(sgd)

        def build(self, x, y):
            loss = self.loss_fn(self.model(x), y)
            loss.backward()
            return loss

``graph.ir(x, y)`` returns the pf IR, ``graph.compile(x, y)`` verifies it
with ``pf-opt``; calling ``graph(x, y)`` compiles and would run a step, which
needs the CPU backend (not built yet: it raises ``BackendUnavailable``).

Inside the graph, module attributes are wrapped in proxies whose ``config``
holds per-module settings: ``config.set_stage(stage_id, placement)``,
``config.stage_id = k`` and ``config.activation_checkpointing = True``;
``module.to(nn.graph.GraphModule)`` returns the same settings object in
OneFlow's newer spelling.
"""

import numbers
from collections import OrderedDict

from .. import _layout
from .. import _trace
from .. import compiler
from .. import config as config_mod
from .. import ir
from .._errors import BackendUnavailable, CompileError
from .._source import code_location, user_location
from ..placement import placement as Placement
from ..tensor import Tensor
from .module import Module

SCHEDULES = ("gpipe", "1f1b", "interleaved-1f1b", "zb-h1")
BALANCES = ("flops", "params", "memory")


class ModuleConfig:
    """Per-module settings inside a graph (OneFlow's block config)."""

    def __init__(self, name):
        self._name = name
        self._stage_id = None
        self._stage_placement = None
        self._stage_loc = None
        self._checkpointing = None
        self._checkpointing_loc = None

    @property
    def stage_id(self):
        """The pipeline stage of the module's ops (``None``: inherited)."""
        return self._stage_id

    @stage_id.setter
    def stage_id(self, value):
        self._set_stage(value, None, user_location())

    @property
    def stage_placement(self):
        return self._stage_placement

    def set_stage(self, stage_id, placement=None):
        """Puts the module's ops in pipeline stage ``stage_id`` on ``placement``."""
        self._set_stage(stage_id, placement, user_location())

    def _set_stage(self, stage_id, placement, loc):
        if isinstance(stage_id, bool) or not isinstance(stage_id, numbers.Integral) or stage_id < 0:
            raise ValueError(f"stage_id must be a non-negative integer, got {stage_id!r}")
        if placement is not None and not isinstance(placement, Placement):
            raise TypeError(f"set_stage(placement=...) expects a pipeflow.placement, got {placement!r}")
        self._stage_id, self._stage_placement, self._stage_loc = int(stage_id), placement, loc

    @property
    def activation_checkpointing(self):
        """Recompute this module's activations in the backward pass."""
        return self._checkpointing

    @activation_checkpointing.setter
    def activation_checkpointing(self, value):
        self._checkpointing = bool(value)
        self._checkpointing_loc = user_location()

    def __repr__(self):
        return (f"ModuleConfig({self._name!r}, stage_id={self._stage_id}, "
                f"activation_checkpointing={self._checkpointing})")


class GraphModule:
    """What ``proxy.to(nn.graph.GraphModule)`` returns: the module's graph settings."""

    def __init__(self, proxy):
        self._proxy = proxy

    @property
    def name(self):
        return self._proxy._name

    @property
    def origin(self):
        return self._proxy._module

    @property
    def config(self):
        return self._proxy.config

    def set_stage(self, stage_id, placement=None):
        self.config._set_stage(stage_id, placement, user_location())
        return self

    @property
    def stage_id(self):
        return self.config.stage_id

    @stage_id.setter
    def stage_id(self, value):
        self.config._set_stage(value, None, user_location())

    @property
    def activation_checkpointing(self):
        return self.config.activation_checkpointing

    @activation_checkpointing.setter
    def activation_checkpointing(self, value):
        self.config._checkpointing = bool(value)
        self.config._checkpointing_loc = user_location()

    def __repr__(self):
        return f"GraphModule({self.name!r})"


class ProxyModule:
    """A module as seen through a graph attribute: submodules are proxies too."""

    def __init__(self, graph, module, name):
        object.__setattr__(self, "_graph", graph)
        object.__setattr__(self, "_module", module)
        object.__setattr__(self, "_name", name)

    @property
    def config(self):
        return self._graph._module_config(self._module, self._name)

    @property
    def origin(self):
        return self._module

    def to(self, target):
        """``to(nn.graph.GraphModule)``: the module's graph settings; ``to(nn.Module)``: the module."""
        if target is GraphModule:
            return GraphModule(self)
        if isinstance(target, type) and issubclass(target, Module):
            return self._module
        raise TypeError(f"ProxyModule.to() expects nn.graph.GraphModule or nn.Module, got {target!r}")

    def __getattr__(self, name):
        value = getattr(self._module, name)
        if isinstance(value, Module):
            return self._graph._proxy(value, f"{self._name}.{name}")
        return value

    def __setattr__(self, name, value):
        if isinstance(value, ProxyModule):
            value = value._module
        setattr(self._module, name, value)

    def __call__(self, *args, **kwargs):
        return self._module(*args, **kwargs)

    def __repr__(self):
        return f"(GRAPH MODULE:{self._name}): " + repr(self._module)


class GraphConfig:
    """Graph-wide settings: micro-batches and the pipeline schedule."""

    def __init__(self):
        self._accumulation = 1
        self._accumulation_loc = None
        self._schedule = "1f1b"
        self._num_chunks = 1
        self._schedule_loc = None
        self._num_stages = None
        self._balance = None
        self._stages_loc = None

    def set_gradient_accumulation_steps(self, value):
        """Splits every step's batch into ``value`` micro-batches."""
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
            raise ValueError(f"gradient accumulation steps must be a positive integer, got {value!r}")
        self._accumulation = int(value)
        self._accumulation_loc = user_location()

    @property
    def gradient_accumulation_steps(self):
        return self._accumulation

    def set_pipeline_schedule(self, schedule, num_chunks=1):
        """One of ``gpipe``, ``1f1b``, ``interleaved-1f1b`` (``num_chunks`` virtual
        chunks per stage) or ``zb-h1``."""
        name = str(schedule).lower()
        if name not in SCHEDULES:
            raise ValueError(f"unknown pipeline schedule {schedule!r}; expected one of {', '.join(SCHEDULES)}")
        if isinstance(num_chunks, bool) or not isinstance(num_chunks, numbers.Integral) or num_chunks < 1:
            raise ValueError(f"num_chunks must be a positive integer, got {num_chunks!r}")
        if name != "interleaved-1f1b" and num_chunks != 1:
            raise ValueError(f"num_chunks={num_chunks} needs the 'interleaved-1f1b' schedule, not {name!r}")
        self._schedule, self._num_chunks = name, int(num_chunks)
        self._schedule_loc = user_location()

    @property
    def pipeline_schedule(self):
        return self._schedule

    @property
    def num_chunks(self):
        return self._num_chunks

    def set_pipeline_stages(self, num_stages, balance="flops"):
        """Asks the compiler to split the model into ``num_stages`` balanced stages."""
        if isinstance(num_stages, bool) or not isinstance(num_stages, numbers.Integral) or num_stages < 1:
            raise ValueError(f"the number of pipeline stages must be a positive integer, got {num_stages!r}")
        if balance not in BALANCES:
            raise ValueError(f"unknown stage balance {balance!r}; expected one of {', '.join(BALANCES)}")
        self._num_stages, self._balance = int(num_stages), balance
        self._stages_loc = user_location()

    @property
    def pipeline_stages(self):
        return self._num_stages

    @property
    def balance(self):
        return self._balance

    def __repr__(self):
        return (f"GraphConfig(gradient_accumulation_steps={self._accumulation}, "
                f"schedule={self._schedule!r}, num_chunks={self._num_chunks}, "
                f"pipeline_stages={self._num_stages}, balance={self._balance!r})")


class TracedGraph:
    """The result of tracing ``build``: the IR module plus what the options need."""

    def __init__(self, module, function, signature, options):
        self.module = module
        self.function = function
        self.signature = signature
        self.options = options

    @property
    def ops(self):
        return self.function.ops

    @property
    def params(self):
        return self.module.params

    def text(self):
        return ir.print_module(self.module)


class Graph:
    """Base class of compiled training (or inference) steps; see the module docstring."""

    def __init__(self):
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "_proxies", {})
        object.__setattr__(self, "_configs", {})
        object.__setattr__(self, "_optimizers", [])
        object.__setattr__(self, "_traced", None)
        object.__setattr__(self, "_compiled", None)
        object.__setattr__(self, "config", GraphConfig())

    # Attributes -------------------------------------------------------------------

    def __setattr__(self, name, value):
        if "_modules" not in self.__dict__:
            raise AttributeError(f"{type(self).__name__}.__init__ must call super().__init__() first")
        if isinstance(value, ProxyModule):
            value = value._module
        if isinstance(value, Module):
            self._modules[name] = value
            self.__dict__.pop(name, None)
            return
        self._modules.pop(name, None)
        object.__setattr__(self, name, value)

    def __getattr__(self, name):
        modules = self.__dict__.get("_modules", {})
        if name in modules:
            return self._proxy(modules[name], name)
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def _proxy(self, module, name):
        key = (id(module), name)
        proxy = self._proxies.get(key)
        if proxy is None:
            proxy = self._proxies[key] = ProxyModule(self, module, name)
        return proxy

    def _module_config(self, module, name):
        entry = self._configs.get(id(module))
        if entry is None:
            entry = self._configs[id(module)] = (module, ModuleConfig(name))
        return entry[1]

    @property
    def name(self):
        return type(self).__name__

    def add_optimizer(self, optim, *, lr_sch=None, is_sparse=False):
        """Trains the parameters of ``optim`` with it (``lr_sch`` sets its lr per step)."""
        from ..optim.optimizer import Optimizer
        if not isinstance(optim, Optimizer):
            raise TypeError(f"add_optimizer() expects a pipeflow.optim optimizer, got {type(optim).__name__}")
        if lr_sch is not None and getattr(lr_sch, "optimizer", None) is not optim:
            raise ValueError("add_optimizer(lr_sch=...) must be a scheduler of the same optimizer")
        self._optimizers.append((optim, lr_sch, user_location()))

    def build(self, *args):
        raise NotImplementedError(f"{type(self).__name__} must define build()")

    # Tracing ----------------------------------------------------------------------

    def _naming(self):
        names, module_names = {}, {}
        for attr, module in self._modules.items():
            for pname, p in module.named_parameters(prefix=attr):
                names.setdefault(id(p), pname)
            for bname, b in module.named_buffers(prefix=attr):
                names.setdefault(id(b), bname)
            for mname, m in module.named_modules(prefix=attr):
                module_names.setdefault(id(m), mname)
        return names, module_names

    def _signature(self, args, loc):
        sig = []
        for i, a in enumerate(args):
            if not isinstance(a, Tensor):
                raise CompileError.at(loc, f"graph input {i} is a {type(a).__name__}; inputs must be tensors")
            if a.is_lazy:
                raise CompileError.at(loc, f"graph input {i} is a traced tensor of another graph")
            if not a.is_global:
                raise CompileError.at(
                    loc, f"graph input {i} (shape {list(a.shape)}) is a local tensor; nn.Graph inputs "
                         "must be global", ["convert it first: x = x.to_global(placement=..., sbp=...)"])
            sig.append((tuple(a.shape), a.dtype.name, a.placement, a.sbp))
        return tuple(sig)

    def _fingerprint(self):
        """Everything besides the inputs that tracing depends on (a changed
        setting, module mode or parameter layout means tracing again)."""
        cfg = self.config
        modules = []
        for name, module in self._modules.items():
            modules.append((name, id(module)))
            modules.extend((id(m), m.training) for m in module.modules())
            for tensor in list(module.parameters()) + list(module.buffers()):
                modules.append((id(tensor), tensor.placement, tensor.sbp, getattr(tensor, "_init", None)))
        configs = tuple(sorted((key, c.stage_id, c.stage_placement, c.activation_checkpointing)
                               for key, (_, c) in self._configs.items()))
        settings = (cfg.gradient_accumulation_steps, cfg.pipeline_schedule, cfg.num_chunks,
                    cfg.pipeline_stages, cfg.balance, config_mod.cuda_as_cpu_enabled())
        optimizers = tuple((id(o), id(s)) for o, s, _ in self._optimizers)
        return (tuple(modules), configs, settings, optimizers)

    def trace(self, *args):
        """Traces ``build`` on global tensors shaped like ``args``; returns a TracedGraph."""
        loc = user_location()
        if not args:
            if self._traced is None:
                raise TypeError(f"{self.name} has not been traced yet: pass example inputs, e.g. graph.ir(x, y)")
            return self._traced
        signature = (self._signature(args, loc), self._fingerprint())
        if self._traced is not None and self._traced.signature == signature:
            return self._traced
        names, module_names = self._naming()
        configs = {key: cfg for key, (_, cfg) in self._configs.items()}
        tracer = _trace.Tracer(self.name, names, configs, module_names)
        tracer.module.comments.append(f"pipeflow graph {self.name}")
        with tracer:
            types = [tracer.global_type(a.shape, a.dtype, a.placement, a.sbp) for a in args]
            func = ir.Function("train_step", types)
            tracer.module.functions.append(func)
            tracer.func = func
            inputs = [tracer.lazy(v, a.dtype, a.placement, a.sbp) for v, a in zip(func.args, args)]
            outputs = self.build(*inputs)
        results = self._results(outputs, tracer, loc)
        func.name = "train_step" if tracer.loss is not None else "forward"
        func.results = results
        func.return_loc = code_location(type(self).build)
        self._check_pipeline(tracer, args, loc)
        options = self._options(tracer, func)
        traced = TracedGraph(tracer.module, func, signature, options)
        object.__setattr__(self, "_traced", traced)
        return traced

    def _results(self, outputs, tracer, loc):
        if outputs is None:
            outputs = ()
        elif not isinstance(outputs, (tuple, list)):
            outputs = (outputs,)
        values = []
        for i, out in enumerate(outputs):
            if not isinstance(out, Tensor) or not out.is_lazy:
                raise CompileError.at(code_location(type(self).build),
                                      f"build() output {i} is not a tensor computed in build() ({out!r})")
            values.append(out._node)
        if tracer.loss is not None:
            loss = tracer.loss._node
            values = [loss] + [v for v in values if v is not loss]
        return values

    def _stage_config_loc(self, stage):
        for _, cfg in self._configs.values():
            if cfg.stage_id == stage and cfg._stage_loc is not None:
                return cfg._stage_loc
        return None

    def _check_pipeline(self, tracer, args, loc):
        cfg = self.config
        stages = sorted(tracer.stage_locs)
        if stages and stages != list(range(len(stages))):
            missing = sorted(set(range(stages[-1] + 1)) - set(stages))
            bad = stages[-1]
            raise CompileError.at(
                self._stage_config_loc(bad) or tracer.stage_locs[bad],
                f"pipeline stage ids must be 0, 1, ..., p-1 without gaps; the ops use stages {stages} "
                f"(no op is in stage {', '.join(map(str, missing))})")
        if stages and cfg.pipeline_stages is not None and cfg.pipeline_stages * cfg.num_chunks != len(stages):
            raise CompileError.at(
                cfg._stages_loc,
                f"set_pipeline_stages({cfg.pipeline_stages}) disagrees with the {len(stages)} stages the "
                "modules' set_stage() assigns", ["use either explicit stages or automatic balancing"])
        m = cfg.gradient_accumulation_steps
        if m > 1:
            for i, a in enumerate(args):
                where = cfg._accumulation_loc or loc
                if a.ndim == 0:
                    raise CompileError.at(where, f"graph input {i} is a scalar and cannot be split into {m} micro-batches")
                batch = a.shape[0]
                if batch % m:
                    raise CompileError.at(
                        where, f"{m} micro-batches (gradient accumulation steps) do not divide the batch "
                               f"size {batch} of graph input {i} (shape {list(a.shape)})",
                        ["choose a number of micro-batches that divides the batch size"])
                factor = _layout.split_factors(a.shape, a.placement, a.sbp)[0]
                if (batch // m) % factor:
                    raise CompileError.at(
                        where, f"a micro-batch of graph input {i} has {batch // m} rows, which the "
                               f"{factor} ranks that split axis 0 cannot share evenly")
        if cfg.pipeline_schedule == "interleaved-1f1b":
            v = cfg.num_chunks
            if stages:
                if len(stages) % v:
                    raise CompileError.at(
                        cfg._schedule_loc, f"interleaved-1f1b with num_chunks={v} needs the number of "
                                           f"stages (model chunks) to be a multiple of {v}, got {len(stages)}")
                p = len(stages) // v
            elif cfg.pipeline_stages is not None:
                p = cfg.pipeline_stages
            else:
                raise CompileError.at(cfg._schedule_loc, "interleaved-1f1b needs pipeline stages: "
                                                         "set_stage() on modules or set_pipeline_stages(n)")
            if m % p:
                raise CompileError.at(
                    cfg._schedule_loc,
                    f"the interleaved 1F1B schedule needs the number of micro-batches to be a multiple "
                    f"of the number of pipeline stages: {m} micro-batches, {p} stages",
                    [f"set_gradient_accumulation_steps() to a multiple of {p}"])

    def _options(self, tracer, func):
        symbols = {id(obj): name for name, obj in tracer.param_objects.items()}
        all_names, _ = self._naming()
        optimizers = []
        for optim, lr_sch, loc in self._optimizers:
            if tracer.loss is None:
                raise CompileError.at(loc, "the graph has an optimizer but build() never calls loss.backward()")
            for group in optim.param_groups:
                for p in group["params"]:
                    if id(p) not in all_names:
                        raise CompileError.at(
                            loc, f"the optimizer updates a parameter of shape {list(p.shape)} that belongs "
                                 "to no module of this graph")
            optimizers.append(optim.describe(lambda p: symbols.get(id(p), all_names[id(p)]), lr_sch))
        stages = []
        for stage in sorted(tracer.stage_locs):
            modules = sorted(cfg._name for _, cfg in self._configs.values() if cfg.stage_id == stage)
            placements = sorted({
                op.results[0].type.placement.text() for op in func.ops
                if op.stage == stage and op.results})
            stages.append({"id": stage, "modules": modules, "placements": placements})
        cfg = self.config
        return {
            "graph": self.name,
            "function": func.name,
            "training": tracer.loss is not None,
            "gradient_accumulation_steps": cfg.gradient_accumulation_steps,
            "pipeline": {
                "schedule": cfg.pipeline_schedule,
                "num_chunks": cfg.num_chunks,
                "num_stages": cfg.pipeline_stages,
                "balance": cfg.balance,
                "stages": stages,
            },
            "activation_checkpointing": sorted(
                cfg_._name for _, cfg_ in self._configs.values() if cfg_.activation_checkpointing),
            "optimizers": optimizers,
            "cuda_as_cpu": config_mod.cuda_as_cpu_enabled(),
        }

    # Compiling ----------------------------------------------------------------------

    def ir(self, *args):
        """The pf IR of the step traced on inputs like ``args``."""
        return self.trace(*args).text()

    def compile(self, *args):
        """Traces, writes the IR to the compile cache and verifies it with pf-opt."""
        traced = self.trace(*args)
        compiled = compiler.compile_ir(traced.text(), traced.options)
        object.__setattr__(self, "_compiled", compiled)
        return compiled

    def __call__(self, *args):
        compiled = self.compile(*args)
        raise BackendUnavailable(
            f"{self.name} compiled to verified pf IR ({compiled.ir_path}), but running a step needs "
            "the CPU backend, which is not built yet")

    def __repr__(self):
        lines = [f"({name}): {type(m).__name__}" for name, m in self._modules.items()]
        return f"{self.name}(\n  " + "\n  ".join(lines + [repr(self.config)]) + "\n)"
