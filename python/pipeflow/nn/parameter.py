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
    Once the graph has run, the compiled program owns the trained value and
    reading the stale Python copy is an error (``mark_trained``).
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
        trained = d.get("_trained_by")
        if trained is not None:
            raise BackendUnavailable(stale_message(d.get("_symbol"), trained))
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
        if trained is not None:
            return (f"Parameter(shape={list(self.shape)}, placement={self._placement!r}, "
                    f"trained by the compiled {trained})")
        return "Parameter containing:\n" + super().__repr__()


def stale_message(name, graph):
    what = f"'{name}'" if name else "this parameter"
    return (f"reading trained parameters back from a compiled graph is not supported yet: {what} "
            f"is trained by the compiled {graph}, which keeps its value on the ranks that run it; "
            "the Python copy still holds the initial value")


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


def mark_trained(tensor, name, graph):
    """After a graph's first step: the compiled program owns the value."""
    tensor.__dict__["_symbol"] = name
    tensor.__dict__["_trained_by"] = graph


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
