"""What each rank feeds its compiled program: the boxes of the logical inputs.

A program of several ranks lists, per rank and input, ``boxes``: offsets
into the LOGICAL input (one per micro-batch when the batch is split) of
boxes of ``box_shape``. The buffer the rank's program reads
(``pfrt_set_input``) is those boxes one after another, C-contiguous. The
micro-batch split does not depend on the layout (micro-batch ``k`` is
logical rows ``[k*B/m, (k+1)*B/m)``, then laid out over the ranks), so a
rank's boxes are generally not its own shard of the user's global tensor:
with ``B=16``, ``m=2`` and ``S(0)`` over two ranks, rank 0 holds rows 0-7 but
needs rows 0-3 and 8-11.

So the front end first needs the logical value of an input. A tensor that
knows it (a single process, broadcast inputs, tensors made with a global
placement) is sliced directly. Otherwise (``S``/``P`` tensors made from
per-rank locals) the ranks of the input's placement all-gather their local
components and rebuild the logical value with the layout rules of
:mod:`pipeflow._layout` (split axes placed, partial-sum dimensions added,
broadcast dimensions read at coordinate 0). Which ranks take part depends
only on the placement and on facts every rank shares (the manifest, and
which ranks know the logical value, agreed on by :func:`agreement` before
any other collective), so the ranks always make the same calls in the
same order. A rank's boxes under a partial-sum dimension at a non-zero
coordinate are zeros (the rank at coordinate 0 holds the value), as
``_layout.local_of`` lays P out.

When every rank's single box is exactly its own shard (no micro-batch split
of a split batch), each rank feeds its local component as it is, without
communication. Manifests without ``boxes`` (older compilers, programs of
one rank) feed every listed input's local component, as before.

With automatic stages (``set_pipeline_stages``) the compiler moves each
input to the stage of its first use, on the input's placement shifted to
another pipeline rank (ranks ``k*W ..``, ``W`` = the largest rank of the
placement + 1): the labels, for instance, are read on the last stage's
ranks, which are outside the placement the user's tensor lives on. Such an
input's logical value is first made known on its placement as above, then
broadcast from the placement's first rank to the readers outside it that
do not know it already (:func:`forward`). The group again depends only on
the manifest and the agreed ``known``.
"""

import hashlib

import numpy as np

from . import _layout, dtypes
from . import sbp as sbp_mod
from ._errors import BackendUnavailable, CompileError

LOCAL, DIRECT, BOXES = "local", "direct", "boxes"


class InputPlan:
    """How one graph input is fed on this rank (see the module docstring)."""

    def __init__(self, index, shape, placement, sbp, dtype, mode, entry, rank, outside=(),
                 width=None):
        self.index = index
        self.shape = tuple(shape)              # logical shape
        self.placement = placement
        self.sbp = sbp
        self.dtype = dtype                      # numpy dtype the program reads
        self.mode = mode                        # LOCAL, DIRECT or BOXES
        self.entry = entry                      # this rank's manifest entry (None: feeds nothing)
        self.member = rank in placement
        self.outside = tuple(outside)          # readers outside the placement (automatic stages)
        if entry is not None:
            self.buffer_shape = tuple(int(d) for d in entry["shape"])
            self.boxes = [tuple(int(o) for o in off) for off in entry.get("boxes", ())]
            self.box_shape = tuple(int(d) for d in entry.get("box_shape", ()))
        # A reader outside the placement sits on the placement shifted by a
        # multiple of ``width``: its coordinates are those of ``rank % width``.
        at = rank if self.member else (rank % width if width and entry is not None else None)
        index_ = _layout.shard_index(self.shape, placement, sbp, at) if at is not None else None
        self.zero = bool(index_ and index_[1])  # a P dimension at a non-zero coordinate

    def __repr__(self):
        return f"InputPlan({self.index}, {self.mode}, {list(self.shape)}, {self.placement}, {self.sbp})"


def _dtype(entry, dtypes):
    dtype = dtypes.get(entry["dtype"])
    if dtype is None:
        raise BackendUnavailable(f"the compiled program takes input {entry['index']} as "
                                 f"{entry['dtype']}, which the front end cannot feed yet")
    return dtype


def plan(manifest_ranks, signature, rank, dtypes, manifest_path, width=None):
    """An :class:`InputPlan` per graph input (in input order).

    ``manifest_ranks``: every rank's manifest entry by rank (all ranks read the
    same manifest, so decisions taken from it agree); ``signature``: the
    graph's ``(shape, dtype name, placement, sbp)`` per input; ``width``: with
    automatic stages, the rank offset between pipeline ranks (the program may
    read an input on its placement shifted by multiples of it), else ``None``.
    """
    by_input = {}
    for r, entry in manifest_ranks.items():
        for e in entry.get("inputs", ()):
            by_input.setdefault(int(e["index"]), {})[r] = e
    plans = []
    for i, (shape, _, placement, sbp) in enumerate(signature):
        entries = by_input.get(i, {})
        mine = entries.get(rank)
        if not any("boxes" in e for e in entries.values()):
            dtype = _dtype(mine, dtypes) if mine is not None else None
            plans.append(InputPlan(i, shape, placement, sbp, dtype, LOCAL, mine, rank))
            continue
        outside = sorted(r for r in entries if r not in placement)
        for r, e in entries.items():
            where = f"internal error: {manifest_path}: rank {r}'s entry of input {i}"
            if r not in placement and not (width and r % width in placement):
                raise BackendUnavailable(f"{where} lists it, but the input's placement {placement} "
                                         "does not hold that rank"
                                         + (f" (nor does it shifted by multiples of {width})"
                                            if width else ""))
            box_shape = [int(d) for d in e.get("box_shape", ())]
            boxes = e.get("boxes", ())
            if list(e.get("logical_shape", shape)) != list(shape) or len(box_shape) != len(shape) \
                    or not boxes or any(len(off) != len(shape) for off in boxes):
                raise BackendUnavailable(f"{where} does not describe boxes of the logical shape "
                                         f"{list(shape)}: {e}")
            if len(boxes) * int(np.prod(box_shape, dtype=np.int64)) != int(np.prod(e["shape"], dtype=np.int64)):
                raise BackendUnavailable(f"{where}: {len(boxes)} boxes of {box_shape} do not fill "
                                         f"its buffer of shape {e['shape']}")
            for off in boxes:
                if any(o < 0 or o + b > d for o, b, d in zip(off, box_shape, shape, strict=True)):
                    raise BackendUnavailable(f"{where}: box {off} of {box_shape} is outside the "
                                             f"logical shape {list(shape)}")
        kinds = {e["dtype"] for e in entries.values()}
        if len(kinds) != 1:
            raise BackendUnavailable(f"internal error: {manifest_path}: the ranks read input {i} as "
                                     f"different dtypes {sorted(kinds)}")
        dtype = _dtype(next(iter(entries.values())), dtypes)
        direct = not outside and all(_is_own_shard(e, shape, placement, sbp, r)
                                     for r, e in entries.items())
        plans.append(InputPlan(i, shape, placement, sbp, dtype, DIRECT if direct else BOXES, mine, rank,
                               outside, width))
    return plans


def _is_own_shard(entry, shape, placement, sbp, rank):
    """Whether ``rank``'s boxes are exactly its local component's place."""
    slices, _ = _layout.shard_index(shape, placement, sbp, rank)
    boxes = entry["boxes"]
    return (len(boxes) == 1 and [int(o) for o in boxes[0]] == [s.start for s in slices]
            and [int(d) for d in entry["box_shape"]] == [s.stop - s.start for s in slices])


def component(tensor, rank):
    """``rank``'s local component of a global tensor, as this process knows it."""
    if tensor._logical is not None:
        return _layout.local_of(tensor._logical, tensor.placement, tensor.sbp, rank)
    return tensor._local


def describe(tensor):
    """A short, process-independent description of a graph input."""
    if not hasattr(tensor, "_placement"):
        return f"a {type(tensor).__name__}"
    placement = tensor.placement
    sbp = "" if tensor.sbp is None else "(" + ", ".join(e.mlir() for e in tensor.sbp) + ")"
    where = "local" if placement is None else f"placement {placement.ranks} sbp {sbp}"
    return f"shape {list(tensor.shape)} {tensor.dtype.name} {where}"


def digest(text):
    """A signed 63-bit digest of ``text`` (exchanged as int64)."""
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little") >> 1


AGREED_INPUTS = 63  # inputs whose "logical value known" flags one agreement word holds
_NAMED_INPUTS = 8   # inputs an agreement names when the processes disagree


def agreement(program, world, graph_name, call, args, rank, loc):
    """Checks that every process makes the same call of the same graph with the
    same kind of inputs, and learns which processes know each input's logical
    value.

    One all-gather of a fixed-size row of int64 over the whole world (every
    process runs every call of a graph): digests of the graph's name and of
    the inputs' descriptions, the call number, and a bit per input saying
    whether this process has its logical value. Returns ``known``: for input
    ``i`` the set of ranks that know its logical value (empty beyond
    ``AGREED_INPUTS`` inputs: those are gathered). Raises the same
    CompileError on every rank when the processes disagree.
    """
    descriptions = [describe(a) for a in args]
    known_bits = 0
    for i, a in enumerate(args[:AGREED_INPUTS]):
        if isinstance(getattr(a, "_logical", None), np.ndarray):
            known_bits |= 1 << i
    named = [digest(t) for t in descriptions[:_NAMED_INPUTS]]
    row = [digest(graph_name), call, len(args), digest("\n".join(descriptions)), known_bits]
    row += named + [0] * (_NAMED_INPUTS - len(named))
    rows = program.all_gather(np.array(row, np.int64), range(world))

    def differ(col):
        return [int(r) for r in np.flatnonzero(rows[:, col] != rows[rank, col])]

    if differ(0) or differ(1):
        others = sorted(set(differ(0) + differ(1)))
        raise CompileError.at(
            loc, f"rank {rank} makes call {call} of {graph_name} while rank{'s' if len(others) > 1 else ''} "
                 f"{', '.join(map(str, others))} make{'' if len(others) > 1 else 's'} another call (of "
                 "another graph, or a different number of calls so far)",
            ["every process must run the same graphs, the same number of times, in the same order"])
    if differ(2) or differ(3):
        others = sorted(set(differ(2) + differ(3)))
        where = [i for i in range(min(len(args), _NAMED_INPUTS)) if differ(5 + i)]
        what = (f"graph input {where[0]} differs between the processes: on rank {rank} it has "
                f"{descriptions[where[0]]}" if where else
                f"the graph's inputs differ between the processes: on rank {rank} they are "
                + ("; ".join(f"{i}: {t}" for i, t in enumerate(descriptions)) or "none"))
        raise CompileError.at(
            loc, f"{what}, which differs on rank{'s' if len(others) > 1 else ''} {', '.join(map(str, others))}",
            ["every process must pass the same number of global tensors, each of the same logical "
             "shape, dtype, placement and sbp on every process (under S or P each process passes its "
             "own local part)"])
    return [set(int(r) for r in np.flatnonzero((rows[:, 4] >> i) & 1)) if i < AGREED_INPUTS else set()
            for i in range(len(args))]


def assemble(blocks, shape, placement, sbp):
    """The logical value from every rank's local component: ``blocks[p]`` is the
    component of ``placement.flat_ranks[p]`` (flattened or shaped). Split axes
    are placed, partial-sum dimensions added, broadcast dimensions taken at
    coordinate 0."""
    blocks = list(blocks)
    dtype = np.asarray(blocks[0]).dtype
    partial = [isinstance(e, sbp_mod._PartialSum) for e in sbp]
    broadcast = [isinstance(e, sbp_mod._Broadcast) for e in sbp]
    local = _layout.local_shape(shape, placement, sbp)
    out = np.zeros(shape, dtype=dtype)
    for p, r in enumerate(placement.flat_ranks):
        coords = placement.coordinates(r)
        if any(b and c for b, c in zip(broadcast, coords, strict=True)):
            continue
        slices, _ = _layout.shard_index(shape, placement, sbp, r)
        block = np.asarray(blocks[p]).reshape(local)
        if any(partial):
            out[slices] += block
        else:
            out[slices] = block
    return out


def cut_boxes(logical, boxes, box_shape, dtype, zero=False):
    """The boxes of ``logical`` at offsets ``boxes`` (each ``box_shape``), one after
    another in a C-contiguous array of shape ``[len(boxes), *box_shape]`` (zeros
    when ``zero``)."""
    out = np.empty((len(boxes),) + tuple(box_shape), dtype=dtype)
    if zero:
        out.fill(0)
        return out
    for k, off in enumerate(boxes):
        out[k] = logical[tuple(slice(o, o + n) for o, n in zip(off, box_shape, strict=True))]
    return out


def logical_value(program, tensor, plan, known, rank, loc):
    """The logical value of a BOXES input on a member of its placement.

    ``known``: the ranks that know the input's logical value (agreed by every
    rank), or ``None`` in a process running alone. When every member of the
    placement knows it, it is read here; otherwise the members all-gather
    their local components over the placement (a collective they all make,
    since ``known`` is the same on all of them).
    """
    placement = plan.placement
    if known is None or all(r in known for r in placement.flat_ranks):
        if tensor._logical is None:
            raise BackendUnavailable(f"internal error: the logical value of graph input {plan.index} "
                                     "is not known on this rank")
        return tensor._logical
    local = component(tensor, rank)
    want = _layout.local_shape(plan.shape, placement, plan.sbp)
    if tuple(np.shape(local)) != tuple(want):
        raise CompileError.at(
            loc, f"this rank's local part of graph input {plan.index} has shape {list(np.shape(local))}, "
                 f"but a global tensor of shape {list(plan.shape)} laid out as "
                 f"{tuple(plan.sbp)} on {placement} has local parts of shape {list(want)}")
    if program is None:
        raise BackendUnavailable(f"internal error: rank {rank} holds part of graph input {plan.index} "
                                 "but has no compiled program to exchange it with")
    blocks = program.all_gather(dtypes.payload(local, plan.dtype), placement.flat_ranks)
    return assemble(blocks, plan.shape, placement, plan.sbp)


def forward(program, tensor, logical, plan, known, rank):
    """The logical value of a BOXES input read on ranks outside its placement
    (automatic stages), on those readers; ``logical`` elsewhere.

    ``logical`` is the value on the members of the placement (after
    :func:`logical_value`), ``None`` on the other ranks. The readers outside
    the placement that do not know the value (``known``, agreed by every
    rank) get it by a broadcast from the placement's first rank: a collective
    of that rank and those readers, the same on every rank of the job since
    it depends on the manifest and ``known`` only.
    """
    root = plan.placement.flat_ranks[0]
    need = [r for r in plan.outside if known is None or r not in known]
    if rank in plan.outside and rank not in need:
        if tensor._logical is None:
            raise BackendUnavailable(f"internal error: the logical value of graph input {plan.index} "
                                     "is not known on this rank")
        return tensor._logical
    if not need or (rank != root and rank not in need):
        return logical
    if program is None:
        raise BackendUnavailable(f"internal error: rank {rank} takes part in forwarding graph input "
                                 f"{plan.index} but has no compiled program to do it with")
    if rank == root:
        buf = dtypes.payload(logical, plan.dtype)
    else:
        buf = np.zeros(plan.shape, dtype=plan.dtype)
    return program.broadcast_exact(buf, root, [root] + need)
