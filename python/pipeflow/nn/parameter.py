"""``nn.Parameter``: a tensor that a module owns and an optimizer updates.

Whether a compiled program owns a parameter's value is kept by
``pipeflow._trained`` (below ``tensor``, which checks it on every read).
"""

import numpy as np

from .. import _layout
from .. import dtypes as dt
from .. import sbp as sbp_mod
from .._source import user_location
from .._trained import is_current, sync, uses_recipe  # noqa: F401 (re-exported)
from ..tensor import Tensor
from . import init as init_mod


class Parameter(Tensor):
    """A trainable tensor. ``_init`` is its ``#pf.init<...>`` initializer.

    Its value lives on the Python side as a numpy array: the local data, or
    the logical value once the owning module is made global (a parameter's
    layout changes, its logical value does not).

    When a graph traces the parameter, the value becomes the compiled
    program's initial value (``set_runtime_init``), computed on first read.
    Once the graph has run, the compiled program owns the trained value
    (``pipeflow._trained.mark_trained``): reading the parameter reads it
    back from the program (see ``pipeflow._state``), or raises when that
    would need the other processes of the job.
    """

    def __new__(cls, data=None, requires_grad=True, init=None):
        return object.__new__(cls)

    def __init__(self, data=None, requires_grad=True, init=None):
        if data is None:
            data = np.empty((0,), dtype=np.float32)
        if isinstance(data, Tensor):
            src = data
            # The new parameter shares the value: the source's is the user's from
            # now on (nn.Parameter(m.fc.weight) after load_state_dict). An
            # untouched initialisation moves to the new parameter
            # (nn.Parameter(w.to_global(placement, sbp)) on a fresh module
            # compiles the same initializer as the module left alone).
            src._pass_recipe(self)
            # A global tensor keeps its local part only where its logical value
            # is spread over the processes (made global from local shards).
            local = src._local if src._placement is None or src._logical is None else None
            self._init_fields(src.dtype, src.shape, local=local, logical=src._logical,
                              placement=src._placement, sbp=src._sbp, requires_grad=requires_grad)
        else:
            array = np.asarray(data)
            self._init_fields(dt.from_numpy_dtype(array.dtype), array.shape, local=array,
                              requires_grad=requires_grad)
        if init is None and isinstance(data, Tensor):
            # nn.Parameter(p.to_global(...)): the initializer's name stays (the
            # IR records it); whether a graph computes the value from it or
            # takes the value given is ``uses_recipe``'s decision.
            init = data.__dict__.get("_init")
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

    def to_global(self, *args, **kwargs):
        """``Tensor.to_global``; the result remembers the name of this
        parameter's initializer (``nn.Parameter(p.to_global(placement, sbp))``
        keeps it in the IR; see ``uses_recipe`` for the value)."""
        out = super().to_global(*args, **kwargs)
        if out is not self and self._init is not None and out.__dict__.get("_init") is None:
            out.__dict__["_init"] = self._init
        return out

    def _set_layout(self, placement, sbp):
        """Makes the parameter global on ``placement``/``sbp`` in place."""
        sbp = sbp_mod.normalize(sbp, placement.ndim)
        _layout.check_layout(self.shape, placement, sbp)
        value = Tensor._storage_raw(self)  # moved, not read: a deferred draw stays
        self._placement, self._sbp = placement, sbp
        self._logical, self._local = value, None

    def __repr__(self):
        trained = self.__dict__.get("_trained_by")
        if trained is not None and not is_current(self):
            return (f"Parameter(shape={list(self.shape)}, placement={self._placement!r}, "
                    f"trained by the compiled {trained})")
        return "Parameter containing:\n" + super().__repr__()


def set_runtime_init(tensor, name, seed):
    """Makes the Python value of a traced parameter or buffer the compiled
    program's initial value (lazily for parameters: large models trace fast)."""
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


def set_tensor_layout(tensor, placement, sbp):
    """In-place layout change of a parameter or buffer (keeps the logical value)."""
    if tensor._placement is not None and tensor._logical is None:
        raise ValueError("cannot re-layout a buffer whose value is spread over processes")
    Parameter._set_layout(tensor, placement, sbp)


def storage(tensor):
    """The numpy array behind a parameter or buffer."""
    return Tensor._storage(tensor)
