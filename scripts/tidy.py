#!/usr/bin/python3
"""clang-tidy-22 with the root .clang-tidy on the C/C++ code changed since a
base commit (only the changed lines), or on every file (--all). Run by
scripts/lint.sh; by hand:

  scripts/tidy.py [--build DIR] [-j N] [--base REV | --all]

--base defaults to the commit in scripts/lint-base. The changed files are
those of ``git diff BASE`` (the working tree against BASE) and untracked ones;
a changed source is checked if the compilation database
(DIR/compile_commands.json, default build/) compiles it, a changed header
through the source of the same name (Foo.h: Foo.cpp) and through every changed
source that includes it. CUDA (.cu) files are skipped: the database has no
command for them. Only diagnostics on changed lines count (clang-tidy's
-line-filter), so a file's older findings do not fail the change that touches
it; --all reports every finding of every file.

Prints "path:line:col: warning: message [check]" for each finding and ends
with "clang-tidy: N passed, M failed" (checked files with no finding, with
findings). Exits 1 on a finding, 2 if it could not run.
"""

import argparse
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BASE_FILE = os.path.join(ROOT, "scripts", "lint-base")
DIRS = ["include", "lib", "tools", "runtime", "unittests"]
SOURCE = re.compile(r"\.(c|cc|cpp|cxx)$")
HEADER = re.compile(r"\.(h|hh|hpp|hxx)$")
DIAGNOSTIC = re.compile(r"^(?P<path>[^:\s][^:]*):(?P<line>\d+):(?P<col>\d+): "
                        r"(?P<kind>warning|error): (?P<text>.*)$")


def git(*args):
    return subprocess.run(["git", "-C", ROOT, *args], check=True, capture_output=True,
                          text=True).stdout


def changed_lines(base):
    """``{repo-relative path: [[first, last], ...]}`` of the C/C++ lines that
    differ from ``base`` (untracked files whole)."""
    out, path = {}, None
    diff = git("diff", "-U0", "--no-color", "--no-ext-diff", "--diff-filter=d", base, "--",
               *DIRS)
    for line in diff.splitlines():
        if line.startswith("+++ "):
            path = line[6:] if line.startswith("+++ b/") else None
        elif line.startswith("@@") and path:
            m = re.match(r"@@ -\S+ \+(\d+)(?:,(\d+))? @@", line)
            first, count = int(m.group(1)), int(m.group(2) or 1)
            if count:
                out.setdefault(path, []).append([first, first + count - 1])
    for path in git("ls-files", "--others", "--exclude-standard", "--", *DIRS).splitlines():
        with open(os.path.join(ROOT, path), errors="replace") as f:
            out[path] = [[1, max(1, sum(1 for _ in f))]]
    return {p: r for p, r in out.items() if SOURCE.search(p) or HEADER.search(p)}


def database(build):
    """The repository's sources that ``build``'s compilation database compiles
    (repo-relative paths), or ``None`` without a database."""
    path = os.path.join(build, "compile_commands.json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        entries = json.load(f)
    found = set()
    for e in entries:
        file = os.path.normpath(os.path.join(e["directory"], e["file"]))
        rel = os.path.relpath(file, ROOT)
        if not rel.startswith("..") and rel.split(os.sep)[0] in DIRS and SOURCE.search(rel):
            found.add(rel)
    return found


def includers(header, sources):
    """The sources among ``sources`` that include ``header`` by name."""
    name = os.path.basename(header)
    pattern = re.compile(r'^\s*#\s*include\s*[<"](?:[^">]*/)?' + re.escape(name) + r'[">]', re.M)
    found = []
    for source in sources:
        with open(os.path.join(ROOT, source), errors="replace") as f:
            if pattern.search(f.read()):
                found.append(source)
    return found


def units(changed, compiled):
    """The sources to run clang-tidy on, and the changed headers none reaches."""
    sources = sorted(p for p in changed if SOURCE.search(p) and p in compiled)
    chosen, unreached = set(sources), []
    by_stem = {}
    for p in compiled:
        by_stem.setdefault(os.path.splitext(os.path.basename(p))[0], []).append(p)
    for header in sorted(p for p in changed if HEADER.search(p)):
        stem = os.path.splitext(os.path.basename(header))[0]
        near = sorted(by_stem.get(stem, []),
                      key=lambda p: os.path.dirname(p) != os.path.dirname(header))
        reach = near[:1] + includers(header, sources)
        if not reach:
            unreached.append(header)
        chosen.update(reach)
    return sorted(chosen), unreached


def run_one(tidy, build, source, line_filter):
    cmd = [tidy, "-p", build, "--quiet"]
    if line_filter is not None:
        cmd.append("--line-filter=" + json.dumps(line_filter, separators=(",", ":")))
    proc = subprocess.run(cmd + [os.path.join(ROOT, source)], cwd=ROOT, capture_output=True,
                          text=True)
    findings = []
    for line in proc.stdout.splitlines():
        m = DIAGNOSTIC.match(line)
        if m:
            path = os.path.relpath(os.path.normpath(os.path.join(ROOT, m["path"])), ROOT)
            findings.append(f"{path}:{m['line']}:{m['col']}: {m['kind']}: {m['text']}")
    if proc.returncode != 0 and not findings:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-5:]
        findings.append(f"{source}: error: clang-tidy exited with status {proc.returncode}: "
                        + " | ".join(tail))
    return source, findings


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", default=os.environ.get("PF_BUILD_DIR",
                                                          os.path.join(ROOT, "build")))
    parser.add_argument("-j", type=int, default=int(os.environ.get("PF_JOBS") or
                                                    os.cpu_count() or 1))
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--base", help="a commit (default: the one in scripts/lint-base)")
    what.add_argument("--all", action="store_true", help="every file, every line")
    args = parser.parse_args()
    build = os.path.abspath(args.build)
    tidy = os.environ.get("CLANG_TIDY", "clang-tidy-22")

    if not shutil.which(tidy):
        print(f"error: {tidy} not found (apt-get install clang-tidy-22, or set CLANG_TIDY)")
        return 2
    compiled = database(build)
    if compiled is None:
        print(f"error: no {build}/compile_commands.json (CMakeLists.txt sets "
              "CMAKE_EXPORT_COMPILE_COMMANDS: configure and build first)")
        return 2
    if args.all:
        todo, unreached, line_filter, what = sorted(compiled), [], None, "every file"
    else:
        base = args.base
        if base is None:
            with open(BASE_FILE) as f:
                base = f.read().split()[0]
        try:
            git("rev-parse", "--verify", "--quiet", base + "^{commit}")
        except subprocess.CalledProcessError:
            print(f"error: the base commit {base} is not in this repository (a shallow "
                  "clone?): fetch it, or pass --base or --all")
            return 2
        changed = changed_lines(base)
        todo, unreached = units(changed, compiled)
        line_filter = [{"name": p, "lines": r} for p, r in sorted(changed.items())]
        what = f"the lines changed since {base[:12]}"
    for header in unreached:
        print(f"note: {header} changed, but no compiled source includes it: not checked")

    passed = failed = 0
    seen = set()
    with concurrent.futures.ThreadPoolExecutor(max(1, args.j)) as pool:
        jobs = [pool.submit(run_one, tidy, build, s, line_filter) for s in todo]
        for job in jobs:
            source, findings = job.result()
            new = [f for f in findings if f not in seen]
            seen.update(findings)
            for f in new:
                print(f)
            if findings:
                failed += 1
            else:
                passed += 1
    print(f"clang-tidy on {what}: {len(todo)} files")
    print(f"clang-tidy: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
