"""Layer normalisation (``pf.layer_norm``) over the last axis."""

import numbers

import numpy as np

from .. import _ops, _trace, ir
from .._ops import _constant, _is_lazy, _local, _need_float, _operands, _result
from . import init
from .layers import _positive_int
from .module import Module
from .parameter import Parameter


def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    """torch's ``layer_norm`` over the last axis (``normalized_shape`` must
    be that axis' size: ``(C,)`` or ``C``)."""
    shape = (normalized_shape,) if isinstance(normalized_shape, numbers.Integral) \
        else tuple(normalized_shape)
    if len(shape) != 1 or x.ndim < 1 or x.shape[-1] != shape[0]:
        _ops.fail(f"layer_norm normalises the last axis: normalized_shape {list(shape)} does not "
                  f"match an input of shape {list(x.shape)}")
    channels = shape[0]
    if not _is_lazy(x):
        _need_float("layer_norm", x)
        v = x._eager_value().astype(np.float64)
        m = v.mean(-1, keepdims=True)
        y = (v - m) / np.sqrt(((v - m) ** 2).mean(-1, keepdims=True) + eps)
        if weight is not None:
            y = y * weight._eager_value()
        if bias is not None:
            y = y + bias._eager_value()
        return _local(y.astype(x._eager_value().dtype))
    tracer = _trace.current()
    operands = [x]
    for t, fill in ((weight, 1.0), (bias, 0.0)):
        operands.append(t if t is not None else _constant(tracer, fill, (channels,), x))
    tracer, values = _operands("layer_norm", *operands)
    attrs = {} if eps == 1e-5 else {"epsilon": ir.F64(eps)}
    op = tracer.emit("pf.layer_norm", values, [values[0].type.with_shape(x.shape)], attrs)
    return _result(tracer, op, x)


class LayerNorm(Module):
    """torch's ``nn.LayerNorm(C)``: over the last axis, weight ones and bias
    zeros when ``elementwise_affine``."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True,
                 device=None, dtype=None):
        super().__init__()
        shape = (normalized_shape,) if isinstance(normalized_shape, numbers.Integral) \
            else tuple(normalized_shape)
        if len(shape) != 1:
            raise ValueError(f"LayerNorm normalises one (the last) axis; got normalized_shape "
                             f"{list(shape)}")
        self.normalized_shape = (_positive_int(shape[0], "normalized_shape"),)
        if not isinstance(eps, numbers.Real) or eps <= 0:
            raise ValueError(f"eps must be positive, got {eps!r}")
        self.eps = float(eps)
        self.elementwise_affine = elementwise_affine
        c = self.normalized_shape[0]
        if elementwise_affine:
            self.weight = init.ones_(Parameter(np.empty((c,), dtype=np.float32)))
            if bias:
                self.bias = init.zeros_(Parameter(np.empty((c,), dtype=np.float32)))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, x):
        return layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"
