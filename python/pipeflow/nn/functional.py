"""``nn.functional``: the ops behind the layers, callable directly."""

import math

import numpy as np

from .. import _activations, _ops, _ops_logical, _trace
from .. import ir as _ir
from ..tensor import Tensor
from .layers import Dropout
from .normalization import layer_norm as layer_norm  # re-exported: F.layer_norm
from .sparse import embedding as embedding  # re-exported: F.embedding

linear = _ops.linear
relu = _ops.relu
gelu = _activations.gelu
tanh = _activations.tanh
sigmoid = _activations.sigmoid
softmax = _activations.softmax
log_softmax = _activations.log_softmax
flatten = _ops.flatten
conv2d = _ops.conv2d
max_pool2d = _ops.max_pool2d
avg_pool2d = _ops.avg_pool2d
batch_norm = _ops.batch_norm


def adaptive_avg_pool2d(x, output_size):
    if _ops._pair(output_size, "output_size") != (1, 1):
        raise ValueError("adaptive_avg_pool2d supports only output_size=1")
    return _ops.global_avg_pool(x)


def cross_entropy(input, target, weight=None, ignore_index=-100, reduction="mean",
                  label_smoothing=0.0):
    """torch's ``cross_entropy`` with the mean reduction. Rows labelled
    ``ignore_index`` leave the mean when it is given explicitly (nanoGPT's
    -1); torch's default -100 is not applied (a -100 label is then an error
    at run time, never silently counted), so that a data-parallel batch can
    stay split (see pf.softmax_cross_entropy)."""
    if weight is not None or label_smoothing:
        raise ValueError("cross_entropy(weight=..., label_smoothing=...) is not supported yet")
    if reduction != "mean":
        raise ValueError("cross_entropy supports only reduction='mean'")
    return _ops.cross_entropy(input, target, None if ignore_index == -100 else ignore_index)


def dropout(x, p=0.5, training=True):
    m = Dropout(p)
    m.training = training
    return m.forward(x)


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False,
                                 scale=None):
    """torch's ``scaled_dot_product_attention`` ([..., L, E] queries, [..., S, E]
    keys, [..., S, Ev] values): ``softmax(q @ k^T * scale + mask) @ v`` with
    ``scale`` ``1/sqrt(E)`` by default. ``is_causal`` keeps the lower triangle
    of an [L, S] matrix of ones; ``attn_mask`` is a bool mask (True takes
    part) or a float mask added to the scores, broadcast to [..., L, S];
    ``dropout_p`` drops attention weights whatever the module's mode, as
    torch's.

    In a graph this is one fused op (``pf.attention``: tiled kernels, no
    [L, S] tensor, the backward recomputing the probabilities), unless the
    mask is a traced float tensor (it may need a gradient, which the fused
    op does not give): then it is the composition of the traced ops. Eager
    calls compute the composition with numpy (no dropout)."""
    if is_causal and attn_mask is not None:
        raise ValueError("scaled_dot_product_attention: give either attn_mask or is_causal, not both")
    if query.ndim < 2 or key.ndim < 2 or value.ndim < 2:
        _trace.fail(f"scaled_dot_product_attention needs [..., L, E] operands, got shapes "
                    f"{list(query.shape)}, {list(key.shape)} and {list(value.shape)}")
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else float(scale)
    tracer = _trace.current()
    traced_float_mask = (attn_mask is not None and attn_mask.dtype.is_floating_point
                         and tracer is not None and tracer.is_traced(attn_mask))
    if _ops._is_lazy(query, key, value) and not traced_float_mask:
        out = _fused_attention(query, key, value, attn_mask, dropout_p, is_causal, scale)
        if out is not None:
            return out
    return _composed_attention(query, key, value, attn_mask, dropout_p, is_causal, scale)


def _composed_attention(query, key, value, attn_mask, dropout_p, is_causal, scale):
    """``softmax(q @ k^T * scale + mask) @ v`` from the traced (or eager) ops."""
    L, S = query.shape[-2], key.shape[-2]
    att = _ops.matmul(query, key, transpose_b=True) * scale
    if is_causal:
        attn_mask = Tensor._from_array(np.tril(np.ones((L, S), dtype=bool)))
    if attn_mask is not None:
        if attn_mask.dtype.is_floating_point:
            att = att + attn_mask
        else:  # a bool mask, host or traced: -inf where it is False
            att = att.masked_fill(_ops_logical.logical("not", attn_mask), float("-inf"))
    att = _activations.softmax(att, dim=-1)
    if dropout_p:
        att = dropout(att, dropout_p, training=True)
    return _ops.matmul(att, value)


def _as_rank4(x):
    """``x`` [..., N, E] as [B, H, N, E]: a rank-3 tensor is one head, a
    rank-2 one a batch of one; more leading axes fold into the batch."""
    shape = tuple(x.shape)
    if len(shape) == 4:
        return x
    if len(shape) > 4:
        return _ops.reshape(x, (int(np.prod(shape[:-3])),) + shape[-3:])
    return _ops.reshape(x, (1,) * (4 - len(shape)) + shape)


def _fused_attention(query, key, value, attn_mask, dropout_p, is_causal, scale):
    """One ``pf.attention`` over [B, H, L, E] views of the operands (None
    when the mask's leading axes cannot fold as theirs do)."""
    L, S = query.shape[-2], key.shape[-2]
    lead = tuple(query.shape[:-2])
    if tuple(key.shape[:-2]) != lead or tuple(value.shape[:-2]) != lead:
        _trace.fail(f"scaled_dot_product_attention: query, key and value must share their "
                    f"leading axes, got shapes {list(query.shape)}, {list(key.shape)} and "
                    f"{list(value.shape)}")
    if key.shape[-1] != query.shape[-1] or value.shape[-2] != S:
        _trace.fail(f"scaled_dot_product_attention expects query [..., L, E], key [..., S, E] "
                    f"and value [..., S, Ev], got shapes {list(query.shape)}, "
                    f"{list(key.shape)} and {list(value.shape)}")
    if not 0.0 <= dropout_p < 1.0:
        raise ValueError(f"scaled_dot_product_attention: dropout_p must be in [0, 1), got {dropout_p}")
    operands = []
    if attn_mask is not None:
        try:
            full = np.broadcast_shapes(tuple(attn_mask.shape), lead + (L, S))
        except ValueError:
            full = None
        if full != lead + (L, S):
            _trace.fail(f"scaled_dot_product_attention: a mask of shape {list(attn_mask.shape)} "
                        f"does not broadcast to the scores {list(lead + (L, S))}")
        padded = (1,) * (len(lead) + 2 - attn_mask.ndim) + tuple(attn_mask.shape)
        # Leading axes fold into the batch as the operands' do: the mask's
        # must be all broadcast or all full.
        folded = padded[:-3]
        if any(d == 1 for d in folded) and any(d != 1 for d in folded):
            return None
        m = attn_mask if padded == tuple(attn_mask.shape) else _ops.reshape(attn_mask, padded)
        operands.append(_as_rank4(m))
    q, k, v = (_as_rank4(t) for t in (query, key, value))
    operands[:0] = [q, k, v]
    scores = tuple(q.shape[:3]) + (S,)
    tracer, values = _ops._operands("scaled_dot_product_attention", *operands)
    attrs = {"scale": _ir.F64(scale)}
    if is_causal:
        attrs["causal"] = _ir.UNIT
    if dropout_p:
        tracer.dropout_streams = getattr(tracer, "dropout_streams", 0) + 1
        attrs["dropout_p"] = _ir.F64(dropout_p)
        attrs["stream"] = tracer.dropout_streams
    qv = values[0]
    out_type = qv.type.with_shape(tuple(q.shape[:3]) + (v.shape[-1],))
    lse_type = _ir.GlobalType(scores[:3], "f32", qv.type.placement)
    op = tracer.emit("pf.attention", values, [out_type, lse_type], attrs)
    out = _ops._result(tracer, op, query)
    return _ops.reshape(out, lead + (L, value.shape[-1])) if len(lead) != 2 else out
