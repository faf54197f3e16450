"""``DistributedSampler``: torch.utils.data.DistributedSampler (1.13), index
for index.

Each of ``num_replicas`` replicas (the data-parallel ranks) reads its own
``len(sampler)`` indices of the dataset. An epoch's order is ``range(n)``,
or with ``shuffle`` the permutation that ``torch.randperm(n, generator=g)``
draws after ``g.manual_seed(seed + epoch)`` (reproduced here: torch's CPU
randperm is a Fisher-Yates shuffle swapping ``i`` with ``i + r % (n - i)``,
``r`` the next 32-bit output of the MT19937 that ``manual_seed`` seeds with
the seed's low 32 bits, the same generator and seeding as numpy's
``RandomState(seed)``). Without ``drop_last`` the order is padded by
repeating its head until its length is a multiple of ``num_replicas``;
with it the tail is cut instead. Replica ``rank`` takes
``order[rank::num_replicas]``. ``set_epoch(epoch)`` before each epoch's
``iter()`` gives every replica the same new order.
"""

import math
import numbers

import numpy as np

from .. import env
from ._base import Sampler, positive


def torch_randperm(n, seed):
    """``torch.randperm(n, generator=torch.Generator().manual_seed(seed))``
    of torch 1.13 on the CPU, as a list."""
    bits = np.random.MT19937()
    bits.state = np.random.RandomState(int(seed) & 0xFFFFFFFF).get_state(legacy=False)
    order = list(range(n))
    if n < 2:
        return order
    draws = bits.random_raw(n - 1).astype(np.int64) % np.arange(n, 1, -1, dtype=np.int64)
    for i, step in enumerate(draws.tolist()):
        j = i + step
        order[i], order[j] = order[j], order[i]
    return order


class DistributedSampler(Sampler):
    """The indices of one data-parallel replica (see the module docstring).

    ``num_replicas`` and ``rank`` default to ``flow.env.get_world_size()``
    and ``flow.env.get_rank()``: every process of the job is one replica.
    When the data-parallel ranks are not the whole job (a 2-D placement
    with data parallelism along one axis, pipeline stages), pass the
    data-parallel group's size and this process's index in it."""

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0,
                 drop_last=False):
        num_replicas = env.get_world_size() if num_replicas is None else num_replicas
        rank = env.get_rank() if rank is None else rank
        num_replicas = positive("num_replicas", num_replicas)
        if isinstance(rank, bool) or not isinstance(rank, numbers.Integral) \
                or not 0 <= rank < num_replicas:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval "
                             f"[0, {num_replicas - 1}]")
        if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
            raise ValueError(f"seed must be an integer, got {seed!r}")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = int(rank)
        self.epoch = 0
        self.drop_last = bool(drop_last)
        n = len(dataset)
        if self.drop_last and n % num_replicas != 0:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle = bool(shuffle)
        self.seed = int(seed)

    def indices(self):
        """This replica's indices for the current epoch, as a list."""
        n = len(self.dataset)
        order = torch_randperm(n, self.seed + self.epoch) if self.shuffle else list(range(n))
        if not self.drop_last:
            padding = self.total_size - len(order)
            if padding <= len(order):
                order += order[:padding]
            else:
                order += (order * math.ceil(padding / len(order)))[:padding]
        else:
            order = order[:self.total_size]
        assert len(order) == self.total_size
        mine = order[self.rank:self.total_size:self.num_replicas]
        assert len(mine) == self.num_samples
        return mine

    def __iter__(self):
        return iter(self.indices())

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        """Sets the epoch that seeds the next ``iter()``'s order (``seed + epoch``)."""
        if isinstance(epoch, bool) or not isinstance(epoch, numbers.Integral):
            raise ValueError(f"epoch must be an integer, got {epoch!r}")
        self.epoch = int(epoch)
