"""``pipeflow.Tensor``: local tensors over numpy and global tensors with a layout.

A *local* tensor is this process's numpy array. A *global* tensor has a
logical shape, a :class:`~pipeflow.placement` and an SBP (one entry per
hierarchy dimension). ``local.to_global(placement, sbp)`` follows OneFlow:
under ``S(k)`` each rank's local is its shard, under ``B`` each rank holds
the whole value, under ``P`` the locals are addends, and a rank outside the
placement holds an empty local.

A process running alone (world size 1) stands for every rank of the
program: the tensor it converts is every rank's local, and the global
tensor keeps its logical numpy value. In a real multi-process job a rank
only knows its own local (and the logical value when it is broadcast);
layout changes that need communication happen inside compiled graphs only.

Inside ``nn.Graph.build`` tensors are *lazy*: they hold a value of the
traced pf IR instead of data.

This module imports neither the ops nor the tracer (both build on it): the
methods that compute or trace call them through ``pipeflow._registry``
(the op methods and operators are :class:`~pipeflow._tensor_ops.TensorOps`'s).
"""

import numpy as np

from . import _deferred, _layout, _mpi, _registry, env
from . import dtypes as dt
from . import sbp as sbp_mod
from ._errors import BackendUnavailable
from ._random import default_generator
from ._tensor_ops import TensorOps, shape_args
from ._trained import sync
from .placement import placement as Placement

# What lazy tensors do (pipeflow._trace), set when that module is imported;
# see pipeflow._registry.
_lazy = _registry.trace


class Size(tuple):
    """A tensor shape (a tuple of ints)."""

    def numel(self):
        n = 1
        for d in self:
            n *= d
        return n

    def __repr__(self):
        return f"pipeflow.Size({list(self)})"


class Tensor(TensorOps):
    """A local, global or lazy (traced) tensor. Build one with the factories."""

    def __init__(self, *args, **kwargs):
        raise TypeError("create tensors with pipeflow.tensor(), randn(), zeros(), from_numpy(), ...")

    # Construction -----------------------------------------------------------

    @classmethod
    def _new(cls, dtype, shape, *, local=None, logical=None, placement=None, sbp=None,
             node=None, device="cpu", requires_grad=False):
        t = object.__new__(cls)
        t._init_fields(dtype, shape, local=local, logical=logical, placement=placement,
                       sbp=sbp, node=node, device=device, requires_grad=requires_grad)
        return t

    def _init_fields(self, dtype, shape, *, local=None, logical=None, placement=None, sbp=None,
                     node=None, device="cpu", requires_grad=False):
        self._dtype = dtype
        self._shape = Size(int(d) for d in shape)
        self._local = local
        self._logical = logical
        self._placement = placement
        self._sbp = sbp
        self._node = node
        self._device = device
        self.requires_grad = requires_grad
        self.grad = None

    @classmethod
    def _from_array(cls, array, device="cpu", requires_grad=False):
        array = np.asarray(array)
        return cls._new(dt.from_numpy_dtype(array.dtype), array.shape, local=array,
                        device=device, requires_grad=requires_grad)

    @classmethod
    def _global_from_logical(cls, logical, placement, sbp, requires_grad=False):
        _layout.check_layout(logical.shape, placement, sbp)
        return cls._new(dt.from_numpy_dtype(logical.dtype), logical.shape, logical=logical,
                        placement=placement, sbp=sbp, requires_grad=requires_grad)

    # Properties -------------------------------------------------------------

    @property
    def shape(self):
        """The (logical) shape."""
        return self._shape

    def size(self, dim=None):
        return self._shape if dim is None else self._shape[dim]

    @property
    def ndim(self):
        return len(self._shape)

    def dim(self):
        return len(self._shape)

    def numel(self):
        return self._shape.numel()

    nelement = numel

    @property
    def dtype(self):
        return self._dtype

    @property
    def device(self):
        return self._device if self._placement is None else self._placement.type

    @property
    def is_global(self):
        return self._placement is not None

    is_consistent = is_global

    @property
    def is_local(self):
        return self._placement is None

    @property
    def is_lazy(self):
        """True for the symbolic tensors of a traced ``nn.Graph.build``."""
        return self._node is not None

    @property
    def placement(self):
        """The placement of a global tensor (``None`` for a local one)."""
        return self._placement

    @property
    def sbp(self):
        """The SBP entries of a global tensor, one per hierarchy dimension."""
        return self._sbp

    @property
    def is_leaf(self):
        return True

    # Data access ------------------------------------------------------------

    def _storage(self):
        """The numpy array holding the value: the local data, or the logical
        value of a global tensor (what loads write into), its deferred draw
        run (``pipeflow._deferred``)."""
        return _deferred.materialize(self._storage_raw())

    def _storage_raw(self):
        """``_storage()`` without running a deferred draw: the array itself,
        for initializers (which write it) and layout changes (which move it)."""
        return self._local if self._placement is None else self._logical

    def _expose(self):
        """The value is now the user's (read, shared or converted): a compiled
        graph must start from it, not recompute it from its initializer
        (see ``nn.parameter.uses_recipe``); a deferred draw runs now."""
        self.__dict__.pop("_recipe_fresh", None)
        # (the arrays themselves: a parameter's _logical may read back or
        # compute its value, which exposing does not ask for)
        d = self.__dict__
        _deferred.materialize(d.get("_local"))
        _deferred.materialize(d.get("_logical", d.get("_logical_value")))

    def _check_not_trained(self):
        """A parameter or buffer a compiled graph trains: read its value back first."""
        if self.__dict__.get("_trained_by") is not None:
            sync(self)

    def numpy(self):
        """The data as a numpy array (the logical value of a global tensor)."""
        if self._node is not None:
            raise RuntimeError("a tensor traced in nn.Graph.build() has no value while tracing")
        self._check_not_trained()
        self._expose()
        if self._placement is None:
            return self._local
        if self._logical is None:
            raise BackendUnavailable(
                "the logical value of this global tensor is spread over several processes, and "
                "gathering it outside nn.Graph is not supported yet (use .to_local() on the "
                "ranks that hold it)")
        return self._logical

    def item(self):
        if self.numel() != 1:
            raise ValueError(f"item() needs a tensor with one element, got shape {list(self._shape)}")
        return self.numpy().reshape(()).item()

    def tolist(self):
        return self.numpy().tolist()

    def __array__(self, dtype=None, copy=None):
        a = self.numpy()
        return a if dtype is None else a.astype(dtype)

    def __len__(self):
        if not self._shape:
            raise TypeError("len() of a 0-d tensor")
        return self._shape[0]

    def __bool__(self):
        if self._node is not None:
            raise RuntimeError("a traced tensor has no truth value: control flow in build() "
                               "cannot depend on tensor values")
        return bool(self.numpy())

    def _eager_value(self):
        """The local numpy value for eager computation (local tensors only)."""
        if self._placement is not None:
            raise NotImplementedError(
                "eager computation on global tensors is not supported: call modules on global "
                "tensors inside nn.Graph.build(), or use local tensors")
        self._expose()
        return self._local

    # Layout conversions -------------------------------------------------------

    def to_global(self, placement=None, sbp=None, *, grad_sbp=None, check_meta=True, copy=False):
        """A global tensor with ``placement`` and ``sbp`` (see the module docstring).

        On a local tensor both are required. On a global tensor this changes
        the layout and keeps the logical value; a missing argument keeps the
        current one.
        """
        if self._node is not None:
            return _lazy.to_global(self, placement, sbp)
        out = self._to_global(placement, sbp, check_meta)
        if out is not self:
            self._pass_recipe(out)
        return out

    def _pass_recipe(self, out):
        """``out`` shares this tensor's value: an untouched initialisation
        (``nn.parameter.uses_recipe``) moves to it with its initializer, as
        ``nn.Parameter(w.to_global(placement, sbp))`` re-lays out a weight
        nobody has read or set; this tensor's value is the user's from now on."""
        fresh = self.__dict__.get("_recipe_fresh", False) and not self.__dict__.get("_loaded", False)
        if fresh:  # the value is shared, not read: a deferred draw stays deferred
            self.__dict__.pop("_recipe_fresh", None)
        else:
            self._expose()
        if fresh:
            out.__dict__["_init"] = self.__dict__.get("_init")
            out.__dict__["_recipe_fresh"] = True

    def _to_global(self, placement, sbp, check_meta=True):
        if self._placement is None:
            if placement is None or sbp is None:
                raise ValueError("to_global() of a local tensor needs both placement and sbp")
            placement = _as_placement(placement)
            return self._local_to_global(placement, sbp_mod.normalize(sbp, placement.ndim),
                                         check_meta)
        placement = self._placement if placement is None else _as_placement(placement)
        if sbp is None:
            if placement.ndim != self._placement.ndim:
                raise ValueError("to_global() onto a placement of another rank needs an sbp")
            sbp = self._sbp
        sbp = sbp_mod.normalize(sbp, placement.ndim)
        _layout.check_layout(self._shape, placement, sbp)
        if self._logical is not None:
            return Tensor._new(self._dtype, self._shape, logical=self._logical, placement=placement,
                               sbp=sbp, requires_grad=self.requires_grad)
        if placement == self._placement and sbp == self._sbp:
            return self
        raise BackendUnavailable(
            f"changing the layout of a global tensor from {self._placement} {self._sbp} to "
            f"{placement} {sbp} needs communication between processes, which is only supported "
            "inside nn.Graph.build() so far")

    to_consistent = to_global

    def _local_to_global(self, placement, sbp, check_meta=True):
        """In a launched job of several processes, ``check_meta`` (OneFlow's)
        takes the local shape and dtype from the placement's ranks, which must
        agree (``pipeflow._mpi.placement_meta``: one all-gather, a collective
        of the job): a rank outside the placement may pass an empty tensor."""
        local, dtype = _deferred.materialize(self._local), self._dtype
        rank, local_shape = env.get_rank(), local.shape
        if check_meta and _mpi.launched():
            local_shape, np_dtype = _mpi.placement_meta(local.shape, local.dtype, placement,
                                                        "to_global()")
            if rank not in placement and np_dtype != local.dtype:
                local = np.empty((0,), np_dtype)
                dtype = dt.from_numpy_dtype(np_dtype)
        shape = _layout.logical_shape(local_shape, placement, sbp)
        _layout.check_layout(shape, placement, sbp)
        if env.get_world_size() == 1:
            logical = _layout.logical_from_replicas(local, placement, sbp)
            return Tensor._new(self._dtype, shape, logical=logical, placement=placement, sbp=sbp,
                               requires_grad=self.requires_grad)
        inside = rank in placement
        broadcast = all(isinstance(s, sbp_mod._Broadcast) for s in sbp)
        return Tensor._new(dtype, shape,
                           local=local if inside else np.empty((0,), dtype=local.dtype),
                           logical=local if inside and broadcast else None,
                           placement=placement, sbp=sbp, requires_grad=self.requires_grad)

    def to_local(self):
        """This rank's local component (a single process reads the first rank's)."""
        if self._node is not None:
            return _lazy.unsupported("to_local() inside nn.Graph.build()")
        if self._placement is None:
            self._expose()
            return self
        self._check_not_trained()
        self._expose()
        if env.get_world_size() == 1:
            rank = self._placement.flat_ranks[0]
        else:
            rank = env.get_rank()
        if self._logical is not None:
            local = _layout.local_of(self._logical, self._placement, self._sbp, rank)
        else:
            local = self._local
        return Tensor._from_array(local)

    def to(self, *args, **kwargs):
        """``to(dtype)`` converts the element type; ``to(device)`` records the device."""
        target = kwargs.get("dtype", kwargs.get("device", args[0] if args else None))
        if isinstance(target, (dt.dtype, np.dtype)) or (isinstance(target, type) and issubclass(target, np.generic)):
            return self._astype(dt.as_dtype(target))
        if isinstance(target, str):
            if self._placement is not None:
                raise ValueError("to(device) of a global tensor: use to_global(placement, sbp)")
            device = target.split(":")[0]
            if device not in ("cpu", "cuda"):
                raise ValueError(f"unknown device {target!r}")
            self._expose()
            return Tensor._from_array(self._local, device=device, requires_grad=self.requires_grad)
        if isinstance(target, Tensor):
            return self._astype(target.dtype)
        raise TypeError(f"to() expects a dtype or a device, got {target!r}")

    def _astype(self, dtype):
        if dtype is self._dtype:
            return self
        if self._node is not None:  # pf.cast (pipeflow._ops_logical)
            return _registry.ops.cast(self, dtype)
        self._expose()
        if self._placement is None:
            return Tensor._new(dtype, self._shape, local=dtype.convert(self._local), device=self._device)
        return Tensor._new(dtype, self._shape,
                           local=None if self._local is None else dtype.convert(self._local),
                           logical=None if self._logical is None else dtype.convert(self._logical),
                           placement=self._placement, sbp=self._sbp)

    def float(self):
        return self._astype(dt.float32)

    def double(self):
        return self._astype(dt.float64)

    def half(self):
        return self._astype(dt.float16)

    def bfloat16(self):
        """bfloat16 values (on the host: float32 numbers rounded to bfloat16)."""
        return self._astype(dt.bfloat16)

    def long(self):
        return self._astype(dt.int64)

    def int(self):
        return self._astype(dt.int32)

    def bool(self):
        return self._astype(dt.bool)

    def cpu(self):
        return self.to("cpu") if self._placement is None else self

    def cuda(self, device=None):
        return self.to("cuda")

    def detach(self):
        self._expose()
        t = Tensor._new(self._dtype, self._shape, local=self._local, logical=self._logical,
                        placement=self._placement, sbp=self._sbp, node=self._node, device=self._device)
        return t

    def clone(self):
        if self._node is not None:
            return self
        self._expose()
        def copy(a):
            return None if a is None else a.copy()

        return Tensor._new(self._dtype, self._shape, local=copy(self._local), logical=copy(self._logical),
                           placement=self._placement, sbp=self._sbp, device=self._device,
                           requires_grad=self.requires_grad)

    def requires_grad_(self, requires_grad=True):
        self.requires_grad = requires_grad
        return self

    # Autograd ---------------------------------------------------------------

    def backward(self, gradient=None, retain_graph=False, create_graph=False):
        """Inside ``nn.Graph.build``: marks this scalar as the loss to minimise."""
        if self._node is not None:
            return _lazy.mark_loss(self)
        raise BackendUnavailable("eager autograd is not supported: call loss.backward() inside "
                                 "nn.Graph.build() and train with the graph")

    # Printing -------------------------------------------------------------------

    def __repr__(self):
        meta = f"dtype={self._dtype!r}"
        if self._placement is not None:
            meta = f"placement={self._placement!r}, sbp={self._sbp}, " + meta
        if self._node is not None:
            return f"tensor(shape={self._shape!r}, {meta}, is_lazy=True)"
        if self._placement is not None and self._logical is None:
            return f"tensor(<spread over ranks>, shape={self._shape!r}, {meta})"
        body = np.array2string(self.numpy(), separator=", ", prefix="tensor(", threshold=64)
        return f"tensor({body}, {meta})"


def _as_placement(value):
    if not isinstance(value, Placement):
        raise TypeError(f"expected a pipeflow.placement, got {value!r}")
    return value


def _finish(array, dtype=None, placement=None, sbp=None, requires_grad=False, device=None):
    """A local tensor, or a global one when ``placement`` is given."""
    if dtype is not None:
        array = array.astype(dt.as_dtype(dtype).numpy, copy=False)
    if placement is None:
        if sbp is not None:
            raise ValueError("sbp given without placement")
        device = "cpu" if device is None else str(device).split(":")[0]
        return Tensor._from_array(array, device=device, requires_grad=requires_grad)
    if sbp is None:
        raise ValueError("a global tensor needs an sbp as well as a placement")
    placement = _as_placement(placement)
    return Tensor._global_from_logical(array, placement, sbp_mod.normalize(sbp, placement.ndim),
                                       requires_grad=requires_grad)


def tensor(data, dtype=None, device=None, placement=None, sbp=None, requires_grad=False):
    """A tensor holding a copy of ``data`` (Python floats become float32)."""
    if isinstance(data, Tensor):
        array = np.array(data.numpy(), copy=True)
    elif isinstance(data, np.ndarray):
        array = np.array(data, copy=True)
    else:
        array = np.array(data)
        if array.dtype == np.float64:
            array = array.astype(np.float32)
        elif array.dtype.kind in "iu":
            array = array.astype(np.int64)
    dt.from_numpy_dtype(array.dtype)
    return _finish(array, dtype, placement, sbp, requires_grad, device)


def from_numpy(array):
    """A local tensor sharing memory with ``array``."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy() expects a numpy.ndarray, got {type(array).__name__}")
    dt.from_numpy_dtype(array.dtype)
    return Tensor._from_array(array)


def zeros(*size, dtype=None, device=None, placement=None, sbp=None, requires_grad=False):
    dtype = dt.as_dtype(dtype or dt.float32)
    return _finish(np.zeros(shape_args(size), dtype=dtype.numpy), None, placement, sbp, requires_grad, device)


def ones(*size, dtype=None, device=None, placement=None, sbp=None, requires_grad=False):
    dtype = dt.as_dtype(dtype or dt.float32)
    return _finish(np.ones(shape_args(size), dtype=dtype.numpy), None, placement, sbp, requires_grad, device)


def full(size, fill_value, dtype=None, device=None, placement=None, sbp=None, requires_grad=False):
    dtype = dt.as_dtype(dtype or dt.float32)
    return _finish(np.full(shape_args((size,)), fill_value, dtype=dtype.numpy), None,
                   placement, sbp, requires_grad, device)


def empty(*size, dtype=None, device=None, placement=None, sbp=None, requires_grad=False):
    return zeros(*size, dtype=dtype, device=device, placement=placement, sbp=sbp,
                 requires_grad=requires_grad)


def randn(*size, dtype=None, generator=None, device=None, placement=None, sbp=None,
          requires_grad=False):
    """Standard-normal samples from the seeded generator (``manual_seed``)."""
    dtype = dt.as_dtype(dtype or dt.float32)
    if not dtype.is_floating_point:
        raise TypeError(f"randn() needs a floating-point dtype, got {dtype}")
    gen = generator or default_generator()
    array = gen.standard_normal(shape_args(size)).astype(dtype.numpy)
    return _finish(array, None, placement, sbp, requires_grad, device)


def rand(*size, dtype=None, generator=None, device=None, placement=None, sbp=None,
         requires_grad=False):
    """Uniform samples in [0, 1) from the seeded generator."""
    dtype = dt.as_dtype(dtype or dt.float32)
    gen = generator or default_generator()
    array = gen.random(shape_args(size)).astype(dtype.numpy)
    return _finish(array, None, placement, sbp, requires_grad, device)


def randint(low, high=None, size=None, *, dtype=None, generator=None, device=None,
            placement=None, sbp=None, requires_grad=False):
    """Integers uniform in ``[low, high)`` (int64 unless ``dtype`` says otherwise).

    ``randint(high, size)`` means ``randint(0, high, size)``.
    """
    if size is None:
        if high is None:
            raise TypeError("randint() needs a size")
        low, high, size = 0, low, high
    if high is None:
        raise TypeError("randint() needs high")
    if high <= low:
        raise ValueError(f"randint() needs low < high, got [{low}, {high})")
    dtype = dt.as_dtype(dtype or dt.int64)
    gen = generator or default_generator()
    array = gen.integers(low, high, size=shape_args((size,)), dtype=np.int64).astype(dtype.numpy)
    return _finish(array, None, placement, sbp, requires_grad, device)


def arange(start, end=None, step=1, dtype=None, device=None, placement=None, sbp=None):
    if end is None:
        start, end = 0, start
    array = np.arange(start, end, step)
    if dtype is None:
        dtype = dt.int64 if array.dtype.kind in "iu" else dt.float32
    return _finish(array, dtype, placement, sbp, False, device)
