"""Element-wise arithmetic with NumPy broadcasting and masked fill.

``a + b``, ``a - b``, ``a * b`` and ``a / b`` between tensors broadcast as
NumPy does. Traced, an operand whose shape differs from the result's gets a
``pf.broadcast_to`` first, then the same-shape op (``pf.add``, ``pf.sub``,
``pf.mul``, ``pf.div``). A Python number on one side is ``pf.mul_scalar``
(``*``, ``/`` by a number, negation) or a splat ``pf.constant`` operand of
the op (``x + 1``, ``1 - x``, ``2 / x``).

Host tensors (made in ``build``, such as ``flow.arange(t)``, or buffers
without an initializer, see ``Tracer.is_host_constant``) compute with numpy
at trace time; mixed with traced tensors they become dense constants. A
host operand takes the float element type of the traced one
(``x + flow.arange(t)`` adds floats). Arithmetic on traced integer tensors
is not compiled (cast them with ``.float()``); comparisons, which are, live
in ``_ops_logical``.
"""

import math
import numbers

import numpy as np

from . import _registry, _trace, ir
from . import dtypes as dt
from ._ops import _is_lazy, _local, _operands, _result, _shape_str
from ._trace import fail
from .tensor import Tensor

_NUMPY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide}
_SYMBOL = {"add": "+", "sub": "-", "mul": "*", "div": "/",
           "eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def host_value(t):
    """The numpy value of a tensor that is not traced: the local data, or
    while a graph traces, the logical value of a global one (a buffer used as
    a constant)."""
    if t._placement is not None and _trace.current() is not None and t._logical is not None:
        return t._logical
    return t._eager_value()


def broadcast_shape(what, *shapes):
    """NumPy's broadcast of ``shapes``; an error naming them when they do not broadcast."""
    try:
        return tuple(int(d) for d in np.broadcast_shapes(*(tuple(s) for s in shapes)))
    except ValueError:
        fail(f"{what}: shapes {' and '.join(_shape_str(s) for s in shapes)} cannot be broadcast "
             "together", ["broadcasting aligns trailing dimensions, which must be equal or 1"])


def expand(tracer, value, shape):
    """``value`` broadcast to ``shape`` (``pf.broadcast_to``; itself when equal)."""
    shape = tuple(shape)
    if value.type.shape == shape:
        return value
    op = tracer.emit("pf.broadcast_to", [value], [value.type.with_shape(shape)],
                     {"shape": ir.I64Array(shape)})
    return op.result


def _tensor_operand(v):
    """A binary op's operand: a tensor, a Python number, or a numpy array
    (as a host tensor); ``None`` for anything else."""
    if isinstance(v, (Tensor, numbers.Number)):
        return v
    if isinstance(v, np.ndarray):
        return Tensor._from_array(v)
    return None


def _like(t, anchor):
    """A host tensor ``t`` in the traced ``anchor``'s float element type."""
    if (not isinstance(t, Tensor) or t.dtype is anchor.dtype or not anchor.dtype.is_floating_point
            or _is_lazy(t) or (t._placement is not None and t._logical is None)):
        return t
    return _local(host_value(t).astype(anchor.dtype.numpy))


def binary(kind, a, b):
    """``a <kind> b`` (add, sub, mul, div) with NumPy broadcasting; either side
    may be a Python number. ``NotImplemented`` for other operand types."""
    a, b = _tensor_operand(a), _tensor_operand(b)
    if a is None or b is None:
        return NotImplemented
    ta, tb = isinstance(a, Tensor), isinstance(b, Tensor)
    what = f"'{_SYMBOL[kind]}'"
    if ta and tb:
        shape = broadcast_shape(what, a.shape, b.shape)
    if not _is_lazy(a if ta else None, b if tb else None):
        return _eager(kind, a, b)
    # Arithmetic in a graph is float32: traced integers and bools meeting a
    # float are cast to it (torch's promotion); integers alone are not
    # computed.
    dtype = dt.promote(*(t.dtype if isinstance(t, Tensor) else t for t in (a, b)))
    if dtype is not dt.float32:
        fail(f"{what} of {dtype} tensors in a graph: arithmetic in a graph is float32",
             ["cast the operands with .float() first"])
    a, b = (_registry.ops.cast(t, dtype) if isinstance(t, Tensor) and _is_lazy(t) else t
            for t in (a, b))
    if not (ta and tb):
        return _with_scalar(kind, a, b) if ta else _with_scalar(kind, b, a, reverse=True)
    anchor = a if _is_lazy(a) else b
    a, b = _like(a, anchor), _like(b, anchor)
    tracer, (av, bv) = _operands(what, a, b)
    type = (av if anchor is a else bv).type
    op = tracer.emit(f"pf.{kind}", [expand(tracer, av, shape), expand(tracer, bv, shape)],
                     [type.with_shape(shape)])
    return _result(tracer, op, anchor)


def _eager(kind, a, b):
    av = host_value(a) if isinstance(a, Tensor) else a
    bv = host_value(b) if isinstance(b, Tensor) else b
    out = np.asarray(_NUMPY[kind](av, bv))
    wide = any(isinstance(t, Tensor) and t.dtype is dt.float64 for t in (a, b))
    if out.dtype == np.float64 and not wide:
        out = out.astype(np.float32)  # torch's default float type, as flow.tensor
    return _local(out)


def _with_scalar(kind, x, s, reverse=False):
    """A traced tensor ``x`` and a Python number ``s`` (``s <kind> x`` when
    ``reverse``)."""
    if isinstance(s, bool) or not isinstance(s, numbers.Real):
        _trace.unsupported(f"'{_SYMBOL[kind]}' between a traced tensor and {type(s).__name__}")
    if not x.dtype.is_floating_point and (kind == "div" or not float(s).is_integer()):
        _trace.unsupported(f"'{_SYMBOL[kind]}' between a traced {x.dtype} tensor and {s!r}")
    s = float(s)
    if kind == "mul":
        return mul_scalar(x, s)
    if kind == "div" and not reverse:
        return mul_scalar(x, 1.0 / s if s != 0 else math.copysign(math.inf, s))
    if kind in ("add", "sub") and s == 0.0 and not (reverse and kind == "sub"):
        return x
    tracer, (xv,) = _operands(f"'{_SYMBOL[kind]}'", x)
    # A rank-0 constant broadcast to x's shape: pf-microbatch resizes the
    # broadcast with the batch (a splat of the full batch's shape it cannot).
    splat = expand(tracer, tracer.constant(np.array(s, dtype=x.dtype.numpy), x.dtype,
                                           tracer.operand_placement), x.shape)
    operands = [splat, xv] if reverse else [xv, splat]
    op = tracer.emit(f"pf.{kind}", operands, [xv.type.with_shape(x.shape)])
    return _result(tracer, op, x)


def mul_scalar(x, s):
    """``x * s`` for a Python number ``s`` (``pf.mul_scalar`` when traced)."""
    if not _is_lazy(x):
        return _eager("mul", x, s)
    tracer, (xv,) = _operands("mul", x)
    op = tracer.emit("pf.mul_scalar", [xv], [xv.type.with_shape(x.shape)], {"scalar": ir.F64(s)})
    return _result(tracer, op, x)


def _function(kind):
    def op(input, other):
        out = binary(kind, input, other)
        if out is NotImplemented:
            raise TypeError(f"{kind}() expects tensors or numbers, got {type(input).__name__} "
                            f"and {type(other).__name__}")
        return out
    op.__name__ = kind
    op.__doc__ = f"``input {_SYMBOL[kind]} other`` with NumPy broadcasting."
    return op


add, sub, mul, div = (_function(k) for k in ("add", "sub", "mul", "div"))


def masked_fill(x, mask, value):
    """``value`` where ``mask`` is non-zero (or true), else ``x``; ``mask``
    broadcasts to ``x``'s shape. Traced: ``pf.masked_fill`` with a bool,
    float32, int64 or int32 mask, traced or a constant (a host mask of
    another type becomes bool), broadcast with ``pf.broadcast_to``."""
    if isinstance(value, Tensor):
        if _is_lazy(value):
            _trace.unsupported("masked_fill with a traced fill value")
        value = host_value(value).reshape(-1)
        if value.size != 1:
            fail(f"masked_fill's value must be a number or a one-element tensor, got {value.size} elements")
        value = value[0].item()
    if not isinstance(value, numbers.Real):
        raise TypeError(f"masked_fill's value must be a number, got {type(value).__name__}")
    mask = _tensor_operand(mask)
    if not isinstance(mask, Tensor):
        raise TypeError(f"masked_fill's mask must be a tensor, got {type(mask).__name__}")
    try:
        fits = np.broadcast_shapes(tuple(mask.shape), tuple(x.shape)) == tuple(x.shape)
    except ValueError:
        fits = False
    if not fits:
        fail(f"masked_fill: a mask of shape {_shape_str(mask.shape)} does not broadcast to the "
             f"input's shape {_shape_str(x.shape)}")
    if not _is_lazy(x, mask):
        xv = host_value(x)
        filled = np.where(np.asarray(host_value(mask)) != 0, np.asarray(value).astype(xv.dtype), xv)
        return _local(filled.astype(xv.dtype, copy=False))
    if not _is_lazy(mask):
        m = np.asarray(host_value(mask))
        if m.dtype not in (np.bool_, np.float32, np.int64, np.int32):
            m = m != 0
        mask = _local(m)
    tracer, (xv, mv) = _operands("masked_fill", x, mask)
    op = tracer.emit("pf.masked_fill", [xv, expand(tracer, mv, x.shape)], [xv.type.with_shape(x.shape)],
                     {"value": ir.F64(value)})
    return _result(tracer, op, x)


_registry.ops.provide(binary=binary, masked_fill=masked_fill)
