"""Source locations of the user's program (the first frame outside pipeflow)."""

import os
import sys

from ._value import by_key

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


@by_key
class Location:
    """A ``file:line:col`` position in the user's program."""

    __slots__ = ("filename", "line", "col")

    def __init__(self, filename, line, col=0):
        self.filename = filename
        self.line = line
        self.col = col

    def _key(self):
        return (self.filename, self.line, self.col)

    def __repr__(self):
        return f"{self.filename}:{self.line}:{self.col}"

    def text(self):
        """As an MLIR location: ``loc("file":line:col)``."""
        escaped = self.filename.replace("\\", "\\\\").replace('"', '\\"')
        return f'loc("{escaped}":{self.line}:{self.col})'


# Absolute code file names: their absolute form and whether it is pipeflow's
# (relative names depend on the working directory and are not kept).
_files = {}


def _file(filename):
    """``(absolute path, inside the pipeflow package)`` of a code file name."""
    known = _files.get(filename)
    if known is None:
        path = os.path.abspath(filename)
        known = (path, path.startswith(_PACKAGE_DIR))
        if os.path.isabs(filename):
            _files[filename] = known
    return known


def user_location(skip=1):
    """The location of the innermost calling frame outside the pipeflow package.

    Returns ``None`` when every frame is internal (e.g. pipeflow's own
    ``__main__`` scripts).
    """
    frame = sys._getframe(skip)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not filename.startswith("<"):
            path, internal = _file(filename)
            if not internal:
                return Location(path, frame.f_lineno, 0)
        frame = frame.f_back
    return None


def code_location(func):
    """The location of a function's ``def`` line."""
    code = getattr(func, "__code__", None)
    if code is None:
        return None
    return Location(os.path.abspath(code.co_filename), code.co_firstlineno, 0)
