"""Exceptions of the PipeFlow front end."""


class CompileError(Exception):
    """A program PipeFlow cannot compile, located at the user's source line.

    ``filename`` and ``lineno`` name the line of the user's program that the
    error is about (``None`` when unknown); ``str(err)`` reads
    ``FILE:LINE: error: MESSAGE`` like a compiler diagnostic.
    """

    def __init__(self, message, filename=None, lineno=None, col=0, notes=()):
        self.message = message
        self.filename = filename
        self.lineno = lineno
        self.col = col
        self.notes = list(notes)
        super().__init__(self._render())

    @classmethod
    def at(cls, loc, message, notes=()):
        """A CompileError at a ``pipeflow.ir.Location`` (or ``None``)."""
        if loc is None:
            return cls(message, notes=notes)
        return cls(message, loc.filename, loc.line, loc.col, notes)

    def _render(self):
        head = "error: " + self.message
        if self.filename is not None:
            head = f"{self.filename}:{self.lineno}: {head}"
        return "\n".join([head] + [f"  note: {n}" for n in self.notes])


class StateDictError(CompileError, RuntimeError):
    """A state dict or checkpoint that does not fit the modules or graph it is
    loaded into (an unknown key, a wrong shape, missing keys), located at the
    user's ``load_state_dict`` line like a :class:`CompileError` (and a
    ``RuntimeError``, as torch's and OneFlow's loading errors are)."""


class BackendUnavailable(NotImplementedError):
    """Raised when a step would have to run but no backend is built yet."""


class CompilerNotFound(RuntimeError):
    """The ``pf-opt`` compiler driver could not be found."""


for _cls in (CompileError, StateDictError, BackendUnavailable, CompilerNotFound):
    _cls.__module__ = "pipeflow"
del _cls
