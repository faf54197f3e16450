"""flow.utils.data's data pipeline (issue 35, item 7): TokenDataset over a
memory-mapped uint16 file, DistributedSampler index for index against
torch.utils.data.DistributedSampler (PyTorch 1.13), and the loader's
background prefetch (same batches, exceptions carried over, no thread
left behind). Pure Python: no compiler needed."""
import gc
import threading

import numpy as np
import pytest

import pipeflow as flow
from pipeflow.utils._distributed import torch_randperm
from pipeflow.utils.data import (
    DataLoader,
    Dataset,
    DistributedSampler,
    RandomSampler,
    TensorDataset,
    TokenDataset,
)


def _prefetch_threads():
    return [t for t in threading.enumerate() if t.name == "pipeflow-prefetch" and t.is_alive()]


@pytest.fixture
def token_file(tmp_path):
    tokens = np.random.default_rng(7).integers(0, 2 ** 16, 5000, dtype=np.uint16)
    path = tmp_path / "train.bin"
    tokens.tofile(path)
    return str(path), tokens


def test_token_dataset_items_are_the_file_s_windows(token_file):
    path, tokens = token_file
    ds = TokenDataset(path, block_size=32)
    assert isinstance(ds.tokens, np.memmap) and len(ds) == len(tokens) - 32
    for i in [0, 1, 17, len(ds) - 1, *np.random.default_rng(0).integers(0, len(ds), 50)]:
        x, y = ds[int(i)]
        assert x.dtype == np.int64 and y.dtype == np.int64
        np.testing.assert_array_equal(x, tokens[i:i + 32].astype(np.int64))
        np.testing.assert_array_equal(y, tokens[i + 1:i + 33].astype(np.int64))
    np.testing.assert_array_equal(ds[-1][1], tokens[-32:])
    with pytest.raises(IndexError):
        ds[len(ds)]
    # an array (here a memmap made by the caller, as nanoGPT does) works the same
    same = TokenDataset(np.memmap(path, dtype=np.uint16, mode="r"), 32)
    np.testing.assert_array_equal(same[123][0], ds[123][0])


def test_token_dataset_get_batch_is_nanogpt_s_get_batch(token_file):
    path, tokens = token_file
    ds = TokenDataset(path, block_size=16)
    x, y = ds.get_batch(8, np.random.default_rng(3))
    ix = np.random.default_rng(3).integers(0, len(tokens) - 16, 8)
    assert x.shape == (8, 16) and x.dtype == flow.int64 and not x.is_global
    np.testing.assert_array_equal(x.numpy(), np.stack([tokens[i:i + 16] for i in ix]))
    np.testing.assert_array_equal(y.numpy(), np.stack([tokens[i + 1:i + 17] for i in ix]))
    # the same draws through a loader: RandomSampler with replacement
    loader = DataLoader(ds, batch_size=8, sampler=RandomSampler(ds, replacement=True,
                                                                num_samples=24, generator=3))
    batches = list(loader)
    assert len(batches) == 3
    np.testing.assert_array_equal(batches[0][0].numpy(), x.numpy())
    np.testing.assert_array_equal(batches[0][1].numpy(), y.numpy())


def test_bad_token_datasets_are_errors():
    with pytest.raises(ValueError, match="no window"):
        TokenDataset(np.arange(8, dtype=np.uint16), 8)
    with pytest.raises(ValueError, match="one-dimensional"):
        TokenDataset(np.zeros((4, 4), np.uint16), 2)
    with pytest.raises(ValueError, match="block_size"):
        TokenDataset(np.arange(8, dtype=np.uint16), 0)


def _torch_case(rng):
    n = int(rng.choice([0, 1, 2, 3, 7, int(rng.integers(1, 60)), int(rng.integers(60, 3000))]))
    replicas = int(rng.integers(1, 9))
    return n, replicas, int(rng.integers(0, 2 ** 40)), int(rng.integers(0, 5)), \
        bool(rng.integers(0, 2)), bool(rng.integers(0, 2))


def test_distributed_sampler_equals_torch():
    torch_data = pytest.importorskip("torch.utils.data")
    rng = np.random.default_rng(2024)
    for _ in range(150):
        n, replicas, seed, epoch, shuffle, drop_last = _torch_case(rng)
        if n == 0 and shuffle:
            continue
        for rank in range(replicas):
            ours = DistributedSampler(range(n), replicas, rank, shuffle=shuffle, seed=seed,
                                      drop_last=drop_last)
            theirs = torch_data.DistributedSampler(range(n), replicas, rank, shuffle=shuffle,
                                                   seed=seed, drop_last=drop_last)
            for e in (0, epoch):
                ours.set_epoch(e)
                theirs.set_epoch(e)
                case = (n, replicas, rank, seed, e, shuffle, drop_last)
                assert list(ours) == list(theirs), case
                assert len(ours) == len(theirs), case


@pytest.mark.parametrize("n, replicas, drop_last", [(10, 3, False), (10, 3, True), (9, 3, False),
                                                    (2, 5, False), (17, 4, False), (17, 4, True)])
def test_replicas_partition_the_dataset(n, replicas, drop_last):
    parts = [list(DistributedSampler(range(n), replicas, r, seed=5, drop_last=drop_last))
             for r in range(replicas)]
    assert len({len(p) for p in parts}) == 1
    every = sorted(i for p in parts for i in p)
    if drop_last:  # the tail cut off, nothing repeated
        assert len(every) == len(set(every)) == (n // replicas) * replicas
    else:  # every index, then torch's padding: the order's head repeated
        assert set(every) == set(range(n))
        assert len(every) == -(-n // replicas) * replicas
        order = torch_randperm(n, 5)
        padded = (order * (len(every) // n + 1))[:len(every)]
        assert [padded[k] for r in range(replicas) for k in range(r, len(every), replicas)] \
            == [i for p in parts for i in p]


def test_distributed_sampler_defaults_to_the_job_and_shuffles_per_epoch(monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.setenv("RANK", "3")
    s = DistributedSampler(range(10))
    assert (s.num_replicas, s.rank, len(s)) == (4, 3, 3)
    first = list(s)
    assert list(s) == first  # the same epoch, the same order
    s.set_epoch(1)
    assert list(s) != first
    with pytest.raises(ValueError, match="Invalid rank 4"):
        DistributedSampler(range(10), num_replicas=4, rank=4)


def test_loader_with_a_distributed_sampler_collates_flow_tensors(token_file):
    path, tokens = token_file
    ds = TokenDataset(path, 8)
    sampler = DistributedSampler(ds, num_replicas=2, rank=1, seed=3)
    batches = list(DataLoader(ds, batch_size=5, sampler=sampler, drop_last=True))
    assert len(batches) == len(sampler) // 5
    starts = list(sampler)
    x, y = batches[2]
    assert isinstance(x, flow.Tensor) and x.shape == (5, 8) and x.dtype == flow.int64
    np.testing.assert_array_equal(x.numpy(), np.stack([tokens[i:i + 8] for i in starts[10:15]]))
    np.testing.assert_array_equal(y.numpy(), np.stack([tokens[i + 1:i + 9] for i in starts[10:15]]))


@pytest.mark.parametrize("options", [{"prefetch": 1}, {"prefetch": 3}, {"num_workers": 2}])
def test_prefetching_loader_yields_the_same_batches(token_file, options):
    path, _ = token_file
    ds = TokenDataset(path, 16)
    plain = DataLoader(ds, batch_size=7, sampler=DistributedSampler(ds, 3, 2, seed=1))
    ahead = DataLoader(ds, batch_size=7, sampler=DistributedSampler(ds, 3, 2, seed=1), **options)
    for epoch in range(2):
        plain.sampler.set_epoch(epoch)
        ahead.sampler.set_epoch(epoch)
        want, got = list(plain), list(ahead)
        assert len(want) == len(got) == len(ahead)
        for (wx, wy), (gx, gy) in zip(want, got, strict=True):
            np.testing.assert_array_equal(wx.numpy(), gx.numpy())
            np.testing.assert_array_equal(wy.numpy(), gy.numpy())
    assert not _prefetch_threads()


class _Failing(Dataset):
    def __init__(self, bad):
        self.bad = bad

    def __len__(self):
        return 20

    def __getitem__(self, i):
        if i == self.bad:
            raise KeyError(f"sample {i} is broken")
        return np.full(3, i, np.float32)


def test_prefetch_raises_the_dataset_s_exception_in_order():
    it = iter(DataLoader(_Failing(9), batch_size=4, prefetch=2))
    assert next(it).numpy()[:, 0].tolist() == [0, 1, 2, 3]
    assert next(it).numpy()[:, 0].tolist() == [4, 5, 6, 7]
    with pytest.raises(KeyError, match="sample 9 is broken"):
        next(it)
    assert not it.thread.is_alive()
    with pytest.raises(StopIteration):
        next(it)


def test_prefetch_leaves_no_thread_after_a_pass_a_break_or_del():
    loader = DataLoader(TensorDataset(np.arange(200, dtype=np.float32)), batch_size=2, prefetch=4)
    assert sum(1 for _ in loader) == 100
    assert not _prefetch_threads()
    for k, _batch in enumerate(loader):  # leaving early: the loop drops the iterator
        if k == 3:
            break
    gc.collect()
    assert not _prefetch_threads()
    it = iter(loader)
    next(it)
    thread = it.thread
    assert thread.is_alive()  # blocked on a full queue
    del it
    assert not thread.is_alive() and not _prefetch_threads()
    it = iter(loader)
    it.close()
    assert not it.thread.is_alive() and list(it) == []


def test_prefetch_arguments():
    ds = TensorDataset(np.zeros(4))
    assert DataLoader(ds, num_workers=3, prefetch_factor=4).prefetch == 12
    assert DataLoader(ds, prefetch=5).prefetch == 5 and DataLoader(ds).prefetch == 0
    with pytest.raises(ValueError, match="prefetch must be a non-negative integer"):
        DataLoader(ds, prefetch=-1)
