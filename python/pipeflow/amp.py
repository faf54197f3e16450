"""Mixed precision: ``flow.autocast`` (``flow.amp.autocast``).

``graph.config.enable_amp(True, dtype=flow.bfloat16)`` converts a whole
graph (the compiler's ``pf-autocast``); ``with flow.autocast(...)`` inside
``nn.Graph.build()`` converts the ops traced inside it only: each carries
the attribute ``pf.autocast = "bf16" | "f16"`` (``"f32"`` with
``enabled=False``, which keeps the ops out of a graph-wide autocast), and
``pf-autocast`` applies torch's rules to them: GEMMs in the low type,
softmax, norms, reductions and the loss in float32, element-wise ops in the
type of their operands. Parameters, their gradients and the optimizer's
states stay float32.
"""

import contextlib

from . import dtypes as dt

_regions = []  # the pf.autocast value of each open ``autocast``, innermost last


def low_dtype(dtype, device_type="cuda"):
    """``dtype`` as a low-precision pipeflow dtype (``None``: float16, as
    OneFlow and torch on CUDA; bfloat16 on the CPU, as torch)."""
    if dtype is None:
        return dt.float16 if device_type == "cuda" else dt.bfloat16
    dtype = dt.as_dtype(dtype)
    if dtype not in dt.LOW:
        raise ValueError(f"autocast computes in flow.bfloat16 or flow.float16, not {dtype}")
    return dtype


class autocast(contextlib.ContextDecorator):  # noqa: N801 (torch's and OneFlow's name)
    """``with flow.autocast(device_type="cuda", dtype=flow.bfloat16):`` or
    ``@flow.autocast(...)``: the ops traced inside run in mixed precision."""

    def __init__(self, device_type="cuda", dtype=None, enabled=True, cache_enabled=None):
        if device_type not in ("cuda", "cpu"):
            raise ValueError(f"autocast device_type must be 'cuda' or 'cpu', got {device_type!r}")
        self.dtype = low_dtype(dtype, device_type)
        self.enabled = bool(enabled)

    def __enter__(self):
        _regions.append(self.dtype.mlir if self.enabled else "f32")
        return self

    def __exit__(self, *exc):
        _regions.pop()
        return False


def current():
    """The ``pf.autocast`` value of the ops traced now, or ``None``."""
    return _regions[-1] if _regions else None


from ._grad_scaler import GradScaler, StaticGradScaler  # noqa: E402, F401 (flow.amp's names)
