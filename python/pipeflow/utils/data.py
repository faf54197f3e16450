"""``flow.utils.data``: datasets and a loader over numpy arrays, as OneFlow's
(and torch's) ``Dataset``, ``TensorDataset`` and ``DataLoader``, with
nanoGPT's memory-mapped token windows (``TokenDataset``) and torch's
``DistributedSampler``.

A loader turns a dataset (anything with ``__getitem__`` and ``__len__``)
into batches: ``batch_size`` samples in order, or shuffled each epoch
(``shuffle=True``) by a numpy generator seeded from ``generator`` (an int
seed or a ``numpy.random.Generator``; default: a seed drawn from
``flow.manual_seed``'s generator, so a seeded program shuffles the same way
every run). The last short batch is kept unless ``drop_last``. Samples are
collated by stacking: arrays and tensors into one local tensor with a new
leading batch axis (Python floats become float32, ints int64, as
``flow.tensor`` does), tuples and lists position by position, dicts key by
key. Batches are local tensors: a global graph's input is
``batch.to_global(placement, sbp)``. Loading runs in the calling process,
or with ``prefetch=N`` (or torch's ``num_workers=k``, which means
``prefetch=k * prefetch_factor``) on one background thread that keeps the
next N batches ready (``_prefetch.py``).
"""

import numbers

import numpy as np

from .. import _random
from ..tensor import tensor
from ._base import Dataset, Sampler, as_array, non_negative, positive
from ._distributed import DistributedSampler
from ._prefetch import PrefetchIterator
from ._tokens import TokenDataset

__all__ = ["BatchSampler", "DataLoader", "Dataset", "DistributedSampler", "RandomSampler",
           "Sampler", "SequentialSampler", "TensorDataset", "TokenDataset", "default_collate"]


class TensorDataset(Dataset):
    """Samples ``i`` of equally long arrays or tensors, as a tuple."""

    def __init__(self, *tensors):
        if not tensors:
            raise ValueError("TensorDataset needs at least one array or tensor")
        self.tensors = tuple(as_array(t) for t in tensors)
        lengths = {len(t) if t.ndim else -1 for t in self.tensors}
        if len(lengths) != 1 or -1 in lengths:
            raise ValueError("TensorDataset's arrays must have the same length along axis 0, got "
                             + ", ".join(str(t.shape) for t in self.tensors))

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return len(self.tensors[0])


class SequentialSampler(Sampler):
    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


def _generator(generator):
    if generator is None:
        return np.random.default_rng(int(_random.default_generator().integers(0, 2 ** 63)))
    if isinstance(generator, np.random.Generator):
        return generator
    if isinstance(generator, numbers.Integral) and not isinstance(generator, bool):
        return np.random.default_rng(int(generator))
    raise TypeError("generator must be an int seed or a numpy.random.Generator, got "
                    f"{type(generator).__name__}")


class RandomSampler(Sampler):
    """A fresh permutation of the indices on every pass; with
    ``replacement``, ``num_samples`` indices drawn uniformly and
    independently (nanoGPT's random windows over a ``TokenDataset``)."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        if not isinstance(replacement, bool):
            raise TypeError(f"replacement must be a bool, got {replacement!r}")
        if num_samples is not None:
            positive("num_samples", num_samples)
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = _generator(generator)

    @property
    def num_samples(self):
        return len(self.data_source) if self._num_samples is None else int(self._num_samples)

    def __iter__(self):
        n, k = len(self.data_source), self.num_samples
        if not self.replacement:
            order = self.generator.permutation(n)
            return iter(int(i) for i in (order if k == n else np.resize(order, k)))
        return (int(i) for start in range(0, k, 1024)
                for i in self.generator.integers(0, n, min(1024, k - start)))

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Groups a sampler's indices into lists of ``batch_size``."""

    def __init__(self, sampler, batch_size, drop_last):
        self.sampler = sampler
        self.batch_size = positive("batch_size", batch_size)
        self.drop_last = bool(drop_last)

    def __iter__(self):
        batch = []
        for index in self.sampler:
            batch.append(index)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


def default_collate(samples):
    """Stacks a list of samples into one batch (see the module docstring)."""
    first = samples[0]
    if isinstance(first, dict):
        return {key: default_collate([s[key] for s in samples]) for key in first}
    if isinstance(first, (tuple, list)):
        if any(len(s) != len(first) for s in samples):
            raise ValueError("default_collate: samples have different numbers of fields")
        return type(first)(default_collate(list(field)) for field in zip(*samples, strict=True))
    if isinstance(first, numbers.Number) and not isinstance(first, np.generic):
        return tensor(list(samples))  # Python scalars: float32 / int64
    arrays = [as_array(s) for s in samples]
    shapes = {a.shape for a in arrays}
    if len(shapes) != 1:
        raise ValueError("default_collate: samples of different shapes "
                         f"{sorted(shapes)} cannot be stacked into one batch")
    return tensor(np.stack(arrays))


class DataLoader:
    """Batches of a dataset, one pass per ``iter()`` (an epoch); see the
    module docstring. ``prefetch=N`` makes the batches on a background
    thread, N ahead of the consumer (``_prefetch.PrefetchIterator``)."""

    def __init__(self, dataset, batch_size=1, shuffle=False, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, drop_last=False, generator=None,
                 prefetch_factor=2, prefetch=0):
        num_workers = non_negative("num_workers", num_workers)
        prefetch_factor = positive("prefetch_factor", prefetch_factor)
        prefetch = non_negative("prefetch", prefetch)
        if prefetch and num_workers:
            raise ValueError("prefetch is exclusive with num_workers (num_workers=k means "
                             "prefetch=k * prefetch_factor)")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler is exclusive with batch_size, shuffle, sampler "
                                 "and drop_last")
        else:
            if sampler is not None and shuffle:
                raise ValueError("sampler is exclusive with shuffle")
            if sampler is None:
                sampler = (RandomSampler(dataset, generator=generator) if shuffle
                           else SequentialSampler(dataset))
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.dataset = dataset
        self.batch_size = batch_sampler.batch_size if hasattr(batch_sampler, "batch_size") else None
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.collate_fn = collate_fn or default_collate
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.prefetch = prefetch or num_workers * prefetch_factor

    def _batches(self):
        for indices in self.batch_sampler:
            yield self.collate_fn([self.dataset[i] for i in indices])

    def __iter__(self):
        if self.prefetch:
            return PrefetchIterator(self._batches(), self.prefetch)
        return self._batches()

    def __len__(self):
        return len(self.batch_sampler)
