"""``nn.Parameter``: a tensor that a module owns and an optimizer updates."""

import numpy as np

from .. import _layout
from .. import sbp as sbp_mod
from .._source import user_location
from ..tensor import Tensor


class Parameter(Tensor):
    """A trainable tensor. ``_init`` is its ``#pf.init<...>`` initializer.

    Its value lives on the Python side as a numpy array: the local data, or
    the logical value once the owning module is made global (a parameter's
    layout changes, its logical value does not).
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
        return "Parameter containing:\n" + super().__repr__()


def set_tensor_layout(tensor, placement, sbp):
    """In-place layout change of a parameter or buffer (keeps the logical value)."""
    if tensor._placement is not None and tensor._logical is None:
        raise ValueError("cannot re-layout a buffer whose value is spread over processes")
    Parameter._set_layout(tensor, placement, sbp)


def storage(tensor):
    """The numpy array behind a parameter or buffer."""
    return Parameter._storage(tensor)
