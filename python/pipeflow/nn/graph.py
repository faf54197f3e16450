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
rank's ``librank<r>.so`` and initialises its parameters; every call feeds
this rank's inputs and the current learning rates, steps the learning-rate
schedulers and returns the loss as OneFlow does (see ``_graph.execution``).

The compiled program owns the parameters: their Python values (or values
loaded with ``load_state_dict``) are its initial values. After the first
call ``state_dict()`` reads the trained parameters, buffers and optimizer
states back (a collective: every process calls it, as in OneFlow),
``load_state_dict()`` sets them and ``save_checkpoint()`` writes them.

A graph may have several optimizers (``add_optimizer`` once for each, every
one with its own scheduler), and an optimizer several parameter groups
(see ``_graph.options``); every parameter the step uses must be in exactly
one optimizer. ``config.set_pipeline_stages(n)`` without explicit stages
lets the compiler choose ``n`` balanced stages of a model written on one
placement (``graph.stage_report()``).

Inside the graph, module attributes are wrapped in proxies whose ``config``
holds per-module settings: ``config.set_stage(stage_id, placement)``,
``config.stage_id = k`` and ``config.activation_checkpointing = True`` (or
``"selective"``: only attention's scores, softmax and dropout);
``module.to(nn.graph.GraphModule)`` returns the same settings object in
OneFlow's newer spelling (see ``_graph.blocks``).

This module is the user's API; tracing, compile options, execution and
state live in ``pipeflow.nn._graph``.
"""

import os
from collections import OrderedDict

from .. import _abi, _checkpoint, _random, _registry, amp, compiler, env
from .._errors import BackendUnavailable
from .._source import user_location
from ..optim.optimizer import Optimizer
from ._graph import checks, execution, options, state, tracing
from ._graph.blocks import GraphModule, ModuleConfig, ProxyModule
from ._graph.config import GraphConfig
from ._graph.tracing import TracedGraph
from .module import Module

__all__ = ["Graph", "GraphConfig", "GraphModule", "ModuleConfig", "ProxyModule", "TracedGraph"]


class Graph:
    """Base class of compiled training (or inference) steps; see the module docstring."""

    def __init__(self):
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "_proxies", {})
        object.__setattr__(self, "_configs", {})
        object.__setattr__(self, "_optimizers", [])  # (optimizer, lr_sch, loc)
        object.__setattr__(self, "_traced", None)
        object.__setattr__(self, "_compiled", None)
        object.__setattr__(self, "_run", None)
        object.__setattr__(self, "_pending_state", OrderedDict())  # loaded before the first call
        object.__setattr__(self, "_pending_step", None)
        object.__setattr__(self, "_grad_scaler", None)  # flow.amp.GradScaler (set_grad_scaler)
        object.__setattr__(self, "_debug", -1)
        object.__setattr__(self, "config", GraphConfig())

    # Attributes -------------------------------------------------------------------

    def __setattr__(self, name, value):
        if "_modules" not in self.__dict__:
            raise AttributeError(f"{type(self).__name__}.__init__ must call super().__init__() first")
        if isinstance(value, ProxyModule):
            value = value._module
        _registry.module_changes.bump()  # a compiled graph's fingerprint reads its modules
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
            _registry.module_changes.bump()
        return entry[1]

    @property
    def name(self):
        return type(self).__name__

    def add_optimizer(self, optim, *, lr_sch=None, is_sparse=False):
        """Trains the parameters of ``optim`` with it (``lr_sch`` sets its lr per step);
        call it once per optimizer (each parameter in one of them)."""
        if not isinstance(optim, Optimizer):
            raise TypeError(f"add_optimizer() expects a pipeflow.optim optimizer, got {type(optim).__name__}")
        if lr_sch is not None and getattr(lr_sch, "optimizer", None) is not optim:
            raise ValueError("add_optimizer(lr_sch=...) must be a scheduler of the same optimizer")
        if getattr(lr_sch, "steps_with_a_metric", False):
            raise compiler.CompileError.at(
                user_location(), f"add_optimizer(lr_sch=...): {type(lr_sch).__name__} steps with a "
                "metric the program measures, which the graph cannot supply",
                ["step it after each call instead: loss = graph(...); scheduler.step(loss)"])
        self._optimizers.append((optim, lr_sch, user_location()))
        _registry.module_changes.bump()

    def set_grad_scaler(self, grad_scaler=None):
        """Loss scaling (OneFlow's ``set_grad_scaler``): a ``flow.amp.GradScaler``
        or ``StaticGradScaler`` (see pipeflow._grad_scaler); ``None``: none."""
        if grad_scaler is not None and not isinstance(grad_scaler, amp.GradScaler):
            raise TypeError("set_grad_scaler() expects a flow.amp.GradScaler or StaticGradScaler, "
                            f"got {type(grad_scaler).__name__}")
        object.__setattr__(self, "_grad_scaler", grad_scaler)
        _registry.module_changes.bump()

    def build(self, *args):
        raise NotImplementedError(f"{type(self).__name__} must define build()")

    # Tracing and compiling --------------------------------------------------------

    def trace(self, *args):
        """Traces ``build`` on global tensors shaped like ``args``; returns a TracedGraph
        (the last one when the inputs' kind and the graph's settings are unchanged)."""
        loc = user_location()
        if not args:
            if self._traced is None:
                raise TypeError(f"{self.name} has not been traced yet: pass example inputs, e.g. graph.ir(x, y)")
            return self._traced
        signature = (tracing.signature(args, loc), tracing.fingerprint(self))
        if self._traced is not None and self._traced.signature == signature:
            return self._traced
        traced = tracing.trace(self, args, signature, loc)
        object.__setattr__(self, "_traced", traced)
        return traced

    def ir(self, *args):
        """The pf IR of the step traced on inputs like ``args``."""
        return self.trace(*args).text()

    def compile(self, *args):
        """Traces, writes the IR to the compile cache and verifies it with pf-opt."""
        traced = self.trace(*args)
        compiled = compiler.compile_ir(traced.text(), traced.options)
        object.__setattr__(self, "_compiled", compiled)
        return compiled

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

    def debug(self, v_level=0):
        """As OneFlow's: with ``v_level >= 0`` the first call prints (on rank 0)
        :meth:`debug_report`'s text once compiled; ``-1`` turns it off."""
        object.__setattr__(self, "_debug", int(v_level))

    def debug_report(self, *args):
        """The compiled program as the compiler sees it: the automatic stages'
        cut, every boxing op (layouts, bytes per rank, the user's line) and
        each rank's schedule, for the graph traced on ``args`` (or already)."""
        traced = self.trace(*args)
        _, _, pipeline = self._pipeline(traced, user_location())
        compiled = self.compile(*args) if args or self._compiled is None else self._compiled
        return compiler.debug_report(compiled, pipeline)

    def _pipeline(self, traced, loc):
        """The first optimizer, its scheduler and pf-compile-cpu-pipeline's options."""
        return options.pipeline(self, traced, loc)

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
        if run.inference:
            if run.traced.local:
                losses = [t.to_local() for t in losses]
            return tracing.rebuild(run.traced.structure, losses)
        for lr_scheduler in run.lr_schedulers:
            if lr_scheduler is not None:
                lr_scheduler.step()
        loss = run.loss_tensor(losses)
        if not run.extras:
            return loss
        # What build returned: the loss and its other outputs (per
        # micro-batch, stacked along a new axis 0 when m > 1).
        results = {j: t.to_local() if run.traced.local else t for j, t in run.extras.items()}
        results[0] = loss
        return tracing.rebuild(run.traced.structure,
                               [results[j] for j in run.traced.leaf_results])

    @property
    def artifacts(self):
        """The compiled per-rank programs (after the first call), else ``None``."""
        return self._run.artifacts if self._run is not None else None

    def memory_report(self, *args):
        """Every rank's planned memory in bytes by category, from the compiled
        program's memory plan: ``{rank: {"parameter_bytes", "state_bytes"
        (optimizer states), "gradient_bytes", "input_bytes",
        "activation_peak_bytes", "arena_bytes" (the whole plan), ...}}``.

        Without arguments, the plans of the program the first call compiled.
        With inputs like a call's, the graph is traced and compiled for them
        up to the per-rank programs only (``compiler.memory_plans``): nothing
        runs and no shared object is built, so one process answers for a
        program of any number of ranks before any job starts; a plan larger
        than ``config.set_device_memory`` is the CompileError the first call
        would raise."""
        if not args:
            if self._run is None:
                raise RuntimeError(f"{self.name} has not been compiled yet: it compiles at its first "
                                   "call, or call memory_report(*inputs) to compile it without running")
            return {rank: dict(info["memory"]) for rank, info in sorted(self._run.artifacts.ranks.items())}
        loc = user_location()
        traced = self.trace(*args)
        _, _, pipeline = self._pipeline(traced, loc)
        compiled = self.compile(*args)
        plans = compiler.memory_plans(compiled, pipeline)
        checks.check_device_memory(self, plans, loc, compiler.backend_of(compiled.ir_path))
        return plans

    def memory_usage(self):
        """What this process's rank of the compiled program used, as measured
        by the runtime (after the first call): ``{"rank", "planned_bytes"
        (the arena it allocated for the plan's ``arena_bytes``, rounded up to
        64), "high_water_bytes" (the largest offset + size any step so far
        touched in it), "peak_rss_bytes" (the process's peak resident set,
        Python included)}``; ``None`` on a process outside the program."""
        run = self._run
        if run is None:
            raise RuntimeError(f"{self.name} has not run yet: its program is loaded at its first call")
        if run.program is None:
            return None
        lib, names = run.program.lib, ["pfrt_arena_planned_bytes", "pfrt_arena_high_water",
                                       "pfrt_peak_rss_bytes"]
        gpu = run.program.fn.pfrt_cuda_active() if hasattr(lib, "pfrt_cuda_active") else 0
        if gpu:  # a GPU rank: its arena is on the device
            names[:2] = ["pfrt_cuda_arena_high_water"]
        if not all(hasattr(lib, name) for name in names):
            raise BackendUnavailable(f"{run.program.path} does not export {', '.join(names)}: it was "
                                     "linked with an older runtime; rebuild the runtime and run again")
        fn = _abi.bind(lib, names)
        if gpu:
            planned, high = run.entry["memory"]["arena_bytes"], fn.pfrt_cuda_arena_high_water()
        else:
            planned, high = fn.pfrt_arena_planned_bytes(), fn.pfrt_arena_high_water()
        return {"rank": run.rank, "planned_bytes": planned, "high_water_bytes": high,
                "peak_rss_bytes": fn.pfrt_peak_rss_bytes()}

    def _start(self, args, loc):
        """The first call: trace, compile for CPU ranks, load this rank's program."""
        traced = self.trace(*args)
        if traced.seed != _random.initial_seed():
            # manual_seed() changed since tracing: trace again so that the Python
            # values and the compiled program start from the same parameters.
            object.__setattr__(self, "_traced", None)
            traced = self.trace(*args)
        _, _, pipeline = self._pipeline(traced, loc)
        compiled = self.compile(*args)
        artifacts = compiler.build_cpu_artifacts(compiled, pipeline)
        backends = {info.get("backend", "cpu") for info in artifacts.ranks.values()}
        checks.check_device_memory(self, {r: info["memory"] for r, info in artifacts.ranks.items()}, loc,
                                   "cuda" if "cuda" in backends else "cpu")
        if self._debug >= 0 and env.get_rank() == 0:
            print(f"{self.name}:\n" + compiler.debug_report(compiled, pipeline), flush=True)
        run = execution.Run(self, traced, artifacts, self._optimizers, loc)
        state.load_initial(self, run, traced)
        object.__setattr__(self, "_run", run)
        return run

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
        return state.state_dict(self)

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
        return state.load_state_dict(self, state_dict, strict, user_location())

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
        if run is None or self._grad_scaler is not None:
            # With a grad scaler its state goes with the tensors (flow.save).
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
