"""The front end's structure: module-level imports form a DAG, files and
functions stay small, and pipeflow modules are not imported inside functions.

The import graph is read with ``ast`` (nothing is imported). An edge goes
from a module to every pipeflow module its top-level code imports (class
bodies and ``if``/``try`` blocks included, function bodies not), and to the
packages above that module that are not its own: importing
``pipeflow.nn.parameter`` runs ``pipeflow/nn/__init__.py`` first, so from
outside ``pipeflow.nn`` it depends on the whole package.
"""

import ast
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE_DIR = os.path.join(os.path.dirname(os.path.dirname(HERE)), "python", "pipeflow")
ROOT = "pipeflow"

MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 150
MAX_GRAPH_LINES = 400
# Function-local imports of pipeflow modules allowed (each would need a
# comment saying why an import at the top of its module cannot work).
MAX_LOCAL_IMPORTS = 0


def modules():
    """``{module name: path}`` of every module of the package."""
    out = {}
    for directory, dirs, files in os.walk(PACKAGE_DIR):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            rel = os.path.relpath(os.path.join(directory, name), os.path.dirname(PACKAGE_DIR))
            parts = rel[:-3].split(os.sep)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = os.path.join(directory, name)
    return out


def _is_package(module, path):
    return path.endswith("__init__.py")


def _resolve(node, module, is_package, known):
    """The pipeflow modules an import statement names (submodules included)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name.split(".")[0] == ROOT]
    if node.level:
        parts = module.split(".")
        base = parts if is_package else parts[:-1]
        base = base[:len(base) - (node.level - 1)]
        target = ".".join(base + ([node.module] if node.module else []))
    elif node.module and node.module.split(".")[0] == ROOT:
        target = node.module
    else:
        return []
    found = [target]
    for alias in node.names:
        if f"{target}.{alias.name}" in known:
            found.append(f"{target}.{alias.name}")
    return found


def _walk_module_level(tree):
    """The statements that run at import time: not inside function bodies."""
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        yield node
        stack.extend(ast.iter_child_nodes(node))


def _function_imports(tree):
    """Import statements inside function bodies (nested ones once)."""
    found = {}
    for func in ast.walk(tree):
        if isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(func):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    found[id(node)] = node
    return sorted(found.values(), key=lambda n: n.lineno)


def _ancestors(name):
    """The packages above ``name`` (``pipeflow.nn`` for ``pipeflow.nn.graph``)."""
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def edges(module, source, known, is_package=False):
    """The modules that ``module`` (with text ``source``) needs at import time."""
    out = set()
    for node in _walk_module_level(ast.parse(source)):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for target in _resolve(node, module, is_package, known):
                out.add(target)
                out.update(_ancestors(target))
    # The module's own packages are being imported already (they import it).
    own = {module, ROOT} | set(_ancestors(module))
    return {e for e in out if e in known and e not in own}


def import_graph():
    """``{module: set of modules it needs at import time}``."""
    known = modules()
    graph = {}
    for module, path in known.items():
        with open(path) as f:
            graph[module] = edges(module, f.read(), known, _is_package(module, path))
    return graph


def find_cycle(graph):
    """One cycle as a list of modules (first == last), or ``None``."""
    state, stack = {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_module_level_imports_form_a_dag():
    graph = import_graph()
    assert len(graph) > 30 and "pipeflow._registry" in graph["pipeflow.tensor"]
    assert "pipeflow._ops" not in graph["pipeflow.tensor"]
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_graph_sees_package_edges_and_local_imports():
    """Self-check of the test: a low module importing from pipeflow.nn at the
    top depends on nn/__init__ (which closes a cycle); inside a function it
    is a local import, not an edge."""
    known = modules()
    top = "from .nn.parameter import Parameter\nfrom . import ir, nn\n"
    assert edges("pipeflow._trace", top, known) == {"pipeflow.nn.parameter", "pipeflow.nn",
                                                    "pipeflow.ir"}
    assert edges("pipeflow.nn.graph", "from .parameter import storage\n", known) == {
        "pipeflow.nn.parameter"}
    graph = import_graph()
    graph["pipeflow._trace"] = graph["pipeflow._trace"] | edges("pipeflow._trace", top, known)
    cycle = find_cycle(graph)
    assert cycle is not None and "pipeflow._trace" in cycle and "pipeflow.nn" in cycle
    inside = ast.parse("def f():\n    from .nn import graph\n    import os\n")
    assert [n.lineno for n in _function_imports(inside)] == [2, 3]
    assert edges("pipeflow._trace", "def f():\n    from . import nn\n", known) == set()


def test_files_and_functions_are_small():
    too_long, long_functions = [], []
    for path in modules().values():
        with open(path) as f:
            text = f.read()
        lines = text.count("\n") + (not text.endswith("\n") and bool(text))
        if lines > MAX_FILE_LINES:
            too_long.append(f"{path}: {lines} lines")
        for node in ast.walk(ast.parse(text, path)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                start = min([node.lineno] + [d.lineno for d in node.decorator_list])
                length = node.end_lineno - start + 1
                if length > MAX_FUNCTION_LINES:
                    long_functions.append(f"{path}:{node.lineno}: {node.name}() has {length} lines")
    assert not too_long, f"files over {MAX_FILE_LINES} lines: {too_long}"
    assert not long_functions, f"functions over {MAX_FUNCTION_LINES} lines: {long_functions}"
    with open(os.path.join(PACKAGE_DIR, "nn", "graph.py")) as f:
        assert sum(1 for _ in f) < MAX_GRAPH_LINES


def test_no_function_local_imports_of_pipeflow():
    known = modules()
    local = []
    for module, path in known.items():
        with open(path) as f:
            tree = ast.parse(f.read(), path)
        for node in _function_imports(tree):
            if _resolve(node, module, _is_package(module, path), known):
                local.append(f"{path}:{node.lineno}")
    assert len(local) <= MAX_LOCAL_IMPORTS, f"function-local imports of pipeflow: {local}"


def test_every_module_imports_on_its_own():
    """Each module imported first, in a fresh interpreter (any order of first
    imports works), and the tensor hooks are all provided."""
    code = ("import importlib, sys\n"
            f"sys.path.insert(0, {os.path.dirname(PACKAGE_DIR)!r})\n"
            "for name in sys.argv[1:]:\n"
            "    for m in [m for m in sys.modules if m == 'pipeflow' or m.startswith('pipeflow.')]:\n"
            "        del sys.modules[m]\n"
            "    importlib.import_module(name)\n"
            "    from pipeflow import _registry\n"
            "    assert not _registry.ops.missing() and not _registry.trace.missing(), name\n")
    names = sorted(modules())
    proc = subprocess.run([sys.executable, "-c", code] + names, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
