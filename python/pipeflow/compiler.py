"""Driving ``pf-opt``: the compile cache and diagnostics mapped to user lines.

``compile_ir`` writes the IR and its options to
``<cache>/graphs/<sha256(IR + options)>/`` and runs ``pf-opt`` on it; the
verifier's ``FILE:LINE:COL: error: MSG`` lines name the user's source lines
(the front end emits them as ``loc(...)``) and become a
:class:`~pipeflow.CompileError`.
"""

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile

from . import config
from ._errors import CompileError, CompilerNotFound

_REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_DIAGNOSTIC = re.compile(r"^(?P<file>.+?):(?P<line>\d+):(?P<col>\d+): (?P<kind>error|warning|note|remark): (?P<msg>.*)$")


def find_pf_opt():
    """``$PF_OPT``, else ``pf-opt`` on ``PATH``, else ``<repo>/build/bin/pf-opt``."""
    explicit = os.environ.get("PF_OPT")
    if explicit:
        if os.path.isfile(explicit) and os.access(explicit, os.X_OK):
            return os.path.abspath(explicit)
        raise CompilerNotFound(f"PF_OPT={explicit!r} is not an executable file")
    on_path = shutil.which("pf-opt")
    if on_path:
        return on_path
    built = os.path.join(_REPO_ROOT, "build", "bin", "pf-opt")
    if os.path.isfile(built) and os.access(built, os.X_OK):
        return built
    raise CompilerNotFound(
        "cannot find pf-opt: build the compiler (build/bin/pf-opt), put it on PATH, "
        "or point the PF_OPT environment variable at it")


class CompiledGraph:
    """The cache entry of one compiled graph."""

    def __init__(self, key, directory, options):
        self.key = key
        self.directory = directory
        self.options = options
        self.ir_path = os.path.join(directory, "graph.mlir")
        self.options_path = os.path.join(directory, "options.json")
        self.verified_path = os.path.join(directory, "verified.mlir")

    @property
    def verified_ir(self):
        with open(self.verified_path) as f:
            return f.read()

    def __repr__(self):
        return f"CompiledGraph({self.directory!r})"


def cache_key(ir_text, options):
    """SHA-256 of the IR and the canonical JSON of the options."""
    digest = hashlib.sha256()
    digest.update(ir_text.encode("utf-8"))
    digest.update(b"\0")
    digest.update(json.dumps(options, sort_keys=True).encode("utf-8"))
    return digest.hexdigest()


def _write_atomic(path, text):
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def _stamp(tool):
    st = os.stat(tool)
    return f"{tool} {st.st_size} {st.st_mtime_ns}\n"


def compile_ir(ir_text, options, pf_opt=None):
    """Caches ``ir_text`` with ``options`` and verifies it with pf-opt."""
    tool = pf_opt or find_pf_opt()
    key = cache_key(ir_text, options)
    directory = os.path.join(config.cache_dir(), "graphs", key[:32])
    os.makedirs(directory, exist_ok=True)
    result = CompiledGraph(key, directory, options)
    stamp_path = os.path.join(directory, "pf-opt.stamp")
    stamp = _stamp(tool)
    if os.path.exists(result.verified_path) and os.path.exists(stamp_path):
        with open(stamp_path) as f:
            if f.read() == stamp:
                return result
    _write_atomic(result.ir_path, ir_text)
    _write_atomic(result.options_path, json.dumps(options, indent=2, sort_keys=True) + "\n")
    proc = subprocess.run([tool, result.ir_path, "-o", "-"], capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise diagnostics_to_error(proc.stderr, result.ir_path)
    _write_atomic(result.verified_path, proc.stdout)
    _write_atomic(stamp_path, stamp)
    return result


def diagnostics_to_error(stderr, ir_path):
    """The first ``error:`` of pf-opt's output as a CompileError at its location."""
    first, notes = None, []
    for line in stderr.splitlines():
        m = _DIAGNOSTIC.match(line)
        if not m:
            continue
        if m["kind"] == "error" and first is None:
            first = m
        elif first is not None and not m["msg"].startswith("see current operation"):
            notes.append(f"{m['file']}:{m['line']}: {m['kind']}: {m['msg']}")
    if first is None:
        return CompileError(f"pf-opt failed without a diagnostic:\n{stderr.strip()}")
    filename = first["file"]
    if os.path.abspath(filename) == os.path.abspath(ir_path):
        return CompileError(
            f"internal error: pf-opt rejected the IR the front end emitted: {first['msg']}",
            filename, int(first["line"]), int(first["col"]),
            notes + ["please report this with the IR file above"])
    return CompileError(f"{first['msg']} (reported by pf-opt)", filename, int(first["line"]),
                        int(first["col"]), notes)
