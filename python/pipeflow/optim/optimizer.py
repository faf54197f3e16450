"""Optimizers: they record hyper-parameters; the compiler emits the updates.

Every parameter group has an update rule (:meth:`Optimizer.rules`: the kind,
``sgd``, ``adam`` or ``adamw``, and the hyper-parameters compiled into the
step). The graph compiles one rule, the first optimizer's first group's, as
the options of ``pf-opt -pf-compile-cpu-pipeline`` (:func:`pipeline_options`);
the parameters of every other group carry their own rule as a ``pf.optimizer``
dictionary in the traced IR. The learning rate is not compiled in: each group
reads a run-time scalar ("lr" for the first group of the first optimizer,
"lr.o<i>.g<j>" for the others), which the graph sets before every step from
the group's current ``lr`` (so learning-rate schedulers work unchanged).
"""

import numbers
from collections import OrderedDict

import numpy as np

from .. import _registry
from .._errors import BackendUnavailable, StateDictError
from .._source import user_location
from ..tensor import Tensor

# Entries of a parameter group that are not compiled into the step: the
# learning rate is a run-time input; the others are the schedulers' (the
# base rate, OneCycleLR's bounds).
RUN_TIME_KEYS = ("lr", "initial_lr", "max_lr", "min_lr", "max_momentum", "base_momentum")


def _counted(method):
    def changed(self, *args, **kwargs):
        _registry.module_changes.bump()
        return method(self, *args, **kwargs)
    changed.__name__ = method.__name__
    return changed


class ParamList(list):
    """A parameter group's ``params``: a list whose every change counts in
    ``_registry.module_changes``, as the modules' registries do (a compiled
    graph checks its optimizers' parameters again only after a change)."""

    __slots__ = ()


for _name in ("__setitem__", "__delitem__", "__iadd__", "__imul__", "append", "extend", "insert",
              "pop", "remove", "clear", "sort", "reverse"):
    setattr(ParamList, _name, _counted(getattr(list, _name)))
del _name


def _real(value, what, low=None, high=None, low_open=False, high_open=False):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"invalid {what}: {value!r} is not a number")
    value = float(value)
    if low is not None and (value < low or (low_open and value == low)):
        raise ValueError(f"invalid {what}: {value} (must be {'>' if low_open else '>='} {low})")
    if high is not None and (value > high or (high_open and value == high)):
        raise ValueError(f"invalid {what}: {value} (must be {'<' if high_open else '<='} {high})")
    return value


class Optimizer:
    """Parameter groups plus per-group hyper-parameters (``param_groups``)."""

    def __init__(self, params, defaults):
        self.defaults = dict(defaults)
        self.param_groups = []
        self.state = {}
        self._state_owner = None     # the ProgramState of the graph that runs the optimizer
        self._pending_state = {}     # loaded before that graph's first call: id(param) -> {kind: (array, loc)}
        self._pending_step = None
        self._schedulers = []        # the lr_scheduler objects made on this optimizer
        if isinstance(params, Tensor):
            raise TypeError("params must be an iterable of parameters or of dicts, not a single tensor")
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def add_param_group(self, group):
        if not isinstance(group, dict) or "params" not in group:
            raise TypeError("a parameter group must be a dict with a 'params' entry")
        params = group["params"]
        params = [params] if isinstance(params, Tensor) else list(params)
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer parameters must be tensors, got {type(p).__name__}")
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in seen for p in params) or len({id(p) for p in params}) != len(params):
            raise ValueError("a parameter appears in more than one parameter group")
        merged = dict(self.defaults)
        merged.update(group)
        merged["params"] = ParamList(params)
        self._validate(merged)
        self.param_groups.append(merged)

    def _validate(self, group):
        group["lr"] = _real(group["lr"], "learning rate", 0.0)
        group["weight_decay"] = _real(group.get("weight_decay", 0.0), "weight_decay", 0.0)
        # OneFlow's gradient clipping by global norm, per parameter group.
        if group.get("clip_grad_max_norm") is not None:
            norm = _real(group["clip_grad_max_norm"], "clip_grad_max_norm", 0.0)
            if norm <= 0:
                raise ValueError(f"clip_grad_max_norm must be > 0, got {norm}")
            group["clip_grad_max_norm"] = norm
            kind = float(group.get("clip_grad_norm_type", 2.0))
            if kind != 2.0:
                raise ValueError(f"clip_grad_norm_type={kind} is not supported by the compiled "
                                 "step (the L2 norm, 2.0, is)")
            group["clip_grad_norm_type"] = kind

    def zero_grad(self, set_to_none=True):
        """No-op: gradients live in the compiled step."""

    def step(self, closure=None):
        raise BackendUnavailable("eager optimizer steps are not supported: add the optimizer to an "
                                 "nn.Graph with add_optimizer(); calling the graph runs the "
                                 "compiled step, update included")

    # State ----------------------------------------------------------------------

    _has_step = False  # whether torch's state keeps a per-parameter "step" (Adam)

    def _bind_state(self, owner):
        """Called by the graph that runs the optimizer, when its program loads."""
        self._state_owner = owner

    def _indexed_params(self):
        out = []
        for g in self.param_groups:
            out.extend(g["params"])
        return out

    def state_dict(self):
        """torch.optim's layout: ``{"state": {index: {kind: tensor}}, "param_groups":
        [{hyper-parameters..., "params": [index, ...]}]}``, parameters numbered in
        group order. Once a graph has run the optimizer, ``state`` holds the
        compiled program's states (``momentum_buffer``; ``exp_avg``,
        ``exp_avg_sq`` and ``step`` for Adam), read back as
        ``nn.Graph.state_dict()`` reads parameters (a process running alone
        reads them on demand; in a job of several processes call
        ``graph.state_dict()`` on every process first)."""
        params = self._indexed_params()
        index = {id(p): i for i, p in enumerate(params)}
        groups = []
        for g in self.param_groups:
            entry = {k: (list(v) if isinstance(v, tuple) else v) for k, v in g.items() if k != "params"}
            entry["params"] = [index[id(p)] for p in g["params"]]
            groups.append(entry)
        state = OrderedDict()
        owner = self._state_owner
        if owner is not None:
            what = f"{type(self).__name__}.state_dict()"
            for i, p in enumerate(params):
                symbol = owner.symbol.get(id(p))
                kinds = owner.optimizer_states(symbol) if symbol is not None else {}
                if not kinds:
                    continue
                entry = state[i] = OrderedDict()
                if self._has_step:
                    entry["step"] = owner.step
                for kind in sorted(kinds):
                    entry[kind] = owner.tensor(kinds[kind], owner.value(kinds[kind], what))
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
        """Loads what :meth:`state_dict` returns: the hyper-parameters of every group
        and the optimizer states, which go into the compiled program of the
        graph that runs the optimizer (at its first call if it has not run
        yet). Hyper-parameters other than the learning rate are compiled
        into the step, so once it runs they must not change. Errors raise
        ``StateDictError`` at the calling line, before anything is loaded."""
        loc = user_location()
        name = type(self).__name__
        owner = self._state_owner
        if not isinstance(state_dict, dict) or "param_groups" not in state_dict:
            raise StateDictError.at(loc, f"{name}.load_state_dict() expects a dict with 'state' and "
                                         "'param_groups' (what state_dict() returns)")
        groups = list(state_dict["param_groups"])
        if len(groups) != len(self.param_groups) or any(
                len(saved.get("params", ())) != len(g["params"]) for saved, g in zip(groups, self.param_groups, strict=True)):
            raise StateDictError.at(
                loc, f"{name}.load_state_dict(): the state dict has groups of "
                     f"{[len(g.get('params', ())) for g in groups]} parameters, the optimizer "
                     f"{[len(g['params']) for g in self.param_groups]}")
        new_groups = []
        for saved, g in zip(groups, self.param_groups, strict=True):
            merged = dict(g)
            merged.update({k: (tuple(v) if isinstance(v, list) else v) for k, v in saved.items() if k != "params"})
            try:
                self._validate(merged)
            except ValueError as err:
                raise StateDictError.at(loc, f"{name}.load_state_dict(): {err}") from None
            if owner is not None:
                changed = sorted(k for k in set(g) | set(merged)
                                 if k not in RUN_TIME_KEYS + ("params",) and g.get(k) != merged.get(k))
                if changed:
                    raise StateDictError.at(
                        loc, f"{name}.load_state_dict(): the state dict has {changed[0]}="
                             f"{merged.get(changed[0])!r}, but the compiled step of the graph that runs "
                             f"this optimizer uses {g.get(changed[0])!r}; only the learning rate can "
                             "change once a graph has run")
            new_groups.append(merged)
        params = self._indexed_params()
        values, step = [], None
        for key, entry in dict(state_dict.get("state", {})).items():
            i = int(key)
            if not 0 <= i < len(params):
                raise StateDictError.at(loc, f"{name}.load_state_dict(): state of parameter {i}, but "
                                             f"the optimizer has {len(params)}")
            p = params[i]
            for kind, value in entry.items():
                if kind == "step":
                    step = int(np.asarray(value.numpy() if isinstance(value, Tensor) else value).reshape(-1)[0])
                    continue
                array = value.numpy() if isinstance(value, Tensor) else np.asarray(value)
                if tuple(array.shape) != tuple(p.shape):
                    raise StateDictError.at(
                        loc, f"{name}.load_state_dict(): size mismatch for the {kind} of parameter {i}: "
                             f"copying a value of shape {list(array.shape)}, the parameter has shape "
                             f"{list(p.shape)}")
                if owner is not None:
                    symbol = owner.symbol.get(id(p))
                    if symbol is None or f"{symbol}.{kind}" not in owner.info:
                        raise StateDictError.at(
                            loc, f"{name}.load_state_dict(): the state dict holds '{kind}' for "
                                 f"parameter {i}, but the compiled program keeps no such state")
                values.append((p, kind, array))
        for g, merged in zip(self.param_groups, new_groups, strict=True):
            g.update({k: v for k, v in merged.items() if k != "params"})
        if owner is not None:
            if step is not None and self._has_step:
                owner.set_step(step)
            for p, kind, array in values:
                owner.set(f"{owner.symbol[id(p)]}.{kind}", array, "the optimizer state")
        else:
            for p, kind, array in values:
                self._pending_state.setdefault(id(p), {})[kind] = (array, loc)
            if step is not None and self._has_step:
                self._pending_step = (step, loc)

    # The compiled step ------------------------------------------------------------

    def current_lr(self):
        """The learning rate of the next compiled step in group 0."""
        return self.param_groups[0]["lr"]

    def current_lrs(self):
        """Every group's learning rate of the next compiled step."""
        return [g["lr"] for g in self.param_groups]

    def _rule(self, group):
        """One group's update rule: ``{"kind": ..., hyper-parameters...}`` (the
        keys of ``pf.optimizer``); ValueError where the compiled step cannot
        apply it."""
        raise ValueError(f"{type(self).__name__} is not supported by the compiled step yet "
                         "(supported: SGD, Adam, AdamW)")

    def rules(self):
        """The update rule of every parameter group (see :meth:`_rule`)."""
        out = []
        for i, group in enumerate(self.param_groups):
            try:
                out.append(self._rule(group))
            except ValueError as err:
                where = f" (parameter group {i})" if len(self.param_groups) > 1 else ""
                raise ValueError(f"{err}{where}") from None
        return out

    def pipeline_options(self):
        """The options of ``pf-compile-cpu-pipeline`` for group 0's rule (the lr is a
        run-time input)."""
        return pipeline_options(self.rules()[0])

    def hyperparameters(self):
        """Every group's hyper-parameters (without the parameters)."""
        return [{k: v for k, v in g.items() if k != "params"} for g in self.param_groups]

    def describe(self, symbol_of, lr_scheduler=None):
        """A JSON-able summary for the compiler: type, groups with parameter names, schedule."""
        groups = []
        for g in self.param_groups:
            entry = {k: (list(v) if isinstance(v, tuple) else v) for k, v in g.items()
                     if k == "lr" or k not in RUN_TIME_KEYS + ("params",)}
            entry["lr"] = g.get("initial_lr", g["lr"])  # the base rate: the step takes lr at run time
            entry["params"] = [symbol_of(p) for p in g["params"]]
            groups.append(entry)
        out = {"type": type(self).__name__, "param_groups": groups}
        if lr_scheduler is not None:
            out["lr_scheduler"] = lr_scheduler.describe()
        return out

    def __repr__(self):
        body = "\n".join(f"  group {i}: {h}" for i, h in enumerate(self.hyperparameters()))
        return f"{type(self).__name__}(\n{body}\n)"


# pf.optimizer's keys -> pf-compile-cpu-pipeline's option names.
_OPTION_NAMES = {"kind": "optimizer", "weight_decay": "weight-decay",
                 "bias_correction": "bias-correction"}


def pipeline_options(rule):
    """A rule (see :meth:`Optimizer.rules`) as ``pf-compile-cpu-pipeline`` options."""
    out = []
    for key, value in rule.items():
        if isinstance(value, bool):
            value = "true" if value else "false"
        elif isinstance(value, float):
            value = repr(value)
        out.append(f"{_OPTION_NAMES.get(key, key)}={value}")
    return out


def rule_overrides(rule, default):
    """The entries of ``rule`` that a parameter's ``pf.optimizer`` dictionary must
    hold when the pipeline's options are ``default``: all of them for another
    kind of update, else those that differ (both rules list every setting of
    their kind, so the pipeline's values stand for the rest)."""
    if rule["kind"] != default["kind"]:
        return dict(rule)
    return {k: v for k, v in rule.items() if default.get(k) != v}


class SGD(Optimizer):
    """Stochastic gradient descent with optional momentum, dampening, Nesterov and weight decay."""

    def __init__(self, params, lr=1e-3, momentum=0.0, dampening=0.0, weight_decay=0.0,
                 nesterov=False, maximize=False):
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov, maximize=maximize))

    def _validate(self, group):
        super()._validate(group)
        group["momentum"] = _real(group["momentum"], "momentum", 0.0)
        group["dampening"] = _real(group["dampening"], "dampening", 0.0, 1.0)
        group["nesterov"] = bool(group["nesterov"])
        group["maximize"] = bool(group["maximize"])
        if group["nesterov"] and (group["momentum"] <= 0 or group["dampening"] != 0):
            raise ValueError("Nesterov momentum requires momentum > 0 and dampening = 0")

    def _rule(self, h):
        if h["maximize"]:
            raise ValueError("SGD(maximize=True) is not supported by the compiled step yet")
        return {"kind": "sgd", "momentum": h["momentum"], "dampening": h["dampening"],
                "nesterov": h["nesterov"], "weight_decay": h["weight_decay"]}


class Adam(Optimizer):
    """Adam (L2 weight decay added to the gradient); ``amsgrad`` keeps the max second moment.

    ``do_bias_correction`` (OneFlow's name; default True, as in torch) divides
    the moments by ``1 - beta ** t``.
    """

    _pipeline_name = "adam"
    _has_step = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                 amsgrad=False, maximize=False, do_bias_correction=True):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      amsgrad=amsgrad, maximize=maximize,
                                      do_bias_correction=do_bias_correction))

    def _rule(self, h):
        for flag in ("amsgrad", "maximize"):
            if h[flag]:
                raise ValueError(f"{type(self).__name__}({flag}=True) is not supported by the "
                                 "compiled step yet")
        beta1, beta2 = h["betas"]
        return {"kind": self._pipeline_name, "beta1": beta1, "beta2": beta2, "eps": h["eps"],
                "weight_decay": h["weight_decay"], "bias_correction": h["do_bias_correction"]}

    def _validate(self, group):
        super()._validate(group)
        betas = tuple(group["betas"])
        if len(betas) != 2:
            raise ValueError(f"betas must be a pair, got {group['betas']!r}")
        group["betas"] = (_real(betas[0], "beta1", 0.0, 1.0, high_open=True),
                          _real(betas[1], "beta2", 0.0, 1.0, high_open=True))
        group["eps"] = _real(group["eps"], "epsilon", 0.0)
        group["amsgrad"] = bool(group["amsgrad"])
        group["maximize"] = bool(group["maximize"])
        group["do_bias_correction"] = bool(group.get("do_bias_correction", True))


class AdamW(Adam):
    """Adam with decoupled weight decay (default 0.01)."""

    _pipeline_name = "adamw"

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, maximize=False, do_bias_correction=True):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize, do_bias_correction)
