"""``pipeflow.placement``: the device kind and ranks that hold a global tensor."""

import numpy as np

from . import env
from ._source import user_location
from ._value import by_key

_DEVICE_ALIASES = {"cpu": "cpu", "cuda": "cuda", "gpu": "cuda"}


def _rank_array(ranks):
    """Nested rank lists (or a dict node -> devices) as an integer ndarray."""
    if isinstance(ranks, dict):
        return _from_node_dict(ranks)
    if isinstance(ranks, range):
        ranks = list(ranks)
    if isinstance(ranks, (int, np.integer)):
        ranks = [int(ranks)]
    try:
        array = np.array(ranks)
    except ValueError:
        raise ValueError(f"placement ranks must be a rectangular nested list, got {ranks!r}") from None
    if array.dtype == object or array.ndim == 0:
        raise ValueError(f"placement ranks must be a rectangular nested list of integers, got {ranks!r}")
    if array.size == 0:
        raise ValueError("placement rank lists must not be empty")
    if not np.issubdtype(array.dtype, np.integer):
        raise ValueError(f"placement ranks must be integers, got {ranks!r}")
    return array.astype(np.int64)


def _from_node_dict(nodes):
    """OneFlow's older ``{node: [device, ...]}`` form, flattened in node order.

    Node ``n``'s device ``d`` is global rank ``n * devices_per_node + d``;
    with only node 0 the devices are the ranks. Across nodes the number of
    devices per node comes from the launcher (``LOCAL_WORLD_SIZE``).
    """
    ranks = []
    per_node = None
    for node in sorted(nodes):
        devices = nodes[node]
        devices = [devices] if isinstance(devices, (int, np.integer)) else list(devices)
        if int(node) != 0 and per_node is None:
            per_node = env.get_local_world_size()
            if per_node is None:
                raise ValueError(
                    "a dict placement over several nodes needs the number of devices per node: "
                    "launch with `python3 -m pipeflow.distributed.launch` or set LOCAL_WORLD_SIZE")
        for device in devices:
            ranks.append(int(device) + int(node) * (per_node or 0))
    return _rank_array(ranks)


@by_key
class placement:
    """Which ranks hold a global tensor, as a 1-D list or an n-D hierarchy.

    ``placement("cuda", [0, 1])``, ``placement("cpu", [[0, 1], [2, 3]])``
    (a 2x2 hierarchy for 2-D SBP), ``placement("cuda", ranks=[0])`` and
    OneFlow's older ``placement("cuda", {0: [0, 1]})`` (node -> devices).
    ``hierarchy=`` reshapes a flat rank list.
    """

    def __init__(self, type=None, ranks=None, hierarchy=None, *, device_type=None):
        type = type if type is not None else device_type
        if not isinstance(type, str) or type.lower() not in _DEVICE_ALIASES:
            raise ValueError(f"placement type must be 'cpu' or 'cuda', got {type!r}")
        if ranks is None:
            raise ValueError("placement needs ranks, e.g. flow.placement('cpu', ranks=[0, 1])")
        array = _rank_array(ranks)
        if hierarchy is not None:
            hierarchy = tuple(int(h) for h in hierarchy)
            if int(np.prod(hierarchy)) != array.size:
                raise ValueError(f"hierarchy {hierarchy} does not hold {array.size} ranks")
            array = array.reshape(hierarchy)
        flat = array.reshape(-1)
        if (flat < 0).any():
            raise ValueError(f"placement ranks must be non-negative, got {flat.tolist()}")
        if len(set(flat.tolist())) != flat.size:
            raise ValueError(f"placement ranks must be unique, got {flat.tolist()}")
        self._type = _DEVICE_ALIASES[type.lower()]
        self._ranks = array
        self._ranks.setflags(write=False)
        self._loc = user_location()

    @classmethod
    def all(cls, type):
        """Every rank of the job, as a 1-D placement."""
        return cls(type, list(range(env.get_world_size())))

    @property
    def type(self):
        """``"cpu"`` or ``"cuda"``."""
        return self._type

    device_type = type

    @property
    def ranks(self):
        """The ranks as a (possibly nested) list."""
        return self._ranks.tolist()

    @property
    def hierarchy(self):
        """The extent of every hierarchy dimension."""
        return tuple(int(d) for d in self._ranks.shape)

    @property
    def flat_ranks(self):
        """The ranks in row-major hierarchy order."""
        return tuple(int(r) for r in self._ranks.reshape(-1))

    @property
    def ndim(self):
        return self._ranks.ndim

    @property
    def size(self):
        return self._ranks.size

    def index(self, rank):
        """Row-major position of ``rank``, or -1 when it is not in the placement."""
        hits = np.flatnonzero(self._ranks.reshape(-1) == rank)
        return int(hits[0]) if hits.size else -1

    def coordinates(self, rank):
        """Hierarchy coordinates of ``rank`` (``None`` when absent)."""
        pos = self.index(rank)
        return None if pos < 0 else tuple(int(c) for c in np.unravel_index(pos, self._ranks.shape))

    def __contains__(self, rank):
        return self.index(rank) >= 0

    def _key(self):
        return (self._type, self.hierarchy, self.flat_ranks)

    def __repr__(self):
        return f"pipeflow.placement(type={self._type!r}, ranks={self.ranks})"

    def mlir(self, device=None):
        """The ``#pf.placement<...>`` attribute (``device`` overrides the kind)."""
        return f'#pf.placement<"{device or self._type}", {self.ranks}>'


Placement = placement
