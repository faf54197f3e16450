"""Batch normalisation."""

import numbers

import numpy as np

from .. import _ops
from .._source import user_location
from ..tensor import Tensor
from . import init
from .layers import _positive_int
from .module import Module
from .parameter import Parameter


class _BatchNorm(Module):
    _ranks = (2, 4)

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 device=None, dtype=None):
        super().__init__()
        self.num_features = _positive_int(num_features, "num_features")
        if not isinstance(eps, numbers.Real) or eps <= 0:
            raise ValueError(f"eps must be positive, got {eps!r}")
        if momentum is None or not isinstance(momentum, numbers.Real) or not 0.0 <= momentum <= 1.0:
            raise ValueError(f"momentum must be a number in [0, 1] (cumulative averaging with "
                             f"momentum=None is not supported), got {momentum!r}")
        self.eps, self.momentum = float(eps), float(momentum)
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = init.ones_(Parameter(np.empty((num_features,), dtype=np.float32)))
            self.bias = init.zeros_(Parameter(np.empty((num_features,), dtype=np.float32)))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", _buffer(np.zeros(num_features, np.float32), "#pf.init<zeros>"))
            self.register_buffer("running_var", _buffer(np.ones(num_features, np.float32), "#pf.init<ones>"))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)

    def forward(self, x):
        if x.ndim not in self._ranks:
            _ops.fail(f"{type(self).__name__} expects an input of rank {' or '.join(map(str, self._ranks))}, "
                      f"got shape {list(x.shape)}")
        training = self.training or not self.track_running_stats
        return _ops.batch_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                               training, self.momentum, self.eps)

    def extra_repr(self):
        return f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}"


def _buffer(array, init_text):
    t = Tensor._from_array(array)
    t._init = init_text
    t._loc = user_location()
    return t


class BatchNorm1d(_BatchNorm):
    """Batch norm of [N, C] inputs."""
    _ranks = (2,)


class BatchNorm2d(_BatchNorm):
    """Batch norm of NCHW inputs; running_mean/var are zeros/ones buffers."""
    _ranks = (4,)
