"""Learning-rate schedules, computed in Python per step.

The compiled step takes the learning rate as a run-time input, so a
scheduler only has to say what it is at each step: ``step()`` advances and
writes the new rate into the optimizer's parameter groups.
"""

import math
import numbers

from .optimizer import Optimizer


class LRScheduler:
    """Base class: subclasses give ``lr_at(base_lr, step)`` in closed form."""

    def __init__(self, optimizer, last_step=-1, verbose=False, last_epoch=None):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(self).__name__} needs a pipeflow optimizer, got {type(optimizer).__name__}")
        if last_epoch is not None:
            last_step = last_epoch
        self.optimizer = optimizer
        for group in optimizer.param_groups:
            if last_step == -1:
                group["initial_lr"] = group["lr"]
            elif "initial_lr" not in group:
                raise KeyError("resuming a schedule (last_step != -1) needs 'initial_lr' in every group")
        self.base_lrs = [g["initial_lr"] for g in optimizer.param_groups]
        self.last_step = last_step
        self.step()

    @property
    def last_epoch(self):
        return self.last_step

    def lr_at(self, base_lr, step):
        raise NotImplementedError

    def get_lr(self):
        return [self.lr_at(base, self.last_step) for base in self.base_lrs]

    def get_last_lr(self):
        return list(self._last_lr)

    def step(self):
        """Advances one step and sets every group's ``lr``."""
        self.last_step += 1
        self._last_lr = self.get_lr()
        for group, lr in zip(self.optimizer.param_groups, self._last_lr):
            group["lr"] = lr

    def _params(self):
        return {}

    def describe(self):
        return dict(type=type(self).__name__, base_lrs=self.base_lrs, **self._params())

    def state_dict(self):
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state):
        self.__dict__.update(state)


def _positive_int(value, what):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value <= 0:
        raise ValueError(f"{what} must be a positive integer, got {value!r}")
    return int(value)


class StepLR(LRScheduler):
    """``base_lr * gamma ** (step // step_size)``."""

    def __init__(self, optimizer, step_size, gamma=0.1, last_step=-1, verbose=False, last_epoch=None):
        self.step_size = _positive_int(step_size, "step_size")
        if isinstance(gamma, bool) or not isinstance(gamma, numbers.Real) or gamma <= 0:
            raise ValueError(f"gamma must be a positive number, got {gamma!r}")
        self.gamma = float(gamma)
        super().__init__(optimizer, last_step, verbose, last_epoch)

    def lr_at(self, base_lr, step):
        return base_lr * self.gamma ** (step // self.step_size)

    def _params(self):
        return {"step_size": self.step_size, "gamma": self.gamma}


class CosineAnnealingLR(LRScheduler):
    """``eta_min + (base_lr - eta_min) * (1 + cos(pi * step / T_max)) / 2``."""

    def __init__(self, optimizer, T_max, eta_min=0.0, last_step=-1, verbose=False, last_epoch=None):
        self.T_max = _positive_int(T_max, "T_max")
        if isinstance(eta_min, bool) or not isinstance(eta_min, numbers.Real) or eta_min < 0:
            raise ValueError(f"eta_min must be a non-negative number, got {eta_min!r}")
        self.eta_min = float(eta_min)
        super().__init__(optimizer, last_step, verbose, last_epoch)

    def lr_at(self, base_lr, step):
        return self.eta_min + (base_lr - self.eta_min) * (1 + math.cos(math.pi * step / self.T_max)) / 2

    def _params(self):
        return {"T_max": self.T_max, "eta_min": self.eta_min}
