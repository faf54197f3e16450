"""The cyclic learning-rate schedules: ``CosineAnnealingWarmRestarts``,
``OneCycleLR`` and ``CyclicLR`` (torch.optim.lr_scheduler's; exported by
``lr_scheduler``)."""

import math

from .._errors import CompileError
from .._source import user_location
from ._lr_base import LRScheduler, _check_optimizer


class _CyclesMomentum:
    """A schedule that may cycle the momentum (SGD's ``momentum``, Adam's
    ``betas[0]`` where ``use_beta1``), which a compiled step holds fixed:
    writing another value once a graph runs the optimizer is a CompileError
    at the user's line, and ``compiled_conflict`` tells a graph so before
    its first call."""

    use_beta1 = False

    def _set_momentum(self, group, value):
        key = "betas" if self.use_beta1 else "momentum"
        new = (value, *group["betas"][1:]) if self.use_beta1 else value
        if group[key] == new:
            return  # unchanged (torch writes it again; a graph's check then has less to redo)
        if self.optimizer._state_owner is not None:
            message, notes = self._conflict_text()
            raise CompileError.at(user_location(), message, notes)
        group[key] = new

    def _conflict_text(self):
        what = "betas[0]" if self.use_beta1 else "momentum"
        return (f"{type(self).__name__}(cycle_momentum=True) changes the {what} of "
                f"{type(self.optimizer).__name__}'s parameter groups every step, but the compiled "
                f"step has the {what} compiled in (only the learning rate is a run-time scalar)",
                ["pass cycle_momentum=False to keep the optimizer's momentum (or base_momentum "
                 "equal to max_momentum)"])

    def compiled_conflict(self):
        if self.cycle_momentum and any(top != low for top, low in self._momentum_bounds()):
            return self._conflict_text()
        return None


class CosineAnnealingWarmRestarts(LRScheduler):
    """SGDR: cosine annealing from ``initial_lr`` to ``eta_min`` over ``T_0``
    steps, restarting with periods multiplied by ``T_mult``; ``step(epoch)``
    takes fractional epochs."""

    def __init__(self, optimizer, T_0, T_mult=1, eta_min=0, last_epoch=-1, verbose=False, *,
                 last_step=None):
        if T_0 <= 0 or not isinstance(T_0, int):
            raise ValueError(f"Expected positive integer T_0, but got {T_0}")
        if T_mult < 1 or not isinstance(T_mult, int):
            raise ValueError(f"Expected integer T_mult >= 1, but got {T_mult}")
        if last_step is not None:
            last_epoch = last_step
        self.T_0 = T_0
        self.T_i = T_0
        self.T_mult = T_mult
        self.eta_min = eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch, verbose)

    def get_lr(self):
        self._warn_outside_step()
        return [self.eta_min + (base_lr - self.eta_min) * (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2
                for base_lr in self.base_lrs]

    def step(self, epoch=None):
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur = self.T_cur + 1
            if self.T_cur >= self.T_i:
                self.T_cur = self.T_cur - self.T_i
                self.T_i = self.T_i * self.T_mult
        else:
            if epoch < 0:
                raise ValueError(f"Expected non-negative epoch, but got {epoch}")
            if epoch >= self.T_0:
                if self.T_mult == 1:
                    self.T_cur = epoch % self.T_0
                else:
                    n = int(math.log((epoch / self.T_0 * (self.T_mult - 1) + 1), self.T_mult))
                    self.T_cur = epoch - self.T_0 * (self.T_mult ** n - 1) / (self.T_mult - 1)
                    self.T_i = self.T_0 * self.T_mult ** n
            else:
                self.T_i = self.T_0
                self.T_cur = epoch
        self.last_epoch = math.floor(epoch)
        self._get_lr_called_within_step = True
        try:
            values = self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        self._set_lrs(values, epoch)

    def _advance(self, epoch):
        self.step(epoch)

    def _params(self):
        return {"T_0": self.T_0, "T_mult": self.T_mult, "eta_min": self.eta_min}


def _per_group(name, optimizer, value):
    if isinstance(value, (list, tuple)):
        if len(value) != len(optimizer.param_groups):
            raise ValueError(f"expected {len(optimizer.param_groups)} values for {name}, got {len(value)}")
        return value
    return [value] * len(optimizer.param_groups)


def _annealing_cos(start, end, pct):
    return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)


def _annealing_linear(start, end, pct):
    return (end - start) * pct + start


class OneCycleLR(_CyclesMomentum, LRScheduler):
    """The 1cycle policy (fastai's two phases; ``three_phase`` for the paper's):
    from ``max_lr / div_factor`` up to ``max_lr`` over ``pct_start`` of
    ``total_steps`` (or ``epochs * steps_per_epoch``), then down to
    ``initial_lr / final_div_factor``, annealed by ``anneal_strategy``
    (``"cos"`` or ``"linear"``). ``cycle_momentum`` cycles the momentum
    inversely between ``max_momentum`` and ``base_momentum``: the compiled
    step cannot follow that (see the module docstring)."""

    def __init__(self, optimizer, max_lr, total_steps=None, epochs=None, steps_per_epoch=None,
                 pct_start=0.3, anneal_strategy="cos", cycle_momentum=True, base_momentum=0.85,
                 max_momentum=0.95, div_factor=25., final_div_factor=1e4, three_phase=False,
                 last_epoch=-1, verbose=False, *, last_step=None):
        _check_optimizer(optimizer, "OneCycleLR")
        self.optimizer = optimizer
        self.total_steps = _total_steps(total_steps, epochs, steps_per_epoch)
        self._schedule_phases = _phases(pct_start, self.total_steps, three_phase)
        if pct_start < 0 or pct_start > 1 or not isinstance(pct_start, float):
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must by one of 'cos' or 'linear', instead got {anneal_strategy}")
        self.anneal_strategy = anneal_strategy
        if last_step is not None:
            last_epoch = last_step
        if last_epoch == -1:
            for max_lr_, group in zip(_per_group("max_lr", optimizer, max_lr), optimizer.param_groups,
                                      strict=True):
                group["initial_lr"] = max_lr_ / div_factor
                group["max_lr"] = max_lr_
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError("optimizer must support momentum with `cycle_momentum` option enabled")
            self.use_beta1 = "betas" in optimizer.defaults
            if last_epoch == -1:
                for top, low, group in zip(_per_group("max_momentum", optimizer, max_momentum),
                                           _per_group("base_momentum", optimizer, base_momentum),
                                           optimizer.param_groups, strict=True):
                    self._set_momentum(group, top)
                    group["max_momentum"] = top
                    group["base_momentum"] = low
        super().__init__(optimizer, last_epoch, verbose)

    @property
    def anneal_func(self):
        return _annealing_cos if self.anneal_strategy == "cos" else _annealing_linear

    def _momentum_bounds(self):
        return [(g["max_momentum"], g["base_momentum"]) for g in self.optimizer.param_groups]

    def get_lr(self):
        self._warn_outside_step()
        step_num = self.last_epoch
        if step_num > self.total_steps:
            raise ValueError(f"Tried to step {step_num + 1} times. The specified number of total "
                             f"steps is {self.total_steps}")
        anneal = self.anneal_func
        lrs, momentums = [], []
        for group in self.optimizer.param_groups:
            start_step = 0
            for i, phase in enumerate(self._schedule_phases):
                end_step = phase["end_step"]
                if step_num <= end_step or i == len(self._schedule_phases) - 1:
                    pct = (step_num - start_step) / (end_step - start_step)
                    lrs.append(anneal(group[phase["start_lr"]], group[phase["end_lr"]], pct))
                    if self.cycle_momentum:
                        momentums.append(anneal(group[phase["start_momentum"]],
                                                group[phase["end_momentum"]], pct))
                    break
                start_step = phase["end_step"]
        if self.cycle_momentum:
            for group, momentum in zip(self.optimizer.param_groups, momentums, strict=True):
                self._set_momentum(group, momentum)
        return lrs

    def _params(self):
        return {"total_steps": self.total_steps, "phases": self._schedule_phases,
                "anneal_strategy": self.anneal_strategy, "cycle_momentum": self.cycle_momentum}


def _total_steps(total_steps, epochs, steps_per_epoch):
    if total_steps is None and epochs is None and steps_per_epoch is None:
        raise ValueError("You must define either total_steps OR (epochs AND steps_per_epoch)")
    if total_steps is not None:
        if total_steps <= 0 or not isinstance(total_steps, int):
            raise ValueError(f"Expected positive integer total_steps, but got {total_steps}")
        return total_steps
    if epochs <= 0 or not isinstance(epochs, int):
        raise ValueError(f"Expected positive integer epochs, but got {epochs}")
    if steps_per_epoch <= 0 or not isinstance(steps_per_epoch, int):
        raise ValueError(f"Expected positive integer steps_per_epoch, but got {steps_per_epoch}")
    return epochs * steps_per_epoch


def _phases(pct_start, total_steps, three_phase):
    """OneCycleLR's phases: end step, then the group entries each anneals between."""
    def phase(end_step, lrs, momentums):
        return {"end_step": end_step, "start_lr": lrs[0], "end_lr": lrs[1],
                "start_momentum": momentums[0], "end_momentum": momentums[1]}
    up = phase(float(pct_start * total_steps) - 1, ("initial_lr", "max_lr"), ("max_momentum", "base_momentum"))
    if three_phase:
        return [up,
                phase(float(2 * pct_start * total_steps) - 2, ("max_lr", "initial_lr"),
                      ("base_momentum", "max_momentum")),
                phase(total_steps - 1, ("initial_lr", "min_lr"), ("max_momentum", "max_momentum"))]
    return [up, phase(total_steps - 1, ("max_lr", "min_lr"), ("base_momentum", "max_momentum"))]


class CyclicLR(_CyclesMomentum, LRScheduler):
    """Cyclical learning rates (Smith, 2017), stepped per batch: the rate
    climbs from ``base_lr`` to ``max_lr`` over ``step_size_up`` steps and
    back over ``step_size_down`` (default the same), the cycle's height
    scaled by ``mode`` (``"triangular"``: constant; ``"triangular2"``: halved
    each cycle; ``"exp_range"``: ``gamma ** step``) or by a ``scale_fn`` of
    the cycle or the step (``scale_mode``). ``cycle_momentum`` (SGD's
    momentum, as in torch 1.13) moves the momentum the other way between
    ``max_momentum`` and ``base_momentum``, which a compiled step cannot
    follow (pass ``cycle_momentum=False`` to a graph's optimizer)."""

    def __init__(self, optimizer, base_lr, max_lr, step_size_up=2000, step_size_down=None,
                 mode="triangular", gamma=1.0, scale_fn=None, scale_mode="cycle", cycle_momentum=True,
                 base_momentum=0.8, max_momentum=0.9, last_epoch=-1, verbose=False, *, last_step=None):
        _check_optimizer(optimizer, "CyclicLR")
        self.optimizer = optimizer
        if last_step is not None:
            last_epoch = last_step
        base_lrs = _per_group("base_lr", optimizer, base_lr)
        if last_epoch == -1:
            for lr, group in zip(base_lrs, optimizer.param_groups, strict=True):
                group["lr"] = lr
        self.max_lrs = _per_group("max_lr", optimizer, max_lr)
        up = float(step_size_up)
        down = float(step_size_down) if step_size_down is not None else up
        self.total_size = up + down
        self.step_ratio = up / self.total_size
        if scale_fn is None and mode not in _CYCLIC_MODES:
            raise ValueError("mode is invalid and scale_fn is None")
        self.mode = mode
        self.gamma = gamma
        self._scale_fn_custom = scale_fn
        self.scale_mode = scale_mode if scale_fn is not None else _CYCLIC_MODES[mode]
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults:
                raise ValueError("optimizer must support momentum with `cycle_momentum` option enabled")
            if last_epoch == -1:
                for momentum, group in zip(_per_group("base_momentum", optimizer, base_momentum),
                                           optimizer.param_groups, strict=True):
                    self._set_momentum(group, momentum)
            self.base_momentums = [group["momentum"] for group in optimizer.param_groups]
            self.max_momentums = _per_group("max_momentum", optimizer, max_momentum)
        super().__init__(optimizer, last_epoch, verbose)
        self.base_lrs = base_lrs

    def scale_fn(self, x):
        """The cycle's height factor at cycle (or step) ``x``."""
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        if self.mode == "triangular":
            return 1.0
        if self.mode == "triangular2":
            return 1 / (2.0 ** (x - 1))
        return self.gamma ** x

    def _momentum_bounds(self):
        return list(zip(self.max_momentums, self.base_momentums, strict=True))

    def get_lr(self):
        self._warn_outside_step()
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle
        # Where in the cycle: 0 at its ends, 1 at the top.
        height = x / self.step_ratio if x <= self.step_ratio else (x - 1) / (self.step_ratio - 1)
        scale = self.scale_fn(cycle if self.scale_mode == "cycle" else self.last_epoch)
        lrs = [low + (top - low) * height * scale for low, top in zip(self.base_lrs, self.max_lrs, strict=True)]
        if self.cycle_momentum:
            for group, low, top in zip(self.optimizer.param_groups, self.base_momentums,
                                       self.max_momentums, strict=True):
                self._set_momentum(group, top - (top - low) * height * scale)
        return lrs

    def _params(self):
        return {"max_lrs": self.max_lrs, "total_size": self.total_size, "step_ratio": self.step_ratio,
                "mode": self.mode, "gamma": self.gamma, "scale_mode": self.scale_mode,
                "cycle_momentum": self.cycle_momentum}


# CyclicLR's built-in modes and what their scale function reads.
_CYCLIC_MODES = {"triangular": "cycle", "triangular2": "cycle", "exp_range": "iterations"}
