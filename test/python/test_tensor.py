"""Local tensors, placements, SBP and local <-> global conversion."""

import numpy as np
import pytest

import pipeflow as flow
from pipeflow import _layout

# Local tensors -----------------------------------------------------------------

def test_factories_shapes_and_dtypes():
    x = flow.randn(16, 1, 28, 28)
    assert x.shape == (16, 1, 28, 28) and x.dtype is flow.float32
    assert x.numpy().dtype == np.float32 and not x.is_global
    assert flow.randn((3, 4)).shape == (3, 4)
    y = flow.randint(0, 10, (1000,))
    assert y.dtype is flow.int64 and y.shape == (1000,)
    values = y.numpy()
    assert values.min() >= 0 and values.max() <= 9 and len(np.unique(values)) == 10
    assert flow.zeros(2, 3).numpy().sum() == 0 and flow.zeros(2, 3).dtype is flow.float32
    assert flow.ones((2, 3), dtype=flow.int64).numpy().sum() == 6
    assert flow.tensor([1.5, 2.0]).dtype is flow.float32
    assert flow.tensor([1, 2]).dtype is flow.int64
    assert flow.tensor(np.arange(3.0)).dtype is flow.float64


def test_randn_statistics():
    v = flow.randn(200000).numpy()
    assert abs(v.mean()) < 0.02 and abs(v.std() - 1) < 0.02


def test_manual_seed_reproduces():
    flow.manual_seed(123)
    a, ai = flow.randn(5).numpy(), flow.randint(0, 100, (5,)).numpy()
    flow.manual_seed(123)
    b, bi = flow.randn(5).numpy(), flow.randint(0, 100, (5,)).numpy()
    flow.manual_seed(124)
    c = flow.randn(5).numpy()
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(ai, bi)
    assert not np.array_equal(a, c)


def test_from_numpy_shares_memory_and_tensor_copies():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = flow.from_numpy(a)
    u = flow.tensor(a)
    a[0, 0] = 42
    assert t.numpy()[0, 0] == 42 and u.numpy()[0, 0] == 0
    assert t.dtype is flow.float32 and t.shape == (2, 3)


def test_randint_validation():
    with pytest.raises(ValueError):
        flow.randint(5, 5, (3,))
    assert flow.randint(3, (4,)).numpy().max() < 3


# Placements and SBP ----------------------------------------------------------------

def test_placement_forms():
    p = flow.placement("cuda", [0, 1])
    assert p.type == "cuda" and p.ranks == [0, 1] and p.hierarchy == (2,)
    assert flow.placement("cuda", ranks=[0, 1]) == p
    assert flow.placement(type="gpu", ranks=[0, 1]) == p
    assert flow.placement("cuda", {0: [0, 1]}) == p
    assert hash(flow.placement("cuda", {0: [0, 1]})) == hash(p)
    assert flow.placement("cpu", [0, 1]) != p
    q = flow.placement("cpu", [[0, 1], [2, 3]])
    assert q.hierarchy == (2, 2) and q.flat_ranks == (0, 1, 2, 3) and q.ndim == 2
    assert q.coordinates(2) == (1, 0) and q.coordinates(7) is None and 3 in q
    assert flow.placement("cpu", [0, 1, 2, 3], hierarchy=(2, 2)) == q
    assert flow.placement("cpu", {0: range(2)}).ranks == [0, 1]


def test_placement_dict_across_nodes(monkeypatch):
    with pytest.raises(ValueError, match="devices per node"):
        flow.placement("cuda", {0: [0, 1], 1: [0, 1]})
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")
    assert flow.placement("cuda", {0: [0, 1], 1: [0, 1]}).ranks == [0, 1, 2, 3]


@pytest.mark.parametrize("ranks", [[0, 0], [-1], [], [[0, 1], [2]], ["a"], [0.5]])
def test_placement_rejects_bad_ranks(ranks):
    with pytest.raises(ValueError):
        flow.placement("cpu", ranks)


def test_placement_rejects_bad_device():
    with pytest.raises(ValueError):
        flow.placement("tpu", [0])


def test_sbp_entries():
    assert flow.sbp.broadcast() is flow.sbp.broadcast
    assert flow.sbp.partial_sum() is flow.sbp.partial_sum
    assert flow.sbp.split(0) == flow.sbp.split(0) and flow.sbp.split(0) != flow.sbp.split(1)
    assert flow.sbp.split(1).mlir() == "S(1)" and flow.sbp.broadcast.mlir() == "B"
    with pytest.raises(ValueError):
        flow.sbp.split(-1)
    x = flow.randn(4, 4)
    with pytest.raises(TypeError, match="split needs an axis"):
        x.to_global(flow.placement("cpu", [0]), flow.sbp.split)
    with pytest.raises(ValueError, match="hierarchy dimension"):
        x.to_global(flow.placement("cpu", [[0, 1], [2, 3]]), flow.sbp.broadcast)


# Local -> global, one process standing for every rank --------------------------------

def test_local_to_global_broadcast_single_process():
    x = flow.randn(16, 1, 28, 28)
    g = x.to_global(flow.placement("cpu", [1]), [flow.sbp.broadcast])
    assert g.is_global and g.shape == x.shape and g.sbp == (flow.sbp.broadcast,)
    np.testing.assert_array_equal(g.numpy(), x.numpy())
    np.testing.assert_array_equal(g.to_local().numpy(), x.numpy())
    assert x.to_consistent(flow.placement("cpu", [0]), flow.sbp.broadcast).is_consistent


def test_local_to_global_split_and_partial_single_process():
    p = flow.placement("cpu", [0, 1])
    x = flow.randn(4, 3)
    s0 = x.to_global(p, flow.sbp.split(0))
    assert s0.shape == (8, 3)
    np.testing.assert_array_equal(s0.numpy(), np.concatenate([x.numpy(), x.numpy()], axis=0))
    s1 = x.to_global(p, flow.sbp.split(1))
    assert s1.shape == (4, 6)
    ps = x.to_global(p, flow.sbp.partial_sum)
    assert ps.shape == (4, 3)
    np.testing.assert_allclose(ps.numpy(), 2 * x.numpy())
    np.testing.assert_array_equal(s0.to_local().numpy(), x.numpy())


def test_global_to_global_keeps_logical_value():
    p01 = flow.placement("cpu", [0, 1])
    x = flow.randn(6, 4).to_global(p01, flow.sbp.broadcast)
    s = x.to_global(sbp=flow.sbp.split(0))
    assert s.shape == (6, 4) and s.placement == p01
    np.testing.assert_array_equal(s.numpy(), x.numpy())
    np.testing.assert_array_equal(s.to_local().numpy(), x.numpy()[:3])
    moved = s.to_global(placement=flow.placement("cpu", [2, 3]))
    assert moved.sbp == (flow.sbp.split(0),)
    with pytest.raises(ValueError, match="not divisible"):
        flow.randn(5, 4).to_global(p01, flow.sbp.broadcast).to_global(sbp=flow.sbp.split(0))


def test_global_factories():
    p = flow.placement("cpu", [0, 1])
    g = flow.randn(4, 2, placement=p, sbp=flow.sbp.split(0))
    assert g.is_global and g.shape == (4, 2)
    z = flow.zeros(4, placement=p, sbp=[flow.sbp.broadcast])
    assert z.numpy().sum() == 0 and z.sbp == (flow.sbp.broadcast,)


# Local -> global in a real multi-process job (this process is one rank) ----------------

def test_local_to_global_as_rank_1_of_2(monkeypatch):
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    assert flow.env.get_rank() == 1 and flow.env.get_world_size() == 2
    p01 = flow.placement("cpu", [0, 1])
    x = flow.randn(4, 3)
    s = x.to_global(p01, flow.sbp.split(0))
    assert s.shape == (8, 3)
    np.testing.assert_array_equal(s.to_local().numpy(), x.numpy())
    with pytest.raises(flow.BackendUnavailable):
        s.numpy()
    with pytest.raises(flow.BackendUnavailable):
        s.to_global(sbp=flow.sbp.broadcast)
    b = x.to_global(p01, flow.sbp.broadcast)
    np.testing.assert_array_equal(b.numpy(), x.numpy())
    # B -> S(0) is a local slice: rank 1 keeps the second half of the rows.
    np.testing.assert_array_equal(b.to_global(sbp=flow.sbp.split(0)).to_local().numpy(), x.numpy()[2:])
    outside = x.to_global(flow.placement("cpu", [0]), flow.sbp.broadcast)
    assert outside.shape == (4, 3) and outside.to_local().numpy().size == 0


def test_env_reads_mpich_variables(monkeypatch):
    assert (flow.env.get_rank(), flow.env.get_world_size()) == (0, 1)
    monkeypatch.setenv("PMI_RANK", "3")
    monkeypatch.setenv("PMI_SIZE", "4")
    assert (flow.env.get_rank(), flow.env.get_world_size()) == (3, 4)
    monkeypatch.setenv("RANK", "2")
    assert flow.env.get_rank() == 2


# Shards of S/B/P over 1-D and n-D placements --------------------------------------------

def _assemble(shape, placement, sbp, locals_by_rank):
    """Rebuilds the logical tensor from every rank's local (the definition of S/B/P)."""
    out = np.zeros(shape)
    counts = np.zeros(shape)
    for rank in placement.flat_ranks:
        slices, _ = _layout.shard_index(shape, placement, sbp, rank)
        out[slices] += locals_by_rank[rank]
        counts[slices] += 1
    return out, counts


@pytest.mark.parametrize("ranks,sbp,local_shape", [
    ([0, 1], ["S(0)"], (4, 6)),
    ([0, 1], ["S(1)"], (8, 3)),
    ([0, 1, 2], ["B"], (8, 6)),
    ([[0, 1], [2, 3]], ["S(0)", "S(1)"], (4, 3)),
    ([[0, 1], [2, 3]], ["S(0)", "S(0)"], (2, 6)),
    ([[0, 1], [2, 3]], ["B", "S(1)"], (8, 3)),
    ([[0, 1, 2], [3, 4, 5]], ["S(1)", "B"], (8, 3)),
])
def test_split_and_broadcast_shards(ranks, sbp, local_shape):
    entries = {"B": flow.sbp.broadcast, "P": flow.sbp.partial_sum}
    sbp = tuple(entries.get(s) or flow.sbp.split(int(s[2])) for s in sbp)
    placement = flow.placement("cpu", ranks)
    logical = np.arange(48, dtype=np.float64).reshape(8, 6)
    locals_by_rank = {r: _layout.local_of(logical, placement, sbp, r) for r in placement.flat_ranks}
    assert all(v.shape == local_shape for v in locals_by_rank.values())
    assert _layout.local_shape(logical.shape, placement, sbp) == local_shape
    # Every element is held by exactly the ranks that do not split its axis.
    total, counts = _assemble(logical.shape, placement, sbp, locals_by_rank)
    np.testing.assert_array_equal(total / counts, logical)
    replicas = placement.size // int(np.prod([f for f in _layout.split_factors(logical.shape, placement, sbp)]))
    assert (counts == replicas).all()


def test_nd_split_order_matches_nested_slicing():
    placement = flow.placement("cpu", [[0, 1], [2, 3]])
    sbp = (flow.sbp.split(0), flow.sbp.split(0))
    logical = np.arange(8 * 2).reshape(8, 2)
    # Hierarchy dim 0 halves axis 0, then dim 1 halves each half.
    for rank, rows in {0: [0, 1], 1: [2, 3], 2: [4, 5], 3: [6, 7]}.items():
        np.testing.assert_array_equal(_layout.local_of(logical, placement, sbp, rank), logical[rows])


def test_partial_sum_locals_add_up():
    placement = flow.placement("cpu", [[0, 1], [2, 3]])
    sbp = (flow.sbp.partial_sum, flow.sbp.split(1))
    logical = np.random.default_rng(0).standard_normal((3, 4))
    locals_by_rank = {r: _layout.local_of(logical, placement, sbp, r) for r in placement.flat_ranks}
    rebuilt = np.zeros_like(logical)
    for rank, local in locals_by_rank.items():
        slices, _ = _layout.shard_index(logical.shape, placement, sbp, rank)
        rebuilt[slices] += local
    np.testing.assert_allclose(rebuilt, logical)
    assert np.count_nonzero([np.any(v) for v in locals_by_rank.values()]) == 2


def test_nd_local_to_global_single_process():
    placement = flow.placement("cpu", [[0, 1], [2, 3]])
    x = flow.randn(2, 3)
    g = x.to_global(placement, [flow.sbp.split(0), flow.sbp.split(1)])
    assert g.shape == (4, 6)
    np.testing.assert_array_equal(g.numpy(), np.tile(x.numpy(), (2, 2)))
    with pytest.raises(ValueError):
        flow.randn(3, 3).to_global(placement, [flow.sbp.broadcast, flow.sbp.split(2)])
