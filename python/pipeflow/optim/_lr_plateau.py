"""``ReduceLROnPlateau`` (torch.optim.lr_scheduler's; exported by
``lr_scheduler``): the rate follows a metric the program measures, so it is
stepped by the program with that metric, never by a graph."""

import math
import numbers
import warnings

from .._source import user_location
from ._lr_base import EPOCH_DEPRECATION_WARNING, _attach, _check_optimizer

_MODES = ("min", "max")
_THRESHOLD_MODES = ("rel", "abs")


class ReduceLROnPlateau:
    """Multiplies every group's rate by ``factor`` (down to its ``min_lr``)
    once the metric given to ``step(metrics)`` has not improved for more than
    ``patience`` steps, then waits ``cooldown`` steps before counting again.
    Improving means below (``mode="min"``) or above (``"max"``) the best
    value so far by ``threshold``, relative (``"rel"``) or absolute
    (``"abs"``); a change smaller than ``eps`` is not made. The rates it
    sets are run-time scalars of a compiled step, like every schedule's."""

    steps_with_a_metric = True  # a graph cannot step it (nn.Graph.add_optimizer)

    def __init__(self, optimizer, mode="min", factor=0.1, patience=10, threshold=1e-4,
                 threshold_mode="rel", cooldown=0, min_lr=0, eps=1e-8, verbose=False):
        if factor >= 1.0:
            raise ValueError("Factor should be < 1.0.")
        _check_optimizer(optimizer, "ReduceLROnPlateau")
        self.factor = factor
        self.optimizer = optimizer
        self._loc = user_location()
        groups = len(optimizer.param_groups)
        if isinstance(min_lr, (list, tuple)):
            if len(min_lr) != groups:
                raise ValueError(f"expected {groups} min_lrs, got {len(min_lr)}")
            self.min_lrs = list(min_lr)
        else:
            self.min_lrs = [min_lr] * groups
        self.patience = patience
        self.verbose = verbose
        self.cooldown = cooldown
        self.cooldown_counter = 0
        self.mode = mode
        self.threshold = threshold
        self.threshold_mode = threshold_mode
        self.best = None
        self.num_bad_epochs = None
        self.mode_worse = None
        self.eps = eps
        self.last_epoch = 0
        self._init_is_better(mode, threshold, threshold_mode)
        self._reset()
        self._last_lr = [group["lr"] for group in optimizer.param_groups]
        _attach(optimizer, self)

    def _reset(self):
        self.best = self.mode_worse
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    def _init_is_better(self, mode, threshold, threshold_mode):
        if mode not in _MODES:
            raise ValueError("mode " + mode + " is unknown!")
        if threshold_mode not in _THRESHOLD_MODES:
            raise ValueError("threshold mode " + threshold_mode + " is unknown!")
        self.mode_worse = math.inf if mode == "min" else -math.inf

    def is_better(self, a, best):
        """Whether metric ``a`` improves on ``best`` by the threshold."""
        if self.threshold_mode == "rel":
            bound = best * (1.0 - self.threshold) if self.mode == "min" else best * (self.threshold + 1.0)
        else:
            bound = best - self.threshold if self.mode == "min" else best + self.threshold
        return a < bound if self.mode == "min" else a > bound

    @property
    def in_cooldown(self):
        return self.cooldown_counter > 0

    def step(self, metrics, epoch=None):
        """Takes the step's metric (a number, or a one-element tensor such as
        the loss a graph returned)."""
        current = _scalar(metrics)
        if epoch is None:
            epoch = self.last_epoch + 1
        else:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self.last_epoch = epoch
        if self.is_better(current, self.best):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0  # bad steps in the cooldown do not count
        if self.num_bad_epochs > self.patience:
            self._reduce_lr(epoch)
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def _reduce_lr(self, epoch):
        for i, group in enumerate(self.optimizer.param_groups):
            old_lr = float(group["lr"])
            new_lr = max(old_lr * self.factor, self.min_lrs[i])
            if old_lr - new_lr > self.eps:
                group["lr"] = new_lr
                if self.verbose:
                    epoch_str = ("%.2f" if isinstance(epoch, float) else "%.5d") % epoch
                    print(f"Epoch {epoch_str}: reducing learning rate of group {i} to {new_lr:.4e}.")

    def get_last_lr(self):
        """The rates after the last ``step()``, one per parameter group."""
        return list(self._last_lr)

    def state_dict(self):
        return {key: value for key, value in self.__dict__.items() if key not in ("optimizer", "_loc")}

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)
        self._init_is_better(self.mode, self.threshold, self.threshold_mode)

    def compiled_conflict(self):
        return None

    def describe(self):
        return {"type": "ReduceLROnPlateau", "mode": self.mode, "factor": self.factor,
                "patience": self.patience, "min_lrs": self.min_lrs}


def _scalar(metrics):
    """A metric as a float: a number or a one-element tensor/array."""
    if isinstance(metrics, numbers.Real):
        return float(metrics)
    value = metrics.numpy() if hasattr(metrics, "numpy") else metrics
    try:
        return float(value)
    except (TypeError, ValueError):
        raise TypeError("ReduceLROnPlateau.step(metrics) takes a number or a one-element tensor, "
                        f"got {type(metrics).__name__}") from None
