"""``nn.Module``: parameters, buffers and child modules, with a ``forward``."""

from collections import OrderedDict, namedtuple

import numpy as np

from .. import _registry, _trace
from .. import sbp as sbp_mod
from .._errors import StateDictError
from .._source import user_location
from .._trained import state_owner, sync, trained_by
from ..placement import placement as Placement
from ..tensor import Tensor
from .parameter import Parameter, set_tensor_layout, storage

IncompatibleKeys = namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])
_changes = _registry.module_changes


class _Registry(OrderedDict):
    """A module's parameters, buffers or submodules: an ordered dict whose every
    change counts in ``_registry.module_changes`` (compiled graphs check their
    modules again only after a change, see ``nn._graph.execution``), however
    it is made (``setattr``, ``register_*``, ``ModuleDict.pop``, ...)."""

    __slots__ = ()

    def __setitem__(self, key, value):
        _changes.bump()
        super().__setitem__(key, value)

    def __delitem__(self, key):
        _changes.bump()
        super().__delitem__(key)

    def __ior__(self, other):
        _changes.bump()
        return super().__ior__(other)

    def pop(self, *args):
        _changes.bump()
        return super().pop(*args)

    def popitem(self, last=True):
        _changes.bump()
        return super().popitem(last)

    def clear(self):
        _changes.bump()
        super().clear()

    def update(self, *args, **kwargs):
        _changes.bump()
        super().update(*args, **kwargs)

    def setdefault(self, key, default=None):
        _changes.bump()
        return super().setdefault(key, default)

    def move_to_end(self, key, last=True):
        _changes.bump()
        super().move_to_end(key, last)


class Module:
    """Base class of all layers and models.

    Assigning a :class:`Parameter` or a ``Module`` to an attribute registers
    it; ``register_buffer`` registers non-trainable state. Calling the module
    runs ``forward`` (inside ``nn.Graph.build`` the call is also a scope that
    gives the recorded ops their stage and checkpointing flags).
    """

    def __init__(self):
        object.__setattr__(self, "_parameters", _Registry())
        object.__setattr__(self, "_buffers", _Registry())
        object.__setattr__(self, "_non_persistent", set())
        object.__setattr__(self, "_modules", _Registry())
        object.__setattr__(self, "training", True)

    # Registration ---------------------------------------------------------------

    def _registries(self):
        try:
            return self.__dict__["_parameters"], self.__dict__["_buffers"], self.__dict__["_modules"]
        except KeyError:
            raise AttributeError(
                f"{type(self).__name__}.__init__ must call super().__init__() before assigning "
                "parameters or submodules") from None

    def __setattr__(self, name, value):
        if isinstance(value, (Parameter, Module)) or name in self.__dict__.get("_buffers", ()):
            params, buffers, modules = self._registries()
            for registry in (params, buffers, modules):
                registry.pop(name, None)
            self.__dict__.pop(name, None)
            if isinstance(value, Parameter):
                params[name] = value
            elif isinstance(value, Module):
                modules[name] = value
            else:
                if value is not None and not isinstance(value, Tensor):
                    raise TypeError(f"buffer '{name}' must be a Tensor or None, got {type(value).__name__}")
                buffers[name] = value
            return
        for registry in ("_parameters", "_modules"):
            if name in self.__dict__.get(registry, ()):
                if value is None:
                    self.__dict__[registry][name] = None
                    return
                raise TypeError(f"cannot assign {type(value).__name__} to '{name}': it is a registered "
                                f"{'parameter' if registry == '_parameters' else 'submodule'}")
        if name == "training":
            _changes.bump()
        object.__setattr__(self, name, value)

    def __getattr__(self, name):
        for registry in ("_parameters", "_buffers", "_modules"):
            entries = self.__dict__.get(registry)
            if entries is not None and name in entries:
                return entries[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        for registry in ("_parameters", "_buffers", "_modules"):
            if name in self.__dict__.get(registry, ()):
                del self.__dict__[registry][name]
                return
        object.__delattr__(self, name)

    def register_parameter(self, name, param):
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"register_parameter('{name}') expects a Parameter, got {type(param).__name__}")
        self._registries()[0][name] = param

    def register_buffer(self, name, tensor, persistent=True):
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"register_buffer('{name}') expects a Tensor, got {type(tensor).__name__}")
        self._registries()[1][name] = tensor
        if not persistent:
            self._non_persistent.add(name)

    def add_module(self, name, module):
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"add_module('{name}') expects a Module, got {type(module).__name__}")
        self._registries()[2][name] = module

    register_module = add_module

    # Traversal ------------------------------------------------------------------

    def named_modules(self, memo=None, prefix=""):
        memo = set() if memo is None else memo
        if id(self) in memo:
            return
        memo.add(id(self))
        yield prefix, self
        for name, child in self._modules.items():
            if child is not None:
                yield from child.named_modules(memo, f"{prefix}.{name}" if prefix else name)

    def modules(self):
        for _, m in self.named_modules():
            yield m

    def named_children(self):
        seen = set()
        for name, child in self._modules.items():
            if child is not None and id(child) not in seen:
                seen.add(id(child))
                yield name, child

    def children(self):
        for _, child in self.named_children():
            yield child

    def _named_members(self, registry, prefix, recurse):
        seen = set()
        modules = self.named_modules(prefix=prefix) if recurse else [(prefix, self)]
        for module_prefix, module in modules:
            for name, value in getattr(module, registry).items():
                if value is None or id(value) in seen:
                    continue
                seen.add(id(value))
                yield (f"{module_prefix}.{name}" if module_prefix else name), value

    def named_parameters(self, prefix="", recurse=True):
        return self._named_members("_parameters", prefix, recurse)

    def parameters(self, recurse=True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix="", recurse=True):
        return self._named_members("_buffers", prefix, recurse)

    def buffers(self, recurse=True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def apply(self, fn):
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    # Modes and placement ----------------------------------------------------------

    def train(self, mode=True):
        _changes.bump()
        for m in self.modules():
            object.__setattr__(m, "training", bool(mode))
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad = requires_grad
        return self

    def zero_grad(self, set_to_none=True):
        for p in self.parameters():
            p.grad = None

    def to_global(self, placement=None, sbp=None):
        """Sets the placement and SBP of every parameter and buffer, in place.

        The logical values (and shapes) stay; only their layout changes. With
        ``placement`` or ``sbp`` omitted, global tensors keep theirs.
        """
        if placement is not None and not isinstance(placement, Placement):
            raise TypeError(f"to_global() expects a pipeflow.placement, got {placement!r}")
        for name, tensor in list(self.named_parameters()) + list(self.named_buffers()):
            target = placement if placement is not None else tensor.placement
            entries = sbp if sbp is not None else tensor.sbp
            if target is None or entries is None:
                raise ValueError(f"'{name}' is local: to_global() needs both placement and sbp")
            if sbp is None and target.ndim != len(entries):
                raise ValueError(f"'{name}': the new placement needs an sbp with {target.ndim} entries")
            _changes.bump()  # layouts are in a compiled graph's fingerprint
            try:
                set_tensor_layout(tensor, target, sbp_mod.normalize(entries, target.ndim))
            except ValueError as err:
                raise ValueError(f"cannot lay out '{name}' of shape {list(tensor.shape)}: {err}") from None
        return self

    to_consistent = to_global

    def to(self, *args, **kwargs):
        """``to(device)`` for local modules (the data stays in numpy)."""
        target = args[0] if args else kwargs.get("device", kwargs.get("dtype"))
        if isinstance(target, str):
            return self
        raise TypeError(f"Module.to() expects a device string, got {target!r}; "
                        "inside nn.Graph use .to(nn.graph.GraphModule)")

    def cuda(self, device=None):
        return self

    def cpu(self):
        return self

    # State ------------------------------------------------------------------------

    def _state_entries(self, prefix=""):
        for module_prefix, module in self.named_modules(prefix=prefix.rstrip(".")):
            entries = list(module._parameters.items()) + [
                (k, v) for k, v in module._buffers.items() if k not in module._non_persistent]
            for name, value in entries:
                if value is not None:
                    yield (f"{module_prefix}.{name}" if module_prefix else name), value

    def state_dict(self, destination=None, prefix="", keep_vars=False):
        """An ordered dict of parameter and persistent buffer values (logical view).

        Once an ``nn.Graph`` has run, the compiled program owns the trained
        values of the parameters and buffers it uses, and ``state_dict``
        returns those, as OneFlow does (its graphs train the modules' own
        tensors). A process running alone reads them back from the program
        on demand. In a job of several processes reading back is a
        collective, so call ``graph.state_dict()`` on every process first: it
        writes the trained values into the modules, where ``state_dict`` (and
        ``param.numpy()``) find them until the next step; otherwise this
        raises ``BackendUnavailable`` saying so.
        """
        out = OrderedDict() if destination is None else destination
        entries = list(self._state_entries(prefix))
        for _, value in entries:
            if trained_by(value) is not None:
                sync(value, f"{type(self).__name__}.state_dict()")
        for key, value in entries:
            out[key] = value if keep_vars else value.detach()
        return out

    def load_state_dict(self, state_dict, strict=True):
        """Copies values into the parameters and buffers (their layouts stay).

        Before a graph that uses the module first runs, the loaded values
        become its compiled program's initial values. Afterwards they go into
        the program too (each process copies its part of the logical value it
        is given; no communication). Errors (wrong shapes, and with
        ``strict`` missing or unexpected keys) raise ``StateDictError`` (a
        ``RuntimeError``) at the calling line, before anything is copied.
        """
        own = OrderedDict(self._state_entries())
        loc = user_location()
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        errors, values = [], []
        for key, target in own.items():
            if key not in state_dict:
                continue
            value = state_dict[key]
            array = value.numpy() if isinstance(value, Tensor) else np.asarray(value)
            if tuple(array.shape) != tuple(target.shape):
                errors.append(f"size mismatch for {key}: copying a value of shape {list(array.shape)}, "
                              f"the {'parameter' if isinstance(target, Parameter) else 'buffer'} has "
                              f"shape {list(target.shape)}")
                continue
            values.append((target, array))
        if strict and (missing or unexpected):
            if missing:
                errors.append("missing keys: " + ", ".join(missing))
            if unexpected:
                errors.append("unexpected keys: " + ", ".join(unexpected))
        if errors:
            raise StateDictError.at(
                loc, f"error(s) loading the state dict of {type(self).__name__}:\n  " + "\n  ".join(errors))
        for target, array in values:
            owner = state_owner(target)
            if owner is not None and target.__dict__.get("_symbol") in owner.info:
                owner.set(target.__dict__["_symbol"], array, "the parameter")
                continue
            storage(target)[...] = array
            target._loaded = True
            target._loaded_loc = loc
        return IncompatibleKeys(missing, unexpected)

    # Calling ----------------------------------------------------------------------

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} does not define forward()")

    def __call__(self, *args, **kwargs):
        tracer = _trace.current()
        if tracer is None:
            return self.forward(*args, **kwargs)
        args, kwargs = tracer.enter(self, list(args), dict(kwargs))
        try:
            return self.forward(*args, **kwargs)
        finally:
            tracer.exit()

    # Printing -----------------------------------------------------------------------

    def extra_repr(self):
        return ""

    def __repr__(self):
        lines = [f"({name}): " + repr(child).replace("\n", "\n  ") for name, child in self._modules.items()]
        head = f"{type(self).__name__}({self.extra_repr()}"
        if not lines:
            return head + ")"
        return head + "\n  " + "\n  ".join(lines) + "\n)"
