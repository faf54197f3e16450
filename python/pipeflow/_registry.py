"""Functions that ``Tensor`` calls in the modules built on top of it.

``pipeflow.tensor`` is the bottom of the tensor stack: ``_ops`` (the eager
and traced ops) and ``_trace`` (tracing ``nn.Graph.build``) import it, so it
cannot import them back without an import cycle. Tensor methods that compute
(``x + y``, ``x.reshape(...)``) or trace (``to_global`` or ``backward()`` on
a lazy tensor) call the functions those modules :meth:`~Hooks.provide` here
when they are imported; ``pipeflow/__init__`` imports both, so the hooks are
set before any tensor exists.

It also keeps :data:`module_changes`, the count of changes that a compiled
graph's calls look at (low enough here for ``nn.init`` and ``nn.Module``).
"""


class Hooks:
    """A fixed set of functions, by name, that one higher module provides."""

    def __init__(self, provider, names):
        self.__dict__["_provider"] = provider
        self.__dict__["_names"] = frozenset(names)

    def provide(self, **functions):
        """Sets the functions (once the providing module has defined them)."""
        unknown = sorted(set(functions) - self._names)
        if unknown:
            raise TypeError(f"pipeflow.{self._provider} provides no hook {', '.join(unknown)}")
        self.__dict__.update(functions)

    def missing(self):
        """The names not provided yet."""
        return sorted(n for n in self._names if n not in self.__dict__)

    def __getattr__(self, name):
        # Only reached for names that are not set.
        if name in self._names:
            raise RuntimeError(f"pipeflow.{self._provider} has not provided {name}() yet: "
                               "import pipeflow (the package) first")
        raise AttributeError(name)

    def __setattr__(self, name, value):
        raise AttributeError("set hooks with provide()")


# Tensor methods backed by pipeflow._ops, _ops_elementwise, _ops_logical and
# _ops_shape (eager numpy or traced pf ops).
ops = Hooks("_ops", ("matmul", "relu", "flatten", "reshape", "permute",
                     "binary", "compare", "masked_fill", "logical", "bitwise",
                     "invert", "where", "cast",
                     "getitem", "setitem", "split", "chunk", "sum", "mean"))
# What lazy tensors do through pipeflow._trace (the active tracer).
trace = Hooks("_trace", ("to_global", "mark_loss", "unsupported"))


class Changes:
    """A count that only grows: :meth:`bump` on every change it counts."""

    __slots__ = ("count",)

    def __init__(self):
        self.count = 0

    def bump(self):
        self.count += 1


# Changes to what a compiled graph's fingerprint reads besides its
# optimizers (``nn._graph.tracing.fingerprint``): modules' registries and
# modes (``nn.Module``), parameters' layouts (``Module.to_global``) and
# initializers (``nn.init``), graph and module settings. A graph call
# recomputes the fingerprint only when the count moved since the last one
# (``nn._graph.execution.CallCheck``).
module_changes = Changes()
