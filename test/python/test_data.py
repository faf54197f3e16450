"""flow.utils.data: datasets, samplers and the loader over numpy arrays
(batching, seeded shuffling, drop_last, collation), errors, and a local
inference graph fed by a loader."""
import numpy as np
import pytest
from test_inference import Infer

import pipeflow as flow
from pipeflow import nn
from pipeflow.utils.data import (
    BatchSampler,
    DataLoader,
    Dataset,
    RandomSampler,
    SequentialSampler,
    TensorDataset,
)


def _data(n=10, rng=None):
    rng = rng or np.random.default_rng()
    return rng.standard_normal((n, 3)).astype(np.float32), rng.integers(0, 5, (n,))


def test_sequential_batches_keep_the_last_short_one():
    x, y = _data(10)
    batches = list(DataLoader(TensorDataset(x, y), batch_size=4))
    assert [b[0].shape for b in batches] == [(4, 3), (4, 3), (2, 3)]
    np.testing.assert_array_equal(np.concatenate([b[0].numpy() for b in batches]), x)
    np.testing.assert_array_equal(np.concatenate([b[1].numpy() for b in batches]), y)
    assert batches[0][0].dtype == flow.float32 and batches[0][1].dtype == flow.int64
    assert all(not b[0].is_global for b in batches)
    assert len(DataLoader(TensorDataset(x, y), batch_size=4)) == 3


def test_drop_last_drops_the_short_batch():
    x, y = _data(10)
    loader = DataLoader(TensorDataset(x, y), batch_size=4, drop_last=True)
    assert len(loader) == 2 and [b[0].shape for b in loader] == [(4, 3), (4, 3)]


def test_shuffle_with_a_seed_is_a_permutation_per_epoch_and_repeatable():
    x, y = _data(23)
    first = DataLoader(TensorDataset(x, y), batch_size=5, shuffle=True, generator=1234)
    again = DataLoader(TensorDataset(x, y), batch_size=5, shuffle=True, generator=1234)
    epochs = [np.concatenate([b[1].numpy() for b in first]) for _ in range(2)]
    want = np.random.default_rng(1234).permutation(23)
    np.testing.assert_array_equal(epochs[0], y[want])  # the seed's first permutation
    rows = np.concatenate([b[0].numpy() for b in again])
    np.testing.assert_array_equal(rows, x[want])
    # every sample exactly once per epoch, a new order on the next
    order = np.concatenate([[int(np.flatnonzero((x == r).all(1))[0]) for r in b[0].numpy()]
                            for b in first])
    assert sorted(order) == list(range(23)) and not np.array_equal(order, want)


def test_shuffle_follows_manual_seed():
    x, y = _data(16)

    def order():
        loader = DataLoader(TensorDataset(x, y), batch_size=16, shuffle=True)
        return next(iter(loader))[1].numpy()

    flow.manual_seed(7)
    a = order()
    flow.manual_seed(7)
    np.testing.assert_array_equal(order(), a)
    assert sorted(a.tolist()) == sorted(y.tolist())


class Squares(Dataset):
    def __init__(self, n):
        self.n = n

    def __getitem__(self, i):
        return {"x": np.array([i, i * i], np.float32), "s": float(i) / 2, "i": i}

    def __len__(self):
        return self.n


def test_dict_samples_collate_key_by_key_with_flow_tensor_dtypes():
    batch = next(iter(DataLoader(Squares(5), batch_size=3)))
    assert set(batch) == {"x", "s", "i"}
    assert batch["x"].dtype == flow.float32 and batch["i"].dtype == flow.int64
    assert batch["s"].dtype == flow.float32  # Python floats, as flow.tensor makes them
    np.testing.assert_array_equal(batch["x"].numpy(), [[0, 0], [1, 1], [2, 4]])
    np.testing.assert_array_equal(batch["s"].numpy(), [0, 0.5, 1])
    np.testing.assert_array_equal(batch["i"].numpy(), [0, 1, 2])


def test_samplers_compose():
    sampler = BatchSampler(SequentialSampler(range(7)), 3, drop_last=False)
    assert list(sampler) == [[0, 1, 2], [3, 4, 5], [6]] and len(sampler) == 3
    perm = list(RandomSampler(range(7), generator=3))
    assert sorted(perm) == list(range(7))
    assert perm == np.random.default_rng(3).permutation(7).tolist()
    loader = DataLoader(range(7), batch_sampler=BatchSampler(SequentialSampler(range(7)), 2, True))
    assert [b.numpy().tolist() for b in loader] == [[0, 1], [2, 3], [4, 5]]


@pytest.mark.parametrize("kwargs, message", [
    ({"num_workers": -1}, "num_workers must be a non-negative integer"),
    ({"num_workers": 1, "prefetch": 2}, "prefetch is exclusive with num_workers"),
    ({"batch_size": 0}, "batch_size must be a positive integer"),
    ({"shuffle": True, "sampler": [0, 1]}, "sampler is exclusive with shuffle"),
    ({"batch_size": 2, "batch_sampler": [[0]]}, "batch_sampler is exclusive"),
])
def test_bad_loader_arguments_are_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        DataLoader(TensorDataset(*_data(4)), **kwargs)


def test_bad_datasets_and_samples_are_errors():
    with pytest.raises(ValueError, match="same length along axis 0"):
        TensorDataset(np.zeros((3, 2)), np.zeros(4))
    with pytest.raises(TypeError, match="generator must be an int seed"):
        DataLoader(range(3), shuffle=True, generator="seed")
    ragged = [np.zeros(2), np.zeros(3)]
    with pytest.raises(ValueError, match="samples of different shapes"):
        next(iter(DataLoader(ragged, batch_size=2)))


def test_a_local_graph_runs_on_loader_batches(backend):
    """Every full batch of a shuffled loader through a local inference
    graph equals the model's NumPy forward on the same rows."""
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    graph = Infer(model)
    x, y = _data(12)
    graph.trace(flow.tensor(x[:4]))  # the compiled program's initial values
    sd = model.state_dict()
    w0, b0, w1, b1 = (sd[k].numpy() for k in ("0.weight", "0.bias", "2.weight", "2.bias"))
    seen = 0
    for bx, _ in DataLoader(TensorDataset(x, y), batch_size=4, shuffle=True, generator=9,
                            drop_last=True):
        a = bx.numpy()
        want = np.maximum(a @ w0.T + b0, 0) @ w1.T + b1
        np.testing.assert_allclose(graph(bx).numpy(), want, rtol=1e-5, atol=1e-6)
        seen += 1
    assert seen == 3
