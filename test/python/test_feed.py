"""What each rank feeds a program of several ranks (pipeflow._feed), in one process:
rebuilding a logical input from every rank's local part, cutting a rank's
micro-batch boxes, and reading the manifest's boxes. The launched runs are
in test_run.py."""

import numpy as np
import pytest

import pipeflow as flow
from pipeflow import _feed, _layout, _runtime

B, P = flow.sbp.broadcast, flow.sbp.partial_sum
S = flow.sbp.split
SPLIT0 = (S(0),)
P01 = flow.placement("cpu", ranks=[0, 1])
P2x2 = flow.placement("cpu", ranks=[[3, 1], [0, 2]])  # rank order differs from position order


def addends(logical, placement, sbp, rng):
    """Every rank's local part, with random addends (not zeros) under P; replicas
    along B dimensions stay equal."""
    parts = [_layout.local_of(logical, placement, sbp, r).astype(np.float64) for r in placement.flat_ranks]
    noises = {}
    for d, entry in enumerate(sbp):
        if entry != P:
            continue
        # move a random amount from coordinate 0 of dimension d to coordinate 1
        for p, r in enumerate(placement.flat_ranks):
            coords = placement.coordinates(r)
            if coords[d] > 1:
                continue
            key = (d,) + tuple(c for k, c in enumerate(coords) if k != d and sbp[k] != B)
            if key not in noises:
                noises[key] = rng.integers(-8, 8, parts[p].shape).astype(np.float64)
            parts[p] += noises[key] if coords[d] == 1 else -noises[key]
    return parts


@pytest.mark.parametrize("placement, sbp", [
    (P01, (S(0),)), (P01, (S(1),)), (P01, (B,)), (P01, (P,)),
    (P2x2, (S(0), S(1))), (P2x2, (S(1), S(0))), (P2x2, (S(0), S(0))), (P2x2, (B, S(1))),
    (P2x2, (S(0), P)), (P2x2, (P, B)), (P2x2, (P, P)),
], ids=str)
def test_assemble_rebuilds_the_logical_value(placement, sbp):
    rng = np.random.default_rng()
    logical = rng.integers(-100, 100, (8, 12)).astype(np.float64)  # sums stay exact
    parts = addends(logical, placement, sbp, rng)
    if any(e == P for e in sbp):
        assert not any(np.array_equal(p, _layout.local_of(logical, placement, sbp, r))
                       for p, r in zip(parts, placement.flat_ranks, strict=True) if p.any())
    got = _feed.assemble([p.reshape(-1) for p in parts], logical.shape, placement, sbp)
    np.testing.assert_array_equal(got, logical)


def test_assemble_moves_int64_labels_exactly():
    labels = np.random.default_rng().integers(-2**62, 2**62, 16)
    parts = [_layout.local_of(labels, P2x2, (S(0), S(0)), r) for r in P2x2.flat_ranks]
    got = _feed.assemble(parts, labels.shape, P2x2, (S(0), S(0)))
    assert got.dtype == np.int64 and np.array_equal(got, labels)


def test_cut_boxes_concatenates_the_micro_batch_boxes():
    logical = np.random.default_rng().standard_normal((16, 3, 4)).astype(np.float32)
    # rank 1 of S(0) over 2 ranks, 2 micro-batches: rows 4-7 and 12-15
    got = _feed.cut_boxes(logical, [(4, 0, 0), (12, 0, 0)], (4, 3, 4), np.float32)
    assert got.flags.c_contiguous and got.shape == (2, 4, 3, 4)
    np.testing.assert_array_equal(got.reshape(8, 3, 4), np.concatenate([logical[4:8], logical[12:16]]))
    assert not _feed.cut_boxes(logical, [(0, 0, 0)], (16, 3, 4), np.float32, zero=True).any()


def manifest(boxes0, boxes1, box_shape, shape, logical=(16, 4)):
    def entry(boxes):
        return {"inputs": [{"index": 0, "dtype": "f32", "shape": list(shape),
                            "logical_shape": list(logical), "boxes": boxes,
                            "box_shape": list(box_shape)}]}

    return {0: entry(boxes0), 1: entry(boxes1)}


def plan(ranks, rank, sbp=SPLIT0, placement=P01, logical=(16, 4)):
    return _feed.plan(ranks, [(logical, "float32", placement, sbp)], rank, _runtime.DTYPES, "manifest.json")[0]


def test_plan_feeds_own_shards_directly_and_gathers_other_boxes():
    split = manifest([[0, 0], [8, 0]], [[4, 0], [12, 0]], (4, 4), (8, 4))
    p = plan(split, 1)
    assert p.mode == _feed.BOXES and p.boxes == [(4, 0), (12, 0)] and p.buffer_shape == (8, 4)
    own = manifest([[0, 0]], [[8, 0]], (8, 4), (8, 4))
    assert plan(own, 0).mode == _feed.DIRECT
    # the decision is the same on every rank, whatever this rank's own entry says
    mixed = manifest([[0, 0]], [[4, 0], [12, 0]], (8, 4), (8, 4))
    mixed[1]["inputs"][0]["box_shape"] = [4, 4]
    assert plan(mixed, 0).mode == plan(mixed, 1).mode == _feed.BOXES
    # a rank of the placement without an entry still takes part, and feeds nothing
    del split[1]["inputs"][0]
    p = plan(split, 1)
    assert p.mode == _feed.BOXES and p.member and p.entry is None
    # P at a non-zero coordinate: zeros
    assert plan(manifest([[0, 0]], [[0, 0]], (16, 4), (16, 4)), 1, sbp=(P,)).zero


def test_plan_rejects_inconsistent_manifests():
    bad = manifest([[0, 0], [8, 0]], [[4, 0], [12, 0]], (4, 4), (4, 4))  # 2 boxes in a buffer of 1
    with pytest.raises(flow.BackendUnavailable, match="do not fill its buffer"):
        plan(bad, 0)
    outside = manifest([[0, 0]], [[14, 0]], (8, 4), (8, 4))
    with pytest.raises(flow.BackendUnavailable, match="outside the logical shape"):
        plan(outside, 0)
    alone = manifest([[0, 0]], [[8, 0]], (8, 4), (8, 4))
    with pytest.raises(flow.BackendUnavailable, match="does not hold that rank"):
        plan(alone, 0, placement=flow.placement("cpu", ranks=[0]))


def test_manifests_without_boxes_feed_local_parts():
    ranks = {0: {"inputs": [{"index": 0, "dtype": "i64", "shape": [16]}]}}
    p = plan(ranks, 0, sbp=(B,), placement=flow.placement("cpu", ranks=[0]), logical=(16,))
    assert p.mode == _feed.LOCAL and p.buffer_shape == (16,) and p.dtype == np.int64


class FakeProgram:
    """Records the broadcasts forward() makes; the root's array reaches everyone."""

    sent = None

    def __init__(self, log):
        self.log = log

    def broadcast_exact(self, array, root, ranks):
        self.log.append((root, list(ranks)))
        return FakeProgram.sent if FakeProgram.sent is not None else array


def test_readers_outside_the_placement_get_the_value_by_a_broadcast():
    """Automatic stages: P = [0, 1] shifted by 2 to the last stage [2, 3], which
    reads the labels (rank 2 rows 0-3 and 8-11, rank 3 rows 4-7 and 12-15)."""
    labels = np.random.default_rng().integers(0, 10, 16)
    logical = (16,)

    def entry(boxes):
        return {"inputs": [{"index": 0, "dtype": "i64", "shape": [2, 4],
                            "logical_shape": [16], "boxes": boxes, "box_shape": [4]}]}

    ranks = {0: {"inputs": []}, 1: {"inputs": []}, 2: entry([[0], [8]]), 3: entry([[4], [12]])}
    sig = [(logical, "int64", P01, (S(0),))]
    with pytest.raises(flow.BackendUnavailable, match="does not hold that rank"):
        _feed.plan(ranks, sig, 0, _runtime.DTYPES, "manifest.json")  # not automatic stages
    plans = {r: _feed.plan(ranks, sig, r, _runtime.DTYPES, "manifest.json", width=2)[0] for r in range(4)}
    assert all(p.mode == _feed.BOXES and p.outside == (2, 3) for p in plans.values())
    assert plans[0].member and plans[0].entry is None and not plans[2].member
    log = []
    FakeProgram.sent = labels
    tensor = flow.tensor(labels).to_global(P01, S(0))  # one process: the value is known
    # nobody outside knows it: rank 0 (P's first) broadcasts to 2 and 3; rank 1 takes no part
    got = {r: _feed.forward(FakeProgram(log), tensor, labels if r < 2 else None, plans[r], {0, 1}, r)
           for r in range(4)}
    assert log == [(0, [0, 2, 3])] * 3
    assert got[1] is labels and all(np.array_equal(got[r], labels) for r in (0, 2, 3))
    cut = _feed.cut_boxes(got[3], plans[3].boxes, plans[3].box_shape, np.int64)
    assert np.array_equal(cut.reshape(-1), np.concatenate([labels[4:8], labels[12:16]]))
    # rank 3 knows it: only rank 2 needs the broadcast; rank 3 reads its own value
    log.clear()
    for r in range(4):
        _feed.forward(FakeProgram(log), tensor, labels if r < 2 else None, plans[r], {0, 1, 3}, r)
    assert log == [(0, [0, 2])] * 2
    # every reader knows it: no broadcast at all
    log.clear()
    for r in range(4):
        _feed.forward(FakeProgram(log), tensor, labels if r < 2 else None, plans[r], {0, 1, 2, 3}, r)
    assert log == []
    # a partial-sum input: the reader at the non-zero coordinate of the shifted placement feeds zeros
    psig = [(logical, "int64", P01, (P,))]
    assert [_feed.plan(ranks, psig, r, _runtime.DTYPES, "m.json", width=2)[0].zero for r in (2, 3)] == [False, True]
