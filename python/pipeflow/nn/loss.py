"""Losses."""

from .. import _ops
from .module import Module


class CrossEntropyLoss(Module):
    """Mean softmax cross-entropy of [N, C] logits against [N] integer labels.

    Only the mean reduction, without class weights or label smoothing;
    labels must lie in ``[0, C)`` except an explicitly given
    ``ignore_index``, whose rows leave the mean.
    """

    def __init__(self, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
        super().__init__()
        if weight is not None:
            raise ValueError("CrossEntropyLoss(weight=...) is not supported yet")
        if reduction != "mean":
            raise ValueError(f"CrossEntropyLoss(reduction={reduction!r}) is not supported yet; only 'mean'")
        if label_smoothing:
            raise ValueError("CrossEntropyLoss(label_smoothing=...) is not supported yet")
        self.ignore_index = ignore_index
        self.reduction = reduction

    def forward(self, logits, labels):
        ignore = None if self.ignore_index == -100 else self.ignore_index
        return _ops.cross_entropy(logits, labels, ignore)
