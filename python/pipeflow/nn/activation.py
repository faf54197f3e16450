"""Activation modules over ``pf.activation``: GELU, Tanh, Sigmoid."""

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
