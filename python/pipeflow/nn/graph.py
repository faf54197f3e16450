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
``pipeflow._feed``) and every parameter group's current learning rate to
the compiled step, steps the learning-rate schedulers, and returns the loss as
OneFlow does: a global tensor on the last stage's placement holding one loss
per micro-batch (shape ``[m]``; a scalar when ``m == 1``).
``loss.to_local()`` is the values on the ranks of that placement and an
empty tensor elsewhere.

The compiled program owns the parameters: their Python values (or values
loaded with ``load_state_dict``) are its initial values (see
``pipeflow._trace``). After the first call ``graph.state_dict()`` reads the
trained parameters, buffers and optimizer states back (a collective: every
process calls it, as in OneFlow), ``graph.load_state_dict()`` sets them, and
``graph.save_checkpoint()`` writes them in the runtime's checkpoint format
(see ``pipeflow._state`` and ``pipeflow._checkpoint``).

A graph may have several optimizers (``add_optimizer`` once for each, every
one with its own scheduler), and an optimizer several parameter groups that
differ in ``lr`` and hyper-parameters: the first optimizer's first group is
the compiled pipeline's options and reads the run-time scalar "lr"; every
other group's parameters carry a ``pf.optimizer`` dictionary in the traced
IR (their rule where it differs, and their own learning-rate scalar
"lr.o<i>.g<j>"), see ``Graph._update_rules``. Every parameter the step uses
must be in exactly one optimizer.

``config.set_pipeline_stages(n)`` without explicit stages lets the compiler
choose ``n`` balanced stages of a model written on one placement (see
``set_pipeline_stages`` and ``graph.stage_report()``); the loss then comes
back on the last stage's ranks.

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

from .. import _checkpoint
from .. import _feed
from .. import _layout
from .. import _random
from .. import _runtime
from .. import _state
from .. import _trace
from .. import compiler
from .. import config as config_mod
from .. import env
from .. import ir
from .. import sbp as sbp_mod
from .._errors import BackendUnavailable, CompileError, StateDictError
from .._source import code_location, user_location
from ..placement import placement as Placement
from ..tensor import Tensor
from .module import IncompatibleKeys, Module
from .parameter import mark_trained, storage, trained_by

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
        """Asks the compiler to split the model into ``num_stages`` balanced stages.

        With no module's stage set, the graph (everything on one placement P)
        is traced without stages and pf-auto-stages cuts it into
        ``num_stages`` (x ``num_chunks`` under interleaved 1F1B) contiguous
        stages of balanced ``balance`` (``flops``, ``params`` or ``memory``)
        cost; pipeline rank ``k`` runs on P shifted by ``k * (max rank of P +
        1)``, so the job needs that many more processes. With explicit stages
        it must agree with their number."""
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
        # The run-time learning-rate scalars: (name, optimizer index, group index).
        self.lr_scalars = []
        # An optimizer setting the compiled step cannot apply: (loc, message).
        self.rule_error = None

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
        object.__setattr__(self, "_pending_state", OrderedDict())  # loaded before the first call
        object.__setattr__(self, "_pending_step", None)
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
        """Trains the parameters of ``optim`` with it (``lr_sch`` sets its lr per step);
        call it once per optimizer (each parameter in one of them)."""
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
        optimizers = tuple(
            (id(o), id(s), tuple((tuple(id(p) for p in g["params"]), _group_settings(g))
                                 for g in o.param_groups))
            for o, s, _ in self._optimizers)
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
        traced.lr_scalars, traced.rule_error = self._update_rules(tracer)
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
        if not stages and cfg.pipeline_stages is not None:
            self._check_auto_stages(tracer, args, loc)
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

    def _check_auto_stages(self, tracer, args, loc):
        """``set_pipeline_stages(n)`` without explicit stages: the compiler
        (pf-auto-stages) cuts the program, which must be on one placement, into
        ``n * num_chunks`` stages of at least one compute op each."""
        cfg = self.config
        n, v = cfg.pipeline_stages, cfg.num_chunks
        call = f"set_pipeline_stages({n})"
        func = tracer.func
        where = [f"{call} is at {cfg._stages_loc}" if cfg._stages_loc else None,
                 "keep every module, parameter and input of the graph on one placement (no "
                 "to_global() onto another placement): the compiler chooses each stage's ranks; "
                 "or place the stages yourself with set_stage() and leave set_pipeline_stages out"]
        where = [w for w in where if w]
        base = first = None
        for i, value in enumerate(func.args):
            placement = value.type.placement if isinstance(value.type, ir.GlobalType) else None
            if placement is None:
                continue
            if base is None:
                base, first = placement, f"graph input {i}"
            elif placement != base:
                raise CompileError.at(
                    loc, f"{call} needs the whole graph on one placement, but graph input {i} is on "
                         f"{_ranks_text(placement)} and {first} on {_ranks_text(base)}", where)
        compute = 0
        for op in func.ops:
            if op.name not in _FOLLOWS_USERS:
                compute += 1
            for result in op.results:
                if not isinstance(result.type, ir.GlobalType):
                    continue
                placement = result.type.placement
                if base is None:
                    base, first = placement, f"the {op.name} at {op.loc}"
                elif placement != base:
                    what = "moves a value to" if op.name == "pf.to_global" else "computes a value on"
                    raise CompileError.at(
                        op.loc, f"{call} needs the whole graph on one placement, but this "
                                f"{op.name} {what} {_ranks_text(placement)} while {first} is on "
                                f"{_ranks_text(base)}", where)
        if compute < n * v:
            chunks = f" ({n} stages x {v} chunks)" if v > 1 else ""
            raise CompileError.at(
                cfg._stages_loc or loc,
                f"{call} cannot cut {self.name}'s {compute} compute op{'s' if compute != 1 else ''} "
                f"into {n * v} stages{chunks}: every stage needs at least one op",
                ["ask for fewer stages"])

    def _auto_placement(self, traced):
        """With automatic stages: the one placement of the traced program (as a
        pipeflow.placement), else ``None``."""
        if not traced.options["pipeline"].get("auto_stages"):
            return None
        for _, _, placement, _ in traced.signature[0]:
            return placement
        for obj in traced.param_objects.values():
            if obj.placement is not None:
                return obj.placement
        return None

    def stage_report(self, *args):
        """With automatic stages (``config.set_pipeline_stages(n)`` and no
        ``set_stage``): pf-auto-stages' report of the cut (each stage's ops,
        placement and cost, the imbalance, the bytes crossing the cuts) for
        the graph traced on ``args`` (or traced already), as text."""
        traced = self.trace(*args)
        if not traced.options["pipeline"].get("auto_stages"):
            raise ValueError(f"{self.name} has no automatic stages: call "
                             "config.set_pipeline_stages(n) and set no module's stage")
        cfg = self.config
        compiled = self.compile(*args) if args or self._compiled is None else self._compiled
        return compiler.stage_report(compiled, cfg.pipeline_stages, cfg.num_chunks, cfg.balance)

    def _options(self, tracer, func):
        symbols = {id(obj): name for name, obj in tracer.param_objects.items()}
        all_names, _ = self._naming()
        optimizers, owners = [], {}
        for index, (optim, lr_sch, loc) in enumerate(self._optimizers):
            if tracer.loss is None:
                raise CompileError.at(loc, "the graph has an optimizer but build() never calls loss.backward()")
            for group in optim.param_groups:
                for p in group["params"]:
                    if id(p) not in all_names:
                        raise CompileError.at(
                            loc, f"the optimizer updates a parameter of shape {list(p.shape)} that belongs "
                                 "to no module of this graph")
                    first = owners.setdefault(id(p), index)
                    if first != index:
                        other = self._optimizers[first]
                        raise CompileError.at(
                            loc, f"parameter '{symbols.get(id(p), all_names[id(p)])}' is in two "
                                 f"optimizers of {self.name} ({type(other[0]).__name__} and "
                                 f"{type(optim).__name__}); each parameter has one update rule",
                            [f"the other optimizer is added at {other[2]}",
                             "give each optimizer its own parameters"])
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
                "auto_stages": bool(cfg.pipeline_stages is not None and not stages),
                "stages": stages,
            },
            "activation_checkpointing": sorted(
                cfg_._name for _, cfg_ in self._configs.values() if cfg_.activation_checkpointing),
            "optimizers": optimizers,
            "cuda_as_cpu": config_mod.cuda_as_cpu_enabled(),
        }

    def _update_rules(self, tracer):
        """Every parameter's update rule in the traced IR; returns the run-time
        learning-rate scalars ``[(name, optimizer index, group index)]`` and the
        first setting the compiled step cannot apply (``(loc, message)``, raised
        when the graph runs) or ``None``.

        The first optimizer's first group is the pipeline's options
        (``pf-compile-cpu-pipeline``) and reads the scalar "lr"; the parameters
        of every other group (optimizer ``i``, group ``j``) carry a
        ``pf.optimizer`` dictionary: the scalar "lr.o<i>.g<j>" and the settings
        of their rule that differ from the pipeline's."""
        from ..optim.optimizer import rule_overrides
        rules = []
        for optim, _, loc in self._optimizers:
            try:
                rules.append(optim.rules())
            except ValueError as err:
                return [], (loc, str(err))
        if not rules:
            return [], None
        params = tracer.module.params
        symbols = {id(obj): name for name, obj in tracer.param_objects.items()}
        default = rules[0][0]
        scalars = []
        for i, (optim, _, _) in enumerate(self._optimizers):
            for j, group in enumerate(optim.param_groups):
                if (i, j) == (0, 0):
                    scalars.append(("lr", 0, 0))
                    continue
                name = f"lr.o{i}.g{j}"
                scalars.append((name, i, j))
                entries = rule_overrides(rules[i][j], default)
                attrs = {"kind": entries.pop("kind")} if "kind" in entries else {}
                attrs["lr"] = name
                for key, value in entries.items():
                    attrs[key] = ir.F64(value) if isinstance(value, float) else value
                for p in group["params"]:
                    param = params.get(symbols.get(id(p)))
                    if param is not None and not param.buffer:
                        param.attrs["pf.optimizer"] = dict(attrs)
        # Frozen parameters (in no optimizer): plain SGD whose learning-rate
        # scalar nobody sets (it stays 0), so p - 0 * g leaves them as they are.
        updated = {id(p) for o, _, _ in self._optimizers for g in o.param_groups for p in g["params"]}
        for name, obj in tracer.param_objects.items():
            param = params.get(name)
            if param is not None and not param.buffer and id(obj) not in updated:
                param.attrs["pf.optimizer"] = {
                    "kind": "sgd", "lr": "lr.frozen", "momentum": ir.F64(0.0),
                    "dampening": ir.F64(0.0), "weight_decay": ir.F64(0.0), "nesterov": False}
        return scalars, None

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
        for lr_scheduler in run.lr_schedulers:
            if lr_scheduler is not None:
                lr_scheduler.step()
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
        _, _, pipeline = self._pipeline(traced, loc)
        compiled = self.compile(*args)
        artifacts = compiler.build_cpu_artifacts(compiled, pipeline)
        run = _Run(self, traced, artifacts, self._optimizers, loc)
        self._load_initial(run, traced)
        object.__setattr__(self, "_run", run)
        return run

    def _load_initial(self, run, traced):
        """Before the first step: the values loaded into the modules, the graph
        (optimizer states, the step) and the optimizer go into the program."""
        state = run.state
        what = f"{self.name}'s first call"
        loaded = [(name, obj) for name, obj in traced.param_objects.items()
                  if getattr(obj, "_loaded", False) and name in state.info]
        pending = list(self._pending_state.items())
        optim = [(o, id_, kind, value) for o in run.optimizers
                 for id_, kinds in o._pending_state.items() for kind, value in kinds.items()]
        steps = [s for s in [self._pending_step] + [o._pending_step for o in run.optimizers]
                 if s is not None]
        if not (loaded or pending or optim or steps):
            return
        state._require(what)
        for name, obj in loaded:
            state.set(name, storage(obj), "the parameter")
        for name, (value, loc) in pending:
            if name not in state.info:
                raise StateDictError.at(
                    loc, f"the state dict loaded into {self.name} holds '{name}', but its compiled "
                         "program keeps no such tensor (its optimizer has no state of that kind)",
                    [f"{self.name} is first called at {run.first_call}"])
            state.set(name, value, "the optimizer state")
        for o, id_, kind, (value, loc) in optim:
            name = f"{state.symbol.get(id_)}.{kind}"
            if name not in state.info:
                raise StateDictError.at(
                    loc, f"the optimizer state dict loaded into {type(o).__name__} holds "
                         f"'{kind}' for parameter '{state.symbol.get(id_)}', but the compiled program "
                         "keeps no such state", [f"{self.name} is first called at {run.first_call}"])
            state.set(name, value, "the optimizer state")
        for step, _ in steps:
            state.set_step(step)
        self._pending_state.clear()
        object.__setattr__(self, "_pending_step", None)
        for o in run.optimizers:
            o._pending_state.clear()
            o._pending_step = None

    def _pipeline(self, traced, loc):
        """The first optimizer, its scheduler and the options of
        ``pf-compile-cpu-pipeline``: that optimizer's first group's rule (the
        other groups' rules are on their parameters, see _update_rules)."""
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
        from ..optim.optimizer import pipeline_options
        optimizer, lr_scheduler, opt_loc = self._optimizers[0]
        if traced.rule_error is not None:
            raise CompileError.at(*traced.rule_error)
        options = pipeline_options(optimizer.rules()[0])
        for name, obj in traced.param_objects.items():
            owner = trained_by(obj)
            if owner is not None:
                raise CompileError.at(
                    loc, f"'{name}' is already trained by the compiled {owner}: sharing "
                         "parameters between compiled graphs is not supported yet (each compiled "
                         "program owns its parameters)")
        options.append(f"accumulation-steps={self.config.gradient_accumulation_steps}")
        options += self._schedule_options(traced)
        if traced.options["pipeline"].get("auto_stages"):
            options.append(f"auto-stages={self.config.pipeline_stages} balance={self.config.balance}")
        return optimizer, lr_scheduler, " ".join(options)

    def _schedule_options(self, traced):
        """``schedule=...`` (and ``num-chunks``): the configured schedule when the
        user chose one; by default 1F1B when every stage has ranks of its own,
        else the plain micro-batch order (one rank holding several stages, as
        in a single-process run of a pipeline, cannot follow a schedule)."""
        cfg = self.config
        if traced.options["pipeline"].get("auto_stages"):
            # pf-auto-stages puts the stages on ranks of their own (the chunks
            # of interleaved 1F1B share them, as that schedule expects).
            if cfg._schedule_loc is None:
                return [f"schedule={'1f1b' if cfg.pipeline_stages > 1 else 'none'}"]
            out = [f"schedule={cfg.pipeline_schedule}"]
            if cfg.pipeline_schedule == "interleaved-1f1b":
                out.append(f"num-chunks={cfg.num_chunks}")
            return out
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

    # State ------------------------------------------------------------------------

    def state_dict(self):
        """The graph's state, as OneFlow's ``nn.Graph.state_dict()``: each module
        attribute's ``state_dict()`` under its name, then the optimizer's states
        by the compiled names (``"<attr>.<param>.momentum_buffer"``,
        ``".exp_avg"``, ``".exp_avg_sq"``) and ``"System-Train-TrainStep"`` (an
        int64 tensor of shape [1]: the steps taken).

        After the first call the values are the trained ones, read back from
        the compiled program in logical form (global tensors with the
        parameters' placements and SBPs, whole on every process). Reading them
        back is a collective over the job: every process must call
        ``state_dict()`` at the same point. It also writes the values into the
        modules (``module.state_dict()``, ``param.numpy()``), where they stay
        until the next step. Before the first call it returns the modules'
        values (and whatever ``load_state_dict`` queued for the program).
        """
        run = self._run
        if run is None:
            out = OrderedDict((name, m.state_dict()) for name, m in self._modules.items())
            for name, (value, _) in self._pending_state.items():
                out[name] = _local_tensor(value)
            if self._pending_step is not None:
                out[_checkpoint.STEP_KEY] = _step_tensor(self._pending_step[0])
            return out
        state = run.state
        values = state.gather_all(f"{self.name}.state_dict()")
        out = OrderedDict((name, m.state_dict()) for name, m in self._modules.items())
        for name in state.names:
            if name not in state.objects:
                out[name] = state.tensor(name, values[name])
        out[_checkpoint.STEP_KEY] = _step_tensor(run.steps)
        return out

    def _module_entries(self):
        """Every module state entry by its flat key ``attr.key``: ``(attr, key, tensor)``."""
        out = OrderedDict()
        for attr, module in self._modules.items():
            for key, value in module._state_entries():
                out.setdefault(f"{attr}.{key}", (attr, key, value))
        return out

    def load_state_dict(self, state_dict, strict=True):
        """Loads a state dict into the graph, as OneFlow's ``nn.Graph.load_state_dict``.

        ``state_dict`` is what :meth:`state_dict` returns (module attributes
        holding their modules' state dicts, optimizer states, the step) or the
        same flat, keyed by compiled names (``flow.load`` of a checkpoint that
        ``pf-run --save`` or :meth:`save_checkpoint` wrote). Before the first
        call the values become the compiled program's initial values; after
        it they replace the program's (each process copies its part of the
        logical values; no communication, but every process should load the
        same values). ``"System-Train-TrainStep"`` sets the step the program
        goes on from (Adam's bias correction counts from it). Optimizer states
        are optional; with ``strict`` every parameter and buffer must be
        given. Unknown keys and wrong shapes raise ``StateDictError`` at the
        calling line, before anything is loaded.
        """
        loc = user_location()
        if not isinstance(state_dict, dict):
            raise TypeError(f"{self.name}.load_state_dict() expects a dict, got {type(state_dict).__name__}")
        entries = self._module_entries()
        run = self._run
        state = run.state if run is not None else None
        if state is not None:
            state._require(f"{self.name}.load_state_dict()")
        names = {} if state is not None else self._naming()[0]
        targets, given, unexpected, errors = OrderedDict(), set(), [], []
        step = None

        def array_of(key, value):
            array = value.numpy() if isinstance(value, Tensor) else np.asarray(value)
            if array.dtype.kind not in "biuf":
                errors.append(f"'{key}' holds {array.dtype} values, not numbers")
                return None
            return array

        def module_entry(key, obj, value):
            array = array_of(key, value)
            if array is None:
                return
            if tuple(array.shape) != tuple(obj.shape):
                errors.append(f"size mismatch for '{key}': copying a value of shape "
                              f"{list(array.shape)}, the {_kind_of(obj)} has shape {list(obj.shape)}")
                return
            given.add(id(obj))
            name = state.symbol.get(id(obj)) if state is not None else None
            if name is not None and name in state.info:
                targets[name] = ("state", name, array)
            else:
                targets[("module", id(obj))] = ("module", obj, array)

        def optimizer_entry(key, name, shape, value):
            array = array_of(key, value)
            if array is None:
                return
            if tuple(array.shape) != tuple(shape):
                errors.append(f"size mismatch for '{key}': copying a value of shape "
                              f"{list(array.shape)}, the optimizer state has shape {list(shape)}")
                return
            targets[name] = ("state" if state is not None else "pending", name, array)

        for key, value in state_dict.items():
            if key == _checkpoint.STEP_KEY:
                array = array_of(key, value)
                if array is not None and (array.size != 1 or array.dtype.kind not in "iu"
                                          or int(array.reshape(-1)[0]) < 0):
                    errors.append(f"'{key}' must hold one non-negative integer, got {array!r}")
                elif array is not None:
                    step = int(array.reshape(-1)[0])
                continue
            if key in self._modules and isinstance(value, dict):
                for sub, v in value.items():
                    flat = f"{key}.{sub}"
                    if flat in entries:
                        module_entry(flat, entries[flat][2], v)
                    else:
                        unexpected.append(flat)
                continue
            if not isinstance(key, str):
                unexpected.append(repr(key))
                continue
            if key in entries:
                module_entry(key, entries[key][2], value)
                continue
            if state is not None and state.info.get(key) is not None:
                info = state.info[key]
                if info[3] is None:
                    module_entry(key, state.objects[key], value)
                else:
                    optimizer_entry(key, key, info[0], value)
                continue
            base, _, kind = key.rpartition(".")
            if state is None and base in entries and kind in _state.OPTIMIZER_STATES:
                obj = entries[base][2]
                optimizer_entry(key, f"{names.get(id(obj), base)}.{kind}", obj.shape, value)
                continue
            unexpected.append(key)
        missing = [flat for flat, (_, _, obj) in entries.items() if id(obj) not in given]
        if unexpected:
            errors.append(f"unexpected key{'s' if len(unexpected) > 1 else ''} "
                          + ", ".join(f"'{k}'" for k in unexpected)
                          + f": {self.name} has no parameter, buffer or optimizer state of that name")
        if strict and missing:
            errors.append("missing key" + ("s " if len(missing) > 1 else " ")
                          + ", ".join(f"'{k}'" for k in missing))
        if errors:
            notes = []
            if unexpected:
                example = next(iter(entries), "model.weight")
                notes.append(f"its keys are module attributes holding their modules' state dicts "
                             f"({', '.join(self._modules)}), or flat names such as '{example}', "
                             f"optimizer states '<parameter>.momentum_buffer' (or '.exp_avg', "
                             f"'.exp_avg_sq') and '{_checkpoint.STEP_KEY}'")
            raise StateDictError.at(loc, f"{self.name}.load_state_dict(): " + errors[0],
                                    errors[1:] + notes)
        if run is None:
            for kind, target, array in targets.values():
                if kind == "module":
                    storage(target)[...] = array
                    target._loaded = True
                    target._loaded_loc = loc
                else:
                    self._pending_state[target] = (array, loc)
            if step is not None:
                object.__setattr__(self, "_pending_step", (step, loc))
        else:
            if step is not None:
                state.set_step(step)
            for kind, target, array in targets.values():
                if kind == "state":
                    state.set(target, array, "the graph's tensor")
                else:
                    storage(target)[...] = array
        return IncompatibleKeys(missing, unexpected)

    def save_checkpoint(self, path):
        """Writes the graph's state to the checkpoint directory ``path`` in the
        runtime's format (``pf-run --load`` and ``flow.load`` read it).

        After the first call the compiled program writes it itself
        (``pfrt_state_save``: world rank 0 gathers one tensor at a time and
        writes it), keyed by the compiled names, with the step taken so far; a
        collective that returns on every process once the checkpoint is
        complete. Before the first call it is ``flow.save(self.state_dict(),
        path)``.
        """
        run = self._run
        if run is None:
            _checkpoint.save(self.state_dict(), path)
            return
        run.state.save(os.fspath(path), f"{self.name}.save_checkpoint()")

    def load_checkpoint(self, path, strict=True):
        """``self.load_state_dict(flow.load(path), strict)``: a checkpoint of any
        layout (the files hold logical tensors; each process copies its part
        into the program)."""
        return self.load_state_dict(_checkpoint.load(path, mmap=True), strict)

    def __repr__(self):
        lines = [f"({name}): {type(m).__name__}" for name, m in self._modules.items()]
        return f"{self.name}(\n  " + "\n  ".join(lines + [repr(self.config)]) + "\n)"


class _Run:
    """A graph that runs: its compiled program on this rank and the call checks."""

    def __init__(self, graph, traced, artifacts, optimizers, loc):
        self.graph_name = graph.name
        self.traced = traced
        self.signature = traced.signature
        self.artifacts = artifacts
        self.optimizers = [o for o, _, _ in optimizers]
        self.lr_schedulers = [s for _, s, _ in optimizers]
        self.first_call = loc
        self.steps = 0
        self.trained = False
        self.m = graph.config.gradient_accumulation_steps
        self.rank = env.get_rank()
        world = env.get_world_size()
        n = artifacts.world_size
        # Automatic stages: the program runs on the user's placement P shifted
        # to every pipeline rank k (ranks k*W .. k*W+W-1, W = max rank of P + 1).
        self.auto_placement = graph._auto_placement(traced)
        self.auto_width = None
        if self.auto_placement is not None:
            self.auto_width = max(self.auto_placement.flat_ranks) + 1
        if n != world:
            script = os.path.relpath(sys.argv[0]) if sys.argv and sys.argv[0] else "SCRIPT.py"
            alone = "this process runs alone (world size 1)" if world == 1 else \
                f"this job has {world} processes"
            if self.auto_placement is not None:
                cfg = graph.config
                k = cfg.pipeline_stages
                homes = [str(_shifted(self.auto_placement, s * self.auto_width).ranks)
                         for s in range(min(k, 4))]
                homes = ", ".join(homes[:-1]) + (" and " if k <= 4 else ", ") + homes[-1] \
                    if k > 1 else homes[0]
                uses = (f"set_pipeline_stages({k}) runs its {k} pipeline stage{'s' if k > 1 else ''} "
                        f"on ranks {homes}{', ...' if k > 4 else ''}: the graph's placement "
                        f"{self.auto_placement.ranks} shifted")
            else:
                uses = f"its placements use ranks 0..{n - 1}"
            raise CompileError.at(
                loc, f"{graph.name}'s compiled program runs on {n} rank{'s' if n > 1 else ''} "
                     f"({uses}), but {alone}",
                [f"launch one process per rank: python3 -m pipeflow.distributed.launch "
                 f"--nproc_per_node {n} {script}"])
        self.entry = artifacts.rank(self.rank) or {}
        if self.entry.get("reports_loss") and int(self.entry.get("num_microbatches", self.m)) != self.m:
            raise BackendUnavailable(
                f"internal error: {artifacts.manifest_path} says rank {self.rank} runs "
                f"{self.entry['num_microbatches']} micro-batches per step, the graph asked for {self.m}")
        self.world = world
        self.plans = self._input_plans(artifacts)
        self.loss_placement = self._loss_placement(graph, traced, artifacts)
        self.reports_loss = self.entry.get("reports_loss", self.rank in self.loss_placement)
        self.loss_root = self._loss_root(artifacts)
        # Collectives between steps (input agreement and gathers, the loss
        # broadcast) need a program on every rank of the job.
        self.collective = world > 1 and all(
            artifacts.shared_object(r) is not None for r in range(world))
        so = artifacts.shared_object(self.rank)
        self.program = None if so is None else _runtime.Program(so, self.rank, world, traced.seed)
        self.version = 0  # changes with every step (see pipeflow._state)
        self.state = _state.ProgramState(self, self.program, traced.param_objects, world,
                                         self.collective)
        for optimizer in self.optimizers:
            optimizer._bind_state(self.state)

    def _input_plans(self, artifacts):
        """How this rank feeds every graph input (see pipeflow._feed)."""
        if all("inputs" in entry for entry in artifacts.ranks.values()) and artifacts.ranks:
            return _feed.plan(artifacts.ranks, self.signature[0], self.rank, _runtime.DTYPES,
                              artifacts.manifest_path, self.auto_width)
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

    def _loss_placement(self, graph, traced, artifacts):
        """The placement of the returned loss: the last stage's. With automatic
        stages that is the user's placement shifted to the last pipeline rank
        (the manifest's loss reporters must lie in it), else the traced loss's."""
        if self.auto_placement is None:
            return traced.loss.placement
        last = graph.config.pipeline_stages - 1
        placement = _shifted(self.auto_placement, last * self.auto_width)
        reporters = sorted(r for r, e in artifacts.ranks.items() if e.get("reports_loss"))
        if not reporters or any(r not in placement for r in reporters):
            raise BackendUnavailable(
                f"internal error: {artifacts.manifest_path}: the ranks reporting the loss "
                f"{reporters} are not on the last stage's placement {placement.ranks}")
        return placement

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
        scalars = {name: float(self.optimizers[i].param_groups[j]["lr"])
                   for name, i, j in self.traced.lr_scalars}
        feeds = []
        for plan in self.plans:
            data = self._feed(plan, args[plan.index], loc, None if known is None else known[plan.index])
            if data is not None:
                feeds.append((plan.index, data))
        if self.program is None:
            losses = np.empty((0,), np.float32)
        else:
            losses = self.program.step(self.steps, scalars, feeds)
        start = self.version
        self.steps += 1
        self.version += 1
        if not self.trained:
            self.trained = True
            for name, obj in self.traced.param_objects.items():
                mark_trained(obj, name, f"graph {self.graph_name}", self.state, start)
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
        here (see pipeflow._feed), and so do the readers outside it
        (automatic stages): participation depends on the placement, the
        manifest and the agreed ``known`` only, never on what this rank holds.
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
        logical = None
        if plan.member:
            logical = _feed.logical_value(self.program, tensor, plan, known, self.rank, loc)
        if plan.outside:
            logical = _feed.forward(self.program, tensor, logical, plan, known, self.rank)
        if plan.entry is None:
            return None
        if logical is None:
            raise BackendUnavailable(f"internal error: rank {self.rank} reads graph input "
                                     f"{plan.index} but has not got its value")
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


# Ops that pf-auto-stages does not cut: they follow their users' stage.
_FOLLOWS_USERS = ("pf.read_param", "pf.constant", "pf.to_global")


def _ranks_text(placement):
    """An IR placement in words: ``"cpu" ranks [0, 1]``."""
    return f'"{placement.device}" ranks {placement.nested()}'


def _shifted(placement, by):
    """``placement`` with every rank moved up by ``by`` (same type and hierarchy)."""
    return Placement(placement.type, ranks=(np.array(placement.ranks, dtype=np.int64) + by).tolist())


def _group_settings(group):
    """A parameter group's settings compiled into the step (all but the lr)."""
    return tuple(sorted((k, repr(v)) for k, v in group.items()
                        if k not in ("params", "lr", "initial_lr")))


def _show(value):
    return repr(value) if not isinstance(value, (list, str)) else str(value)


def _kind_of(tensor):
    from .parameter import Parameter
    return "parameter" if isinstance(tensor, Parameter) else "buffer"


def _local_tensor(array):
    from .. import dtypes as dt
    return Tensor._new(dt.from_numpy_dtype(array.dtype), array.shape, local=array)


def _step_tensor(step):
    return _local_tensor(np.array([int(step)], np.int64))
