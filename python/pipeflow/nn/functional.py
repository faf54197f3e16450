"""``nn.functional``: the ops behind the layers, callable directly."""

import math

import numpy as np

from .. import _activations, _ops, _ops_logical, _trace
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
    keys, [..., S, Ev] values), composed of the traced ops: ``softmax(q @ k^T *
    scale + mask) @ v`` with ``scale`` ``1/sqrt(E)`` by default. ``is_causal``
    masks with the lower triangle of an [L, S] matrix of ones (a host
    constant, ``masked_fill`` with -inf); ``attn_mask`` is a bool mask (True
    takes part; a host or traced tensor) or a float mask added to the scores;
    ``dropout_p`` drops attention weights (``pf.dropout`` in a graph; eager
    dropout is not supported), whatever the module's mode, as torch's.
    A fused attention op will replace the composition."""
    if is_causal and attn_mask is not None:
        raise ValueError("scaled_dot_product_attention: give either attn_mask or is_causal, not both")
    if query.ndim < 2 or key.ndim < 2 or value.ndim < 2:
        _trace.fail(f"scaled_dot_product_attention needs [..., L, E] operands, got shapes "
                    f"{list(query.shape)}, {list(key.shape)} and {list(value.shape)}")
    L, S = query.shape[-2], key.shape[-2]
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else float(scale)
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
