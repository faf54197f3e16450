"""Comparisons, boolean tensors, selection and element-type casts.

``a == b`` (and ``!=, <, <=, >, >=``) broadcast as NumPy does and give a
bool tensor; ``flow.logical_and/or/xor/not`` (``&``, ``|``, ``^``, ``~`` on
bool tensors) combine them; ``flow.where(cond, x, y)`` selects;
``Tensor.to(dtype)`` (``.float()``, ``.int()``, ``.long()``, ``.bool()``)
converts. Host tensors compute with numpy; traced, they are ``pf.compare``
(a ``predicate``), ``pf.logical_*``, ``pf.where`` and ``pf.cast``, with
``pf.broadcast_to`` for differing shapes and for a Python number (a rank-0
``pf.constant``).

Operands of differing element types meet in torch's promoted type (a float
wins, then the wider integer, then bool; a Python number does not widen a
tensor of its kind), converted with ``pf.cast`` when traced. A compiled
graph holds float32, bfloat16, float16, int64, int32 and bool tensors (``dtypes.COMPILED``):
casting a traced tensor to another type is a located ``CompileError``.
No gradient passes a comparison, a logical op or a cast to or from an
integer type; ``where`` passes its result's to ``x`` and ``y`` by the
condition.
"""

import numpy as np

from . import _registry, _trace, ir
from . import dtypes as dt
from ._ops import _is_lazy, _local, _operands, _result
from ._ops_elementwise import (
    _SYMBOL,
    _tensor_operand,
    broadcast_shape,
    expand,
    host_value,
)
from .tensor import Tensor

_COMPARE = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
            "gt": np.greater, "ge": np.greater_equal}
_LOGICAL = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}
_BITWISE = {"and": "&", "or": "|", "xor": "^"}


# Element types ------------------------------------------------------------------------

def promote(*operands):
    """The element type ``operands`` (tensors and Python numbers) meet in
    (``dtypes.promote``: torch's promotion)."""
    return dt.promote(*(o.dtype if isinstance(o, Tensor) else o for o in operands))


def cast(x, dtype):
    """``x`` with element type ``dtype``: numpy's ``astype`` on a host tensor,
    ``pf.cast`` traced (``CompileError`` for a type a graph does not hold)."""
    dtype = dt.as_dtype(dtype)
    if x.dtype is dtype:
        return x
    if not _is_lazy(x):
        return x._astype(dtype)
    if dtype not in dt.COMPILED:
        _trace.fail(f"casting to {dtype} inside nn.Graph.build() is not supported: a compiled "
                    "graph holds float32, bfloat16, float16, int64, int32 and bool tensors")
    tracer, (xv,) = _operands("cast", x)
    op = tracer.emit("pf.cast", [xv], [ir.GlobalType(x.shape, dtype.mlir, xv.type.placement)])
    return _result(tracer, op, x, dtype)


def _as(operand, dtype):
    """A traced tensor, host tensor or number as ``dtype`` (a host value is
    converted with numpy, so it becomes a constant of that type)."""
    if not isinstance(operand, Tensor):
        return operand
    if _is_lazy(operand):
        return cast(operand, dtype)
    if operand.dtype is dtype:
        return operand
    return _local(np.asarray(host_value(operand)).astype(dtype.numpy))


def _traced(what, dtype, *operands):
    """The IR values of ``operands`` (of element type ``dtype`` already)
    broadcast to their common shape: ``(tracer, values, shape, anchor)``; a
    number becomes a rank-0 constant broadcast like the tensors (which
    pf-microbatch resizes with a batch, unlike a splat of the shape)."""
    tensors = [o for o in operands if isinstance(o, Tensor)]
    shape = broadcast_shape(what, *(t.shape for t in tensors))
    anchor = next(t for t in tensors if _is_lazy(t))
    tracer, values = _operands(what, *tensors)
    values = iter(values)
    out = []
    for o in operands:
        value = next(values) if isinstance(o, Tensor) else tracer.constant(
            np.array(o, dtype=dtype.numpy), dtype, tracer.operand_placement)
        out.append(expand(tracer, value, shape))
    return tracer, out, shape, anchor


def _emit(tracer, name, values, shape, dtype, anchor, attrs=None):
    type = ir.GlobalType(shape, dtype.mlir, values[0].type.placement)
    op = tracer.emit(name, values, [type], attrs)
    return _result(tracer, op, anchor, dtype)


def _host(v):
    return np.asarray(host_value(v)) if isinstance(v, Tensor) else v


# Comparisons --------------------------------------------------------------------------

def compare(kind, a, b):
    """``a <kind> b`` (eq, ne, lt, le, gt, ge) with NumPy broadcasting: a bool
    tensor. ``NotImplemented`` for operands that are not tensors or numbers."""
    a, b = _tensor_operand(a), _tensor_operand(b)
    if a is None or b is None:
        return NotImplemented
    what = f"'{_SYMBOL[kind]}'"
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        broadcast_shape(what, a.shape, b.shape)
    if not _is_lazy(a if isinstance(a, Tensor) else None, b if isinstance(b, Tensor) else None):
        return _local(np.asarray(_COMPARE[kind](_host(a), _host(b))))
    dtype = promote(a, b)
    tracer, values, shape, anchor = _traced(what, dtype, _as(a, dtype), _as(b, dtype))
    return _emit(tracer, "pf.compare", values, shape, dt.bool, anchor, {"predicate": kind})


# Logical ops --------------------------------------------------------------------------

def _as_bool(what, v):
    """A logical op's operand as bool: a tensor is true where non-zero (torch's
    logical_*), a number by its truth."""
    v = _tensor_operand(v)
    if v is None:
        raise TypeError(f"{what} expects tensors or numbers")
    if not isinstance(v, Tensor):
        return bool(v)
    if v.dtype is dt.bool:
        return v
    return compare("ne", v, 0) if _is_lazy(v) else _local(np.asarray(host_value(v)) != 0)


def logical(kind, a, b=None):
    """``logical_<kind>`` (and, or, xor, not) of tensors or numbers, true where
    non-zero; a bool tensor, broadcast as NumPy does."""
    what = f"logical_{kind}"
    operands = [_as_bool(what, a)] + ([] if kind == "not" else [_as_bool(what, b)])
    tensors = [o for o in operands if isinstance(o, Tensor)]
    if not tensors:
        raise TypeError(f"{what} expects at least one tensor")
    if not _is_lazy(*tensors):
        host = [_host(o) for o in operands]
        out = np.logical_not(host[0]) if kind == "not" else _LOGICAL[kind](*host)
        return _local(np.asarray(out))
    tracer, values, shape, anchor = _traced(what, dt.bool, *operands)
    return _emit(tracer, f"pf.logical_{kind}", values, shape, dt.bool, anchor)


def bitwise(kind, a, b):
    """``a & b``, ``a | b``, ``a ^ b``: logical on bool tensors (and Python
    bools), numpy's bitwise on host integer tensors; ``NotImplemented`` for
    other operands."""
    a, b = _tensor_operand(a), _tensor_operand(b)
    if a is None or b is None or isinstance(a, float) or isinstance(b, float):
        return NotImplemented
    if all(o.dtype is dt.bool if isinstance(o, Tensor) else isinstance(o, bool) for o in (a, b)):
        return logical(kind, a, b)
    tensors = [o for o in (a, b) if isinstance(o, Tensor)]
    if _is_lazy(*tensors):
        _trace.unsupported(f"'{_BITWISE[kind]}' on {' and '.join(str(t.dtype) for t in tensors)} "
                           "tensors in a graph (it is logical on bool tensors)")
    return _local(np.asarray(getattr(np, f"bitwise_{kind}")(_host(a), _host(b))))


def invert(x):
    """``~x``: logical not of a bool tensor, numpy's bitwise not of a host
    integer tensor."""
    if x.dtype is dt.bool:
        return logical("not", x)
    if _is_lazy(x):
        _trace.unsupported(f"'~' on a {x.dtype} tensor in a graph (it is logical_not on bool tensors)")
    return _local(np.asarray(np.invert(host_value(x))))


# Selection ----------------------------------------------------------------------------

def where(condition, x, y):
    """``x`` where ``condition`` (true where non-zero) else ``y``, all three
    broadcast as NumPy does; ``x`` and ``y`` tensors or numbers, of their
    promoted type."""
    cond = _as_bool("where", condition)
    x, y = _tensor_operand(x), _tensor_operand(y)
    if x is None or y is None or not isinstance(cond, Tensor):
        raise TypeError("where() expects a tensor condition and tensors or numbers to select")
    dtype = promote(x, y)
    if not _is_lazy(cond, x, y):
        out = np.where(_host(cond), _host(x), _host(y)).astype(dtype.numpy)
        return _local(out)
    x, y = _as(x, dtype), _as(y, dtype)
    tracer, values, shape, anchor = _traced("where", dtype, cond, x, y)
    return _emit(tracer, "pf.where", values, shape, dtype, anchor)


def logical_and(input, other):
    """Element-wise ``input and other`` (true where non-zero): a bool tensor."""
    return logical("and", input, other)


def logical_or(input, other):
    """Element-wise ``input or other`` (true where non-zero): a bool tensor."""
    return logical("or", input, other)


def logical_xor(input, other):
    """Element-wise exclusive or (true where non-zero): a bool tensor."""
    return logical("xor", input, other)


def logical_not(input):
    """Element-wise ``not input`` (true where zero): a bool tensor."""
    return logical("not", input)


_registry.ops.provide(compare=compare, logical=logical, bitwise=bitwise, invert=invert,
                      where=where, cast=cast)
