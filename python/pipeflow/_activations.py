"""GELU, tanh, sigmoid (``pf.activation``) and softmax / log-softmax
(``pf.softmax``): traced in graphs, NumPy when eager.

The kinds match the compiler's (``pf.activation {kind}``): ``gelu`` is
torch's default (erf) GELU, ``gelu_tanh`` its ``approximate="tanh"`` form.
"""

import math

import numpy as np

from . import ir
from ._ops import _is_lazy, _local, _need_float, _operands, _result

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_erf = np.vectorize(math.erf, otypes=[np.float64])

_EAGER = {
    "gelu": lambda v: 0.5 * v * (1.0 + _erf(v / math.sqrt(2.0))),
    "gelu_tanh": lambda v: 0.5 * v * (1.0 + np.tanh(_SQRT_2_OVER_PI * (v + 0.044715 * v ** 3))),
    "tanh": np.tanh,
    "sigmoid": lambda v: 1.0 / (1.0 + np.exp(-v)),
}


def activation(x, kind):
    """``kind`` of ``x`` element-wise (one of gelu, gelu_tanh, tanh, sigmoid)."""
    if kind not in _EAGER:
        raise ValueError(f"unknown activation {kind!r}; expected one of {sorted(_EAGER)}")
    if not _is_lazy(x):
        _need_float(kind, x)
        v = x._eager_value()
        return _local(_EAGER[kind](v.astype(np.float64)).astype(v.dtype))
    tracer, (xv,) = _operands(kind, x)
    op = tracer.emit("pf.activation", [xv], [xv.type.with_shape(x.shape)],
                     {"kind": kind})
    return _result(tracer, op, x)


def gelu(x, approximate="none"):
    """torch's ``gelu``: ``approximate`` is ``"none"`` (erf) or ``"tanh"``."""
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return activation(x, "gelu" if approximate == "none" else "gelu_tanh")


def tanh(x):
    return activation(x, "tanh")


def sigmoid(x):
    return activation(x, "sigmoid")


def _softmax(x, dim, log):
    axis = dim + x.ndim if dim < 0 else dim
    if not 0 <= axis < x.ndim:
        raise IndexError(f"softmax: dim {dim} is out of range for a {x.ndim}-d tensor")
    if not _is_lazy(x):
        _need_float("softmax", x)
        v = x._eager_value().astype(np.float64)
        z = v - v.max(axis, keepdims=True)
        s = np.exp(z).sum(axis, keepdims=True)
        out = z - np.log(s) if log else np.exp(z) / s
        return _local(out.astype(x._eager_value().dtype))
    tracer, (xv,) = _operands("softmax", x)
    attrs = {"axis": axis}
    if log:
        attrs["log"] = ir.UNIT
    op = tracer.emit("pf.softmax", [xv], [xv.type.with_shape(x.shape)], attrs)
    return _result(tracer, op, x)


def softmax(x, dim=-1):
    """torch's ``softmax(x, dim)``."""
    return _softmax(x, dim, log=False)


def log_softmax(x, dim=-1):
    """torch's ``log_softmax(x, dim)``."""
    return _softmax(x, dim, log=True)
