"""The learning-rate schedulers' base class (``lr_scheduler.LRScheduler``,
torch.optim.lr_scheduler's ``_LRScheduler``): steps, state and the hooks a
graph reads (see ``lr_scheduler``)."""

import numbers
import warnings

from .._source import user_location
from .optimizer import Optimizer

EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being deprecated where "
    "possible. Please use `scheduler.step()` to step the scheduler. During the deprecation, if "
    "epoch is different from None, the closed form is used instead of the new chainable form, "
    "where available.")


def _check_optimizer(optimizer, name):
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"{name} needs a pipeflow optimizer, got {type(optimizer).__name__}")


def _attach(optimizer, scheduler):
    """Records ``scheduler`` on ``optimizer`` (a graph running it checks
    whether a schedule changes what its step compiles in)."""
    schedulers = optimizer.__dict__.setdefault("_schedulers", [])
    if not any(s is scheduler for s in schedulers):
        schedulers.append(scheduler)


class LRScheduler:
    """Base class (torch's ``_LRScheduler``): ``get_lr()`` gives the rates of
    the step ``last_epoch`` from the groups' current rates (chainable);
    ``_get_closed_form_lr()``, where a schedule has one, from ``base_lrs``."""

    # Attributes that are not the scheduler's state (torch's state_dict is
    # its __dict__ but the optimizer).
    _not_state = ("optimizer", "_loc")

    def __init__(self, optimizer, last_epoch=-1, verbose=False, *, last_step=None):
        _check_optimizer(optimizer, type(self).__name__)
        if last_step is not None:  # OneFlow's name
            last_epoch = last_step
        self.optimizer = optimizer
        self._loc = user_location()
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(f"param 'initial_lr' is not specified in param_groups[{i}] "
                                   "when resuming an optimizer")
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self.verbose = verbose
        _attach(optimizer, self)
        self._initial_step()

    def _initial_step(self):
        """Initialises the step count and takes the first step (step 0)."""
        self._step_count = 0
        self.step()

    @property
    def last_step(self):
        """``last_epoch`` by OneFlow's name: the index of the last step taken."""
        return self.last_epoch

    @last_step.setter
    def last_step(self, value):
        self.last_epoch = value

    def state_dict(self):
        """Every attribute but the optimizer (torch's layout)."""
        return {k: v for k, v in self.__dict__.items() if k not in self._not_state}

    def load_state_dict(self, state_dict):
        state_dict = dict(state_dict)
        if "last_step" in state_dict:  # saved by the schedulers before torch's layout
            state_dict.setdefault("last_epoch", state_dict.pop("last_step"))
        self.__dict__.update(state_dict)

    def get_last_lr(self):
        """The rates the last ``step()`` set, one per parameter group."""
        return list(self._last_lr)

    def get_lr(self):
        raise NotImplementedError

    def _warn_outside_step(self):
        if not getattr(self, "_get_lr_called_within_step", False):
            warnings.warn("To get the last learning rate computed by the scheduler, please use "
                          "`get_last_lr()`.", UserWarning, stacklevel=3)

    def _group_lrs(self):
        return [group["lr"] for group in self.optimizer.param_groups]

    def print_lr(self, is_verbose, group, lr, epoch=None):
        if is_verbose:
            if epoch is None:
                print(f"Adjusting learning rate of group {group} to {lr:.4e}.")
            else:
                epoch_str = ("%.2f" if isinstance(epoch, float) else "%.5d") % epoch
                print(f"Epoch {epoch_str}: adjusting learning rate of group {group} to {lr:.4e}.")

    def step(self, epoch=None):
        """Advances to the next step (or to ``epoch``, deprecated: the closed
        form where there is one) and sets every group's ``lr``."""
        if epoch is not None:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self._advance(epoch)

    def _advance(self, epoch):
        self._step_count += 1
        self._get_lr_called_within_step = True
        try:
            if epoch is None:
                self.last_epoch += 1
                values = self.get_lr()
            else:
                self.last_epoch = epoch
                closed = getattr(self, "_get_closed_form_lr", None)
                values = closed() if closed is not None else self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        self._set_lrs(values, epoch)

    def _set_lrs(self, values, epoch=None):
        for i, (group, lr) in enumerate(zip(self.optimizer.param_groups, values, strict=True)):
            group["lr"] = lr
            self.print_lr(self.verbose, i, lr, epoch)
        self._last_lr = self._group_lrs()

    def compiled_conflict(self):
        """``(message, notes)`` when this schedule changes a setting that a
        compiled step holds fixed (only the learning rate is a run-time
        input), else ``None``."""
        return None

    def _params(self):
        return {}

    def describe(self):
        """A JSON-able summary (recorded with the compiled graph's options)."""
        return dict(type=type(self).__name__, base_lrs=self.base_lrs, **self._params())


_LRScheduler = LRScheduler  # torch 1.13's name


def _positive_int(value, what):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value <= 0:
        raise ValueError(f"{what} must be a positive integer, got {value!r}")
    return int(value)
