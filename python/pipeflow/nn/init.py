"""Parameter initializers: numpy values now, ``#pf.init<...>`` for the compiler.

Each returns the attribute text the IR records; the runtime re-creates the
same distribution from it with its counter-based generator.
"""

import math

from .._random import default_generator
from ..ir import format_float


def _fill(tensor, array):
    from .parameter import storage
    storage(tensor)[...] = array


def uniform_(tensor, a=0.0, b=1.0):
    _fill(tensor, default_generator().uniform(a, b, tensor.shape))
    tensor._init = f"#pf.init<uniform({format_float(a)}, {format_float(b)})>"
    return tensor


def normal_(tensor, mean=0.0, std=1.0):
    _fill(tensor, default_generator().normal(mean, std, tensor.shape))
    tensor._init = f"#pf.init<normal({format_float(mean)}, {format_float(std)})>"
    return tensor


def constant_(tensor, value):
    _fill(tensor, value)
    if value == 0:
        tensor._init = "#pf.init<zeros>"
    elif value == 1:
        tensor._init = "#pf.init<ones>"
    else:
        tensor._init = f"#pf.init<constant({format_float(value)})>"
    return tensor


def zeros_(tensor):
    return constant_(tensor, 0.0)


def ones_(tensor):
    return constant_(tensor, 1.0)


def default_uniform_(tensor, fan_in):
    """U(-1/sqrt(fan_in), 1/sqrt(fan_in)): PyTorch's default for Linear and Conv2d
    weights (kaiming_uniform with a=sqrt(5)) and biases."""
    bound = 1.0 / math.sqrt(fan_in)
    _fill(tensor, default_generator().uniform(-bound, bound, tensor.shape))
    tensor._init = f"#pf.init<kaiming_uniform({int(fan_in)})>"
    return tensor

