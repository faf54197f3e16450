"""``nn.Parameter``: a tensor that a module owns and an optimizer updates."""

import numpy as np

from .. import _layout
from .. import sbp as sbp_mod
from .._errors import BackendUnavailable
from .._source import user_location
from ..tensor import Tensor


class Parameter(Tensor):
    """A trainable tensor. ``_init`` is its ``#pf.init<...>`` initializer.

    Its value lives on the Python side as a numpy array: the local data, or
    the logical value once the owning module is made global (a parameter's
    layout changes, its logical value does not).

    When a graph traces the parameter, the value becomes the compiled
    program's initial value (``set_runtime_init``), computed on first read.
    Once the graph has run, the compiled program owns the trained value
    (``mark_trained``): reading the parameter reads it back from the program
    (see ``pipeflow._state``), or raises when that would need the other
    processes of the job.
    """

    def __new__(cls, data=None, requires_grad=True, init=None):
        return object.__new__(cls)

    def __init__(self, data=None, requires_grad=True, init=None):
        if data is None:
            data = np.empty((0,), dtype=np.float32)
        if isinstance(data, Tensor):
            src = data
            local = None if src._placement is not None else src._local
            self._init_fields(src.dtype, src.shape, local=local, logical=src._logical,
                              placement=src._placement, sbp=src._sbp, requires_grad=requires_grad)
        else:
            array = np.asarray(data)
            from .. import dtypes as dt
            self._init_fields(dt.from_numpy_dtype(array.dtype), array.shape, local=array,
                              requires_grad=requires_grad)
        self._init = init
        self._loc = user_location()
        self._loaded = False
        self._loaded_loc = None

    # The logical value, initialised lazily and guarded once trained ----------------------

    @property
    def _logical(self):
        d = self.__dict__
        if d.get("_trained_by") is not None:
            sync(self)
        pending = d.get("_pending_init")
        if pending is not None:
            d["_pending_init"] = None
            d["_logical_value"] = pending()
        return d.get("_logical_value")

    @_logical.setter
    def _logical(self, value):
        self.__dict__["_pending_init"] = None
        self.__dict__["_logical_value"] = value

    def _storage(self):
        """The numpy array holding the (logical) value."""
        return self._local if self._placement is None else self._logical

    def _set_layout(self, placement, sbp):
        """Makes the parameter global on ``placement``/``sbp`` in place."""
        sbp = sbp_mod.normalize(sbp, placement.ndim)
        _layout.check_layout(self.shape, placement, sbp)
        value = Parameter._storage(self)
        self._placement, self._sbp = placement, sbp
        self._logical, self._local = value, None

    def __repr__(self):
        trained = self.__dict__.get("_trained_by")
        if trained is not None and not is_current(self):
            return (f"Parameter(shape={list(self.shape)}, placement={self._placement!r}, "
                    f"trained by the compiled {trained})")
        return "Parameter containing:\n" + super().__repr__()


def stale_message(name, graph):
    what = f"'{name}'" if name else "this parameter"
    return (f"{what} is trained by the compiled {graph}, which keeps its value on the ranks that "
            "run it, and it cannot be read back here")


def set_runtime_init(tensor, name, seed):
    """Makes the Python value of a traced parameter or buffer the compiled
    program's initial value (lazily for parameters: large models trace fast)."""
    from . import init as init_mod
    text = tensor._init or "#pf.init<zeros>"
    shape = tuple(tensor.shape)

    def compute():
        return init_mod.runtime_values(text, name, shape, seed).astype(tensor.dtype.numpy, copy=False)

    tensor.__dict__["_symbol"] = name
    if isinstance(tensor, Parameter) and tensor._placement is not None:
        tensor.__dict__["_logical_value"] = None
        tensor.__dict__["_pending_init"] = compute
    else:
        storage(tensor)[...] = compute()


def mark_trained(tensor, name, graph, owner=None, version=0):
    """After a graph's first step: the compiled program owns the value. ``owner``
    (a ``pipeflow._state.ProgramState``) reads it back; the Python value is
    the program's as of its ``version`` (its initial or loaded value)."""
    d = tensor.__dict__
    d["_symbol"] = name
    d["_trained_by"] = graph
    d["_state_owner"] = owner
    d["_synced_step"] = version


def sync(tensor, what=None):
    """Makes the Python value of a tensor that a compiled graph trains current,
    reading it back from the program if needed; raises BackendUnavailable
    when that is not possible here (see ``pipeflow._state``)."""
    d = tensor.__dict__
    graph = d.get("_trained_by")
    if graph is None:
        return
    owner = d.get("_state_owner")
    if owner is None:
        raise BackendUnavailable(stale_message(d.get("_symbol"), graph))
    owner.sync(tensor, what or f"reading '{d.get('_symbol')}'")


def is_current(tensor):
    """Whether the Python value of ``tensor`` is its trained value now."""
    d = tensor.__dict__
    owner = d.get("_state_owner")
    return d.get("_trained_by") is None or (owner is not None and d.get("_synced_step") == owner.version)


def state_owner(tensor):
    """The ``ProgramState`` of the graph that trains ``tensor`` (``None`` if none has run)."""
    return tensor.__dict__.get("_state_owner")


def trained_by(tensor):
    """The graph that trains ``tensor`` (``None`` if none has run)."""
    return tensor.__dict__.get("_trained_by")


def set_tensor_layout(tensor, placement, sbp):
    """In-place layout change of a parameter or buffer (keeps the logical value)."""
    if tensor._placement is not None and tensor._logical is None:
        raise ValueError("cannot re-layout a buffer whose value is spread over processes")
    Parameter._set_layout(tensor, placement, sbp)


def storage(tensor):
    """The numpy array behind a parameter or buffer."""
    return Parameter._storage(tensor)
