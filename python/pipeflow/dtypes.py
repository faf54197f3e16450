"""Element types: numpy dtypes plus the MLIR element type they lower to.

NumPy has no bfloat16: a ``bfloat16`` tensor holds its values on the host as
float32 numbers rounded to bfloat16 (round to nearest even,
:func:`round_to_bfloat16`), so ``.numpy()`` gives float32 arrays of bfloat16
values; the runtime moves them as 16-bit payloads (:func:`bfloat16_bits`).
"""

import builtins
import numbers

import numpy as np


class dtype:
    """A tensor element type (``pipeflow.float32``, ``pipeflow.int64``, ...)."""

    __slots__ = ("name", "numpy", "mlir")

    def __init__(self, name, numpy_dtype, mlir):
        self.name = name
        self.numpy = np.dtype(numpy_dtype)
        self.mlir = mlir

    @property
    def is_floating_point(self):
        return self.numpy.kind == "f"

    def __repr__(self):
        return f"pipeflow.{self.name}"

    def __reduce__(self):
        return (as_dtype, (self.name,))

    def convert(self, array):
        """``array`` as this type's host values (numpy ``astype``; bfloat16:
        float32 rounded to bfloat16)."""
        if self is bfloat16:
            return round_to_bfloat16(array)
        return np.asarray(array).astype(self.numpy)


float16 = half = dtype("float16", np.float16, "f16")
bfloat16 = dtype("bfloat16", np.float32, "bf16")
float32 = float = dtype("float32", np.float32, "f32")
float64 = double = dtype("float64", np.float64, "f64")
int8 = dtype("int8", np.int8, "i8")
uint8 = dtype("uint8", np.uint8, "ui8")
int32 = int = dtype("int32", np.int32, "i32")
int64 = long = dtype("int64", np.int64, "i64")
bool = dtype("bool", np.bool_, "i1")

_ALL = (float16, float32, float64, int8, uint8, int32, int64, bool)
_BY_NUMPY = {d.numpy: d for d in _ALL}

#: The element types of a compiled graph's tensors (the runtime's dtypes);
#: the others live on the host only.
COMPILED = (float32, bfloat16, float16, int64, int32, bool)
#: The low-precision float types (storage; arithmetic is float32).
LOW = (bfloat16, float16)


def bfloat16_bits(array):
    """The bfloat16 bits (numpy uint16) of ``array`` rounded to nearest even
    (NaN stays a quiet NaN)."""
    f = np.ascontiguousarray(array, dtype=np.float32)
    bits = f.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(f)
    if nan.any():
        rounded[nan] = ((bits[nan] >> 16) | 0x40).astype(np.uint16)
    return rounded


def from_bfloat16_bits(bits):
    """float32 values of bfloat16 ``bits`` (numpy uint16): exact."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def payload(values, np_dtype):
    """``values`` as the runtime's buffer of ``np_dtype``: a bfloat16 buffer
    (numpy uint16) holds the bits of the float32 values rounded."""
    if np.dtype(np_dtype) == np.uint16 and np.asarray(values).dtype != np.uint16:
        return bfloat16_bits(values)
    return np.ascontiguousarray(values, dtype=np_dtype)


def round_to_bfloat16(array):
    """``array`` as float32 rounded to bfloat16 (nearest even)."""
    return from_bfloat16_bits(bfloat16_bits(array)).reshape(np.shape(array))


def _kind(d):
    """0 bool, 1 integer, 2 float: the category promotion goes by."""
    return 2 if d.is_floating_point else (0 if d is bool else 1)


def promote(*operands):
    """The compiled element type that ``operands`` (dtypes of tensors, or
    Python numbers) meet in, as torch promotes: the highest category (bool <
    integer < float) wins, a float being float32; an integer is int64 where
    a tensor of that category is int64 or none is an integer (a Python int),
    else int32. A number never widens a tensor of its own category."""
    tensors = [o for o in operands if isinstance(o, dtype)]
    weak = [bool if isinstance(o, builtins.bool) else int64 if isinstance(o, numbers.Integral)
            else float32 for o in operands if not isinstance(o, dtype)]
    kind = max(_kind(d) for d in tensors + weak)
    if kind == 2:
        # torch: one low type alone (with integers or numbers) stays low;
        # bfloat16 meeting float16, or float32, is float32.
        floats = {d for d in tensors if _kind(d) == 2}
        return floats.pop() if len(floats) == 1 and floats <= set(LOW) else float32
    if kind == 0:
        return bool
    ints = [d for d in tensors if _kind(d) == 1] or weak
    return int64 if any(d is int64 for d in ints) else int32


def from_numpy_dtype(np_dtype):
    """The pipeflow dtype of a numpy dtype (``TypeError`` when unsupported)."""
    try:
        return _BY_NUMPY[np.dtype(np_dtype)]
    except (KeyError, TypeError):
        raise TypeError(f"pipeflow has no element type for numpy dtype {np_dtype!r}") from None


def as_dtype(value):
    """Accepts a pipeflow dtype, a numpy dtype or a dtype name."""
    if isinstance(value, dtype):
        return value
    if isinstance(value, str) and value in globals() and isinstance(globals()[value], dtype):
        return globals()[value]
    return from_numpy_dtype(value)
