"""Activation modules: GELU, Tanh, Sigmoid (``pf.activation``), Softmax and
LogSoftmax (``pf.softmax``)."""

from .. import _activations
from .module import Module


class GELU(Module):
    """torch's ``nn.GELU``: ``approximate="none"`` (erf) or ``"tanh"``."""

    def __init__(self, approximate="none"):
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise ValueError(f"GELU: approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def forward(self, x):
        return _activations.gelu(x, self.approximate)


class Tanh(Module):
    def forward(self, x):
        return _activations.tanh(x)


class Sigmoid(Module):
    def forward(self, x):
        return _activations.sigmoid(x)


class _AlongDim(Module):
    """A module that normalises along ``dim`` (the last one by default)."""

    def __init__(self, dim=None):
        super().__init__()
        self.dim = -1 if dim is None else dim


class Softmax(_AlongDim):
    def forward(self, x):
        return _activations.softmax(x, self.dim)


class LogSoftmax(_AlongDim):
    def forward(self, x):
        return _activations.log_softmax(x, self.dim)
