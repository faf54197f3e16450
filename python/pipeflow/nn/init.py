"""Parameter initializers: numpy values now, ``#pf.init<...>`` for the compiler.

Each returns the attribute text the IR records; the runtime re-creates the
same distribution from it with its counter-based generator. When a graph
traces a parameter, its Python value becomes the compiled program's initial
value (``runtime_values``: the same Philox draws, keyed by the seed and the
parameter's symbol), computed lazily on first read.
"""

import importlib.util
import math
import os
import re

import numpy as np

from .. import _registry
from .._random import default_generator
from ..ir import format_float


def _fill(tensor, array):
    if array is not tensor._storage():
        tensor._storage()[...] = array
    # Until the value is read, shared or replaced, a compiled graph may
    # compute it from the initializer instead (nn.parameter.uses_recipe).
    tensor.__dict__["_recipe_fresh"] = True
    tensor.__dict__["_loaded"] = False
    _registry.module_changes.bump()  # the initializer is in a compiled graph's fingerprint


def _uniform(tensor, a, b):
    """U(a, b) drawn in the tensor's precision (float32: half the time and
    memory of float64 draws, which a 124M-parameter model feels)."""
    u = tensor._storage()
    dtype = u.dtype
    if dtype not in (np.float32, np.float64) or not u.flags.c_contiguous:
        return default_generator().uniform(a, b, tensor.shape)
    # Drawn into the storage itself (the same draws as a new array's):
    # no second array of a model's size to fault in and copy.
    default_generator().random(dtype=dtype, out=u)
    u *= dtype.type(b - a)
    u += dtype.type(a)
    return u


def _normal(tensor, mean, std):
    z = tensor._storage()
    dtype = z.dtype
    if dtype not in (np.float32, np.float64) or not z.flags.c_contiguous:
        return default_generator().normal(mean, std, tensor.shape)
    default_generator().standard_normal(dtype=dtype, out=z)
    z *= dtype.type(std)
    z += dtype.type(mean)
    return z


def uniform_(tensor, a=0.0, b=1.0):
    _fill(tensor, _uniform(tensor, a, b))
    tensor._init = f"#pf.init<uniform({format_float(a)}, {format_float(b)})>"
    return tensor


def normal_(tensor, mean=0.0, std=1.0):
    _fill(tensor, _normal(tensor, mean, std))
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
    _fill(tensor, _uniform(tensor, -bound, bound))
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
