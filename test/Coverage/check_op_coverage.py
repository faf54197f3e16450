#!/usr/bin/env python3
"""Every op of a dialect round-trips in its ops.mlir test.

Usage: check_op_coverage.py OPS_H_INC OPS_MLIR

OPS_H_INC is the ODS-generated op declarations (build tree,
include/pf/Dialect/PF/IR/PFOps.h.inc): every `getOperationName()` there is an
op of the dialect, whichever .td declared it. An op is covered when ops.mlir
both writes it (`pf.<op>` on an IR line) and checks its printed form (`pf.<op>`
on a CHECK line: ops.mlir parses, prints and parses again). Prints the ops
that are not and exits 1.
"""

import re
import sys

OP_NAME = re.compile(
    r'getOperationName\(\)\s*\{\s*return\s*::llvm::StringLiteral\("([^"]+)"\)')
CHECK_LINE = re.compile(r"^\s*//\s*CHECK[\w-]*:(.*)$")


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    ops = sorted(set(OP_NAME.findall(open(argv[1]).read())))
    if not ops:
        print(f"error: no getOperationName() in {argv[1]}", file=sys.stderr)
        return 2
    written, checked = set(), set()
    for line in open(argv[2]).read().splitlines():
        m = CHECK_LINE.match(line)
        if m:
            checked.add(m.group(1))
        elif not line.lstrip().startswith("//"):
            written.add(line.split("//")[0])
    missing = []
    for op in ops:
        use = re.compile(re.escape(op) + r"(?![\w.])")
        w = any(use.search(t) for t in written)
        c = any(use.search(t) for t in checked)
        if not (w and c):
            what = "written nor checked" if not (w or c) else (
                "written" if not w else "checked (no CHECK line names it)")
            missing.append(f"error: op '{op}' is not {what} in {argv[2]}")
    for m in missing:
        print(m)
    if missing:
        print(f"{len(missing)} of {len(ops)} ops do not round-trip in ops.mlir")
        return 1
    print(f"all {len(ops)} ops round-trip in ops.mlir")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
