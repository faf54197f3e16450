"""Every repository path the docs name exists.

Pure Python: it reads the Markdown files and the work tree, and needs no
compiler build. Run it with
``/usr/bin/python3 -m pytest -q test/python/test_docs.py``.

What it reads: ``README.md``, ``docs/**/*.md``, ``bench/README.md``,
``python/README.md``, ``runtime/README.md`` and any
``examples/**/README.md``.

What counts as a path:

- the target of a Markdown link, ``[text](target)`` or ``[label]: target``,
  that is relative (``http(s)://``, ``mailto:`` and pure ``#anchor`` links
  are skipped; a ``#anchor`` is cut off). It resolves against the doc's
  directory, as a Markdown viewer resolves it, and must stay inside the
  repository (``../shared/DESIGN.md`` is dead in a clone);
- a word of an inline code span (`` `...` ``, split at blanks, so a
  command in a code span is checked word by word), of a fenced code block,
  or of the prose, when it contains ``/`` and starts with one of the
  repository's top-level directories (``docs/``, ``lib/``, ``include/``,
  ``runtime/``, ``python/``, ``test/``, ``tools/``, ``scripts/``,
  ``bench/``, ``examples/``, ``unittests/``, ``.ci/``); in a code span
  (not in prose or a fenced block) also a word that contains ``/`` and
  ends with a source or doc suffix (``.cpp``, ``.h``, ``.td``, ``.py``,
  ``.md``, ...). Such a word resolves against the repository root or,
  failing that, the doc's directory (runtime/README.md names ``src/...``
  and ``test/...`` as its own). A code-span word that does not start with
  a top-level directory may also name a file by its tail, as an include
  path does (``pfrt/AbiTraits.h`` for ``runtime/include/pfrt/AbiTraits.h``,
  ``_graph/outputs.py`` in python/README.md): it is found when a file of
  the repository ends with ``/`` and the word.

What is not checked (each names something that is not a file of the
repository):

- build outputs: a word that starts with ``build/`` or ``build-`` (the
  build trees: ``build/bin/pf-opt``, ``build-fuzz/``), or that names a
  file only a build writes into the source tree (``BUILD_ONLY`` below);
- templates and globs: a word with ``*``, ``<``, ``>``, ``{``, ``}``,
  ``$`` or ``...`` (``DIR/rank<r>``, ``runtime/src/{mpi,cpu}``,
  ``$PIPEFLOW_CACHE/...``), or whose first component is an upper-case
  placeholder (``DIR/manifest.json``, ``DDIR/input0.npy``);
- option values and URLs: a word with ``=`` or ``://``.

A failure lists every missing path with its doc and line number.
"""

import os
import re
import sys

REPO = os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
)

TOP_DIRS = (
    "docs", "lib", "include", "runtime", "python", "test", "tools",
    "scripts", "bench", "examples", "unittests", ".ci",
)  # fmt: skip
SUFFIXES = (
    ".md", ".py", ".cpp", ".c", ".h", ".td", ".def", ".cu", ".mlir",
    ".test", ".sh", ".txt", ".cmake", ".json", ".toml", ".cfg", ".in",
)  # fmt: skip

# Repository-relative paths that exist only after a build writes them into
# the source tree. None today: the build writes into build/ (PF_BUILD_DIR),
# and the docs name its outputs with that prefix.
BUILD_ONLY = frozenset()

_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_REF_LINK = re.compile(r"^\s{0,3}\[[^\]]+\]:\s+<?(\S+?)>?(?:\s+\"[^\"]*\")?$")
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
_CODE_SPAN = re.compile(r"(`+)(.+?)\1")
_FENCE = re.compile(r"^\s{0,3}(```|~~~)")
_TEMPLATE = re.compile(r"[*<>{}$]|\.\.\.|=|://")
_PLACEHOLDER = re.compile(r"^[A-Z][A-Z0-9_]*$")
# The characters a path is made of (and those of templates, so that a
# template is read whole and then skipped).
_WORD = re.compile(r"[A-Za-z0-9_.\-/+#*<>{}$=:,~@]+")


def doc_files():
    """The docs to scan, as repository-relative paths."""
    docs = [
        "README.md", "bench/README.md", "python/README.md",
        "runtime/README.md",
    ]  # fmt: skip
    for top in ("docs", "examples"):
        for root, dirs, files in os.walk(os.path.join(REPO, top)):
            dirs.sort()
            for name in sorted(files):
                wanted = name.endswith(".md") if top == "docs" else (
                    name == "README.md")
                if wanted:
                    path = os.path.join(root, name)
                    docs.append(os.path.relpath(path, REPO))
    return [d for d in docs if os.path.isfile(os.path.join(REPO, d))]


def _clean(word):
    """A word without the punctuation prose puts around a path."""
    word = word.strip()
    while word and word[-1] in ".,;:)]'\"!?":
        word = word[:-1]
    while word and word[0] in "([\"'":
        word = word[1:]
    return word


def _skipped(word):
    if not word or word.startswith(("build/", "build-", "-")):
        return True
    if _TEMPLATE.search(word):
        return True
    if _PLACEHOLDER.match(word.split("/", 1)[0]):
        return True
    return word.rstrip("/") in BUILD_ONLY


def _is_top_path(word):
    return "/" in word and word.split("/", 1)[0] in TOP_DIRS


def _is_suffix_path(word):
    return "/" in word and word.endswith(SUFFIXES)


def _exists(path, base_dirs):
    """Whether `path`, against one of `base_dirs` (repository-relative),
    is a file or directory inside the repository."""
    path = path.split("#", 1)[0]
    inside = os.path.join(REPO, "")
    for base in base_dirs:
        full = os.path.normpath(os.path.join(REPO, base, path))
        if full.startswith(inside) and os.path.exists(full):
            return True
    return False


_FILES = {}


def _repo_files():
    """Every file of the work tree but the build trees' and git's, as
    repository-relative paths."""
    if REPO not in _FILES:
        files = []
        skip = (".git", "out", ".cache")
        for root, dirs, names in os.walk(REPO):
            if root == REPO:
                dirs[:] = [
                    d for d in dirs
                    if d not in skip and not d.startswith("build")
                ]  # fmt: skip
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            for n in names:
                files.append(os.path.relpath(os.path.join(root, n), REPO))
        _FILES[REPO] = files
    return _FILES[REPO]


def _exists_by_tail(word):
    tail = "/" + os.path.normpath(word)
    return any(f.endswith(tail) for f in _repo_files())


def scan(doc):
    """(line number, kind, path, found) for every path `doc` names."""
    doc_dir = os.path.dirname(doc)
    with open(os.path.join(REPO, doc), encoding="utf-8") as f:
        lines = f.read().splitlines()
    out = []

    def word_path(number, kind, word):
        if _is_top_path(word) and not _skipped(word):
            out.append((number, kind, word, _exists(word, ("", doc_dir))))

    in_fence = False
    for number, line in enumerate(lines, 1):
        if _FENCE.match(line):
            in_fence = not in_fence
            continue
        if in_fence:
            for word in _WORD.findall(line):
                word_path(number, "code", _clean(word))
            continue
        targets = _LINK.findall(line)
        ref = _REF_LINK.match(line)
        if ref:
            targets.append(ref.group(1))
        for target in targets:
            if target.startswith("#") or _SCHEME.match(target):
                continue
            found = _exists(target, (doc_dir,))
            out.append((number, "link", target, found))
        for span in _CODE_SPAN.finditer(line):
            for word in span.group(2).split():
                word = _clean(word)
                if _skipped(word):
                    continue
                if _is_top_path(word):
                    word_path(number, "code", word)
                elif _is_suffix_path(word):
                    found = _exists(word, ("", doc_dir)) or _exists_by_tail(
                        word)
                    out.append((number, "code", word, found))
        # The prose: the line without its code spans and links.
        prose = _LINK.sub(" ", _CODE_SPAN.sub(" ", line))
        for word in _WORD.findall(prose):
            word_path(number, "prose", _clean(word))
    return out


def missing_paths():
    return [
        f"{doc}:{number}: {kind} names {path}, which is not a file or "
        "directory of the repository"
        for doc in doc_files()
        for number, kind, path, found in scan(doc)
        if not found
    ]


def test_docs_are_found():
    docs = doc_files()
    for doc in ("README.md", "docs/Design.md", "docs/Status.md",
                "bench/README.md", "python/README.md", "runtime/README.md"):
        assert doc in docs


def test_every_named_path_exists():
    missing = missing_paths()
    assert not missing, (
        "paths named in the docs that do not exist:\n" + "\n".join(missing))


def test_the_scanner(tmp_path, monkeypatch):
    """Each kind of path is found, a bogus one of each kind fails, and the
    exclusions hold."""
    (tmp_path.parent / "outside.md").write_text("x\n")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "Real.md").write_text("x\n")
    (tmp_path / "lib" / "b").mkdir(parents=True)
    (tmp_path / "lib" / "A.cpp").write_text("x\n")
    (tmp_path / "lib" / "b" / "C.h").write_text("x\n")
    (tmp_path / "docs" / "X.md").write_text("\n".join([
        "[real](Real.md#top) [bogus](Nope.md) [web](https://e.org/a.md)",
        "[here](#anchor) [out](../../outside.md)",
        "`lib/A.cpp` `lib/Missing.cpp` `pf-opt lib/A.cpp -o x`",
        "`sub/Thing.h` `x/A.cpp` `b/C.h`",
        "prose names lib/A.cpp, and lib/Gone.cpp.",
        "`build/bin/pf-opt` `DIR/manifest.json` `runtime/src/{mpi,cpu}`",
        "`lib/*.cpp` `--dir=lib/Opt.cpp`",
        "```sh",
        "lib/Fenced.cpp --flag=lib/Opt.cpp",
        "```",
        "[ref]: Real.md",
    ]) + "\n")
    monkeypatch.setattr(sys.modules[__name__], "REPO", str(tmp_path))
    found = {(n, path): ok for n, _, path, ok in scan("docs/X.md")}
    assert found == {
        (1, "Real.md#top"): True, (1, "Nope.md"): False,
        (2, "../../outside.md"): False,
        (3, "lib/A.cpp"): True, (3, "lib/Missing.cpp"): False,
        (4, "sub/Thing.h"): False, (4, "x/A.cpp"): False, (4, "b/C.h"): True,
        (5, "lib/A.cpp"): True, (5, "lib/Gone.cpp"): False,
        (9, "lib/Fenced.cpp"): False,
        (11, "Real.md"): True,
    }  # fmt: skip
