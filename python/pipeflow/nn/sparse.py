"""``nn.Embedding`` over ``pf.embedding`` (gradient: a scatter-add)."""

import numpy as np

from .. import _ops
from .._ops import _is_lazy, _local, _operands, _result
from . import init
from .layers import _positive_int
from .module import Module
from .parameter import Parameter


def embedding(ids, weight):
    """torch's ``F.embedding(input, weight)``: rows of ``weight`` by id."""
    if weight.ndim != 2:
        _ops.fail(f"embedding's weight must be [num_embeddings, embedding_dim], got shape "
                  f"{list(weight.shape)}")
    if not _is_lazy(ids, weight):
        table, v = weight._eager_value(), ids._eager_value()
        if v.dtype.kind not in "iu":
            _ops.fail(f"embedding's ids must be integers, got {v.dtype}")
        if v.size and (v.min() < 0 or v.max() >= table.shape[0]):
            _ops.fail(f"embedding: ids must be in [0, {table.shape[0]}), got "
                      f"[{int(v.min())}, {int(v.max())}]")
        return _local(table[v.astype(np.int64)])
    tracer, (tv, iv) = _operands("embedding", weight, ids)
    shape = tuple(ids.shape) + (weight.shape[1],)
    op = tracer.emit("pf.embedding", [tv, iv], [tv.type.with_shape(shape)])
    return _result(tracer, op, weight)


class Embedding(Module):
    """torch's ``nn.Embedding``: a [num_embeddings, embedding_dim] table,
    initialised N(0, 1)."""

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, device=None,
                 dtype=None):
        super().__init__()
        if padding_idx is not None:
            raise ValueError("Embedding: padding_idx is not supported")
        self.num_embeddings = _positive_int(num_embeddings, "num_embeddings")
        self.embedding_dim = _positive_int(embedding_dim, "embedding_dim")
        self.weight = init.normal_(Parameter(
            np.empty((num_embeddings, embedding_dim), dtype=np.float32)))

    def forward(self, ids):
        return embedding(ids, self.weight)

    def extra_repr(self):
        return f"{self.num_embeddings}, {self.embedding_dim}"
