"""``Tensor``'s operator and op methods (``x + y``, ``x.view(...)``, ``x[i]``, ...).

:class:`TensorOps` is a base of ``pipeflow.Tensor``: every method calls the
eager/traced op through ``pipeflow._registry`` (the ops sit above
``tensor``). Comparisons are element-wise, as in torch, so tensors hash by
identity.
"""

import numbers

from . import _registry

_ops = _registry.ops


def shape_args(args):
    """``f(2, 3)`` and ``f((2, 3))`` both mean shape (2, 3)."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = args[0]
    for d in args:
        if isinstance(d, bool) or not isinstance(d, numbers.Integral):
            raise TypeError(f"shape entries must be integers, got {d!r}")
    return tuple(int(d) for d in args)


class TensorOps:
    """The op methods of ``pipeflow.Tensor``."""

    __slots__ = ()
    __hash__ = object.__hash__

    # Shapes -----------------------------------------------------------------------

    def flatten(self, start_dim=0, end_dim=-1):
        return _ops.flatten(self, start_dim, end_dim)

    def reshape(self, *shape):
        return _ops.reshape(self, shape_args(shape))

    view = reshape

    def contiguous(self):
        """The tensor itself (values have no strides here)."""
        return self

    def transpose(self, dim0, dim1):
        perm = list(range(self.ndim))
        perm[dim0], perm[dim1] = perm[dim1], perm[dim0]
        return _ops.permute(self, perm)

    def permute(self, *dims):
        return _ops.permute(self, shape_args(dims))

    @property
    def T(self):
        return self.permute(*reversed(range(self.ndim)))

    def __getitem__(self, index):
        return _ops.getitem(self, index)

    def __setitem__(self, index, value):
        _ops.setitem(self, index, value)

    def split(self, split_size_or_sections, dim=0):
        return _ops.split(self, split_size_or_sections, dim)

    def chunk(self, chunks, dim=0):
        return _ops.chunk(self, chunks, dim)

    # Reductions and element-wise ops ----------------------------------------------------

    def sum(self, dim=None, keepdim=False):
        return _ops.sum(self, dim, keepdim)

    def mean(self, dim=None, keepdim=False):
        return _ops.mean(self, dim, keepdim)

    def relu(self):
        return _ops.relu(self)

    def masked_fill(self, mask, value):
        return _ops.masked_fill(self, mask, value)

    def where(self, condition, y):
        """``self`` where ``condition``, else ``y`` (torch's ``Tensor.where``)."""
        return _ops.where(condition, self, y)

    def logical_and(self, other):
        return _ops.logical("and", self, other)

    def logical_or(self, other):
        return _ops.logical("or", self, other)

    def logical_xor(self, other):
        return _ops.logical("xor", self, other)

    def logical_not(self):
        return _ops.logical("not", self)

    def __invert__(self):
        return _ops.invert(self)

    def matmul(self, other):
        return _ops.matmul(self, other)

    def __matmul__(self, other):
        return self.matmul(other)

    # One-element tensors as Python numbers (``data[i:i + n]`` with a tensor ``i``).

    def __index__(self):
        if self.dtype.is_floating_point or self.numel() != 1:
            raise TypeError(f"only one-element integer tensors can be an index, got shape "
                            f"{list(self.shape)} and dtype {self.dtype}")
        return int(self.item())

    def __int__(self):
        return int(self.item())

    def __float__(self):
        return float(self.item())

    def __format__(self, spec):
        # f"{loss:.4f}" of a one-element tensor formats its number, as torch's
        if spec and self.numel() == 1 and not self.is_lazy:
            return format(self.item(), spec)
        return object.__format__(self, spec) if spec else str(self)

    def __neg__(self):
        return _ops.binary("mul", self, -1.0 if self.dtype.is_floating_point else -1)



def _operator(op, kind, reflected=False):
    """``x <op> y`` (or, reflected, ``y <op> x``) as ``_ops.<op>(kind, ...)``."""
    if reflected:
        return lambda self, other: getattr(_ops, op)(kind, other, self)
    return lambda self, other: getattr(_ops, op)(kind, self, other)


for _kind in ("add", "sub", "mul"):
    setattr(TensorOps, f"__{_kind}__", _operator("binary", _kind))
    setattr(TensorOps, f"__r{_kind}__", _operator("binary", _kind, reflected=True))
TensorOps.__truediv__ = _operator("binary", "div")
TensorOps.__rtruediv__ = _operator("binary", "div", reflected=True)
for _kind in ("eq", "ne", "lt", "le", "gt", "ge"):
    setattr(TensorOps, f"__{_kind}__", _operator("compare", _kind))
    setattr(TensorOps, _kind, _operator("compare", _kind))
for _kind in ("and", "or", "xor"):
    setattr(TensorOps, f"__{_kind}__", _operator("bitwise", _kind))
    setattr(TensorOps, f"__r{_kind}__", _operator("bitwise", _kind, reflected=True))
