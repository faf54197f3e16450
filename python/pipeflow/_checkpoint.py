"""``flow.save`` and ``flow.load``: state dicts as checkpoint directories.

The format is the runtime's (``pfrt_state_save``/``pfrt_state_load``,
``pf-run --save/--load``), so a checkpoint saved from Python loads into
``pf-run`` and back::

    DIR/<name>.npy      one logical tensor per file (numpy's .npy)
    DIR/index.json      {"format": "pipeflow-checkpoint", "version": 1, "step": N,
                         "tensors": [{"name": .., "dtype": "f32", "shape": [..]}, ...]}

A nested state dict (``nn.Graph.state_dict()`` nests each module's entries
under its attribute name, as OneFlow does) is saved under the dotted names
of its keys: ``{"model": {"linear.weight": w}}`` becomes ``model.linear.weight``,
which is also the compiled program's name of that parameter; each tensor's
entry in the index keeps its key path (``"key": ["model", "linear.weight"]``)
so that :func:`load` gives back the same nesting. The graph's step
(``"System-Train-TrainStep"``, OneFlow's key) is the index's ``step``. Other
plain values (numbers, strings, lists: an optimizer's ``param_groups``) are
kept in the index under ``"objects"``. ``pfrt`` reads only ``format``,
``step`` and the files of the tensors it holds, and ignores the rest.
"""

import json
import numbers
import os
import tempfile
from collections import OrderedDict

import numpy as np

from . import dtypes as dt
from . import env
from ._errors import BackendUnavailable
from .tensor import Tensor

FORMAT = "pipeflow-checkpoint"
VERSION = 1
STEP_KEY = "System-Train-TrainStep"
INDEX = "index.json"

# Element types by the index's names (the runtime reads and writes f32 and i64).
_DTYPES = OrderedDict([("f32", np.dtype(np.float32)), ("i64", np.dtype(np.int64)),
                       ("f64", np.dtype(np.float64)), ("f16", np.dtype(np.float16)),
                       ("i32", np.dtype(np.int32)), ("i8", np.dtype(np.int8)),
                       ("u8", np.dtype(np.uint8)), ("b1", np.dtype(np.bool_))])
_NAMES = {v: k for k, v in _DTYPES.items()}


def _array_of(value, key):
    """The numpy value of a tensor or array leaf (``None`` for other leaves)."""
    if isinstance(value, Tensor):
        if value.is_lazy:
            raise TypeError(f"flow.save: '{key}' is a tensor traced in nn.Graph.build()")
        try:
            return np.asarray(value.numpy())
        except BackendUnavailable as err:
            raise BackendUnavailable(f"flow.save: '{key}': {err}") from None
    if isinstance(value, np.ndarray):
        return value
    return None


def _plain(value, key):
    """A JSON value for a non-tensor leaf, or a TypeError."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    if isinstance(value, (list, tuple)):
        return [_plain(v, key) for v in value]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {k: _plain(v, f"{key}.{k}") for k, v in value.items()}
    raise TypeError(f"flow.save: '{key}' is a {type(value).__name__}; a checkpoint holds tensors, "
                    "numpy arrays, numbers, strings and lists or dicts of them, in (nested) dicts")


def _leaves(obj, path=()):
    for key, value in obj.items():
        if isinstance(key, bool) or not isinstance(key, (str, numbers.Integral)):
            raise TypeError(f"flow.save: state dict keys must be strings or integers, got {key!r}")
        key = key if isinstance(key, str) else int(key)
        if isinstance(value, dict) and value:
            yield from _leaves(value, path + (key,))
        else:
            yield path + (key,), value


def _name(path):
    return ".".join(str(k) for k in path)


def _write_atomically(path, write):
    directory = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path) + ".", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def save(obj, path, global_dst_rank=None):
    """Saves a state dict ``obj`` (tensors in possibly nested dicts) to the
    checkpoint directory ``path`` (created if needed; see the module docstring).

    Global tensors are saved as their logical values. With
    ``global_dst_rank`` (OneFlow's argument) only that process writes and the
    others return at once; without it every process that calls ``save``
    writes (each file is replaced atomically, so processes writing the same
    values to one directory do not corrupt it). ``save`` does not wait for
    the other processes: before other ranks read the checkpoint, make them
    wait for the writer (``nn.Graph.save_checkpoint`` is collective and
    does), or read it in a later job.
    """
    if not isinstance(obj, dict):
        raise TypeError(f"flow.save saves a state dict (a dict of tensors), got {type(obj).__name__}")
    if global_dst_rank is not None and env.get_rank() != int(global_dst_rank):
        return
    path = os.fspath(path)
    step = 0
    tensors, objects, names = [], [], {}
    for key, value in _leaves(obj):
        name = _name(key)
        if key == (STEP_KEY,):
            array = _array_of(value, name)
            step = int(np.asarray(array if array is not None else value).reshape(-1)[0])
            if step < 0:
                raise ValueError(f"flow.save: '{STEP_KEY}' is negative ({step})")
            continue
        array = _array_of(value, name)
        if array is None:
            objects.append({"key": list(key), "value": _plain(value, name)})
            continue
        if not name or "/" in name or name == "index":
            raise ValueError(f"flow.save: cannot name a file after key {name!r} (it must be "
                             "non-empty, without '/', and not 'index')")
        if name in names:
            raise ValueError(f"flow.save: keys {list(names[name])} and {list(key)} both save as "
                             f"'{name}.npy'")
        names[name] = key
        dtype = _NAMES.get(array.dtype)
        if dtype is None:
            raise TypeError(f"flow.save: '{name}' has dtype {array.dtype}, which checkpoints do not "
                            f"hold (supported: {', '.join(str(d) for d in _DTYPES.values())})")
        tensors.append((name, key, dtype, np.ascontiguousarray(array)))
    if os.path.exists(path) and not os.path.isdir(path):
        raise FileExistsError(f"flow.save: {path} exists and is not a directory")
    os.makedirs(path, exist_ok=True)
    entries = []
    for name, key, dtype, array in tensors:
        _write_atomically(os.path.join(path, name + ".npy"),
                          lambda f, a=array: np.save(f, a, allow_pickle=False))
        entries.append({"name": name, "dtype": dtype, "shape": list(array.shape), "key": list(key)})
    # "format" and "step" come first: the runtime finds them by their text.
    index = OrderedDict([("format", FORMAT), ("version", VERSION), ("step", step),
                         ("tensors", entries)])
    if objects:
        index["objects"] = objects
    text = json.dumps(index, indent=2) + "\n"
    # The index last: a directory without index.json is an incomplete checkpoint.
    _write_atomically(os.path.join(path, INDEX), lambda f: f.write(text.encode()))


def read_index(path):
    """The parsed index.json of checkpoint ``path`` (checked)."""
    index_path = os.path.join(os.fspath(path), INDEX)
    if not os.path.isdir(path):
        raise FileNotFoundError(f"no checkpoint at {path}: not a directory")
    if not os.path.exists(index_path):
        raise FileNotFoundError(f"no checkpoint at {path}: {index_path} does not exist (an "
                                "unfinished save writes it last)")
    try:
        with open(index_path) as f:
            index = json.load(f, object_pairs_hook=OrderedDict)
    except ValueError as err:
        raise ValueError(f"{index_path} is not valid JSON: {err}") from None
    if not isinstance(index, dict) or index.get("format") != FORMAT:
        raise ValueError(f"{index_path} is not a PipeFlow checkpoint index (no \"format\": \"{FORMAT}\")")
    version = index.get("version")
    if not isinstance(version, int) or version > VERSION:
        raise ValueError(f"{index_path} has version {version!r}; this front end reads version {VERSION}")
    step = index.get("step")
    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        raise ValueError(f"{index_path} has no valid \"step\"")
    tensors = index.get("tensors")
    if not isinstance(tensors, list) or any(not isinstance(t, dict) or "name" not in t for t in tensors):
        raise ValueError(f"{index_path} has no valid \"tensors\" list")
    return index


def load(path, mmap=False):
    """The state dict saved in checkpoint directory ``path`` (by :func:`save`,
    ``nn.Graph.save_checkpoint`` or ``pf-run --save``): local tensors, nested
    as they were saved (checkpoints written by the runtime are flat, by the
    compiled program's names), plus ``"System-Train-TrainStep"`` (an int64
    tensor of shape [1]) when the checkpoint's step is not 0. ``mmap=True``
    maps the files instead of reading them."""
    path = os.fspath(path)
    index = read_index(path)
    out = OrderedDict()

    def put(key, value):
        node = out
        for k in key[:-1]:
            node = node.setdefault(k, OrderedDict())
            if not isinstance(node, dict):
                raise ValueError(f"{path}: key {list(key)} nests inside a tensor")
        node[key[-1]] = value

    for entry in index["tensors"]:
        name = entry["name"]
        file = os.path.join(path, f"{name}.npy")
        if not isinstance(name, str) or not name or "/" in name:
            raise ValueError(f"{path}/{INDEX}: bad tensor name {name!r}")
        if not os.path.exists(file):
            raise FileNotFoundError(f"{path}: {file} is listed in {INDEX} but does not exist")
        try:
            array = np.load(file, mmap_mode="r" if mmap else None, allow_pickle=False)
        except ValueError as err:
            raise ValueError(f"{file}: {err}") from None
        want = _DTYPES.get(entry.get("dtype"))
        if want is not None and array.dtype != want:
            raise ValueError(f"{file} holds {array.dtype}, but {INDEX} says {entry.get('dtype')}")
        if "shape" in entry and list(array.shape) != list(entry["shape"]):
            raise ValueError(f"{file} has shape {list(array.shape)}, but {INDEX} says {entry['shape']}")
        key = tuple(entry.get("key") or (name,))
        put(key, Tensor._new(dt.from_numpy_dtype(array.dtype), array.shape, local=array))
    for entry in index.get("objects", ()):
        put(tuple(entry["key"]), entry["value"])
    if index["step"] and STEP_KEY not in out:
        out[STEP_KEY] = Tensor._new(dt.int64, (1,), local=np.array([index["step"]], np.int64))
    return out
