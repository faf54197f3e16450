"""Learning-rate schedules, computed in Python per step (torch.optim.lr_scheduler's).

The compiled step takes every parameter group's learning rate as a run-time
scalar, read from the group's ``lr`` before each step, so a scheduler only
has to set ``lr``: nothing is recompiled when it changes. The schedulers
follow torch.optim.lr_scheduler (PyTorch 1.13) exactly: the same
constructor arguments, the same chainable ``get_lr`` (each step from the
groups' current ``lr``, so a rate set by hand or by another scheduler
carries on), ``step()``, ``step(epoch)`` with the closed forms,
``get_last_lr()``, ``last_epoch`` (``last_step``, OneFlow's name),
``state_dict()``/``load_state_dict()`` and ``verbose``. An ``nn.Graph``
steps the scheduler given to ``add_optimizer(optimizer, lr_sch=...)`` after
every call; others are stepped by the program.

What the compiled step cannot follow: the momentum (SGD's ``momentum``,
Adam's ``betas[0]``) is compiled into the step, so ``OneCycleLR`` with
``cycle_momentum=True`` and ``base_momentum != max_momentum`` is a
``CompileError`` at the first call of a graph that runs its optimizer (and
at ``step()`` or construction once one runs it); ``cycle_momentum=False``
keeps the optimizer's momentum.
"""

import math
import numbers
import types
from bisect import bisect_right
from collections import Counter

from .._source import user_location
from ._lr_base import (
    EPOCH_DEPRECATION_WARNING,
    LRScheduler,
    _attach,
    _check_optimizer,
    _LRScheduler,
    _positive_int,
)
from ._lr_cycles import CosineAnnealingWarmRestarts, CyclicLR, OneCycleLR
from ._lr_plateau import ReduceLROnPlateau

__all__ = ["LRScheduler", "LambdaLR", "MultiplicativeLR", "StepLR", "MultiStepLR", "ConstantLR",
           "LinearLR", "ExponentialLR", "SequentialLR", "PolynomialLR", "CosineAnnealingLR",
           "ChainedScheduler", "CosineAnnealingWarmRestarts", "OneCycleLR", "CyclicLR",
           "ReduceLROnPlateau",
           "EPOCH_DEPRECATION_WARNING", "_LRScheduler"]


def _lambdas(optimizer, lr_lambda):
    if not isinstance(lr_lambda, (list, tuple)):
        return [lr_lambda] * len(optimizer.param_groups)
    if len(lr_lambda) != len(optimizer.param_groups):
        raise ValueError(f"Expected {len(optimizer.param_groups)} lr_lambdas, but got {len(lr_lambda)}")
    return list(lr_lambda)


class _LambdaState:
    """The lambda schedules' ``lr_lambda`` (one function, or one per group)
    and torch's state_dict of them: a function or lambda is not saved
    (``None``), a callable object by its ``__dict__``."""

    def __init__(self, optimizer, lr_lambda, last_epoch=-1, verbose=False, *, last_step=None):
        _check_optimizer(optimizer, type(self).__name__)
        self.lr_lambdas = _lambdas(optimizer, lr_lambda)
        super().__init__(optimizer, last_epoch, verbose, last_step=last_step)

    def state_dict(self):
        out = {k: v for k, v in self.__dict__.items() if k not in self._not_state + ("lr_lambdas",)}
        out["lr_lambdas"] = [None if isinstance(fn, types.FunctionType) else fn.__dict__.copy()
                             for fn in self.lr_lambdas]
        return out

    def load_state_dict(self, state_dict):
        state_dict = dict(state_dict)
        lr_lambdas = state_dict.pop("lr_lambdas")
        self.__dict__.update(state_dict)
        for fn, saved in zip(self.lr_lambdas, lr_lambdas, strict=True):
            if saved is not None:
                fn.__dict__.update(saved)


class LambdaLR(_LambdaState, LRScheduler):
    """``initial_lr * lr_lambda(step)`` (one function, or one per group)."""

    def get_lr(self):
        self._warn_outside_step()
        return [base_lr * lmbda(self.last_epoch)
                for lmbda, base_lr in zip(self.lr_lambdas, self.base_lrs, strict=True)]


class MultiplicativeLR(_LambdaState, LRScheduler):
    """Multiplies the rate by ``lr_lambda(step)`` at every step after the first."""

    def get_lr(self):
        self._warn_outside_step()
        if self.last_epoch > 0:
            return [group["lr"] * lmbda(self.last_epoch)
                    for lmbda, group in zip(self.lr_lambdas, self.optimizer.param_groups, strict=True)]
        return self._group_lrs()


class StepLR(LRScheduler):
    """Multiplies the rate by ``gamma`` every ``step_size`` steps."""

    def __init__(self, optimizer, step_size, gamma=0.1, last_epoch=-1, verbose=False, *,
                 last_step=None):
        self.step_size = _positive_int(step_size, "step_size")
        if isinstance(gamma, bool) or not isinstance(gamma, numbers.Real) or gamma <= 0:
            raise ValueError(f"gamma must be a positive number, got {gamma!r}")
        self.gamma = gamma
        super().__init__(optimizer, last_epoch, verbose, last_step=last_step)

    def get_lr(self):
        self._warn_outside_step()
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return self._group_lrs()
        return [lr * self.gamma for lr in self._group_lrs()]

    def _get_closed_form_lr(self):
        return [base_lr * self.gamma ** (self.last_epoch // self.step_size) for base_lr in self.base_lrs]

    def _params(self):
        return {"step_size": self.step_size, "gamma": self.gamma}


class MultiStepLR(LRScheduler):
    """Multiplies the rate by ``gamma`` at each of ``milestones``."""

    def __init__(self, optimizer, milestones, gamma=0.1, last_epoch=-1, verbose=False, *,
                 last_step=None):
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch, verbose, last_step=last_step)

    def get_lr(self):
        self._warn_outside_step()
        if self.last_epoch not in self.milestones:
            return self._group_lrs()
        return [lr * self.gamma ** self.milestones[self.last_epoch] for lr in self._group_lrs()]

    def _get_closed_form_lr(self):
        milestones = sorted(self.milestones.elements())
        return [base_lr * self.gamma ** bisect_right(milestones, self.last_epoch)
                for base_lr in self.base_lrs]

    def _params(self):
        return {"milestones": sorted(self.milestones.elements()), "gamma": self.gamma}


def _factor(value, what):
    if value > 1.0 or value < 0:
        raise ValueError(f"{what} expected to be between 0 and 1.")
    return value


class ConstantLR(LRScheduler):
    """``factor * initial_lr`` for the first ``total_iters`` steps, then ``initial_lr``."""

    def __init__(self, optimizer, factor=1.0 / 3, total_iters=5, last_epoch=-1, verbose=False, *,
                 last_step=None):
        self.factor = _factor(factor, "Constant multiplicative factor")
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch, verbose, last_step=last_step)

    def get_lr(self):
        self._warn_outside_step()
        if self.last_epoch == 0:
            return [lr * self.factor for lr in self._group_lrs()]
        if self.last_epoch != self.total_iters:
            return self._group_lrs()
        return [lr * (1.0 / self.factor) for lr in self._group_lrs()]

    def _get_closed_form_lr(self):
        return [base_lr * (self.factor + (self.last_epoch >= self.total_iters) * (1 - self.factor))
                for base_lr in self.base_lrs]

    def _params(self):
        return {"factor": self.factor, "total_iters": self.total_iters}


class LinearLR(LRScheduler):
    """The rate's factor goes linearly from ``start_factor`` to ``end_factor``
    over ``total_iters`` steps, then stays."""

    def __init__(self, optimizer, start_factor=1.0 / 3, end_factor=1.0, total_iters=5, last_epoch=-1,
                 verbose=False, *, last_step=None):
        self.start_factor = _factor(start_factor, "Starting multiplicative factor")
        self.end_factor = _factor(end_factor, "Ending multiplicative factor")
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch, verbose, last_step=last_step)

    def get_lr(self):
        self._warn_outside_step()
        if self.last_epoch == 0:
            return [lr * self.start_factor for lr in self._group_lrs()]
        if self.last_epoch > self.total_iters:
            return self._group_lrs()
        return [lr * (1. + (self.end_factor - self.start_factor) /
                      (self.total_iters * self.start_factor
                       + (self.last_epoch - 1) * (self.end_factor - self.start_factor)))
                for lr in self._group_lrs()]

    def _get_closed_form_lr(self):
        return [base_lr * (self.start_factor + (self.end_factor - self.start_factor)
                           * min(self.total_iters, self.last_epoch) / self.total_iters)
                for base_lr in self.base_lrs]

    def _params(self):
        return {"start_factor": self.start_factor, "end_factor": self.end_factor,
                "total_iters": self.total_iters}


class ExponentialLR(LRScheduler):
    """Multiplies the rate by ``gamma`` every step."""

    def __init__(self, optimizer, gamma, last_epoch=-1, verbose=False, *, last_step=None):
        self.gamma = gamma
        super().__init__(optimizer, last_epoch, verbose, last_step=last_step)

    def get_lr(self):
        self._warn_outside_step()
        if self.last_epoch == 0:
            return self._group_lrs()
        return [lr * self.gamma for lr in self._group_lrs()]

    def _get_closed_form_lr(self):
        return [base_lr * self.gamma ** self.last_epoch for base_lr in self.base_lrs]

    def _params(self):
        return {"gamma": self.gamma}


class PolynomialLR(LRScheduler):
    """``initial_lr * (1 - step / total_iters) ** power`` up to ``total_iters``."""

    def __init__(self, optimizer, total_iters=5, power=1.0, last_epoch=-1, verbose=False, *,
                 last_step=None):
        self.total_iters = total_iters
        self.power = power
        super().__init__(optimizer, last_epoch, verbose, last_step=last_step)

    def get_lr(self):
        self._warn_outside_step()
        if self.last_epoch == 0 or self.last_epoch > self.total_iters:
            return self._group_lrs()
        decay_factor = ((1.0 - self.last_epoch / self.total_iters)
                        / (1.0 - (self.last_epoch - 1) / self.total_iters)) ** self.power
        return [lr * decay_factor for lr in self._group_lrs()]

    def _get_closed_form_lr(self):
        return [base_lr * (1.0 - min(self.total_iters, self.last_epoch) / self.total_iters) ** self.power
                for base_lr in self.base_lrs]

    def _params(self):
        return {"total_iters": self.total_iters, "power": self.power}


class CosineAnnealingLR(LRScheduler):
    """``eta_min + (initial_lr - eta_min) * (1 + cos(pi * step / T_max)) / 2``,
    computed recursively as torch does (so it continues past ``T_max``)."""

    def __init__(self, optimizer, T_max, eta_min=0, last_epoch=-1, verbose=False, *, last_step=None):
        self.T_max = _positive_int(T_max, "T_max")
        if isinstance(eta_min, bool) or not isinstance(eta_min, numbers.Real) or eta_min < 0:
            raise ValueError(f"eta_min must be a non-negative number, got {eta_min!r}")
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch, verbose, last_step=last_step)

    def get_lr(self):
        self._warn_outside_step()
        t, t_max, eta_min = self.last_epoch, self.T_max, self.eta_min
        if t == 0:
            return self._group_lrs()
        if self._step_count == 1 and t > 0:
            return [eta_min + (base_lr - eta_min) * (1 + math.cos(t * math.pi / t_max)) / 2
                    for base_lr in self.base_lrs]
        if (t - 1 - t_max) % (2 * t_max) == 0:
            return [lr + (base_lr - eta_min) * (1 - math.cos(math.pi / t_max)) / 2
                    for base_lr, lr in zip(self.base_lrs, self._group_lrs(), strict=True)]
        return [(1 + math.cos(math.pi * t / t_max)) / (1 + math.cos(math.pi * (t - 1) / t_max))
                * (lr - eta_min) + eta_min for lr in self._group_lrs()]

    def _get_closed_form_lr(self):
        return [self.eta_min + (base_lr - self.eta_min) * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
                for base_lr in self.base_lrs]

    def _params(self):
        return {"T_max": self.T_max, "eta_min": self.eta_min}


def _same_optimizer(schedulers, optimizer, what):
    for i, scheduler in enumerate(schedulers):
        if scheduler.optimizer is not optimizer:
            raise ValueError(f"{what} expects all schedulers to belong to the same optimizer, but "
                             f"got schedulers at index {i} to be different than the optimizer passed in.")


class _Composite:
    """torch's state_dict of schedules made of others: theirs, nested."""

    def state_dict(self):
        out = {k: v for k, v in self.__dict__.items() if k not in self._not_state + ("_schedulers",)}
        out["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return out

    def load_state_dict(self, state_dict):
        state_dict = dict(state_dict)
        schedulers = state_dict.pop("_schedulers")
        self.__dict__.update(state_dict)
        for scheduler, saved in zip(self._schedulers, schedulers, strict=True):
            scheduler.load_state_dict(saved)

    def compiled_conflict(self):
        for scheduler in self._schedulers:
            found = scheduler.compiled_conflict()
            if found is not None:
                return found
        return None

    def describe(self):
        out = {"type": type(self).__name__, "schedulers": [s.describe() for s in self._schedulers]}
        if hasattr(self, "_milestones"):
            out["milestones"] = list(self._milestones)
        return out


class SequentialLR(_Composite, LRScheduler):
    """``schedulers[i]`` from ``milestones[i - 1]`` on; each restarts (its step
    0, in closed form where it has one) at its milestone."""

    def __init__(self, optimizer, schedulers, milestones, last_epoch=-1, verbose=False, *,
                 last_step=None):
        _check_optimizer(optimizer, "SequentialLR")
        _same_optimizer(schedulers, optimizer, "Sequential Schedulers")
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(
                "Sequential Schedulers expects number of schedulers provided to be one more than the "
                f"number of milestone points, but got number of schedulers {len(schedulers)} and the "
                f"number of milestones to be equal to {len(milestones)}")
        if last_step is not None:
            last_epoch = last_step
        self._schedulers = schedulers
        self._milestones = milestones
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        self._loc = user_location()
        _attach(optimizer, self)
        for group in optimizer.param_groups:  # back to the initial rates
            group["lr"] = group["initial_lr"]
        for scheduler in schedulers:  # "undo" their first steps
            scheduler.last_epoch -= 1
        schedulers[0]._initial_step()  # the first scheduler's only
        self._last_lr = schedulers[0].get_last_lr()

    def step(self):
        self.last_epoch += 1
        idx = bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[idx]
        if idx > 0 and self._milestones[idx - 1] == self.last_epoch:
            scheduler._advance(0)  # torch's scheduler.step(0), without its warning
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()


class ChainedScheduler(_Composite, LRScheduler):
    """Steps every scheduler of ``schedulers`` (of one optimizer) in turn."""

    def __init__(self, schedulers):
        optimizer = schedulers[0].optimizer
        for i in range(1, len(schedulers)):
            if schedulers[i].optimizer is not optimizer:
                raise ValueError("ChainedScheduler expects all schedulers to belong to the same "
                                 f"optimizer, but got schedulers at index 0 and {i} to be different")
        self._schedulers = list(schedulers)
        self.optimizer = optimizer
        self._loc = user_location()
        _attach(optimizer, self)
        self._last_lr = self._group_lrs()

    def step(self):
        for scheduler in self._schedulers:
            scheduler.step()
        self._last_lr = self._group_lrs()
