"""The modules of a graph as ``build`` sees them, and their settings.

A module assigned to a graph attribute is reached through a
:class:`ProxyModule`, whose ``config`` (a :class:`ModuleConfig`, OneFlow's
block config) holds the module's pipeline stage and activation
checkpointing (full or selective); ``proxy.to(nn.graph.GraphModule)``
returns the same settings in OneFlow's newer spelling. The graph keeps the
proxies and configs (``Graph._proxy``, ``Graph._module_config``); the tracer
reads the configs.
"""

import numbers

from ... import _registry
from ..._source import user_location
from ...placement import placement as Placement
from ..module import Module
from .config import setting

# The string values of ``activation_checkpointing`` (besides True and False).
CHECKPOINTING_MODES = ("selective",)


class ModuleConfig:
    """Per-module settings inside a graph (OneFlow's block config). The
    class attributes are the defaults (``None``: inherited); the setters
    set them on the instance with the caller's location."""

    _stage_id = _stage_placement = _stage_loc = None
    _checkpointing = _checkpointing_loc = None

    def __init__(self, name):
        self._name = name

    @property
    def stage_id(self):
        """The pipeline stage of the module's ops (``None``: inherited)."""
        return self._stage_id

    @stage_id.setter
    def stage_id(self, value):
        self._set_stage(value, None, user_location())

    stage_placement = setting("_stage_placement")

    def set_stage(self, stage_id, placement=None):
        """Puts the module's ops in pipeline stage ``stage_id`` on ``placement``."""
        self._set_stage(stage_id, placement, user_location())

    def _set_stage(self, stage_id, placement, loc):
        if isinstance(stage_id, bool) or not isinstance(stage_id, numbers.Integral) or stage_id < 0:
            raise ValueError(f"stage_id must be a non-negative integer, got {stage_id!r}")
        if placement is not None and not isinstance(placement, Placement):
            raise TypeError(f"set_stage(placement=...) expects a pipeflow.placement, got {placement!r}")
        self._stage_id, self._stage_placement, self._stage_loc = int(stage_id), placement, loc
        _registry.module_changes.bump()  # a compiled graph's fingerprint reads the stages

    @property
    def activation_checkpointing(self):
        """Recompute this module's activations in the backward pass: ``True``
        all of them, ``"selective"`` only attention's scores, softmax and
        dropout (Megatron-LM's selective checkpointing), ``False`` none."""
        return self._checkpointing

    @activation_checkpointing.setter
    def activation_checkpointing(self, value):
        if isinstance(value, str) and value not in CHECKPOINTING_MODES:
            raise ValueError("activation_checkpointing must be True, False or "
                             f"{', '.join(map(repr, CHECKPOINTING_MODES))}, got {value!r}")
        self._checkpointing = value if isinstance(value, str) else bool(value)
        self._checkpointing_loc = user_location()
        _registry.module_changes.bump()

    def __repr__(self):
        return (f"ModuleConfig({self._name!r}, stage_id={self._stage_id}, "
                f"activation_checkpointing={self._checkpointing})")


def _on_config(name):
    """A property that reads and sets the ModuleConfig's ``name``."""
    return property(lambda self: getattr(self.config, name),
                    lambda self, value: setattr(self.config, name, value))


class GraphModule:
    """What ``proxy.to(nn.graph.GraphModule)`` returns: the module's graph settings."""

    def __init__(self, proxy):
        self._proxy = proxy

    name = setting("_proxy._name")
    origin = setting("_proxy._module")
    config = setting("_proxy.config")

    def set_stage(self, stage_id, placement=None):
        self.config.set_stage(stage_id, placement)  # located at the caller's line
        return self

    stage_id = _on_config("stage_id")
    activation_checkpointing = _on_config("activation_checkpointing")

    def __repr__(self):
        return f"GraphModule({self.name!r})"


class ProxyModule:
    """A module as seen through a graph attribute: submodules are proxies too."""

    def __init__(self, graph, module, name):
        object.__setattr__(self, "_graph", graph)
        object.__setattr__(self, "_module", module)
        object.__setattr__(self, "_name", name)

    @property
    def config(self):
        return self._graph._module_config(self._module, self._name)

    origin = setting("_module")

    def to(self, target):
        """``to(nn.graph.GraphModule)``: the module's graph settings; ``to(nn.Module)``: the module."""
        if target is GraphModule:
            return GraphModule(self)
        if isinstance(target, type) and issubclass(target, Module):
            return self._module
        raise TypeError(f"ProxyModule.to() expects nn.graph.GraphModule or nn.Module, got {target!r}")

    def __getattr__(self, name):
        value = getattr(self._module, name)
        if isinstance(value, Module):
            return self._graph._proxy(value, f"{self._name}.{name}")
        return value

    def __setattr__(self, name, value):
        if isinstance(value, ProxyModule):
            value = value._module
        setattr(self._module, name, value)

    def __call__(self, *args, **kwargs):
        return self._module(*args, **kwargs)

    def _child_proxy(self, module):
        for key, child in self._module._modules.items():
            if child is module:
                return self._graph._proxy(module, f"{self._name}.{key}")
        return module

    def __getitem__(self, index):
        """``Sequential``/``ModuleList`` indexing: submodules as proxies too."""
        item = self._module[index]
        return self._child_proxy(item) if isinstance(item, Module) else item

    def __len__(self):
        return len(self._module)

    def __iter__(self):
        for item in self._module:
            yield self._child_proxy(item) if isinstance(item, Module) else item

    def __repr__(self):
        return f"(GRAPH MODULE:{self._name}): " + repr(self._module)
