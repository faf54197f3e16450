"""The ops behind modules and tensor methods, for eager and traced tensors.

On local tensors an op computes with numpy (a reference forward pass) and
checks its operands the way the pf verifier does, at the user's line (there
is no compiler to ask). On lazy tensors (inside ``nn.Graph.build``) it emits
a pf op and checks only what it needs to compute the result's type, what the
verifier cannot see (a Python scalar where a tensor must be, bool labels)
and what a module knows better (``nn.Linear``'s ``in_features``, operands
moved with ``to_global``): the verifier checks the rest when the graph
compiles, and ``pf-opt`` reports it at the op's location, the user's line
(see ``compiler.diagnostics_to_error``).
"""

import numbers

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from . import _registry, _trace, ir
from . import dtypes as dt
from . import sbp as sbp_mod
from ._trace import fail
from .tensor import Tensor


def _is_lazy(*tensors):
    """Whether an op on these operands is traced: one of them is a lazy tensor
    or, while a graph traces ``build``, a parameter or buffer the step reads.
    The others (host tensors: made in ``build``, or buffers without an
    initializer) then become constants (``Tracer.value``)."""
    tracer = _trace.current()
    return any(isinstance(t, Tensor) and (t._node is not None or (
        tracer is not None and tracer.is_traced(t))) for t in tensors)


def _local(array):
    return Tensor._from_array(array)


def _anchor(tracer, tensors):
    """The first operand an op is traced for (its placement places the rest)."""
    for t in tensors:
        if tracer.is_traced(t):
            return t
    raise RuntimeError("an op traced without a traced operand")


def _operands(what, *tensors):
    """IR values of the operands, which must share one placement; host
    tensors become constants on it."""
    tracer = _trace.current()
    if tracer is None:
        raise RuntimeError("lazy tensors can only be used while nn.Graph traces build()")
    first = _placement(tracer, _anchor(tracer, tensors))
    tracer.operand_placement = first
    values = [tracer.value(t, first) for t in tensors]
    for t in tensors:
        if tracer.is_traced(t) and _placement(tracer, t) != first:
            fail(f"{what}: operands are on different placements, {first!r} and {t.placement!r}",
                 ["move one of them with .to_global(placement=..., sbp=...)"])
    return tracer, values


def _placement(tracer, t):
    """``t``'s placement in the trace: a local graph's local parameters are on
    its placement (``Tracer.local_placement``)."""
    return t.placement if t.placement is not None else tracer.local_placement


def _result(tracer, op, like, dtype=None, index=0):
    """The lazy result: on ``like``'s placement, or, when ``like`` is a host
    tensor (a constant), on the placement of the last :func:`_operands`."""
    placement = _placement(tracer, like) if tracer.is_traced(like) else tracer.operand_placement
    return tracer.lazy(op.results[index], dtype or like.dtype, placement)


def _shape_str(shape):
    return str(list(shape))


def _need_float(what, t):
    if not t.dtype.is_floating_point:
        fail(f"{what} needs a floating-point input, got {t.dtype}")


def _need_rank(what, t, ranks, desc=None):
    ranks = (ranks,) if isinstance(ranks, int) else ranks
    if t.ndim not in ranks:
        fail(f"{what} expects {desc or 'rank ' + ' or '.join(map(str, ranks))} input, "
             f"got shape {_shape_str(t.shape)}")


# Dense algebra ----------------------------------------------------------------

def linear(x, weight, bias=None):
    """``x @ weight.T + bias`` (weight [out, in])."""
    out_f, in_f = weight.shape
    if x.ndim < 1:
        fail(f"linear layer (in_features={in_f}) expects an input of rank >= 1 "
             f"([..., {in_f}]), got a scalar")
    if x.shape[-1] != in_f:
        fail(f"linear layer expects inputs with in_features={in_f} in the last dimension, "
             f"got shape {_shape_str(x.shape)} (last dimension {x.shape[-1]})",
             ["flatten the input or fix in_features" if x.ndim > 2 else
              "the previous layer's output size must equal this layer's in_features"])
    _need_float("linear", x)
    if not _is_lazy(x, weight, bias):
        y = x._eager_value() @ weight._eager_value().T
        if bias is not None:
            y = y + bias._eager_value()
        return _local(y.astype(x.dtype.numpy, copy=False))
    if x.ndim == 1:  # torch's [in] -> [out]: as a row of one
        return reshape(linear(reshape(x, (1, in_f)), weight, bias), (out_f,))
    tracer, (xv, wv) = _operands("linear", x, weight)
    shape = tuple(x.shape[:-1]) + (out_f,)
    op = tracer.emit("pf.matmul", [xv, wv], [xv.type.with_shape(shape)], {"transpose_b": ir.UNIT})
    y = _result(tracer, op, x)
    return y if bias is None else bias_add(y, bias, axis=y.ndim - 1)


def bias_add(x, bias, axis=1):
    if not _is_lazy(x, bias):
        if bias.ndim != 1 or bias.shape[0] != x.shape[axis]:
            fail(f"bias of shape {_shape_str(bias.shape)} does not match axis {axis} of an input "
                 f"of shape {_shape_str(x.shape)}")
        view = [1] * x.ndim
        view[axis] = -1
        return _local(x._eager_value() + bias._eager_value().reshape(view))
    tracer, (xv, bv) = _operands("bias add", x, bias)
    attrs = {} if axis == 1 else {"axis": axis}
    op = tracer.emit("pf.bias_add", [xv, bv], [xv.type.with_shape(x.shape)], attrs)
    return _result(tracer, op, x)


def matmul(a, b, transpose_a=False, transpose_b=False):
    if not _is_lazy(a, b):
        av, bv = a._eager_value(), b._eager_value()
        if transpose_a:
            av = np.swapaxes(av, -1, -2)
        if transpose_b:
            bv = np.swapaxes(bv, -1, -2)
        return _local(av @ bv)
    if a.ndim < 1 or b.ndim < 1:
        fail(f"matmul needs operands of rank >= 1, got shapes {_shape_str(a.shape)} and {_shape_str(b.shape)}")
    if a.ndim == 1 or b.ndim == 1:
        # torch's (and numpy's) vector operands: a [k] is a row [1, k] on the
        # left and a column [k, 1] on the right, and that axis leaves the result.
        if transpose_a or transpose_b:
            fail("matmul: transpose_a/transpose_b need operands of rank >= 2")
        a2 = reshape(a, (1,) + tuple(a.shape)) if a.ndim == 1 else a
        b2 = reshape(b, tuple(b.shape) + (1,)) if b.ndim == 1 else b
        y = matmul(a2, b2)
        shape = tuple(y.shape)
        if a.ndim == 1:
            shape = shape[:-2] + shape[-1:]
        if b.ndim == 1:
            shape = shape[:-1]
        return reshape(y, shape)
    # The contraction and batch sizes are the verifier's to check (pf.matmul).
    m = a.shape[-1] if transpose_a else a.shape[-2]
    n = b.shape[-2] if transpose_b else b.shape[-1]
    tracer, (av, bv) = _operands("matmul", a, b)
    batch = tuple(a.shape[:-2])
    if b.ndim > 2 and batch != tuple(b.shape[:-2]):
        # torch's broadcast of the batch axes; pf.matmul takes equal batch
        # axes, or a 2-D right operand (broadcast by the op itself).
        try:
            batch = tuple(int(d) for d in np.broadcast_shapes(batch, tuple(b.shape[:-2])))
        except ValueError:
            fail(f"matmul: the batch dimensions of shapes {_shape_str(a.shape)} and "
                 f"{_shape_str(b.shape)} cannot be broadcast together")
        av, bv = (_broadcast_to(tracer, v, batch + tuple(t.shape[-2:])) for v, t in ((av, a), (bv, b)))
    attrs = {}
    if transpose_a:
        attrs["transpose_a"] = ir.UNIT
    if transpose_b:
        attrs["transpose_b"] = ir.UNIT
    op = tracer.emit("pf.matmul", [av, bv], [av.type.with_shape(batch + (m, n))], attrs)
    return _result(tracer, op, a)


def _broadcast_to(tracer, value, shape):
    if value.type.shape == shape:
        return value
    return tracer.emit("pf.broadcast_to", [value], [value.type.with_shape(shape)],
                       {"shape": ir.I64Array(shape)}).result


def relu(x):
    if not _is_lazy(x):
        _need_float("relu", x)
        v = x._eager_value()
        return _local(np.maximum(v, np.zeros((), v.dtype)))
    tracer, (xv,) = _operands("relu", x)
    op = tracer.emit("pf.relu", [xv], [xv.type.with_shape(x.shape)])
    return _result(tracer, op, x)


def dropout(x, p):
    """Traced dropout (``pf.dropout``): the compiled program draws the mask
    from its counter-based generator at logical indices, per step and
    micro-batch, so every layout drops the same elements. Each call in a
    trace gets its own stream (the trace order)."""
    tracer, (xv,) = _operands("dropout", x)
    tracer.dropout_streams = getattr(tracer, "dropout_streams", 0) + 1
    op = tracer.emit("pf.dropout", [xv], [xv.type.with_shape(x.shape)],
                     {"p": ir.F64(p), "stream": tracer.dropout_streams})
    return _result(tracer, op, x)


# Shapes ----------------------------------------------------------------------

def flatten(x, start_dim=1, end_dim=-1):
    rank = x.ndim
    s = start_dim + rank if start_dim < 0 else start_dim
    e = end_dim + rank if end_dim < 0 else end_dim
    if rank == 0 or not (0 <= s <= e < rank):
        fail(f"flatten(start_dim={start_dim}, end_dim={end_dim}) does not select axes of an input "
             f"of shape {_shape_str(x.shape)}")
    merged = 1
    for d in x.shape[s:e + 1]:
        merged *= d
    shape = tuple(x.shape[:s]) + (merged,) + tuple(x.shape[e + 1:])
    if not _is_lazy(x):
        return _local(x._eager_value().reshape(shape))
    tracer, (xv,) = _operands("flatten", x)
    attrs = {}
    if start_dim != 1:
        attrs["start_dim"] = start_dim
    if end_dim != -1:
        attrs["end_dim"] = end_dim
    op = tracer.emit("pf.flatten", [xv], [xv.type.with_shape(shape)], attrs)
    return _result(tracer, op, x)


def reshape(x, shape):
    shape = list(shape)
    if shape.count(-1) > 1:
        fail(f"reshape to {shape}: at most one dimension can be -1")
    known = 1
    for d in shape:
        if d != -1:
            known *= d
    if -1 in shape:
        if known == 0 or x.numel() % known:
            fail(f"cannot reshape a tensor of shape {_shape_str(x.shape)} to {shape}")
        shape[shape.index(-1)] = x.numel() // known
    if int(np.prod(shape, dtype=np.int64)) != x.numel():
        fail(f"cannot reshape a tensor of shape {_shape_str(x.shape)} ({x.numel()} elements) to {shape}")
    if not _is_lazy(x):
        return _local(x._eager_value().reshape(shape))
    tracer, (xv,) = _operands("reshape", x)
    op = tracer.emit("pf.reshape", [xv], [xv.type.with_shape(shape)])
    return _result(tracer, op, x)


def permute(x, perm):
    perm = [p + x.ndim if p < 0 else p for p in perm]
    if sorted(perm) != list(range(x.ndim)):
        fail(f"{perm} is not a permutation of the axes of shape {_shape_str(x.shape)}")
    if not _is_lazy(x):
        return _local(np.transpose(x._eager_value(), perm))
    tracer, (xv,) = _operands("transpose", x)
    shape = [x.shape[p] for p in perm]
    op = tracer.emit("pf.transpose", [xv], [xv.type.with_shape(shape)], {"perm": ir.I64Array(perm)})
    return _result(tracer, op, x)


# Loss -------------------------------------------------------------------------

def cross_entropy(logits, labels, ignore_index=None):
    """Mean softmax cross-entropy of [N, C] logits against [N] integer labels;
    with ``ignore_index``, the mean over the rows with another label."""
    if not _is_lazy(logits, labels):
        return _cross_entropy_eager(logits, labels, ignore_index)
    if labels.dtype is dt.bool:
        _bad_labels(labels)  # (pf's verifier takes i1 labels for integers)
    tracer, (zv, yv) = _operands("cross-entropy", logits, labels)
    attrs = {} if ignore_index is None else {"ignore_index": int(ignore_index)}
    op = tracer.emit("pf.softmax_cross_entropy", [zv, yv], [zv.type.with_shape(())], attrs)
    return _result(tracer, op, logits)


def _bad_labels(labels):
    fail(f"cross-entropy needs [batch] integer class labels, got shape {_shape_str(labels.shape)} "
         f"and dtype {labels.dtype}")


def _cross_entropy_eager(logits, labels, ignore_index=None):
    _need_float("cross-entropy logits", logits)
    _need_rank("cross-entropy", logits, 2, "[batch, classes] logits as")
    if labels.ndim != 1 or labels.dtype.is_floating_point or labels.dtype is dt.bool:
        _bad_labels(labels)
    if labels.shape[0] != logits.shape[0]:
        fail(f"cross-entropy batch sizes differ: {logits.shape[0]} rows of logits vs "
             f"{labels.shape[0]} labels")
    z = logits._eager_value().astype(np.float64)
    y = labels._eager_value()
    keep = np.ones(y.shape, bool) if ignore_index is None else y != ignore_index
    if ((y[keep] < 0) | (y[keep] >= z.shape[1])).any():
        raise ValueError(f"labels must be in [0, {z.shape[1]})")
    zmax = z.max(axis=1, keepdims=True)
    lse = np.log(np.exp(z - zmax).sum(axis=1)) + zmax[:, 0]
    rows = np.arange(z.shape[0])[keep]
    with np.errstate(invalid="ignore"):  # every row ignored: NaN, as torch
        loss = (lse[keep] - z[rows, y[keep]]).mean() if keep.any() else np.float64("nan")
    return _local(np.asarray(loss, dtype=logits.dtype.numpy))


# Convolution and pooling --------------------------------------------------------

def _pair(v, what):
    if isinstance(v, numbers.Integral):
        return (int(v), int(v))
    v = tuple(int(i) for i in v)
    if len(v) != 2:
        raise ValueError(f"{what} must be an int or a pair, got {v}")
    return v


def _window_out(size, kernel, stride, pad, dilation=1):
    span = dilation * (kernel - 1) + 1
    padded = size + 2 * pad
    return 0 if padded < span else (padded - span) // stride + 1


def _windows(x, kernel, stride, padding, dilation, fill):
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = kernel, stride, padding, dilation
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)), constant_values=fill)
    span = (dh * (kh - 1) + 1, dw * (kw - 1) + 1)
    win = sliding_window_view(xp, span, axis=(2, 3))
    return win[:, :, ::sh, ::sw, ::dh, ::dw]


def conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """NCHW convolution with an OIHW weight; the bias is a separate bias add."""
    stride, padding, dilation = _pair(stride, "stride"), _pair(padding, "padding"), _pair(dilation, "dilation")
    _need_rank("conv2d", x, 4, "an NCHW (rank 4)")
    o, cg, kh, kw = weight.shape
    out_hw = [_window_out(x.shape[2 + i], (kh, kw)[i], stride[i], padding[i], dilation[i]) for i in range(2)]
    shape = (x.shape[0], o) + tuple(out_hw)
    if not _is_lazy(x, weight, bias):
        # Traced, these are the verifier's to check (pf.conv2d).
        _need_float("conv2d", x)
        if x.shape[1] % groups or o % groups:
            fail(f"conv2d groups={groups} must divide the input channels {x.shape[1]} and output channels {o}")
        if x.shape[1] // groups != cg:
            fail(f"conv2d expects {cg * groups} input channels, got an input of shape {_shape_str(x.shape)}",
                 ["the input's channel axis (1) must equal the layer's in_channels"])
        if min(out_hw) <= 0:
            fail(f"conv2d kernel {[kh, kw]} does not fit the padded input {_shape_str(x.shape[2:])}")
        xv, wv = x._eager_value(), weight._eager_value()
        win = _windows(xv, (kh, kw), stride, padding, dilation, 0)
        og = o // groups
        parts = [np.tensordot(win[:, g * cg:(g + 1) * cg], wv[g * og:(g + 1) * og], axes=([1, 4, 5], [1, 2, 3]))
                 for g in range(groups)]
        y = np.concatenate(parts, axis=-1).transpose(0, 3, 1, 2).astype(xv.dtype, copy=False)
        y = _local(np.ascontiguousarray(y))
    else:
        tracer, (xv, wv) = _operands("conv2d", x, weight)
        attrs = {}
        if stride != (1, 1):
            attrs["stride"] = ir.I64Array(stride)
        if padding != (0, 0):
            attrs["padding"] = ir.I64Array(padding)
        if dilation != (1, 1):
            attrs["dilation"] = ir.I64Array(dilation)
        if groups != 1:
            attrs["groups"] = groups
        op = tracer.emit("pf.conv2d", [xv, wv], [xv.type.with_shape(shape)], attrs)
        y = _result(tracer, op, x)
    return y if bias is None else bias_add(y, bias, axis=1)


def _pool(kind, x, kernel, stride, padding):
    kernel = _pair(kernel, "kernel_size")
    stride = kernel if stride is None else _pair(stride, "stride")
    padding = _pair(padding, "padding")
    _need_rank(f"{kind}_pool2d", x, 4, "an NCHW (rank 4)")
    out_hw = [_window_out(x.shape[2 + i], kernel[i], stride[i], padding[i]) for i in range(2)]
    shape = tuple(x.shape[:2]) + tuple(out_hw)
    if not _is_lazy(x):
        # Traced, these are the verifier's to check (pf.max_pool2d, pf.avg_pool2d).
        _need_float(f"{kind}_pool2d", x)
        for i in range(2):
            if 2 * padding[i] > kernel[i]:
                fail(f"{kind}_pool2d padding {padding[i]} must be at most half the kernel size {kernel[i]}")
        if min(out_hw) <= 0:
            fail(f"{kind}_pool2d kernel {list(kernel)} does not fit the input {_shape_str(x.shape[2:])}")
        xv = x._eager_value()
        if kind == "max":
            win = _windows(xv, kernel, stride, padding, (1, 1), -np.inf)
            return _local(np.ascontiguousarray(win.max(axis=(4, 5))))
        win = _windows(xv, kernel, stride, padding, (1, 1), 0)
        return _local(np.ascontiguousarray(win.mean(axis=(4, 5), dtype=np.float64).astype(xv.dtype)))
    tracer, (xv,) = _operands(f"{kind}_pool2d", x)
    attrs = {"kernel": ir.I64Array(kernel)}
    if stride != kernel:
        attrs["stride"] = ir.I64Array(stride)
    if padding != (0, 0):
        attrs["padding"] = ir.I64Array(padding)
    op = tracer.emit(f"pf.{kind}_pool2d", [xv], [xv.type.with_shape(shape)], attrs)
    return _result(tracer, op, x)


def max_pool2d(x, kernel_size, stride=None, padding=0):
    return _pool("max", x, kernel_size, stride, padding)


def avg_pool2d(x, kernel_size, stride=None, padding=0):
    return _pool("avg", x, kernel_size, stride, padding)


def global_avg_pool(x):
    """Mean over H and W: NCHW -> NC11."""
    _need_rank("adaptive_avg_pool2d", x, 4, "an NCHW (rank 4)")
    if not _is_lazy(x):
        _need_float("adaptive_avg_pool2d", x)
        v = x._eager_value()
        return _local(v.mean(axis=(2, 3), keepdims=True, dtype=np.float64).astype(v.dtype))
    tracer, (xv,) = _operands("adaptive_avg_pool2d", x)
    op = tracer.emit("pf.global_avg_pool", [xv], [xv.type.with_shape(tuple(x.shape[:2]) + (1, 1))])
    return _result(tracer, op, x)


# Normalisation ------------------------------------------------------------------

def batch_norm(x, running_mean, running_var, weight=None, bias=None, training=True,
               momentum=0.1, eps=1e-5):
    """Batch norm over axis 1; in training mode the running statistics are updated."""
    _need_rank("batch_norm", x, (2, 4), "an [N, C] or [N, C, H, W]")
    channels = x.shape[1]
    if not _is_lazy(x):
        # Traced, these are the verifier's to check (pf.batch_norm).
        _need_float("batch_norm", x)
        for name, t in (("running_mean", running_mean), ("running_var", running_var),
                        ("weight", weight), ("bias", bias)):
            if t is not None and tuple(t.shape) != (channels,):
                fail(f"batch_norm's {name} has shape {_shape_str(t.shape)} but the input has "
                     f"{channels} channels (shape {_shape_str(x.shape)})")
        return _batch_norm_eager(x, running_mean, running_var, weight, bias, training, momentum, eps)
    if running_mean is None or running_var is None:
        _trace.unsupported("batch norm without running statistics inside nn.Graph")
    tracer = _trace.current()
    operands = [x]
    for t, fill in ((weight, 1.0), (bias, 0.0)):
        operands.append(t if t is not None else _constant(tracer, fill, (channels,), x))
    operands += [running_mean, running_var]
    tracer, values = _operands("batch_norm", *operands)
    attrs = {}
    if eps != 1e-5:
        attrs["epsilon"] = ir.F64(eps)
    if momentum != 0.1:
        attrs["momentum"] = ir.F64(momentum)
    if not training:
        attrs["inference"] = ir.UNIT  # eval mode: the running statistics, not updated
    types = [values[0].type.with_shape(x.shape), values[3].type.with_shape((channels,)),
             values[4].type.with_shape((channels,))]
    op = tracer.emit("pf.batch_norm", values, types, attrs)
    if training:
        tracer.write(running_mean, op.results[1])
        tracer.write(running_var, op.results[2])
    return _result(tracer, op, x)


def _constant(tracer, value, shape, like):
    """A broadcast constant on ``like``'s placement (a lazy tensor)."""
    sbp = (sbp_mod.broadcast,) * like.placement.ndim
    type = tracer.global_type(shape, like.dtype, like.placement, sbp)
    op = tracer.emit("pf.constant", [], [type], {"value": ir.Dense(value, shape, like.dtype.mlir)})
    return tracer.lazy(op.result, like.dtype, like.placement, sbp)


def _batch_norm_eager(x, running_mean, running_var, weight, bias, training, momentum, eps):
    v = x._eager_value().astype(np.float64)
    axes = (0,) + tuple(range(2, v.ndim))
    view = [1, -1] + [1] * (v.ndim - 2)
    if training:
        mean = v.mean(axis=axes)
        var = v.var(axis=axes)
        count = v.size // v.shape[1]
        if running_mean is not None:
            rm = running_mean._eager_value()
            rm[...] = (1 - momentum) * rm + momentum * mean
        if running_var is not None:
            rv = running_var._eager_value()
            unbiased = var * count / max(count - 1, 1)
            rv[...] = (1 - momentum) * rv + momentum * unbiased
    else:
        mean = running_mean._eager_value().astype(np.float64)
        var = running_var._eager_value().astype(np.float64)
    y = (v - mean.reshape(view)) / np.sqrt(var.reshape(view) + eps)
    if weight is not None:
        y = y * weight._eager_value().reshape(view)
    if bias is not None:
        y = y + bias._eager_value().reshape(view)
    return _local(y.astype(x.dtype.numpy))


# Tensor's methods (x + y, x.reshape(...), ...) call these; see pipeflow._registry.
_registry.ops.provide(matmul=matmul, relu=relu, flatten=flatten, reshape=reshape, permute=permute)
