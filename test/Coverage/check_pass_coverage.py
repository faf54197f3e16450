#!/usr/bin/env python3
"""Every pass declared in a Passes.td is run by its own flag in some lit test.

Usage: check_pass_coverage.py SRC_ROOT

Collects the pass names of every `Pass<"name", ...>` (and
`InterfacePass<"name", ...>`) in the .td files under SRC_ROOT/include and
SRC_ROOT/lib, and the RUN lines of every lit test under SRC_ROOT/test
(Inputs/ directories hold no tests and are skipped). A pass is covered when a
RUN line names it as a flag: `-name` or `--name`, possibly with `=...` or
`{...}` options. A pass reached only through a pipeline flag does not count:
its own flag must be tested. Prints the uncovered passes and exits 1.
"""

import pathlib
import re
import sys

PASS_DEF = re.compile(r'\b(?:Interface)?Pass<\s*"([^"]+)"')
RUN_LINE = re.compile(r"^\s*(?://|#|;)\s*RUN:(.*)$")
TEST_SUFFIXES = {".mlir", ".test"}


def declared_passes(root):
    passes = {}
    for top in ("include", "lib"):
        for td in sorted((root / top).rglob("*.td")):
            for lineno, line in enumerate(td.read_text().splitlines(), 1):
                for name in PASS_DEF.findall(line):
                    passes.setdefault(name, f"{td.relative_to(root)}:{lineno}")
    return passes


def run_lines(root):
    """(path, command) for every RUN command; `\\` continues a command."""
    for path in sorted((root / "test").rglob("*")):
        if path.suffix not in TEST_SUFFIXES or not path.is_file():
            continue
        if "Inputs" in path.relative_to(root / "test").parts:
            continue
        command = ""
        for line in path.read_text(errors="replace").splitlines():
            m = RUN_LINE.match(line)
            if not m:
                continue
            part = m.group(1).rstrip()
            if part.endswith("\\"):
                command += part[:-1] + " "
                continue
            yield path, command + part
            command = ""


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    root = pathlib.Path(argv[1]).resolve()
    passes = declared_passes(root)
    if not passes:
        print(f"error: no Pass<...> definitions under {root}", file=sys.stderr)
        return 2
    runs = list(run_lines(root))
    missing = []
    for name, where in sorted(passes.items()):
        flag = re.compile(r"(?<![\w-])--?" + re.escape(name) + r"(?![\w-])")
        tests = sorted({str(p.relative_to(root)) for p, cmd in runs
                        if flag.search(cmd)})
        if tests:
            print(f"covered: {name} ({len(tests)} test(s), e.g. {tests[0]})")
        else:
            missing.append((name, where))
    for name, where in missing:
        print(f"error: pass '{name}' ({where}) is not run by its flag "
              f"(-{name}) in any lit RUN line under test/")
    if missing:
        print(f"{len(missing)} of {len(passes)} passes have no RUN line "
              "naming them; add test/.../<pass>.mlir with "
              f"'// RUN: pf-opt %s -{missing[0][0]} ...'")
        return 1
    print(f"all {len(passes)} passes are run by their own flag")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
