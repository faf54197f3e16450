"""Slicing, splitting, concatenation, sums and means, triangles.

Traced, a box of a tensor is ``pf.slice`` (offsets and sizes on every axis,
step 1): ``split``, ``chunk`` and basic indexing (``x[:, :t]``, ints,
``None``, ``...``; an int or ``None`` adds a ``pf.reshape``) build on it.
``cat`` is ``pf.concat``, ``sum`` is ``pf.reduce_sum``, which drops the
summed axes (``keepdim`` reshapes back), and ``mean`` is the sum times
``1/count`` (``pf.mul_scalar``). ``tril``/``triu`` compute on the host only:
masks are host constants (see ``_ops_elementwise``).
"""

import numbers

import numpy as np

from . import _registry, _trace, ir
from ._ops import _is_lazy, _local, _operands, _result, _shape_str, reshape
from ._ops_elementwise import _like, div, host_value, mul_scalar
from ._trace import fail
from .tensor import Tensor


def _axis(x, dim, what):
    """``dim`` of ``x`` as a non-negative axis (an error when out of range)."""
    if isinstance(dim, bool) or not isinstance(dim, numbers.Integral):
        raise TypeError(f"{what}: dim must be an integer, got {dim!r}")
    axis = int(dim) + x.ndim if dim < 0 else int(dim)
    if not 0 <= axis < x.ndim:
        fail(f"{what}: dim {dim} is out of range for a tensor of shape {_shape_str(x.shape)}")
    return axis


def slice_box(x, offsets, sizes):
    """The box of ``x`` at ``offsets`` with ``sizes`` (every axis, step 1)."""
    offsets, sizes = [int(o) for o in offsets], [int(s) for s in sizes]
    if offsets == [0] * x.ndim and sizes == list(x.shape):
        return x
    if not _is_lazy(x):
        box = tuple(slice(o, o + s) for o, s in zip(offsets, sizes, strict=True))
        return _local(np.ascontiguousarray(host_value(x)[box]))
    tracer, (xv,) = _operands("slice", x)
    op = tracer.emit("pf.slice", [xv], [xv.type.with_shape(sizes)],
                     {"offsets": ir.I64Array(offsets), "sizes": ir.I64Array(sizes)})
    return _result(tracer, op, x)


def split(x, split_size_or_sections, dim=0):
    """torch's ``split``: pieces of ``split_size`` along ``dim`` (the last may
    be smaller) or of the listed sizes, which must add up to the dimension."""
    axis = _axis(x, dim, "split")
    n = x.shape[axis]
    s = split_size_or_sections
    if isinstance(s, numbers.Integral) and not isinstance(s, bool):
        if s <= 0:
            fail(f"split: split_size must be a positive integer, got {s}")
        sizes = [int(s)] * (n // s) + ([n % s] if n % s else [])
    else:
        sizes = [int(v) for v in s]
        if any(v < 0 for v in sizes) or sum(sizes) != n:
            fail(f"split: sections {sizes} add up to {sum(sizes)}, but dimension {dim} of the input "
                 f"of shape {_shape_str(x.shape)} has size {n}")
    pieces, offset = [], 0
    for size in sizes:
        offsets = [0] * x.ndim
        offsets[axis] = offset
        box = list(x.shape)
        box[axis] = size
        pieces.append(slice_box(x, offsets, box))
        offset += size
    return tuple(pieces)


def chunk(x, chunks, dim=0):
    """torch's ``chunk``: ``split`` into pieces of ``ceil(size / chunks)``."""
    if isinstance(chunks, bool) or not isinstance(chunks, numbers.Integral) or chunks <= 0:
        fail(f"chunk: chunks must be a positive integer, got {chunks!r}")
    n = x.shape[_axis(x, dim, "chunk")]
    return split(x, max(1, -(-n // int(chunks))), dim)


def cat(tensors, dim=0):
    """Concatenation along ``dim``; the other dimensions must be equal."""
    tensors = list(tensors)
    if not tensors or not all(isinstance(t, Tensor) for t in tensors):
        raise TypeError("cat() expects a non-empty sequence of tensors")
    first = tensors[0]
    axis = _axis(first, dim, "cat")
    for t in tensors[1:]:
        if t.ndim != first.ndim or any(t.shape[i] != first.shape[i] for i in range(first.ndim) if i != axis):
            fail(f"cat along dim {dim}: shapes {_shape_str(first.shape)} and {_shape_str(t.shape)} "
                 "differ outside that dimension")
    if len(tensors) == 1:
        return first
    if not _is_lazy(*tensors):
        return _local(np.concatenate([host_value(t) for t in tensors], axis=axis))
    anchor = next(t for t in tensors if _is_lazy(t))
    tensors = [_like(t, anchor) for t in tensors]
    tracer, values = _operands("cat", *tensors)
    shape = list(first.shape)
    shape[axis] = sum(t.shape[axis] for t in tensors)
    type = values[[id(t) for t in tensors].index(id(anchor))].type
    op = tracer.emit("pf.concat", values, [type.with_shape(shape)], {"axis": axis})
    return _result(tracer, op, anchor)


def stack(tensors, dim=0):
    """torch's ``stack``: equally shaped tensors along a new axis ``dim``
    (each gets a size-1 axis there, then ``cat``)."""
    tensors = list(tensors)
    if not tensors or not all(isinstance(t, Tensor) for t in tensors):
        raise TypeError("stack() expects a non-empty sequence of tensors")
    first = tensors[0]
    axis = int(dim) + first.ndim + 1 if dim < 0 else int(dim)
    if not 0 <= axis <= first.ndim:
        fail(f"stack: dim {dim} is out of range for tensors of shape {_shape_str(first.shape)}")
    for t in tensors[1:]:
        if tuple(t.shape) != tuple(first.shape):
            fail(f"stack expects tensors of equal shapes, got {_shape_str(first.shape)} and "
                 f"{_shape_str(t.shape)}")
    if not _is_lazy(*tensors):
        return _local(np.stack([host_value(t) for t in tensors], axis=axis))
    shape = list(first.shape)
    shape.insert(axis, 1)
    return cat([reshape(t, shape) for t in tensors], axis)


def _index_items(x, index):
    """The items of a basic index, ``...`` expanded, one per axis plus ``None``s."""
    items = list(index) if isinstance(index, tuple) else [index]
    if sum(1 for i in items if i is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    used = sum(1 for i in items if i is not None and i is not Ellipsis)
    if used > x.ndim:
        raise IndexError(f"too many indices ({used}) for a tensor of shape {_shape_str(x.shape)}")
    fill = [slice(None)] * (x.ndim - used)
    if Ellipsis in items:
        at = items.index(Ellipsis)
        return items[:at] + fill + items[at + 1:]
    return items + fill


def getitem(x, index):
    """``x[index]``: numpy indexing on host tensors; on traced ones, basic
    indexing (slices of step 1, ints, ``None``, ``...``, lists of
    consecutive indices) as ``pf.slice`` then ``pf.reshape``."""
    if not _is_lazy(x):
        if isinstance(index, Tensor):
            index = host_value(index)
        elif isinstance(index, tuple):
            index = tuple(host_value(i) if isinstance(i, Tensor) else i for i in index)
        return _local(np.asarray(host_value(x)[index]))
    offsets, sizes, shape, axis = [], [], [], 0
    for item in _index_items(x, index):
        if item is None:
            shape.append(1)
            continue
        n = x.shape[axis]
        if isinstance(item, slice):
            start, stop, step = item.indices(n)
            if step != 1:
                _trace.unsupported(f"slicing a traced tensor with step {step}")
            if stop <= start:
                fail(f"the slice {start}:{stop} of dimension {axis} (size {n}) of a tensor of shape "
                     f"{_shape_str(x.shape)} is empty")
            offsets.append(start)
            sizes.append(stop - start)
            shape.append(stop - start)
        elif isinstance(item, numbers.Integral) and not isinstance(item, bool):
            if not -n <= item < n:
                raise IndexError(f"index {item} is out of range for dimension {axis} (size {n}) of "
                                 f"a tensor of shape {_shape_str(x.shape)}")
            offsets.append(int(item) % n)
            sizes.append(1)
        elif _is_run(item, n):
            # a list of consecutive indices keeps the axis (nanoGPT's x[:, [-1], :])
            offsets.append(int(item[0]) % n)
            sizes.append(len(item))
            shape.append(len(item))
        else:
            _trace.unsupported(f"indexing a traced tensor with {type(item).__name__} {item!r} (a list "
                               "must hold consecutive increasing indices)")
        axis += 1
    y = slice_box(x, offsets, sizes)
    return y if list(y.shape) == shape else reshape(y, shape)


def setitem(x, index, value):
    """``x[index] = value`` on a host tensor (numpy's indexing and
    assignment, a bool mask included: nanoGPT's ``logits[logits < v] =
    -inf``). A traced tensor has no storage to write into (a CompileError);
    a parameter or buffer a compiled graph trains takes values through
    ``load_state_dict``."""
    if _is_lazy(x):
        _trace.unsupported("assigning into a traced tensor (x[i] = v); build a new tensor, "
                           "e.g. with masked_fill")
    if x.__dict__.get("_trained_by") is not None:
        fail("cannot assign into a parameter or buffer that a compiled graph trains: its value "
             "lives in the program; use load_state_dict()")
    if isinstance(value, Tensor):
        value = host_value(value)
    if isinstance(index, Tensor):
        index = host_value(index)
    elif isinstance(index, tuple):
        index = tuple(host_value(i) if isinstance(i, Tensor) else i for i in index)
    target = x._eager_value()
    target[index] = value


def _is_run(item, n):
    """Whether ``item`` is a list of consecutive increasing indices into an
    axis of size ``n`` (negative ones counted from the end)."""
    if not isinstance(item, list) or not item or not all(
            isinstance(i, numbers.Integral) and not isinstance(i, bool) and -n <= i < n for i in item):
        return False
    first = int(item[0]) % n
    return [int(i) % n for i in item] == list(range(first, first + len(item)))


def _axes(x, dim, what):
    """The sorted axes ``dim`` names (all of them for ``None``)."""
    if dim is None:
        return list(range(x.ndim))
    dims = [dim] if isinstance(dim, numbers.Integral) else list(dim)
    axes = [_axis(x, d, what) for d in dims]
    if len(set(axes)) != len(axes):
        fail(f"{what}: dim {list(dims)} names an axis twice")
    return sorted(axes)


def reduce_sum(x, dim=None, keepdim=False):
    """torch's ``sum(x, dim=None, keepdim=False)``: ``pf.reduce_sum`` when traced."""
    axes = _axes(x, dim, "sum")
    if not _is_lazy(x):
        v = host_value(x)
        return _local(np.asarray(v.sum(axis=tuple(axes), keepdims=keepdim), dtype=_sum_dtype(v)))
    if not axes:
        return x
    kept = [1 if i in axes else n for i, n in enumerate(x.shape)]
    tracer, (xv,) = _operands("sum", x)
    dropped = [n for i, n in enumerate(x.shape) if i not in axes]
    op = tracer.emit("pf.reduce_sum", [xv], [xv.type.with_shape(dropped)], {"axes": ir.I64Array(axes)})
    y = _result(tracer, op, x)
    return reshape(y, kept) if keepdim else y


def _sum_dtype(v):
    return np.int64 if v.dtype.kind in "biu" else v.dtype


def mean(x, dim=None, keepdim=False):
    """torch's ``mean``: the sum over ``dim`` times ``1/count``."""
    axes = _axes(x, dim, "mean")
    if not x.dtype.is_floating_point:
        fail(f"mean needs a floating-point input, got {x.dtype}")
    if not _is_lazy(x):
        v = host_value(x)
        out = v.mean(axis=tuple(axes), keepdims=keepdim, dtype=np.float64) if v.size else v.sum(
            axis=tuple(axes), keepdims=keepdim)
        return _local(np.asarray(out, dtype=v.dtype))
    total = reduce_sum(x, dim, keepdim)
    tracer, (xv,) = _operands("mean", x)
    if tracer.microbatches > 1:
        # pf-microbatch resizes a traced shape but not a number taken from
        # it: count the elements in the graph (a broadcast one, summed the
        # same way), so each micro-batch divides by its own count.
        one = tracer.constant(np.array(1.0, dtype=x.dtype.numpy), x.dtype, tracer.operand_placement)
        op = tracer.emit("pf.broadcast_to", [one], [xv.type.with_shape(tuple(x.shape))],
                         {"shape": ir.I64Array(tuple(x.shape))})
        return div(total, reduce_sum(_result(tracer, op, x), dim, keepdim))
    count = 1
    for a in axes:
        count *= x.shape[a]
    return total if count == 1 else mul_scalar(total, 1.0 / count)


def _triangle(x, diagonal, keep_lower):
    what = "tril" if keep_lower else "triu"
    if _is_lazy(x):
        _trace.unsupported(f"{what} of a traced tensor (make masks on the host: a buffer built "
                           "with flow.tril, or a tensor made in build())")
    if x.ndim < 2:
        fail(f"{what} needs a tensor of rank >= 2, got shape {_shape_str(x.shape)}")
    fn = np.tril if keep_lower else np.triu
    return _local(fn(host_value(x), int(diagonal)))


def tril(x, diagonal=0):
    """The lower triangle of the last two axes (the rest zero)."""
    return _triangle(x, diagonal, True)


def triu(x, diagonal=0):
    """The upper triangle of the last two axes (the rest zero)."""
    return _triangle(x, diagonal, False)


_registry.ops.provide(getitem=getitem, setitem=setitem, split=split, chunk=chunk, sum=reduce_sum, mean=mean)
