"""``topk`` and ``multinomial`` on host tensors: sampling after a graph.

A model's logits come out of a compiled inference graph as host tensors;
choosing among them (nanoGPT's ``generate``: temperature, top-k, softmax,
a draw) runs here with NumPy. Neither traces: pf has no sort or sampling
op, so inside ``build`` they are a ``CompileError`` at the user's line.

``multinomial``'s draws are documented so that a NumPy reference can
replay them: for every row in order, each sample takes one uniform
``u = rng.random()`` (float64 in [0, 1)) from the generator's NumPy stream
and picks the first category whose cumulative weight (float64, in order)
exceeds ``u * total``; without replacement the chosen category's weight
is zeroed before the row's next sample.
"""

import numbers
from collections import namedtuple

import numpy as np

from . import _trace
from ._ops import _is_lazy, _local
from ._ops_elementwise import host_value
from ._random import numpy_generator
from ._trace import fail

topk_result = namedtuple("topk", ["values", "indices"])


def _host(x, what):
    if _is_lazy(x):
        _trace.unsupported(f"{what} of a traced tensor (pf has no sort or sampling op; run it "
                           "on the graph's outputs)")
    return np.asarray(host_value(x))


def topk(input, k, dim=-1, largest=True, sorted=True):
    """torch's ``topk``: the ``k`` largest (or smallest) entries along ``dim``
    and their indices (int64), largest first. Equal values keep their order
    (the lower index first)."""
    v = _host(input, "topk")
    if v.ndim == 0:
        v = v.reshape(1)
    axis = dim + v.ndim if dim < 0 else dim
    if not 0 <= axis < v.ndim:
        fail(f"topk: dim {dim} is out of range for a tensor of shape {list(v.shape)}")
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or not 0 <= k <= v.shape[axis]:
        fail(f"topk: k must be an integer in [0, {v.shape[axis]}] (the size of dim {dim}), got {k!r}")
    keys = v.astype(np.float64)
    order = np.argsort(-keys if largest else keys, axis=axis, kind="stable")
    indices = np.take(order, np.arange(int(k)), axis=axis)
    values = np.take_along_axis(v, indices, axis=axis)
    shape = input.shape
    if len(shape) == 0:
        values, indices = values.reshape(()), indices.reshape(())
    return topk_result(_local(np.ascontiguousarray(values)),
                       _local(np.ascontiguousarray(indices.astype(np.int64))))


def multinomial(input, num_samples, replacement=False, *, generator=None, out=None):
    """torch's ``multinomial``: ``num_samples`` category indices (int64) per
    row of non-negative weights ``input`` ([C] or [N, C]), drawn from
    ``generator`` (a ``flow.Generator``; default: ``manual_seed``'s stream);
    see the module docstring for the exact draws."""
    if out is not None:
        raise ValueError("multinomial(out=...) is not supported")
    w = _host(input, "multinomial")
    if w.ndim not in (1, 2):
        fail(f"multinomial expects a 1-D or 2-D tensor of weights, got shape {list(w.shape)}")
    if not np.issubdtype(w.dtype, np.floating):
        fail(f"multinomial needs floating-point weights, got {input.dtype}")
    if isinstance(num_samples, bool) or not isinstance(num_samples, numbers.Integral) or num_samples <= 0:
        fail(f"multinomial: num_samples must be a positive integer, got {num_samples!r}")
    rows = w.reshape(-1, w.shape[-1]).astype(np.float64)
    if not np.isfinite(rows).all() or (rows < 0).any():
        fail("multinomial: the weights must be finite and non-negative")
    nonzero = (rows > 0).sum(axis=1)
    if (nonzero == 0).any():
        fail("multinomial: a row of weights sums to zero")
    if not replacement and num_samples > nonzero.min():
        fail(f"multinomial: cannot draw {num_samples} samples without replacement from a row "
             f"with {int(nonzero.min())} non-zero weights")
    rng = numpy_generator(generator)
    out = np.empty((rows.shape[0], int(num_samples)), dtype=np.int64)
    for r in range(rows.shape[0]):
        weights = rows[r].copy()
        for s in range(int(num_samples)):
            out[r, s] = _draw(weights, rng.random())
            if not replacement:
                weights[out[r, s]] = 0.0
    return _local(out.reshape(w.shape[:-1] + (int(num_samples),)))


def _draw(weights, u):
    """The first category whose cumulative weight exceeds ``u * total``
    (never one of weight zero: rounding at the top end picks the last
    positive one)."""
    cdf = np.cumsum(weights)
    i = int(np.searchsorted(cdf, u * cdf[-1], side="right"))
    return min(i, int(np.flatnonzero(weights > 0)[-1]))
