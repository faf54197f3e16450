"""``nn.functional``: the ops behind the layers, callable directly."""

from .. import _activations, _ops
from .layers import Dropout
from .normalization import layer_norm
from .sparse import embedding

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


def cross_entropy(input, target, reduction="mean"):
    if reduction != "mean":
        raise ValueError("cross_entropy supports only reduction='mean'")
    return _ops.cross_entropy(input, target)


def dropout(x, p=0.5, training=True):
    m = Dropout(p)
    m.training = training
    return m.forward(x)
