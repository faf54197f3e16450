"""``TokenDataset``: nanoGPT's token windows over a memory-mapped file.

nanoGPT's data are one flat file of token ids (``train.bin``: uint16 for
GPT-2's vocabulary) read through ``np.memmap``; a training sample is a
window of ``block_size`` tokens and its targets, the same window shifted
by one. Item ``i`` is ``(tokens[i:i+block_size], tokens[i+1:i+1+block_size])``
as int64 arrays, and there are ``len(tokens) - block_size`` items (every
start that leaves a target token). Only the pages a window touches are
read. ``get_batch`` is nanoGPT's ``get_batch``: ``batch_size`` windows at
uniformly drawn starts, as two ``[batch_size, block_size]`` int64 tensors;
``RandomSampler(dataset, replacement=True, num_samples=k)`` draws starts
the same way for a ``DataLoader``.
"""

import numbers
import os

import numpy as np

from ..tensor import from_numpy
from ._base import Dataset, as_array, positive


class TokenDataset(Dataset):
    """Windows of ``block_size`` tokens and their next-token targets.

    ``data`` is a path (read with ``np.memmap(path, dtype, mode="r")``) or
    a one-dimensional array of token ids (a memmap, an array, a tensor)."""

    def __init__(self, data, block_size, dtype=np.uint16):
        if isinstance(data, (str, bytes, os.PathLike)):
            self.path = os.fspath(data)
            self.tokens = np.memmap(self.path, dtype=dtype, mode="r")
        else:
            self.path = None
            self.tokens = data if isinstance(data, np.ndarray) else as_array(data)
        if self.tokens.ndim != 1 or self.tokens.dtype.kind not in "iu":
            raise ValueError("TokenDataset needs a one-dimensional array of integer token ids, "
                             f"got shape {self.tokens.shape} of {self.tokens.dtype}")
        self.block_size = positive("block_size", block_size)
        if len(self.tokens) <= self.block_size:
            raise ValueError(f"TokenDataset: {len(self.tokens)} tokens hold no window of "
                             f"block_size {self.block_size} and its targets")
        self._offsets = np.arange(self.block_size + 1)

    def __len__(self):
        return len(self.tokens) - self.block_size

    def __getitem__(self, index):
        if isinstance(index, bool) or not isinstance(index, numbers.Integral):
            raise TypeError(f"TokenDataset indices are integers, got {type(index).__name__}")
        n = len(self)
        i = int(index) + n if index < 0 else int(index)
        if not 0 <= i < n:
            raise IndexError(f"index {index} out of range for {n} windows")
        window = np.asarray(self.tokens[i:i + self.block_size + 1], dtype=np.int64)
        return window[:-1], window[1:]

    def windows(self, starts):
        """The windows at ``starts`` (a sequence of indices) as two int64
        arrays ``[len(starts), block_size]``: inputs and targets."""
        starts = np.asarray(starts, dtype=np.int64)
        if starts.size and (starts.min() < 0 or starts.max() >= len(self)):
            raise IndexError(f"window starts must lie in [0, {len(self)})")
        window = np.asarray(self.tokens[starts[:, None] + self._offsets], dtype=np.int64)
        return window[:, :-1], window[:, 1:]

    def get_batch(self, batch_size, generator):
        """nanoGPT's ``get_batch``: ``batch_size`` windows at starts drawn
        uniformly from ``[0, len(self))`` by ``generator`` (a
        ``numpy.random.Generator``, or an int seed for a fresh one), as two
        local int64 tensors ``[batch_size, block_size]``."""
        if not isinstance(generator, np.random.Generator):
            generator = np.random.default_rng(generator)
        x, y = self.windows(generator.integers(0, len(self), positive("batch_size", batch_size)))
        return from_numpy(np.ascontiguousarray(x)), from_numpy(np.ascontiguousarray(y))
