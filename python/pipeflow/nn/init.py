"""Parameter initializers: numpy values now, ``#pf.init<...>`` for the compiler.

Each returns the attribute text the IR records; the runtime re-creates the
same distribution from it with its counter-based generator. When a graph
traces a parameter, its Python value becomes the compiled program's initial
value (``runtime_values``: the same Philox draws, keyed by the seed and the
parameter's symbol), computed lazily on first read.
"""

import contextlib
import importlib.util
import math
import os
import re

import numpy as np

from .. import _deferred, _registry
from .._random import default_generator
from ..ir import format_float


@contextlib.contextmanager
def deferred():
    """Builds modules without drawing their random initial values
    (``pipeflow._deferred``), as PyTorch users build a large model on the
    meta device::

        with flow.nn.init.deferred():
            model = GPT(config)          # no draws: no time, no memory
        model.to_global(placement, sbp)  # moves the (empty) arrays
        graph.memory_report(x, y)        # compiles; nothing is drawn

    The initializers record their ``#pf.init<...>`` recipe, which a compiled
    graph computes on its ranks as for any untouched parameter; a value read
    in Python first (``numpy()``, ``state_dict()``, a conversion) is drawn
    then, from the same distribution. Constant initialisations (zeros, ones)
    are written at once."""
    _deferred.enter()
    try:
        yield
    finally:
        _deferred.leave()


def _target(tensor):
    """The array an initializer writes: the tensor's storage, a draw still
    pending on it dropped (this initialisation replaces it)."""
    return _deferred.cancel(tensor._storage_raw())


def _fill(tensor, array):
    target = _target(tensor)
    if array is not target:
        target[...] = array
    _fresh(tensor)


def _fresh(tensor):
    # Until the value is read, shared or replaced, a compiled graph may
    # compute it from the initializer instead (nn.parameter.uses_recipe).
    tensor.__dict__["_recipe_fresh"] = True
    tensor.__dict__["_loaded"] = False
    _registry.module_changes.bump()  # the initializer is in a compiled graph's fingerprint


def _draw(tensor, into):
    """Fills the tensor by ``into(array)`` (a draw into a float32 or float64
    C-contiguous array), now, or at the first read inside ``deferred()``;
    ``into(None)`` returns a new array for other storage."""
    target = _target(tensor)
    if target.dtype not in (np.float32, np.float64) or not target.flags.c_contiguous:
        _fill(tensor, into(None))
    elif _deferred.active() and target.size > 0:
        _deferred.defer(target, into)
        _fresh(tensor)
    else:
        into(target)
        _fresh(tensor)


def _uniform_into(a, b, shape):
    """U(a, b) drawn in the array's precision (float32: half the time and
    memory of float64 draws, which a 124M-parameter model feels), into the
    array itself (no second array of a model's size to fault in and copy)."""
    def into(u):
        if u is None:
            return default_generator().uniform(a, b, shape)
        default_generator().random(dtype=u.dtype, out=u)
        u *= u.dtype.type(b - a)
        u += u.dtype.type(a)
        return u
    return into


def _normal_into(mean, std, shape):
    def into(z):
        if z is None:
            return default_generator().normal(mean, std, shape)
        default_generator().standard_normal(dtype=z.dtype, out=z)
        z *= z.dtype.type(std)
        z += z.dtype.type(mean)
        return z
    return into


def uniform_(tensor, a=0.0, b=1.0):
    _draw(tensor, _uniform_into(a, b, tensor.shape))
    tensor._init = f"#pf.init<uniform({format_float(a)}, {format_float(b)})>"
    return tensor


def normal_(tensor, mean=0.0, std=1.0):
    _draw(tensor, _normal_into(mean, std, tensor.shape))
    tensor._init = f"#pf.init<normal({format_float(mean)}, {format_float(std)})>"
    return tensor


def constant_(tensor, value):
    _fill(tensor, value)
    if value == 0:
        tensor._init = "#pf.init<zeros>"
    elif value == 1:
        tensor._init = "#pf.init<ones>"
    else:
        tensor._init = f"#pf.init<constant({format_float(value)})>"
    return tensor


def zeros_(tensor):
    return constant_(tensor, 0.0)


def ones_(tensor):
    return constant_(tensor, 1.0)


def default_uniform_(tensor, fan_in):
    """U(-1/sqrt(fan_in), 1/sqrt(fan_in)): PyTorch's default for Linear and Conv2d
    weights (kaiming_uniform with a=sqrt(5)) and biases."""
    bound = 1.0 / math.sqrt(fan_in)
    _draw(tensor, _uniform_into(-bound, bound, tensor.shape))
    tensor._init = f"#pf.init<kaiming_uniform({int(fan_in)})>"
    return tensor


# The compiled programs' initial values ------------------------------------------------

_INIT = re.compile(r"^#pf\.init<\s*(?P<kind>[a-z_]+)\s*(?:\((?P<args>[^)]*)\))?\s*>$")
_philox = None


def philox():
    """runtime/python/pfrt_philox.py, the bit-exact NumPy twin of libpfrt's initialisers."""
    global _philox
    if _philox is None:
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
        path = os.path.join(root, "runtime", "python", "pfrt_philox.py")
        if not os.path.isfile(path):
            raise ImportError(f"cannot find {path}: the compiled programs' parameter initialisation "
                              "needs the runtime's pfrt_philox.py next to the python/ directory")
        spec = importlib.util.spec_from_file_location("pipeflow._pfrt_philox", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _philox = module
    return _philox


def parse_init(text):
    """``#pf.init<kind(a, b)>`` -> (pfrt kind number, a, b)."""
    m = _INIT.match(text.strip())
    if m is None:
        raise ValueError(f"cannot parse the initializer {text!r}")
    ph = philox()
    kinds = {"zeros": (ph.INIT_ZEROS, 0), "ones": (ph.INIT_ONES, 0), "constant": (ph.INIT_CONSTANT, 1),
             "uniform": (ph.INIT_UNIFORM, 2), "normal": (ph.INIT_NORMAL, 2),
             "kaiming_uniform": (ph.INIT_KAIMING_UNIFORM, 1)}
    if m["kind"] not in kinds:
        raise ValueError(f"unknown initializer kind in {text!r}")
    kind, arity = kinds[m["kind"]]
    args = [float(a) for a in m["args"].split(",")] if m["args"] else []
    if len(args) != arity:
        raise ValueError(f"{text!r}: {m['kind']} takes {arity} arguments")
    args += [0.0] * (2 - len(args))
    return kind, args[0], args[1]


def runtime_values(text, name, shape, seed):
    """The float32 logical value the compiled program gives parameter ``name``:
    ``pfrt_init_param(kind, a, b, seed, pfrt_stream_id(name), shape)``."""
    kind, a, b = parse_init(text)
    ph = philox()
    return ph.init_param(kind, a, b, seed, ph.stream_id(name), tuple(shape))
