"""``pipeflow.sbp``: how a global tensor is laid out over its placement.

``split(k)`` (S(k)) gives each rank a slice of axis ``k``; ``broadcast``
(B) gives every rank the whole tensor; ``partial_sum`` (P) makes the tensor
the element-wise sum of the ranks' tensors. ``broadcast`` and
``partial_sum`` work with or without a call, as in OneFlow.
"""

import numbers

from ._value import by_key


@by_key
class sbp:
    """Base class of the SBP entries."""

    __slots__ = ()

    def mlir(self):
        """The entry as written inside ``#pf.sbp<[...]>``."""
        raise NotImplementedError

    def __call__(self):
        return self

    def _key(self):
        return self.mlir()


class _Split(sbp):
    __slots__ = ("axis",)

    def __init__(self, axis):
        object.__setattr__(self, "axis", axis)

    def __setattr__(self, name, value):
        raise AttributeError("SBP entries are immutable")

    def __call__(self):
        raise TypeError("split(axis) is already an SBP entry; do not call it again")

    def mlir(self):
        return f"S({self.axis})"

    def __repr__(self):
        return f"pipeflow.sbp.split(dim={self.axis})"


class _Fixed(sbp):
    """An entry without an argument (``broadcast``, ``partial_sum``): one
    instance each, written ``MLIR`` in the IR and ``NAME`` in Python."""

    __slots__ = ()
    MLIR = NAME = None

    def mlir(self):
        return self.MLIR

    def __repr__(self):
        return f"pipeflow.sbp.{self.NAME}"


class _Broadcast(_Fixed):
    __slots__ = ()
    MLIR, NAME = "B", "broadcast"


class _PartialSum(_Fixed):
    __slots__ = ()
    MLIR, NAME = "P", "partial_sum"


broadcast = _Broadcast()
partial_sum = _PartialSum()


def split(dim=None, *, axis=None):
    """S(dim): split logical axis ``dim`` evenly over the ranks."""
    dim = axis if dim is None else dim
    if isinstance(dim, bool) or not isinstance(dim, numbers.Integral) or dim < 0:
        raise ValueError(f"sbp.split needs a non-negative integer axis, got {dim!r}")
    return _Split(int(dim))


def normalize(value, ndim):
    """``value`` (an entry or a list of entries) as a tuple of ``ndim`` entries."""
    entries = list(value) if isinstance(value, (list, tuple)) else [value]
    out = []
    for entry in entries:
        if entry is split:
            raise TypeError("flow.sbp.split needs an axis: write flow.sbp.split(0)")
        if not isinstance(entry, sbp):
            raise TypeError(f"expected an SBP entry (flow.sbp.split(k), broadcast, partial_sum), got {entry!r}")
        out.append(entry)
    if len(out) != ndim:
        raise ValueError(
            f"the SBP {tuple(out)} has {len(out)} entr{'y' if len(out) == 1 else 'ies'} "
            f"but the placement has {ndim} hierarchy dimension(s): give one entry per dimension")
    return tuple(out)


def mlir(entries):
    """``#pf.sbp<[...]>`` of a tuple of entries."""
    return "#pf.sbp<[" + ", ".join(e.mlir() for e in entries) + "]>"


def parse(text):
    """The entries of ``#pf.sbp<[S(0), B]>`` (as the compiler prints it)."""
    text = text.strip()
    if not (text.startswith("#pf.sbp<[") and text.endswith("]>")):
        raise ValueError(f"not an SBP attribute: {text!r}")
    body = text[len("#pf.sbp<["):-2].strip()
    out = []
    for item in filter(None, (s.strip() for s in body.split(","))):
        if item == "B":
            out.append(broadcast)
        elif item == "P":
            out.append(partial_sum)
        elif item.startswith("S(") and item.endswith(")") and item[2:-1].isdigit():
            out.append(split(int(item[2:-1])))
        else:
            raise ValueError(f"unknown SBP entry {item!r} in {text!r}")
    return tuple(out)
