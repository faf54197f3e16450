"""Element types: numpy dtypes plus the MLIR element type they lower to."""

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
        return (from_numpy_dtype, (self.numpy,))


float16 = half = dtype("float16", np.float16, "f16")
float32 = float = dtype("float32", np.float32, "f32")
float64 = double = dtype("float64", np.float64, "f64")
int8 = dtype("int8", np.int8, "i8")
uint8 = dtype("uint8", np.uint8, "ui8")
int32 = int = dtype("int32", np.int32, "i32")
int64 = long = dtype("int64", np.int64, "i64")
bool = dtype("bool", np.bool_, "i1")

_ALL = (float16, float32, float64, int8, uint8, int32, int64, bool)
_BY_NUMPY = {d.numpy: d for d in _ALL}


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
