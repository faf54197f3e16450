"""A small in-memory form of pf IR and its deterministic text printer.

The front end builds a :class:`Module` while tracing ``nn.Graph.build`` and
prints it as MLIR text that ``pf-opt`` parses. Types mirror the dialect's
``!pf.global<shape x elem, #pf.placement<...>[, #pf.sbp<[...]>]>``.
"""

import math
import re
import struct

import numpy as np

_BARE_ID = re.compile(r"^[A-Za-z_][A-Za-z0-9_$.]*$")


class Placement:
    """An IR placement: device kind plus ranks in a row-major hierarchy."""

    __slots__ = ("device", "hierarchy", "ranks")

    def __init__(self, device, hierarchy, ranks):
        self.device = device
        self.hierarchy = tuple(hierarchy)
        self.ranks = tuple(ranks)

    def _key(self):
        return (self.device, self.hierarchy, self.ranks)

    def __eq__(self, other):
        return isinstance(other, Placement) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def nested(self):
        """The ranks as nested lists following the hierarchy."""
        def build(dims, ranks):
            if len(dims) <= 1:
                return list(ranks)
            inner = len(ranks) // dims[0]
            return [build(dims[1:], ranks[i * inner:(i + 1) * inner]) for i in range(dims[0])]
        return build(self.hierarchy, self.ranks)

    def text(self):
        return f'#pf.placement<"{self.device}", {self.nested()}>'

    def alias(self):
        """A readable alias name in pf-opt's own style (``cpu_0_1``)."""
        name = self.device
        if len(self.ranks) > 8:
            return f"{name}_n{len(self.ranks)}"
        if len(self.hierarchy) > 1:
            name += "_" + "x".join(str(h) for h in self.hierarchy)
        return name + "".join(f"_{r}" for r in self.ranks)

    def __repr__(self):
        return self.text()


class GlobalType:
    """``!pf.global``: logical shape, element type, placement, optional SBP."""

    __slots__ = ("shape", "element", "placement", "sbp")

    def __init__(self, shape, element, placement, sbp=None):
        self.shape = tuple(int(d) for d in shape)
        self.element = element
        self.placement = placement
        self.sbp = tuple(sbp) if sbp is not None else None

    def with_sbp(self, sbp):
        return GlobalType(self.shape, self.element, self.placement, sbp)

    def with_shape(self, shape):
        return GlobalType(shape, self.element, self.placement, None)

    def _key(self):
        return (self.shape, self.element, self.placement, self.sbp)

    def __eq__(self, other):
        return isinstance(other, GlobalType) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def text(self, aliases=None):
        dims = "".join(f"{d}x" for d in self.shape)
        place = aliases.get(self.placement) if aliases else None
        parts = [f"{dims}{self.element}", "#" + place if place else self.placement.text()]
        if self.sbp is not None:
            parts.append("#pf.sbp<[" + ", ".join(self.sbp) + "]>")
        return "!pf.global<" + ", ".join(parts) + ">"

    def __repr__(self):
        return self.text()


class TensorType:
    """A builtin ranked ``tensor<...>`` (a local tensor)."""

    __slots__ = ("shape", "element")

    def __init__(self, shape, element):
        self.shape = tuple(shape)
        self.element = element

    def text(self, aliases=None):
        return "tensor<" + "".join(f"{d}x" for d in self.shape) + self.element + ">"


# Attribute values ---------------------------------------------------------

class Unit:
    """A unit attribute (printed as its bare name)."""


UNIT = Unit()


class F64(float):
    """A float attribute printed with type ``f64``."""


class I64Array(tuple):
    """``array<i64: ...>``."""


class Dense:
    """``dense<...> : tensor<...>``: one splat value, or a numpy array of
    ``shape`` (printed as a splat when all its elements are equal)."""

    def __init__(self, value, shape, element):
        self.value, self.shape, self.element = value, tuple(shape), element


def format_float(x):
    """A float literal MLIR parses back exactly (always with a '.')."""
    x = float(x)
    if math.isnan(x) or math.isinf(x):
        raise ValueError(f"cannot print non-finite float {x} in pf IR")
    text = repr(x)
    mantissa, _, exponent = text.partition("e")
    if "." not in mantissa:
        mantissa += ".0"
    return mantissa + ("e" + exponent if exponent else "")


_HEX_FLOAT = {"f64": (">d", ">Q", 16), "f32": (">f", ">I", 8)}


def format_float_bits(x, element="f64"):
    """A float literal of type ``element``; infinities and NaN as MLIR prints
    them, the hexadecimal bit pattern (``0xFFF0000000000000`` is -inf in f64)."""
    x = float(x)
    if math.isfinite(x):
        return format_float(x)
    float_fmt, int_fmt, digits = _HEX_FLOAT[element]
    bits = struct.unpack(int_fmt, struct.pack(float_fmt, x))[0]
    return f"0x{bits:0{digits}X}"


def _format_dense(value):
    """The body of ``dense<...>``: a splat or nested lists (infinities and
    NaN as their bit patterns, as MLIR prints them)."""
    if value.element.startswith("f"):
        def item(v):
            return format_float_bits(v, value.element)
    elif value.element == "i1":
        def item(v):
            return "true" if v else "false"
    else:
        def item(v):
            return str(int(v))
    if not isinstance(value.value, np.ndarray):
        return item(value.value)
    if value.value.size == 1:
        return item(value.value.reshape(-1)[0].item())
    array = value.value.reshape(value.shape)
    flat = array.reshape(-1)
    if flat.size and (flat == flat[0]).all():
        return item(flat[0].item())

    def nest(a):
        if a.ndim == 1:
            return "[" + ", ".join(item(v) for v in a.tolist()) + "]"
        return "[" + ", ".join(nest(sub) for sub in a) + "]"
    return nest(array)


def format_attr(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, F64):
        return f"{format_float_bits(value)} : f64"
    if isinstance(value, I64Array):
        return "array<i64: " + ", ".join(str(int(v)) for v in value) + ">"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, Dense):
        return f"dense<{_format_dense(value)}> : " + TensorType(value.shape, value.element).text()
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, dict):
        return format_dict(value)
    raise TypeError(f"cannot print attribute {value!r}")


def format_dict(attrs):
    """``{k = v, ...}`` (a unit attribute as its bare name), in insertion order."""
    return "{" + ", ".join(k if isinstance(v, Unit) else f"{k} = {format_attr(v)}"
                           for k, v in attrs.items()) + "}"


def symbol(name):
    """``@name``, quoted when it is not a bare identifier."""
    if _BARE_ID.match(name):
        return "@" + name
    return '@"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


# Structure ----------------------------------------------------------------

class Value:
    """An SSA value: a function argument or an op result."""

    __slots__ = ("type", "owner", "index")

    def __init__(self, type, owner=None, index=0):
        self.type, self.owner, self.index = type, owner, index


class Op:
    """One operation. ``attrs`` keeps insertion order (the printed order)."""

    def __init__(self, name, operands=(), result_types=(), attrs=None, loc=None, symbol=None):
        self.name = name
        self.operands = list(operands)
        self.results = [Value(t, self, i) for i, t in enumerate(result_types)]
        self.attrs = dict(attrs or {})
        self.loc = loc
        self.symbol = symbol

    @property
    def result(self):
        return self.results[0]

    @property
    def stage(self):
        return self.attrs.get("pf.stage")

    def __repr__(self):
        return f"<Op {self.name} stage={self.stage}>"


class Param:
    """``pf.param @name : type = #pf.init<...> [buffer] [{attrs}]``; ``attrs``
    (e.g. ``pf.optimizer``, a dict) keeps insertion order."""

    def __init__(self, name, type, init, buffer=False, loc=None, attrs=None):
        self.name, self.type, self.init, self.buffer, self.loc = name, type, init, buffer, loc
        self.attrs = dict(attrs or {})


class Function:
    def __init__(self, name, arg_types, arg_locs=None):
        self.name = name
        self.args = [Value(t, None, i) for i, t in enumerate(arg_types)]
        self.arg_locs = list(arg_locs or [None] * len(self.args))
        self.ops = []
        self.results = []
        self.return_loc = None


class Module:
    """A traced program: parameters plus one step function."""

    def __init__(self, comments=()):
        self.comments = list(comments)
        self.params = {}
        self.functions = []

    def ops(self):
        return [op for f in self.functions for op in f.ops]


# Printer ------------------------------------------------------------------

class _Printer:
    def __init__(self, module):
        self.module = module
        self.aliases = {}
        self._collect_placements()

    def _collect_placements(self):
        seen = []

        def visit(t):
            if isinstance(t, GlobalType) and t.placement not in seen:
                seen.append(t.placement)
        for p in self.module.params.values():
            visit(p.type)
        for f in self.module.functions:
            for a in f.args:
                visit(a.type)
            for op in f.ops:
                for v in op.results:
                    visit(v.type)
        used = set()
        for place in sorted(seen, key=lambda p: (p.device, len(p.ranks), p.hierarchy, p.ranks)):
            name, n = place.alias(), 1
            while name in used:
                n += 1
                name = f"{place.alias()}_{n}"
            used.add(name)
            self.aliases[place] = name

    def type(self, t):
        return t.text(self.aliases)

    def print(self):
        lines = [f"// {c}" for c in self.module.comments]
        for place, name in self.aliases.items():
            lines.append(f"#{name} = {place.text()}")
        for p in self.module.params.values():
            text = f"pf.param {symbol(p.name)} : {self.type(p.type)} = {p.init}"
            if p.buffer:
                text += " buffer"
            if p.attrs:
                text += " " + format_dict(p.attrs)
            if p.loc is not None:
                text += " " + p.loc.text()
            lines.append(text)
        for f in self.module.functions:
            lines.extend(self.function(f))
        return "\n".join(lines) + "\n"

    def function(self, f):
        names = {}
        for a in f.args:
            names[id(a)] = f"%arg{a.index}"
        args = ", ".join(
            f"{names[id(a)]}: {self.type(a.type)}" + (f" {loc.text()}" if loc else "")
            for a, loc in zip(f.args, f.arg_locs, strict=True))
        results = [self.type(v.type) for v in f.results]
        sig = results[0] if len(results) == 1 else "(" + ", ".join(results) + ")"
        out = [f"func.func @{f.name}({args})" + (f" -> {sig}" if results else "") + " {"]
        counter = 0
        for op in f.ops:
            if len(op.results) == 1:
                names[id(op.results[0])] = f"%{counter}"
            elif op.results:
                for r in op.results:
                    names[id(r)] = f"%{counter}#{r.index}"
            if op.results:
                counter += 1
            out.append("  " + self.op(op, names, counter - 1))
        ret = "  return"
        if f.results:
            ret += " " + ", ".join(names[id(v)] for v in f.results)
            ret += " : " + ", ".join(results)
        if f.return_loc is not None:
            ret += " " + f.return_loc.text()
        out.append(ret)
        out.append("}")
        return out

    def op(self, op, names, number):
        lhs = ""
        if len(op.results) == 1:
            lhs = f"%{number} = "
        elif op.results:
            lhs = f"%{number}:{len(op.results)} = "
        operands = ", ".join(names[id(v)] for v in op.operands)
        attrs = ""
        if op.attrs:
            attrs = " {" + ", ".join(
                k if isinstance(v, Unit) else f"{k} = {format_attr(v)}" for k, v in op.attrs.items()) + "}"
        loc = " " + op.loc.text() if op.loc is not None else ""
        in_types = [self.type(v.type) for v in op.operands]
        out_types = [self.type(v.type) for v in op.results]
        if op.name == "pf.read_param":
            body = f"pf.read_param {symbol(op.symbol)}{attrs} : {out_types[0]}"
        elif op.name == "pf.write_param":
            body = f"pf.write_param {operands} to {symbol(op.symbol)}{attrs} : {in_types[0]}"
        elif op.name in ("pf.to_global", "pf.to_local", "pf.reshape", "pf.cast"):
            body = f"{op.name} {operands}{attrs} : {in_types[0]} -> {out_types[0]}"
        elif op.name == "pf.constant":
            value = op.attrs["value"]
            rest = {k: v for k, v in op.attrs.items() if k != "value"}
            extra = ""
            if rest:
                extra = " {" + ", ".join(
                    k if isinstance(v, Unit) else f"{k} = {format_attr(v)}" for k, v in rest.items()) + "}"
            body = f"pf.constant {format_attr(value)}{extra} : {out_types[0]}"
        else:
            results = out_types[0] if len(out_types) == 1 else "(" + ", ".join(out_types) + ")"
            body = f"{op.name} {operands}{attrs} : ({', '.join(in_types)}) -> {results}"
        return lhs + body + loc


def print_module(module):
    """The module as MLIR text (deterministic: same module, same bytes)."""
    return _Printer(module).print()
