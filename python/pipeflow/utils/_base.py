"""The base classes of ``flow.utils.data``: ``Dataset`` and ``Sampler``
(here so that the datasets and samplers of the modules beside ``data.py``
can derive from them; ``data.py`` exports them)."""

import numbers

import numpy as np

from ..tensor import Tensor


class Dataset:
    """A map-style dataset: subclasses define ``__getitem__`` and ``__len__``."""

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} must define __getitem__")

    def __len__(self):
        raise NotImplementedError(f"{type(self).__name__} must define __len__")


class Sampler:
    """Yields dataset indices."""

    def __iter__(self):
        raise NotImplementedError

    def __len__(self):
        raise NotImplementedError


def as_array(value):
    """A tensor's numpy value, or ``np.asarray(value)``."""
    return value.numpy() if isinstance(value, Tensor) else np.asarray(value)


def positive(name, value):
    """``value`` as an int, or a ValueError unless it is a positive integer."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def non_negative(name, value):
    """``value`` as an int, or a ValueError unless it is an integer >= 0."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
    return int(value)
