"""``pipeflow.nn``: modules, parameters and ``nn.Graph``."""

from . import functional, graph, init, utils
from .activation import GELU, LogSoftmax, Sigmoid, Softmax, Tanh
from .container import ModuleDict, ModuleList, Sequential
from .conv import AdaptiveAvgPool2d, AvgPool2d, Conv2d, MaxPool2d
from .graph import Graph
from .layers import Dropout, Flatten, Identity, Linear, ReLU
from .loss import CrossEntropyLoss
from .module import Module
from .norm import BatchNorm1d, BatchNorm2d
from .normalization import LayerNorm
from .parameter import Parameter
from .sparse import Embedding

__all__ = [
    "Embedding", "GELU", "LayerNorm", "LogSoftmax", "Sigmoid", "Softmax", "Tanh",
    "AdaptiveAvgPool2d", "AvgPool2d", "BatchNorm1d", "BatchNorm2d", "Conv2d", "CrossEntropyLoss",
    "Dropout", "Flatten", "Graph", "Identity", "Linear", "MaxPool2d", "Module", "ModuleDict", "ModuleList",
    "Parameter", "ReLU", "Sequential", "functional", "graph", "init", "utils",
]
