"""Basic layers: Linear, ReLU, Flatten, Identity, Dropout."""

import numbers

import numpy as np

from .. import _ops, _trace
from . import init
from .module import Module
from .parameter import Parameter


def _positive_int(value, what):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value <= 0:
        raise ValueError(f"{what} must be a positive integer, got {value!r}")
    return int(value)


class Linear(Module):
    """``y = x W^T + b`` with weight [out_features, in_features] and bias [out_features].

    Both start as U(-1/sqrt(in_features), 1/sqrt(in_features)), PyTorch's default.
    """

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in_features = _positive_int(in_features, "in_features")
        self.out_features = _positive_int(out_features, "out_features")
        self.weight = Parameter(np.empty((self.out_features, self.in_features), dtype=np.float32))
        init.default_uniform_(self.weight, self.in_features)
        if bias:
            self.bias = Parameter(np.empty((self.out_features,), dtype=np.float32))
            init.default_uniform_(self.bias, self.in_features)
        else:
            self.register_parameter("bias", None)

    def forward(self, x):
        return _ops.linear(x, self.weight, self.bias)

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class ReLU(Module):
    """max(x, 0)."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, x):
        return _ops.relu(x)


class Flatten(Module):
    """Merges axes ``start_dim..end_dim`` into one."""

    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x):
        return _ops.flatten(x, self.start_dim, self.end_dim)

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Identity(Module):
    """Returns its input."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, x):
        return x


class Dropout(Module):
    """Dropout with probability ``p``.

    With ``p == 0`` or in eval mode it is the identity. In a traced graph it
    is ``pf.dropout``: the compiled program draws the mask from the run's
    seed at each element's logical index (per step and micro-batch), so
    every layout, and the single-rank run, drops the same elements; the
    backward uses the same mask. Eager (untraced) dropout with ``p > 0`` is
    not supported.
    """

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if not isinstance(p, numbers.Real) or not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability must be in [0, 1], got {p!r}")
        self.p, self.inplace = float(p), inplace

    def forward(self, x):
        if self.p == 0.0 or not self.training:
            return x
        if _trace.current() is not None:
            return _ops.dropout(x, self.p)
        raise NotImplementedError(
            f"Dropout(p={self.p}) in training mode runs only inside nn.Graph (compiled); "
            "call .eval() on the module for eager use")

    def extra_repr(self):
        return f"p={self.p}"
