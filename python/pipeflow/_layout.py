"""Local components of global tensors: S(k)/B/P over 1-D and n-D placements.

Hierarchy dimensions apply in order: a dimension of extent ``h`` with
``S(k)`` cuts the current slice of axis ``k`` into ``h`` equal parts and the
rank takes the part at its coordinate on that dimension (the layout of
``!pf.global``'s ``getLocalShape``). Under ``P`` the rank at coordinate 0
of that dimension holds the value and the others hold zeros.
"""

import numpy as np

from . import sbp as sbp_mod


def split_factors(shape, placement, sbp):
    """For every axis, the number of ranks it is split over."""
    factors = [1] * len(shape)
    for entry, extent in zip(sbp, placement.hierarchy, strict=True):
        if isinstance(entry, sbp_mod._Split) and entry.axis < len(shape):
            factors[entry.axis] *= extent
    return factors


def check_layout(shape, placement, sbp):
    """Raises ``ValueError`` if ``sbp`` cannot lay ``shape`` out on ``placement``."""
    if len(sbp) != placement.ndim:
        raise ValueError(f"the SBP has {len(sbp)} entries but the placement has {placement.ndim} hierarchy dimension(s)")
    for entry in sbp:
        if isinstance(entry, sbp_mod._Split) and entry.axis >= len(shape):
            raise ValueError(f"{entry!r} splits axis {entry.axis} but the tensor has rank {len(shape)} (shape {list(shape)})")
    for axis, factor in enumerate(split_factors(shape, placement, sbp)):
        if shape[axis] % factor:
            raise ValueError(
                f"dimension {axis} of size {shape[axis]} is not divisible by the {factor} ranks it is split over")


def local_shape(shape, placement, sbp):
    """The shape of every rank's local component."""
    return tuple(d // f for d, f in zip(shape, split_factors(shape, placement, sbp), strict=True))


def logical_shape(local, placement, sbp):
    """The logical shape whose local components have shape ``local``."""
    return tuple(d * f for d, f in zip(local, split_factors(local, placement, sbp), strict=True))


def shard_index(shape, placement, sbp, rank):
    """``(slices, is_zero)``: the rank's slice of the logical tensor and whether a
    partial-sum dimension makes its local component zeros. ``None`` when the rank
    is not in the placement."""
    coords = placement.coordinates(rank)
    if coords is None:
        return None
    starts = [0] * len(shape)
    sizes = list(shape)
    zero = False
    for entry, extent, coord in zip(sbp, placement.hierarchy, coords, strict=True):
        if isinstance(entry, sbp_mod._Split):
            sizes[entry.axis] //= extent
            starts[entry.axis] += coord * sizes[entry.axis]
        elif isinstance(entry, sbp_mod._PartialSum) and coord != 0:
            zero = True
    return tuple(slice(s, s + n) for s, n in zip(starts, sizes, strict=True)), zero


def local_of(logical, placement, sbp, rank):
    """The local component that ``rank`` holds of the logical value (a copy).

    A rank outside the placement holds an empty array.
    """
    index = shard_index(logical.shape, placement, sbp, rank)
    if index is None:
        return np.empty((0,), dtype=logical.dtype)
    slices, zero = index
    part = logical[slices]
    return np.zeros_like(part) if zero else np.array(part, copy=True)


def logical_from_replicas(local, placement, sbp):
    """The logical value when every rank of the placement holds ``local``.

    This is what a single process, standing for every rank of the program,
    means by ``local.to_global(placement, sbp)``: split axes repeat the local
    block, each partial-sum dimension adds its ranks' copies.
    """
    reps = split_factors(local.shape, placement, sbp)
    value = np.tile(local, reps) if any(r != 1 for r in reps) else np.array(local, copy=True)
    copies = 1
    for entry, extent in zip(sbp, placement.hierarchy, strict=True):
        if isinstance(entry, sbp_mod._PartialSum):
            copies *= extent
    if copies != 1:
        value = value * np.asarray(copies, dtype=value.dtype)
    return value
