"""Containers: Sequential and ModuleList."""

from collections import OrderedDict

from .module import Module


class Sequential(Module):
    """Calls its modules in order: ``Sequential(a, b)`` or ``Sequential(OrderedDict(...))``."""

    def __init__(self, *modules):
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], OrderedDict):
            for name, module in modules[0].items():
                self.add_module(name, module)
        else:
            for i, module in enumerate(modules):
                self.add_module(str(i), module)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __getitem__(self, index):
        if isinstance(index, slice):
            return Sequential(OrderedDict(list(self._modules.items())[index]))
        modules = list(self._modules.values())
        return modules[index]

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self

    def forward(self, x):
        for module in self._modules.values():
            x = module(x)
        return x


class ModuleList(Module):
    """A list of registered modules (no forward of its own)."""

    def __init__(self, modules=()):
        super().__init__()
        for module in modules:
            self.append(module)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __getitem__(self, index):
        return list(self._modules.values())[index]

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules):
        for module in modules:
            self.append(module)
        return self


class ModuleDict(Module):
    """An ordered dict of registered modules, keyed by name (torch's
    ``nn.ModuleDict``; no forward of its own): ``d["wte"]`` and ``d.wte``
    reach the same module, and the keys are the state dict's path segments."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key):
        return self._modules[key]

    def __setitem__(self, key, module):
        self.add_module(key, module)

    def __delitem__(self, key):
        del self._modules[key]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key):
        return key in self._modules

    def clear(self):
        self._modules.clear()

    def pop(self, key):
        module = self._modules[key]
        del self._modules[key]
        return module

    def keys(self):
        return self._modules.keys()

    def items(self):
        return self._modules.items()

    def values(self):
        return self._modules.values()

    def update(self, modules):
        """Adds ``modules``: a mapping (a ``ModuleDict``, dict or ``OrderedDict``,
        in its order) or an iterable of (name, module) pairs."""
        if isinstance(modules, (dict, ModuleDict)) or hasattr(modules, "keys"):
            pairs = [(key, modules[key]) for key in modules.keys()]
        else:
            pairs = []
            for i, pair in enumerate(modules):
                if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                    raise TypeError(f"ModuleDict.update: element {i} of the iterable should be a "
                                    f"(name, module) pair, got {pair!r}")
                pairs.append(tuple(pair))
        for key, module in pairs:
            if not isinstance(key, str):
                raise TypeError(f"ModuleDict keys must be strings, got {key!r}")
            self.add_module(key, module)
