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
with ``pf-opt``. Calling ``graph(x, y)`` runs one training step: the first
call traces ``build``, compiles it for CPU ranks (``pf-opt
-pf-compile-cpu-pipeline`` with the optimizer's options and the
micro-batches, then ``pf-translate --pf-emit-rank-artifacts``), loads this
rank's ``librank<r>.so`` and initialises its parameters; every call checks
the inputs against the first call's (and, in a job of several processes,
against the other processes'), feeds this rank's inputs (for placements of
several ranks the micro-batch boxes of the logical inputs, see
``pipeflow._feed``) and the optimizer's current learning rate to the
compiled step, steps the learning-rate scheduler, and returns the loss as
OneFlow does: a global tensor on the last stage's placement holding one loss
per micro-batch (shape ``[m]``; a scalar when ``m == 1``).
``loss.to_local()`` is the values on the ranks of that placement and an
empty tensor elsewhere.

The compiled program owns the parameters: their Python values are its
initial values (see ``pipeflow._trace``), and after the first step reading
them back (``state_dict``) is not supported yet.

Inside the graph, module attributes are wrapped in proxies whose ``config``
holds per-module settings: ``config.set_stage(stage_id, placement)``,
``config.stage_id = k`` and ``config.activation_checkpointing = True``;
``module.to(nn.graph.GraphModule)`` returns the same settings object in
OneFlow's newer spelling.
"""

import numbers
import os
import sys
from collections import OrderedDict

import numpy as np

from .. import _feed
from .. import _layout
from .. import _random
from .. import _runtime
from .. import _trace
from .. import compiler
from .. import config as config_mod
from .. import env
from .. import ir
from .. import sbp as sbp_mod
from .._errors import BackendUnavailable, CompileError
from .._source import code_location, user_location
from ..placement import placement as Placement
from ..tensor import Tensor
from .module import Module
from .parameter import mark_trained, trained_by

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

    def _child_proxy(self, module):
        for key, child in self._module._modules.items():
            if child is module:
                return self._graph._proxy(module, f"{self._name}.{key}")
        return module

    def __getitem__(self, index):
        """``Sequential``/``ModuleList`` indexing: submodules as proxies too."""
        item = self._module[index]
        return self._child_proxy(item) if isinstance(item, Module) else item

    def __len__(self):
        return len(self._module)

    def __iter__(self):
        for item in self._module:
            yield self._child_proxy(item) if isinstance(item, Module) else item

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

    def __init__(self, module, function, signature, options, tracer=None):
        self.module = module
        self.function = function
        self.signature = signature
        self.options = options
        self.param_objects = dict(tracer.param_objects) if tracer else {}
        self.seed = tracer.seed if tracer else _random.initial_seed()
        self.loss = tracer.loss if tracer else None
        self.loss_loc = tracer.loss_loc if tracer else None

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
        object.__setattr__(self, "_run", None)
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
        traced = TracedGraph(tracer.module, func, signature, options, tracer)
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

    # Running ------------------------------------------------------------------------

    def __call__(self, *args):
        """Runs one training step on ``args``; returns the loss (see the module docstring)."""
        loc = user_location()
        run = self._run
        first = run is None
        if first:
            run = self._start(args, loc)
        known = run.agree(args, loc)
        if not first:
            run.check_call(self, args, loc)
        losses = run.step(args, loc, known)
        if run.lr_scheduler is not None:
            run.lr_scheduler.step()
        return run.loss_tensor(losses)

    @property
    def artifacts(self):
        """The compiled per-rank programs (after the first call), else ``None``."""
        return self._run.artifacts if self._run is not None else None

    def _start(self, args, loc):
        traced = self.trace(*args)
        if traced.seed != _random.initial_seed():
            # manual_seed() changed since tracing: trace again so that the Python
            # values and the compiled program start from the same parameters.
            object.__setattr__(self, "_traced", None)
            traced = self.trace(*args)
        optimizer, lr_scheduler, pipeline = self._pipeline(traced, loc)
        compiled = self.compile(*args)
        artifacts = compiler.build_cpu_artifacts(compiled, pipeline)
        run = _Run(self, traced, artifacts, optimizer, lr_scheduler, loc)
        object.__setattr__(self, "_run", run)
        return run

    def _pipeline(self, traced, loc):
        """The optimizer, its scheduler and the options of ``pf-compile-cpu-pipeline``."""
        if traced.loss is None:
            raise CompileError.at(
                code_location(type(self).build),
                f"{self.name}.build() never calls loss.backward(): running inference graphs is "
                "not supported yet (only training steps run)",
                ["use graph.compile(...) to check such a graph"])
        if len(traced.function.results) != 1:
            raise CompileError.at(
                traced.function.return_loc,
                f"{self.name}.build() returns {len(traced.function.results)} tensors; a compiled "
                "step returns only its loss so far (other outputs are not supported yet)")
        if not self._optimizers:
            raise CompileError.at(
                traced.loss_loc, f"{self.name}.build() calls loss.backward() but the graph has no "
                                 "optimizer", ["add one in __init__: self.add_optimizer(optimizer)"])
        if len(self._optimizers) > 1:
            raise CompileError.at(
                self._optimizers[1][2], f"{self.name} has {len(self._optimizers)} optimizers; a "
                                        "compiled step takes one so far")
        optimizer, lr_scheduler, opt_loc = self._optimizers[0]
        updated = {id(p) for g in optimizer.param_groups for p in g["params"]}
        frozen = [name for name, obj in traced.param_objects.items()
                  if name in traced.params and not traced.params[name].buffer and id(obj) not in updated]
        if frozen:
            raise CompileError.at(
                opt_loc, f"the optimizer does not update parameter '{frozen[0]}'"
                         + (f" (and {len(frozen) - 1} more)" if len(frozen) > 1 else "")
                         + ", which build() uses; the compiled step updates every parameter it "
                           "uses (frozen parameters are not supported yet)")
        try:
            options = optimizer.pipeline_options()
        except ValueError as err:
            raise CompileError.at(opt_loc, str(err)) from None
        for name, obj in traced.param_objects.items():
            owner = trained_by(obj)
            if owner is not None:
                raise CompileError.at(
                    loc, f"'{name}' is already trained by the compiled {owner}: sharing "
                         "parameters between compiled graphs is not supported yet (each compiled "
                         "program owns its parameters)")
        loaded = [(name, obj) for name, obj in traced.param_objects.items() if getattr(obj, "_loaded", False)]
        if loaded:
            name, obj = loaded[0]
            raise CompileError.at(
                getattr(obj, "_loaded_loc", None) or loc,
                f"loading parameters into a compiled graph is not supported yet: '{name}' was "
                f"loaded with load_state_dict(), but {self.name}'s compiled program initialises "
                "its parameters itself (from their initializers and the manual_seed seed)",
                [f"{self.name} is first called at {loc}"] if loc else [])
        options.append(f"accumulation-steps={self.config.gradient_accumulation_steps}")
        options += self._schedule_options(traced)
        return optimizer, lr_scheduler, " ".join(options)

    def _schedule_options(self, traced):
        """``schedule=...`` (and ``num-chunks``): the configured schedule when the
        user chose one; by default 1F1B when every stage has ranks of its own,
        else the plain micro-batch order (one rank holding several stages, as
        in a single-process run of a pipeline, cannot follow a schedule)."""
        cfg = self.config
        ranks = {}
        for op in traced.ops:
            if op.stage is not None and op.results and isinstance(op.results[0].type, ir.GlobalType):
                ranks.setdefault(op.stage, set()).update(op.results[0].type.placement.ranks)
        shared = sorted({r for s, rs in ranks.items() for r in rs
                         if any(r in other for t, other in ranks.items() if t != s)})
        if cfg._schedule_loc is None:
            return [f"schedule={'1f1b' if len(ranks) > 1 and not shared else 'none'}"]
        if cfg.pipeline_schedule != "interleaved-1f1b" and shared:
            holders = sorted(s for s, rs in ranks.items() if shared[0] in rs)
            raise CompileError.at(
                cfg._schedule_loc,
                f"the {cfg.pipeline_schedule} schedule needs every pipeline stage on ranks of its "
                f"own, but stages {', '.join(map(str, holders))} are all on rank {shared[0]}",
                ["place the stages on different ranks, or leave the schedule unset (the "
                 "micro-batches then run in order)"])
        out = [f"schedule={cfg.pipeline_schedule}"]
        if cfg.pipeline_schedule == "interleaved-1f1b":
            out.append(f"num-chunks={cfg.num_chunks}")
        return out

    def state_dict(self):
        """The state of the graph's modules by attribute name (before the first call).

        After the first call the compiled program owns the parameters, and
        reading them back is not supported yet: this raises BackendUnavailable.
        """
        if self._run is not None:
            raise BackendUnavailable(
                f"{self.name}.state_dict(): reading trained parameters back from a compiled graph "
                "is not supported yet (the compiled program keeps them on the ranks that run it)")
        return OrderedDict((name, m.state_dict()) for name, m in self._modules.items())

    def __repr__(self):
        lines = [f"({name}): {type(m).__name__}" for name, m in self._modules.items()]
        return f"{self.name}(\n  " + "\n  ".join(lines + [repr(self.config)]) + "\n)"


class _Run:
    """A graph that runs: its compiled program on this rank and the call checks."""

    def __init__(self, graph, traced, artifacts, optimizer, lr_scheduler, loc):
        self.graph_name = graph.name
        self.traced = traced
        self.signature = traced.signature
        self.artifacts = artifacts
        self.optimizer = optimizer
        self.lr_scheduler = lr_scheduler
        self.first_call = loc
        self.steps = 0
        self.trained = False
        self.m = graph.config.gradient_accumulation_steps
        self.rank = env.get_rank()
        world = env.get_world_size()
        n = artifacts.world_size
        if n != world:
            script = os.path.relpath(sys.argv[0]) if sys.argv and sys.argv[0] else "SCRIPT.py"
            alone = "this process runs alone (world size 1)" if world == 1 else \
                f"this job has {world} processes"
            raise CompileError.at(
                loc, f"{graph.name}'s compiled program runs on {n} rank{'s' if n > 1 else ''} (its "
                     f"placements use ranks 0..{n - 1}), but {alone}",
                [f"launch one process per rank: python3 -m pipeflow.distributed.launch "
                 f"--nproc_per_node {n} {script}"])
        self.entry = artifacts.rank(self.rank) or {}
        if self.entry.get("reports_loss") and int(self.entry.get("num_microbatches", self.m)) != self.m:
            raise BackendUnavailable(
                f"internal error: {artifacts.manifest_path} says rank {self.rank} runs "
                f"{self.entry['num_microbatches']} micro-batches per step, the graph asked for {self.m}")
        self.world = world
        self.plans = self._input_plans(artifacts)
        self.loss_placement = traced.loss.placement
        self.reports_loss = self.entry.get("reports_loss", self.rank in self.loss_placement)
        self.loss_root = self._loss_root(artifacts)
        # Collectives between steps (input agreement and gathers, the loss
        # broadcast) need a program on every rank of the job.
        self.collective = world > 1 and all(
            artifacts.shared_object(r) is not None for r in range(world))
        so = artifacts.shared_object(self.rank)
        self.program = None if so is None else _runtime.Program(so, self.rank, world, traced.seed)

    def _input_plans(self, artifacts):
        """How this rank feeds every graph input (see pipeflow._feed)."""
        if all("inputs" in entry for entry in artifacts.ranks.values()) and artifacts.ranks:
            return _feed.plan(artifacts.ranks, self.signature[0], self.rank, _runtime.DTYPES,
                              artifacts.manifest_path)
        # Manifests without "inputs": the inputs whose placement holds this rank.
        from .. import dtypes as dt
        plans = []
        for i, (shape, dtype, placement, sbp) in enumerate(self.signature[0]):
            entry = None
            if self.rank in placement:
                entry = {"index": i, "shape": list(_layout.local_shape(shape, placement, sbp))}
            plans.append(_feed.InputPlan(i, shape, placement, sbp, dt.as_dtype(dtype).numpy,
                                         _feed.LOCAL, entry, self.rank))
        return plans

    def _loss_root(self, artifacts):
        """The rank that reports the losses when it is the only one of the loss's
        placement that does: after each step it broadcasts them to the others
        of the placement, which hold the (broadcast) loss too."""
        placement = self.loss_placement
        if placement.size < 2 or not all(r in artifacts.ranks for r in placement.flat_ranks):
            return None
        reporters = [r for r in placement.flat_ranks if artifacts.rank(r).get("reports_loss")]
        return reporters[0] if len(reporters) == 1 else None

    def agree(self, args, loc):
        """Before a call's first collective: every process checks that all make the
        same call with the same kind of inputs (see _feed.agreement). Returns,
        per input, the ranks that know its logical value (``None`` in a process
        running alone)."""
        if self.world == 1:
            return None
        if not self.collective or self.program is None:
            return [set() for _ in args]  # no agreement: gather whatever needs gathering
        return _feed.agreement(self.program, self.world, self.graph_name, self.steps, args,
                               self.rank, loc)

    def check_call(self, graph, args, loc):
        signature = graph._signature(args, loc)
        want = self.signature[0]
        if len(signature) != len(want):
            raise CompileError.at(loc, f"{self.graph_name} takes {len(want)} inputs, got {len(signature)}")
        for i, (got, exp) in enumerate(zip(signature, want)):
            for what, g, e in (("shape", list(got[0]), list(exp[0])), ("dtype", got[1], exp[1]),
                               ("placement", got[2], exp[2]), ("sbp", got[3], exp[3])):
                if g != e:
                    raise CompileError.at(
                        loc, f"graph input {i} has {what} {_show(g)}, but {self.graph_name} was "
                             f"compiled for {what} {_show(e)} at its first call",
                        [f"the first call is at {self.first_call}; an nn.Graph is compiled once, "
                         "for the inputs of its first call (make another graph for other inputs)"])
        if graph._fingerprint() != self.signature[1]:
            raise CompileError.at(
                loc, f"the modules, parameters or settings of {self.graph_name} changed after its "
                     "first call; a graph is compiled once, at its first call",
                [f"the first call is at {self.first_call}"])

    def step(self, args, loc, known=None):
        lr = float(self.optimizer.current_lr())
        feeds = []
        for plan in self.plans:
            data = self._feed(plan, args[plan.index], loc, None if known is None else known[plan.index])
            if data is not None:
                feeds.append((plan.index, data))
        if self.program is None:
            losses = np.empty((0,), np.float32)
        else:
            losses = self.program.step(self.steps, lr, feeds)
        self.steps += 1
        if not self.trained:
            self.trained = True
            for name, obj in self.traced.param_objects.items():
                mark_trained(obj, name, f"graph {self.graph_name}")
        if self.reports_loss and len(losses) != self.m:
            raise BackendUnavailable(
                f"internal error: rank {self.rank} reported {len(losses)} losses in a step of "
                f"{self.m} micro-batches")
        if self.loss_root is not None and self.collective and self.rank in self.loss_placement:
            losses = self.program.broadcast(
                losses if self.rank == self.loss_root else np.zeros((self.m,), np.float32),
                self.loss_root, self.loss_placement.flat_ranks)
        return losses

    def _feed(self, plan, tensor, loc, known):
        """The C-contiguous buffer this rank feeds for one input (``None``: none).

        Every member of the input's placement reaches the same collectives
        here (see pipeflow._feed): participation depends on the placement and
        the agreed ``known`` only, never on this rank's manifest entry.
        """
        if plan.mode == _feed.LOCAL or plan.mode == _feed.DIRECT:
            if plan.entry is None:
                return None
            if plan.mode == _feed.LOCAL:
                local = tensor.to_local().numpy()
            else:
                local = _feed.component(tensor, self.rank)
            if tuple(local.shape) != plan.buffer_shape:
                raise CompileError.at(
                    loc, f"this rank's local part of graph input {plan.index} has shape "
                         f"{list(local.shape)}, but the compiled program expects "
                         f"{list(plan.buffer_shape)} on rank {self.rank}")
            return np.ascontiguousarray(local, dtype=plan.dtype)
        if not plan.member:
            return None
        logical = _feed.logical_value(self.program, tensor, plan, known, self.rank, loc)
        if plan.entry is None:
            return None
        if tuple(logical.shape) != plan.shape:
            raise CompileError.at(
                loc, f"graph input {plan.index} has logical shape {list(logical.shape)}, but the "
                     f"compiled program expects {list(plan.shape)}")
        data = _feed.cut_boxes(logical, plan.boxes, plan.box_shape, plan.dtype, plan.zero)
        return data.reshape(plan.buffer_shape)

    def loss_tensor(self, losses):
        placement = self.loss_placement
        sbp = sbp_mod.normalize([sbp_mod.broadcast] * placement.ndim, placement.ndim)
        shape = (self.m,) if self.m > 1 else ()
        from .. import dtypes as dt
        shared = self.loss_root is not None and self.collective and self.rank in placement
        if env.get_world_size() == 1 or self.reports_loss or shared:
            value = losses.reshape(shape)
            return Tensor._new(dt.float32, shape, local=value, logical=value, placement=placement, sbp=sbp)
        return Tensor._new(dt.float32, shape, local=np.empty((0,), np.float32), logical=None,
                           placement=placement, sbp=sbp)


def _show(value):
    return repr(value) if not isinstance(value, (list, str)) else str(value)
