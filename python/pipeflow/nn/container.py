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
