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
