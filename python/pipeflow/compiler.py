"""Driving ``pf-opt`` and ``pf-translate``: the compile cache and diagnostics
mapped to user lines.

``compile_ir`` writes the IR and its options to
``<cache>/graphs/<sha256(IR + options)>/`` and runs ``pf-opt`` on it; the
verifier's ``FILE:LINE:COL: error: MSG`` lines name the user's source lines
(the front end emits them as ``loc(...)``) and become a
:class:`~pipeflow.CompileError`. ``build_cpu_artifacts`` then compiles the
same IR with ``pf-opt -pf-compile-cpu-pipeline="..."`` and
``pf-translate --pf-emit-rank-artifacts`` into ``<entry>/cpu/``:
``rank<r>``, ``librank<r>.so`` and ``manifest.json``. ``memory_plans``
stops after ``pf-opt``: every rank's static memory plan, read from the
lowered rank modules, for any number of ranks in one process and without
building the shared objects. Every step holds a file lock on the entry, so
the ranks of a job that compile the same graph at once share one compile.
"""

import contextlib
import fcntl
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


def _executable(path):
    return os.path.isfile(path) and os.access(path, os.X_OK)


def find_pf_opt():
    """``$PF_OPT``, else ``pf-opt`` on ``PATH``, else ``<repo>/build/bin/pf-opt``."""
    explicit = os.environ.get("PF_OPT")
    if explicit:
        if _executable(explicit):
            return os.path.abspath(explicit)
        raise CompilerNotFound(f"PF_OPT={explicit!r} is not an executable file")
    on_path = shutil.which("pf-opt")
    if on_path:
        return on_path
    built = os.path.join(_REPO_ROOT, "build", "bin", "pf-opt")
    if _executable(built):
        return built
    raise CompilerNotFound(
        "cannot find pf-opt: build the compiler (build/bin/pf-opt), put it on PATH, "
        "or point the PF_OPT environment variable at it")


def find_pf_translate(pf_opt=None):
    """``$PF_TRANSLATE``, else the ``pf-translate`` next to pf-opt, else on ``PATH``,
    else ``<repo>/build/bin/pf-translate``."""
    explicit = os.environ.get("PF_TRANSLATE")
    if explicit:
        if _executable(explicit):
            return os.path.abspath(explicit)
        raise CompilerNotFound(f"PF_TRANSLATE={explicit!r} is not an executable file")
    candidates = []
    if pf_opt:
        candidates.append(os.path.join(os.path.dirname(os.path.realpath(pf_opt)), "pf-translate"))
    on_path = shutil.which("pf-translate")
    if on_path:
        candidates.append(on_path)
    candidates.append(os.path.join(_REPO_ROOT, "build", "bin", "pf-translate"))
    for path in candidates:
        if _executable(path):
            return path
    raise CompilerNotFound(
        "cannot find pf-translate: build the compiler (build/bin/pf-translate), put it on PATH, "
        "or point the PF_TRANSLATE environment variable at it")


@contextlib.contextmanager
def _locked(directory):
    """An exclusive lock on a cache entry (the ranks of one job compile it once)."""
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, ".lock"), "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


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


def _read(path):
    try:
        with open(path) as f:
            return f.read()
    except FileNotFoundError:
        return None


def compile_ir(ir_text, options, pf_opt=None):
    """Caches ``ir_text`` with ``options`` and verifies it with pf-opt."""
    tool = pf_opt or find_pf_opt()
    key = cache_key(ir_text, options)
    directory = os.path.join(config.cache_dir(), "graphs", key[:32])
    result = CompiledGraph(key, directory, options)
    stamp_path = os.path.join(directory, "pf-opt.stamp")
    stamp = _stamp(tool)
    with _locked(directory):
        if os.path.exists(result.verified_path) and _read(stamp_path) == stamp:
            return result
        _write_atomic(result.ir_path, ir_text)
        _write_atomic(result.options_path, json.dumps(options, indent=2, sort_keys=True) + "\n")
        proc = subprocess.run([tool, result.ir_path, "-o", "-"], capture_output=True, text=True, timeout=600)
        if proc.returncode != 0:
            raise diagnostics_to_error(proc.stderr, result.ir_path)
        _write_atomic(result.verified_path, proc.stdout)
        _write_atomic(stamp_path, stamp)
    return result


class Artifacts:
    """The per-rank programs of a compiled graph: ``<entry>/cpu/`` and its manifest."""

    FORMAT = "pipeflow-artifacts-1"

    def __init__(self, directory, pipeline):
        self.directory = directory
        self.pipeline = pipeline
        self.manifest_path = os.path.join(directory, "manifest.json")
        with open(self.manifest_path) as f:
            self.manifest = json.load(f)
        if self.manifest.get("format") != self.FORMAT:
            raise CompileError(f"{self.manifest_path}: unknown artifact format "
                               f"{self.manifest.get('format')!r} (expected {self.FORMAT!r})")
        self.world_size = int(self.manifest["world_size"])
        self.ranks = {int(r["rank"]): r for r in self.manifest["ranks"]}

    def rank(self, rank):
        """The manifest entry of ``rank`` (``None`` if the program has no code for it)."""
        return self.ranks.get(rank)

    def shared_object(self, rank):
        entry = self.rank(rank)
        return None if entry is None else os.path.join(self.directory, entry["shared_object"])

    def __repr__(self):
        return f"Artifacts({self.directory!r}, world_size={self.world_size})"


def _artifact_stamp(pipeline, pf_opt, pf_translate):
    text = f"pipeline {pipeline}\n" + _stamp(pf_opt) + _stamp(pf_translate)
    # libpfrt is linked statically into the artifacts: a rebuilt runtime means relinking.
    for lib in ("libpfrt.a", "libpfrt_main.a"):
        path = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(pf_translate))),
                            "runtime", lib)
        if os.path.exists(path):
            text += _stamp(path)
    return text


_CUDA_PLACEMENT = re.compile(r'#pf\.placement<"cuda"')


def backend_of(ir_path):
    """``"cuda"`` when the traced program places anything on ``"cuda"`` (the
    front end keeps such placements only on a machine with GPUs, unless
    ``cuda_as_cpu``), else ``"cpu"``."""
    with open(ir_path) as f:
        return "cuda" if _CUDA_PLACEMENT.search(f.read()) else "cpu"


def build_cpu_artifacts(compiled, pipeline, pf_opt=None, pf_translate=None):
    """Compiles a cached graph for its ranks: ``pf-opt -pf-compile-cpu-pipeline="PIPELINE"``
    (``-pf-compile-gpu-pipeline`` when the program is placed on ``"cuda"``,
    :func:`backend_of`) then ``pf-translate --pf-emit-rank-artifacts``;
    returns its :class:`Artifacts`.

    The compiler's located errors (e.g. placements of several ranks, which need
    the SBP lowering that is not implemented yet) become CompileErrors at the
    user's lines.
    """
    pf_opt = pf_opt or find_pf_opt()
    pf_translate = pf_translate or find_pf_translate(pf_opt)
    backend = backend_of(compiled.ir_path)
    directory = os.path.join(compiled.directory, backend)
    stamp_path = os.path.join(compiled.directory, backend + ".stamp")
    stamp = _artifact_stamp(pipeline, pf_opt, pf_translate)
    with _locked(compiled.directory):
        if os.path.exists(os.path.join(directory, "manifest.json")) and _read(stamp_path) == stamp:
            return Artifacts(directory, pipeline)
        lowered = _lower(compiled, pipeline, pf_opt, backend)
        staging = tempfile.mkdtemp(dir=compiled.directory, prefix="." + backend + "-")
        proc = subprocess.run([pf_translate, "--pf-emit-rank-artifacts", lowered, "--pf-artifact-dir=" + staging],
                              capture_output=True, text=True, timeout=600)
        if proc.returncode != 0:
            shutil.rmtree(staging, ignore_errors=True)
            raise diagnostics_to_error(proc.stderr, lowered, "pf-translate")
        if os.path.exists(directory):
            # A process may still have the old shared objects loaded: move them
            # aside instead of overwriting the files it maps.
            shutil.move(directory, tempfile.mkdtemp(dir=compiled.directory, prefix=".old-"))
        os.replace(staging, directory)
        _write_atomic(stamp_path, stamp)
    return Artifacts(directory, pipeline)


def _lower(compiled, pipeline, pf_opt, backend):
    """``pf-opt -pf-compile-<backend>-pipeline="PIPELINE"`` of a cached graph
    into ``<entry>/lowered.mlir`` (kept while the pipeline and pf-opt are the
    same); the caller holds the entry's lock."""
    lowered = os.path.join(compiled.directory, "lowered.mlir")
    stamp_path = os.path.join(compiled.directory, "lowered.stamp")
    stamp = f"{backend} pipeline {pipeline}\n" + _stamp(pf_opt)
    if os.path.exists(lowered) and _read(stamp_path) == stamp:
        return lowered
    flag = "-pf-compile-gpu-pipeline" if backend == "cuda" else "-pf-compile-cpu-pipeline"
    proc = subprocess.run([pf_opt, compiled.ir_path, f"{flag}={pipeline}", "-o", lowered + ".tmp"],
                          capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise diagnostics_to_error(proc.stderr, compiled.ir_path)
    if os.path.exists(stamp_path):
        os.remove(stamp_path)
    os.replace(lowered + ".tmp", lowered)
    _write_atomic(stamp_path, stamp)
    return lowered


_RANK_MODULE = re.compile(r"^\s*module @\S+ attributes \{pf\.rank = (\d+) : i64")
_MEMORY_ATTR = re.compile(r"pfrt\.memory = \{([^{}]*)\}")
_MEMORY_ENTRY = re.compile(r"(\w+) = (-?\d+) : i64")


def read_memory_plans(lowered):
    """``{rank: {"arena_bytes": ..., ...}}``: the ``pfrt.memory`` plan of every
    rank module of a lowered program (the manifest's ``memory`` entries)."""
    plans = {}
    with open(lowered) as f:
        for line in f:
            rank = _RANK_MODULE.match(line)
            if not rank:
                continue
            memory = _MEMORY_ATTR.search(line)
            if memory is None:
                raise CompileError(f"internal error: {lowered}: rank {rank[1]}'s module has no "
                                   "pfrt.memory plan")
            plans[int(rank[1])] = {k: int(v) for k, v in _MEMORY_ENTRY.findall(memory[1])}
    if not plans:
        raise CompileError(f"internal error: {lowered} holds no rank module")
    return plans


def memory_plans(compiled, pipeline, pf_opt=None):
    """Every rank's static memory plan of a cached graph compiled with
    ``pipeline`` (:func:`read_memory_plans`), compiled up to the per-rank
    LLVM-dialect modules only: no shared objects are built and nothing runs,
    so one process gets the plans of a program for any number of ranks (the
    artifacts built later from the same lowering hold the same plans)."""
    pf_opt = pf_opt or find_pf_opt()
    with _locked(compiled.directory):
        return read_memory_plans(_lower(compiled, pipeline, pf_opt, backend_of(compiled.ir_path)))


def stage_report(compiled, num_stages, num_chunks=1, balance="flops", pf_opt=None):
    """pf-auto-stages' report of how it cuts a cached graph into ``num_stages``
    x ``num_chunks`` stages (``pf-opt -pf-auto-stages="... report"``), as text."""
    tool = pf_opt or find_pf_opt()
    options = f"num-stages={int(num_stages)} num-chunks={int(num_chunks)} balance={balance} report"
    proc = subprocess.run([tool, compiled.ir_path, f"-pf-auto-stages={options}", "-o", os.devnull],
                          capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise diagnostics_to_error(proc.stderr, compiled.ir_path)
    return proc.stdout


def debug_report(compiled, pipeline, pf_opt=None):
    """The reports ``pf-opt -pf-compile-cpu-pipeline="PIPELINE boxing-report=-
    schedule-report=true"`` (``-pf-compile-gpu-pipeline`` for a program on
    ``"cuda"``, as the graph itself compiles) prints for a cached graph
    (compiled up to the per-rank programs): the automatic stages' cut, every
    boxing op and each rank's schedule, as text."""
    tool = pf_opt or find_pf_opt()
    options = f"{pipeline} boxing-report=- schedule-report=true pf-compile-to=rank"
    flag = "-pf-compile-gpu-pipeline" if backend_of(compiled.ir_path) == "cuda" else "-pf-compile-cpu-pipeline"
    proc = subprocess.run([tool, compiled.ir_path, f"{flag}={options}", "-o",
                           os.devnull], capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise diagnostics_to_error(proc.stderr, compiled.ir_path)
    return proc.stdout


def diagnostics_to_error(stderr, ir_path, tool="pf-opt"):
    """The first ``error:`` of pf-opt's (or ``tool``'s) output as a CompileError at its location."""
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
        return CompileError(f"{tool} failed without a diagnostic:\n{stderr.strip()}")
    filename = first["file"]
    if os.path.abspath(filename) == os.path.abspath(ir_path):
        what = "the IR the front end emitted" if tool == "pf-opt" else os.path.basename(ir_path)
        return CompileError(
            f"internal error: {tool} rejected {what}: {first['msg']}",
            filename, int(first["line"]), int(first["col"]),
            notes + ["please report this with the IR file above"])
    return CompileError(f"{first['msg']} (reported by {tool})", filename, int(first["line"]),
                        int(first["col"]), notes)
