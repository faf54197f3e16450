"""PipeFlow's Python front end, with OneFlow's API names.

``import pipeflow as flow`` gives local and global tensors over numpy
(``flow.randn``, ``flow.placement``, ``flow.sbp``, ``Tensor.to_global``),
modules (``flow.nn``), optimizers (``flow.optim``) and ``flow.nn.Graph``,
which traces a training step into pf IR and compiles it with ``pf-opt``.
``flow.save``/``flow.load`` write and read state dicts as checkpoint
directories in the runtime's format (``pf-run --save/--load``).
"""

# The ops and _trace first: they provide Tensor's ops and tracing (pipeflow._registry).
from . import (  # noqa: F401
    _ops,
    _ops_elementwise,
    _ops_logical,
    _ops_shape,
    _trace,
    amp,
    config,
    distributed,
    env,
    models,
    nn,
    optim,
    sbp,
    utils,
)
from ._activations import sigmoid, softmax, tanh
from ._checkpoint import load, save
from ._errors import (
    BackendUnavailable,
    CompileError,
    CompilerNotFound,
    StateDictError,
)
from ._grad_mode import enable_grad, inference_mode, no_grad, set_grad_enabled
from ._ops import matmul, relu
from ._ops_elementwise import add, div, masked_fill, mul, sub
from ._ops_logical import (
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    where,
)
from ._ops_shape import cat, chunk, mean, split, stack, tril, triu
from ._ops_shape import cat as concat
from ._ops_shape import reduce_sum as sum
from ._random import Generator, default_generator, initial_seed, manual_seed
from ._sampling import multinomial, topk
from .amp import autocast
from .dtypes import (
    bfloat16,
    bool,
    double,
    dtype,
    float,
    float16,
    float32,
    float64,
    half,
    int,
    int8,
    int32,
    int64,
    long,
    uint8,
)
from .placement import placement
from .tensor import (
    Size,
    Tensor,
    arange,
    empty,
    from_numpy,
    full,
    ones,
    rand,
    randint,
    randn,
    tensor,
    zeros,
)

__version__ = "0.1.0"

__all__ = [
    "BackendUnavailable", "CompileError", "CompilerNotFound", "Generator", "Size", "Tensor", "add",
    "amp", "autocast", "bfloat16",
    "arange", "enable_grad", "inference_mode", "multinomial", "no_grad", "set_grad_enabled",
    "softmax", "stack", "topk",
    "bool", "cat", "chunk", "concat", "config", "default_generator", "distributed", "div", "double",
    "dtype", "empty", "env", "flatten", "float", "float16", "float32", "float64", "from_numpy", "full",
    "half", "initial_seed", "int", "int8", "int32", "int64", "is_tensor", "load", "logical_and",
    "logical_not", "logical_or", "logical_xor", "long",
    "manual_seed", "masked_fill", "matmul", "mean", "models", "mul", "nn", "ones", "optim",
    "placement", "rand", "randint", "randn", "relu", "reshape", "sigmoid", "split", "sub", "sum",
    "tanh", "save", "sbp", "StateDictError", "tensor", "tril", "triu", "uint8", "utils", "where",
    "zeros",
]


def flatten(x, start_dim=0, end_dim=-1):
    """Merges axes ``start_dim..end_dim`` (as ``torch.flatten``)."""
    return _ops.flatten(x, start_dim, end_dim)


def reshape(x, shape):
    return _ops.reshape(x, shape)


def is_tensor(obj):
    return isinstance(obj, Tensor)
