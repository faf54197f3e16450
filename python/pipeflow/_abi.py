"""libpfrt's C ABI for ctypes, read from the runtime's one source of truth.

``runtime/include/pfrt/pfrt_abi.def`` lists every runtime function as a row
``PFRT_FN(name, RESULT, ARG...)`` with the type tags VOID, PTR, I32, I64,
U64, F32 and F64. The compiler declares the functions from these rows and
the runtime checks pfrt.h against them; the front end builds its ctypes
``restype``/``argtypes`` from them too (:func:`bind`), so a row that changes
without the Python caller changing fails at the call instead of passing
garbage. The .def is found next to the package (``<repo>/runtime/include/
pfrt/pfrt_abi.def``) or at ``$PIPEFLOW_PFRT_ABI``.

The number of arguments and every non-pointer type come from the row. A
caller may only make a PTR slot more specific (``c_char_p`` for a name, an
int64 array for a rank list, a typed result pointer) through its
``pointers`` table. ctypes lets a cdecl function take more arguments than
its ``argtypes`` and passes the extra ones unchecked, so the bound
:class:`Function` checks the count itself.

The functions the compiler generates into every program (``pf_init_params``,
``pf_step``) are not runtime functions and have no row; :data:`GENERATED`
lists them with the same tags.
"""

import ctypes
import os
import re

ENV_VAR = "PIPEFLOW_PFRT_ABI"
_REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_PATH = os.path.join(_REPO_ROOT, "runtime", "include", "pfrt", "pfrt_abi.def")

# The .def's type tags as ctypes types (VOID: no result).
TAGS = {
    "VOID": None,
    "PTR": ctypes.c_void_p,
    "I32": ctypes.c_int32,
    "I64": ctypes.c_int64,
    "U64": ctypes.c_uint64,
    "F32": ctypes.c_float,
    "F64": ctypes.c_double,
}

I64_ARRAY = ctypes.POINTER(ctypes.c_int64)


class AbiError(RuntimeError):
    """The ABI description is missing, malformed, or disagrees with a caller."""


class Row:
    """One ``PFRT_FN(name, result, arg...)`` row: tags, where it was read."""

    __slots__ = ("name", "result", "args", "where")

    def __init__(self, name, result, args, where):
        self.name, self.result, self.args, self.where = name, result, tuple(args), where

    def text(self):
        return f"PFRT_FN({', '.join((self.name, self.result) + self.args)})"

    def __eq__(self, other):
        return isinstance(other, Row) and (self.name, self.result, self.args) == (
            other.name, other.result, other.args)

    def __hash__(self):
        return hash((self.name, self.result, self.args))

    def __repr__(self):
        return f"Row({self.text()} at {self.where})"


# Emitted by the compiler into every librank<r>.so, not part of libpfrt.
GENERATED = {
    "pf_init_params": Row("pf_init_params", "VOID", ["U64"], "pipeflow/_abi.py"),
    "pf_step": Row("pf_step", "VOID", ["I64"], "pipeflow/_abi.py"),
}


def path():
    """The .def this process reads: ``$PIPEFLOW_PFRT_ABI`` or the repository's."""
    return os.environ.get(ENV_VAR) or DEFAULT_PATH


_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
_ROW = re.compile(r"PFRT_FN\s*\(([^)]*)\)")
_NAME = re.compile(r"^[A-Za-z_]\w*$")
_cache = {}  # (path, mtime_ns, size) -> {name: Row}


def parse(text, where="pfrt_abi.def"):
    """The rows of a .def text, by name; an :class:`AbiError` names a bad row."""
    text = _COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    rows = {}
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("#"):
            continue  # the preprocessor's lines (#ifndef, #error, #undef)
        for match in _ROW.finditer(line):
            fields = [f.strip() for f in match.group(1).split(",")]
            at = f"{where}:{number}"
            if len(fields) < 2 or not _NAME.match(fields[0]):
                raise AbiError(f"{at}: expected PFRT_FN(name, RESULT, ARG...), got {match.group(0)}")
            name, result, args = fields[0], fields[1], fields[2:]
            for tag in [result] + args:
                if tag not in TAGS:
                    raise AbiError(f"{at}: {name}: unknown type tag {tag!r} "
                                   f"(expected one of {', '.join(TAGS)})")
            if "VOID" in args:
                raise AbiError(f"{at}: {name}: VOID is a result tag, not an argument's")
            if name in rows:
                raise AbiError(f"{at}: {name} has a second row (the first is at {rows[name].where})")
            rows[name] = Row(name, result, args, at)
    if not rows:
        raise AbiError(f"{where} has no PFRT_FN rows")
    return rows


def rows(def_path=None):
    """The rows of the .def at ``def_path`` (default :func:`path`), parsed once
    per version of the file."""
    def_path = os.path.abspath(def_path or path())
    try:
        stat = os.stat(def_path)
    except OSError:
        where = f"${ENV_VAR}" if os.environ.get(ENV_VAR) else "the repository"
        raise AbiError(
            f"cannot find libpfrt's ABI description {def_path} (from {where}): the front end "
            f"binds the runtime's functions from it; set {ENV_VAR} to its path "
            "(runtime/include/pfrt/pfrt_abi.def of the PipeFlow checkout)") from None
    key = (def_path, stat.st_mtime_ns, stat.st_size)
    found = _cache.get(key)
    if found is None:
        with open(def_path) as f:
            found = _cache[key] = parse(f.read(), def_path)
    return found


def row(name, table=None):
    """The row of ``name``: a runtime function of the .def or a generated one."""
    if name in GENERATED:
        return GENERATED[name]
    table = rows() if table is None else table
    found = table.get(name)
    if found is None:
        raise AbiError(f"{path()} has no row for {name}, which the front end calls "
                       "(python/pipeflow/_runtime.py)")
    return found


def signature(name, pointers=None, table=None):
    """``(restype, argtypes)`` of ``name`` from its row, with the PTR slots
    that ``pointers`` (``{"result" or argument index: ctypes pointer type}``)
    makes more specific."""
    found = row(name, table)
    restype = TAGS[found.result]
    argtypes = [TAGS[tag] for tag in found.args]
    for slot, ctype in (pointers or {}).items():
        if not _is_pointer(ctype):
            raise AbiError(f"{name}: {ctype!r} is not a ctypes pointer type")
        tag = found.result if slot == "result" else (
            found.args[slot] if isinstance(slot, int) and 0 <= slot < len(found.args) else None)
        if tag != "PTR":
            what = "its result" if slot == "result" else f"argument {slot}"
            raise AbiError(
                f"the front end passes {ctype.__name__} as {what} of {name}, but "
                f"{found.where} says {found.text()}: only PTR slots can be refined; "
                "update the caller in python/pipeflow/_runtime.py")
        if slot == "result":
            restype = ctype
        else:
            argtypes[slot] = ctype
    return restype, argtypes


def _is_pointer(ctype):
    return isinstance(ctype, type) and issubclass(
        ctype, (ctypes._Pointer, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_wchar_p))


class Function:
    """A function of a loaded program with its row's signature. ctypes passes
    extra arguments of a cdecl function unchecked, so the call checks their
    number: a row that gained or lost an argument fails here."""

    __slots__ = ("name", "row", "cfunc")

    def __init__(self, name, found, cfunc):
        self.name, self.row, self.cfunc = name, found, cfunc

    def __call__(self, *args):
        if len(args) != len(self.row.args):
            raise self._miscount(len(args))
        return self.cfunc(*args)

    def checked(self, nargs):
        """The C function itself, for a caller that always passes ``nargs``
        arguments: checked here once, as every call through the wrapper is
        (the steps' hot calls skip the wrapper's cost)."""
        if nargs != len(self.row.args):
            raise self._miscount(nargs)
        return self.cfunc

    def _miscount(self, nargs):
        return TypeError(
            f"{self.name}() takes {len(self.row.args)} argument"
            f"{'s' if len(self.row.args) != 1 else ''} ({self.row.text()} at "
            f"{self.row.where}), but the front end passes {nargs}: the runtime's ABI "
            "changed; update the caller in python/pipeflow/_runtime.py")

    @property
    def restype(self):
        return self.cfunc.restype

    @property
    def argtypes(self):
        return list(self.cfunc.argtypes)

    def __repr__(self):
        return f"Function({self.row.text()})"


class Functions:
    """The bound functions of one loaded program, as attributes."""

    def __repr__(self):
        return f"Functions({', '.join(sorted(vars(self)))})"


def bind(lib, names, pointers=None, into=None):
    """Binds ``names`` of the loaded ``lib`` (a ``ctypes.CDLL``) with their
    signatures (:func:`signature`, ``pointers[name]`` refining PTR slots);
    returns a :class:`Functions` (or adds them to ``into``). The caller checks
    first that ``lib`` exports every name."""
    pointers = pointers or {}
    table = rows()
    out = Functions() if into is None else into
    for name in names:
        cfunc = getattr(lib, name)
        cfunc.restype, cfunc.argtypes = signature(name, pointers.get(name), table)
        setattr(out, name, Function(name, row(name, table), cfunc))
    return out
