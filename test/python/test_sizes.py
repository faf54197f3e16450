"""The source stays small: no file over 800 lines, no function over 150.

Counted: the C++ (.cpp, .h, .cu, .td) under lib/, include/, tools/,
runtime/src and runtime/include, and the front end's Python
(python/pipeflow). Not counted: tests, generated files and
runtime/include/pfrt/pfrt.h (the documented C ABI contract). A Python
function runs from its ``def`` line to its last line (``ast``); a C++
function from the first line of its declaration to its closing brace, found
by a brace-matching scan (comments, strings and preprocessor lines blanked)
of the definitions at namespace and class scope; a lambda counts as part of
the function it is in. (.td files are counted for their size only.)

A ratchet: ``FILES`` and ``FUNCTIONS`` list the offenders of the day the
test came, with their sizes. The test fails if a listed one grows, if one
not listed goes over a limit, or if a listed one no longer exceeds it (take
it off the list), so the lists only shrink; one that shrank but is still
over may have its number lowered. ``/usr/bin/python3 test/python/test_sizes.py``
prints the offenders as the two dicts.
"""

import ast
import os
import re
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

MAX_FILE_LINES = 800
MAX_FUNCTION_LINES = 150

CXX_DIRS = ["lib", "include", "tools", "runtime/src", "runtime/include"]
CXX_EXTENSIONS = (".cpp", ".h", ".cu", ".td")
PYTHON_DIRS = ["python/pipeflow"]
# The runtime's C ABI, documented declaration by declaration.
EXEMPT = {"runtime/include/pfrt/pfrt.h"}
TEST_DIRS = {"test", "tests", "unittests"}
# A generated file says so in its first lines.
GENERATED = re.compile(r"DO NOT EDIT|@generated|[Aa]uto-?generated")

# Files over MAX_FILE_LINES: {path: lines}.
FILES = {}

# Functions over MAX_FUNCTION_LINES: {"path:name": lines} (the n-th function
# of that name in a file, from the second on: "path:name#n").
FUNCTIONS = {}


def source_files():
    """Repo-relative paths of the counted files."""
    found = []
    for top, extensions in [(d, CXX_EXTENSIONS) for d in CXX_DIRS] + \
                           [(d, (".py",)) for d in PYTHON_DIRS]:
        for directory, dirs, files in os.walk(os.path.join(REPO, top)):
            dirs[:] = sorted(d for d in dirs if d not in TEST_DIRS and d != "__pycache__")
            for name in sorted(files):
                path = os.path.relpath(os.path.join(directory, name), REPO)
                if not name.endswith(extensions) or path in EXEMPT or name.startswith("test_"):
                    continue
                with open(os.path.join(REPO, path), errors="replace") as f:
                    head = "".join(f.readline() for _ in range(10))
                if not GENERATED.search(head):
                    found.append(path)
    return found


def line_count(text):
    return text.count("\n") + (not text.endswith("\n") and bool(text))


# Python ---------------------------------------------------------------------

def python_functions(text, path="<text>"):
    """``(qualified name, first line, last line)`` of every def."""
    out = []

    def visit(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = prefix + child.name
                if not isinstance(child, ast.ClassDef):
                    out.append((name, child.lineno, child.end_lineno))
                visit(child, name + ".")
            else:
                visit(child, prefix)

    visit(ast.parse(text, path), "")
    return out


# C++ ------------------------------------------------------------------------

def _blank(chars, start, end):
    for k in range(start, end):
        if chars[k] != "\n":
            chars[k] = " "


def strip_cxx(text):
    """``text`` with comments, the insides of string and character literals
    and preprocessor lines blanked (newlines kept, so lines stay where they
    were)."""
    chars, n, i, line_start = list(text), len(text), 0, True
    while i < n:
        c = text[i]
        if c == "\n":
            line_start, i = True, i + 1
        elif c in " \t\r\f\v":
            i += 1
        elif line_start and c == "#":
            end = i
            while True:
                end = text.find("\n", end)
                if end < 0 or text[end - 1] != "\\":
                    break
                end += 1
            end = n if end < 0 else end
            _blank(chars, i, end)
            i = end
        elif text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            _blank(chars, i, end)
            i = end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            _blank(chars, i, end)
            line_start, i = False, end
        elif c == '"':
            raw = re.search(r"(?:^|[^\w])(?:u8|u|U|L)?R$", text[max(0, i - 4):i])
            delim = raw and re.match(r'"([^()\\\s]{0,16})\(', text[i:])
            if delim:
                close = ")" + delim.group(1) + '"'
                end = text.find(close, i)
                end = n - 1 if end < 0 else end + len(close) - 1
            else:
                end = i + 1
                while end < n and text[end] not in '"\n':
                    end += 2 if text[end] == "\\" else 1
            _blank(chars, i + 1, min(end, n))
            line_start, i = False, end + 1
        elif c == "'":
            token = re.search(r"[\w']*$", text[max(0, i - 40):i]).group(0)
            if token[:1].isdigit():  # a digit separator: 1'000
                line_start, i = False, i + 1
                continue
            end = i + 1
            while end < n and text[end] not in "'\n":
                end += 2 if text[end] == "\\" else 1
            _blank(chars, i + 1, min(end, n))
            line_start, i = False, end + 1
        else:
            line_start, i = False, i + 1
    return "".join(chars)


_ATTRIBUTE_CALLS = {"noexcept", "decltype", "throw", "alignas", "__attribute__", "__declspec",
                    "requires", "__launch_bounds__", "sizeof", "alignof"}
_NOT_NAMES = {"if", "for", "while", "switch", "catch", "return", "sizeof"}


def _match(code, i, open_c, close_c):
    """The index of the bracket that closes the one at ``i``."""
    depth = 0
    for k in range(i, len(code)):
        if code[k] == open_c:
            depth += 1
        elif code[k] == close_c:
            depth -= 1
            if depth == 0:
                return k
    raise ValueError(f"unbalanced {open_c!r} at offset {i}")


def _strip_templates(header):
    """``header`` less its ``template <...>`` prefixes."""
    while True:
        m = re.match(r"\s*template\s*<", header)
        if not m:
            return header
        angle, parens, k = 0, 0, m.end() - 1
        for k in range(m.end() - 1, len(header)):
            c = header[k]
            parens += (c == "(") - (c == ")")
            if parens == 0 and c == "<":
                angle += 1
            elif parens == 0 and c == ">" and header[k - 1] != "-":
                angle -= 1
                if angle == 0:
                    break
        header = header[k + 1:]


def _top_level(header):
    """``header`` with what is inside parentheses blanked."""
    out, depth = [], 0
    for c in header:
        depth -= c == ")"
        out.append(c if depth == 0 or c == "\n" else " ")
        depth += c == "("
    return "".join(out)


def _groups(header):
    """The ``(...)`` groups of ``header`` outside parentheses and template
    arguments, as (open, close) offsets; (offset, None) for an ``=`` there
    (an initializer follows)."""
    out, depth, angle, start = [], 0, 0, 0
    for k, c in enumerate(header):
        if c == "(":
            if depth == 0:
                start = k
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0 and angle == 0:
                out.append((start, k))
        elif depth == 0 and c == "<" and re.search(r"\w\s*$", header[:k]) \
                and not re.search(r"operator__\d+\s*$", header[:k]):
            angle += 1
        elif depth == 0 and c == ">" and angle > 0 and header[k - 1] != "-":
            angle -= 1
        elif depth == 0 and angle == 0 and c == "=":
            out.append((k, None))
    return out


def classify(header):
    """What a ``{`` after ``header`` (the text since the last ``;``, ``{`` or
    ``}`` at namespace or class scope) opens: ``("scope", None)`` (namespace,
    extern "C", class, struct, union: definitions follow), ``("function",
    name)``, ``("inner", None)`` (a brace inside the declaration: a lambda or
    braced initializer in an argument or a constructor's member-initializer)
    or ``("other", None)`` (an enum, an initializer)."""
    if header.count("(") > header.count(")"):
        return "inner", None
    operators = []

    def hide(m):
        operators.append(re.sub(r"\s+", "", m.group(0)))
        return f"operator__{len(operators) - 1}"

    h = re.sub(r"\boperator\s*(\(\s*\)|\[\s*\]|new\b|delete\b|[^\s(\w]+)", hide,
               _strip_templates(header))
    h = re.sub(r"\[\[.*?\]\]", " ", h).strip()
    if re.search(r"\bnamespace\b", h) or re.fullmatch(r"extern\s*\"\s*\"", h):
        return "scope", None
    groups = _groups(h)
    if any(close is None for _, close in groups):
        return "other", None
    # Calls that name the function: not attributes, not a member initializer.
    named = []
    for open_, close in groups:
        before = re.search(r"(~?[\w]+(?:\s*<[^<>;{}]*>)?)\s*$", h[:open_])
        if before and re.sub(r"\s*<.*", "", before.group(1)) in _ATTRIBUTE_CALLS:
            continue
        if named and re.search(r"(?<!:):(?!:)", h[named[-1][1] + 1:open_]):
            break  # the member initializers begin
        named.append((open_, close))
    keyword = re.search(r"\b(class|struct|union|enum)\b", _top_level(h))
    if keyword and not any(o > keyword.start() for o, _ in named):
        return ("other" if keyword.group(1) == "enum" else "scope"), None
    if not named:
        return "other", None
    open_, close = named[-1]
    if re.search(r"(?<!:):(?!:)", h[close + 1:]) and re.search(r"[\w>]\s*$", h):
        return "inner", None  # x{...} among the member initializers
    m = re.search(r"((?:[\w~]+(?:\s*<[^<>;{}]*>)?\s*::\s*)*~?\w+)\s*$", h[:open_])
    if not m or m.group(1) in _NOT_NAMES:
        return "other", None
    name = re.sub(r"\s+", "", m.group(1))
    name = re.sub(r"operator__(\d+)", lambda o: operators[int(o.group(1))], name)
    return "function", name


def cxx_functions(text):
    """``(name, first line, last line)`` of every function defined at namespace
    or class scope."""
    code = strip_cxx(text)
    code = re.sub(r"\b(public|private|protected)\s*:(?!:)", lambda m: " " * len(m.group(0)), code)
    out, depth, start, i = [], 0, 0, 0
    while i < len(code):
        c = code[i]
        if c == ";":
            start = i + 1
        elif c == "}":
            depth -= 1
            if depth < 0:
                raise ValueError(f"unbalanced '}}' on line {code.count(chr(10), 0, i) + 1}")
            start = i + 1
        elif c == "{":
            kind, name = classify(code[start:i])
            if kind == "scope":
                depth += 1
                start = i + 1
            else:
                end = _match(code, i, "{", "}")
                if kind == "function":
                    first = start + len(code[start:i]) - len(code[start:i].lstrip())
                    out.append((name, code.count("\n", 0, first) + 1, code.count("\n", 0, end) + 1))
                i = end + 1
                if kind != "inner":
                    start = i
                continue
        i += 1
    if depth:
        raise ValueError(f"{depth} unclosed '{{' at the end")
    return out


# The measure ----------------------------------------------------------------

def measure():
    """``({path: lines}, {key: lines})`` of the files and functions over the limits."""
    files, functions = {}, {}
    for path in source_files():
        with open(os.path.join(REPO, path), errors="replace") as f:
            text = f.read()
        lines = line_count(text)
        if lines > MAX_FILE_LINES:
            files[path] = lines
        if path.endswith(".td"):
            continue
        try:
            found = python_functions(text, path) if path.endswith(".py") else cxx_functions(text)
        except (SyntaxError, ValueError) as err:
            raise AssertionError(f"{path}: cannot find its functions: {err}") from err
        seen = {}
        for name, first, last in found:
            seen[name] = seen.get(name, 0) + 1
            key = f"{path}:{name}" + (f"#{seen[name]}" if seen[name] > 1 else "")
            if last - first + 1 > MAX_FUNCTION_LINES:
                functions[key] = last - first + 1
    return files, functions


def ratchet(what, limit, found, allowed):
    """The complaints about ``found`` against the allowlist ``allowed``."""
    bad = []
    for key, size in sorted(found.items()):
        if key not in allowed:
            bad.append(f"new {what} over {limit} lines: {key} ({size})")
        elif size > allowed[key]:
            bad.append(f"{what} grew: {key} has {size} lines, listed with {allowed[key]}")
    for key, size in sorted(allowed.items()):
        if key not in found:
            bad.append(f"{what} no longer over {limit} lines: {key} (listed with {size}): "
                       "take it off the list")
    return bad


def report(files, functions):
    lines = [f"files over {MAX_FILE_LINES} lines:"]
    lines += [f"    {v:5}  {k}" for k, v in sorted(files.items(), key=lambda kv: -kv[1])]
    lines += [f"functions over {MAX_FUNCTION_LINES} lines:"]
    lines += [f"    {v:5}  {k}" for k, v in sorted(functions.items(), key=lambda kv: -kv[1])]
    return "\n".join(lines)


def test_files_and_functions_do_not_grow():
    files, functions = measure()
    print(report(files, functions))
    bad = ratchet("file", MAX_FILE_LINES, files, FILES) + \
        ratchet("function", MAX_FUNCTION_LINES, functions, FUNCTIONS)
    shrunk = [f"{k}: {v} (listed with {FILES[k]})" for k, v in files.items()
              if k in FILES and v < FILES[k]]
    shrunk += [f"{k}: {v} (listed with {FUNCTIONS[k]})" for k, v in functions.items()
               if k in FUNCTIONS and v < FUNCTIONS[k]]
    if shrunk:
        print("shrank (the listed numbers may come down):\n    " + "\n    ".join(shrunk))
    assert not bad, "\n".join(bad) + "\n" + report(files, functions)


CXX_SAMPLE = r'''
#include "x.h"  // {
#define BODY(x) { return x; }
namespace pf {
namespace {
struct Pair : public Base<int(char)> {
  Pair() : a(1), b{2}, c([] { return 3; }()) {
    run();
  }
  int get() const override { return a; }
  bool operator==(const Pair &o) const {
    return a == o.a;
  }
private:
  int a = 0, b{0};
  int c;
};
enum class Kind : int { A, B };
} // namespace
static const int table[] = {1, 2, 3};
template <typename T, typename = std::enable_if_t<(sizeof(T) > 1)>>
static T twice(T x) noexcept(true) {
  auto f = [&](T y) {
    if (y) { return "}" [0] == '}'; }
    return false;
  };
  /* } */ return x + x;
}
LogicalResult Pass::run(Operation *op) {
  return success();
}
extern "C" {
int pfrt_thing(int a_b) { return a_b; }
}
} // namespace pf
'''


def test_the_cxx_scan_finds_definitions():
    """Self-check of the C++ scan on a sample with the constructs it meets:
    member initializers with braces and lambdas, operators, templates whose
    arguments hold parentheses and '>', lambdas and braces in strings and
    comments inside a body, initializers and enums at namespace scope."""
    found = cxx_functions(CXX_SAMPLE)
    assert [(name, first, last) for name, first, last in found] == [
        ("Pair", 7, 9), ("get", 10, 10), ("operator==", 11, 13), ("twice", 21, 28),
        ("Pass::run", 29, 31), ("pfrt_thing", 33, 33)], found
    stripped = strip_cxx(CXX_SAMPLE)
    assert "BODY" not in stripped and "'}'" not in stripped and '"}"' not in stripped
    assert stripped.count("\n") == CXX_SAMPLE.count("\n")


def test_python_functions_are_measured_from_def_to_end():
    text = "class A:\n    def f(self):\n        def g():\n            pass\n        return g\n"
    assert python_functions(text) == [("A.f", 2, 5), ("A.f.g", 3, 4)]


if __name__ == "__main__":
    files, functions = measure()
    print(report(files, functions), file=sys.stderr)
    print("FILES = {")
    for k, v in sorted(files.items()):
        print(f'    "{k}": {v},')
    print("}\n\nFUNCTIONS = {")
    for k, v in sorted(functions.items()):
        print(f'    "{k}": {v},')
    print("}")
