#!/usr/bin/env python3
"""The committed generated docs are those the build generates.

Usage: check_docs.py GENERATED_DIR COMMITTED_DIR

Every .md under GENERATED_DIR (build/docs/generated, written by every build
from the ODS: see docs/CMakeLists.txt) must equal the file of the same
relative path under COMMITTED_DIR (docs/). Prints a diff of each stale file
and how to refresh, and exits 1.
"""

import difflib
import pathlib
import sys

REFRESH = ("refresh the committed copies with `ninja -C build pf-doc` "
           "(or scripts/update-docs.sh) and commit docs/")


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    generated, committed = pathlib.Path(argv[1]), pathlib.Path(argv[2])
    docs = sorted(generated.rglob("*.md"))
    if not docs:
        print(f"error: no generated docs under {generated}: build the "
              "default target (or pf-generated-docs) first")
        return 2
    stale = 0
    for doc in docs:
        rel = doc.relative_to(generated)
        mine = committed / rel
        new = doc.read_text().splitlines(keepends=True)
        if not mine.exists():
            print(f"error: docs/{rel} is generated but not committed")
            stale += 1
            continue
        old = mine.read_text().splitlines(keepends=True)
        if old == new:
            print(f"up to date: docs/{rel}")
            continue
        stale += 1
        diff = list(difflib.unified_diff(old, new, f"docs/{rel} (committed)",
                                         f"{doc} (generated)"))
        print(f"error: docs/{rel} differs from the docs generated from the "
              f".td files ({len(diff)} diff lines):")
        sys.stdout.writelines(diff[:60])
        if len(diff) > 60:
            print(f"... {len(diff) - 60} more diff lines")
    if stale:
        print(f"{stale} generated doc(s) stale: {REFRESH}")
        return 1
    print(f"all {len(docs)} generated docs are up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
