"""Deferred initialisation (``nn.init.deferred()``): draws that wait for a read.

Inside ``with nn.init.deferred():`` the random initializers of ``nn.init``
record their ``#pf.init<...>`` recipe and register their draw here, keyed
by the numpy array that will hold the value, instead of drawing. The array
comes from ``np.empty`` and is never touched, so a model of any size costs
no time and no memory to build and lay out (``to_global`` moves the array,
it does not read it). A compiled graph computes an untouched parameter
from its recipe anyway (``nn.parameter.uses_recipe``): ``memory_report`` of
GPT-2 XL, or its training, never draws the 1.5 billion values in Python.

The first read of the value (``Tensor._expose``, ``Tensor._storage``: every
``numpy()``, ``to_local()``, conversion, checkpoint or state_dict) runs the
pending draw into the array, with the generator as it is then: the values
come from the same distribution as an eager initialisation's, not from the
same draws. An initializer applied again replaces the pending draw (a
Linear's default uniform, then the model's normal: one draw, the last).
"""

import weakref

# id(array) -> (weak reference to the array, draw(array)); an entry leaves
# when its draw runs, when it is cancelled or when the array dies.
_pending = {}
_mode = [0]


def active():
    """Whether initializers defer their draws now (inside ``deferred()``)."""
    return _mode[0] > 0


def enter():
    _mode[0] += 1


def leave():
    _mode[0] -= 1


def _forget(key, ref):
    entry = _pending.get(key)
    if entry is not None and entry[0] is ref:
        del _pending[key]


def defer(array, draw):
    """``draw(array)`` runs at the array's first read instead of now."""
    key = id(array)
    entry = _pending.get(key)
    if entry is not None and entry[0]() is array:
        _pending[key] = (entry[0], draw)
        return
    ref = weakref.ref(array)
    _pending[key] = (ref, draw)
    weakref.finalize(array, _forget, key, ref)


def _take(array):
    if array is None or not _pending:
        return None
    entry = _pending.get(id(array))
    if entry is None or entry[0]() is not array:
        return None
    del _pending[id(array)]
    return entry[1]


def materialize(array):
    """Runs ``array``'s pending draw, if any; returns the array."""
    draw = _take(array)
    if draw is not None:
        draw(array)
    return array


def cancel(array):
    """Drops ``array``'s pending draw (its value is about to be written);
    returns the array."""
    _take(array)
    return array


def is_pending(array):
    """Whether ``array`` holds no value yet (its draw waits for a read)."""
    entry = _pending.get(id(array)) if array is not None else None
    return entry is not None and entry[0]() is array
