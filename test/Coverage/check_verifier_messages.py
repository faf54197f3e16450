#!/usr/bin/env python3
"""Every verifier message of a C++ file has a failing case in invalid.mlir.

Usage: check_verifier_messages.py INVALID_MLIR SOURCE.cpp...

For each `emitOpError(...)` / `emitError(...)` statement of the sources the
message is its string literals in order (adjacent literals joined, as C++
does; a streamed value between two literals becomes "anything"). It is
covered when an `expected-error {{...}}` of INVALID_MLIR contains it, the
streamed values filled in any way. Prints the uncovered messages with their
source line and exits 1.
"""

import re
import sys

CALL = re.compile(r"\bemit(?:Op)?Error\s*\(")
# A C++ string literal (no raw strings in verifiers).
LITERAL = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
EXPECTED = re.compile(r"expected-error\s*(?:@[^\s{]+\s*)?\{\{(.*?)\}\}")


def unescape(s):
    return bytes(s, "utf-8").decode("unicode_escape")


def statement_end(text, start):
    """Index of the `;` ending the statement at `start` (outside strings,
    comments and parentheses)."""
    depth, i = 0, start
    while i < len(text):
        c = text[i]
        if c == '"':
            i = LITERAL.match(text, i).end()
            continue
        if text.startswith("//", i):
            i = text.index("\n", i)
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == ";" and depth == 0:
            return i
        i += 1
    return i


def messages(path):
    text = open(path).read()
    for call in CALL.finditer(text):
        end = statement_end(text, call.end() - 1)
        body = text[call.end():end]
        pieces, last = [], None
        for lit in LITERAL.finditer(body):
            between = body[last:lit.start()] if last is not None else None
            # `"a" "b"` and `"a" << "b"` print "ab"; anything else streams a
            # value in between.
            if between is not None and between.strip() in ("", "<<"):
                pieces[-1] += unescape(lit.group(1))
            else:
                pieces.append(unescape(lit.group(1)))
            last = lit.end()
        pieces = [p for p in pieces if p.strip()]
        if not pieces:
            continue
        line = text.count("\n", 0, call.start()) + 1
        yield f"{path}:{line}", pieces


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    expected = EXPECTED.findall(open(argv[1]).read())
    total, missing = 0, []
    for source in argv[2:]:
        for where, pieces in messages(source):
            total += 1
            pattern = re.compile(".*".join(re.escape(p) for p in pieces))
            if not any(pattern.search(e) for e in expected):
                missing.append((where, pieces))
    if total == 0:
        print("error: no emitOpError/emitError messages found",
              file=sys.stderr)
        return 2
    for where, pieces in missing:
        shown = "{...}".join(pieces)
        print(f"error: {where}: no expected-error in {argv[1]} for "
              f"\"{shown}\"")
    if missing:
        print(f"{len(missing)} of {total} verifier messages have no failing "
              "case; add one per message to invalid.mlir "
              "(// expected-error @+1 {{...}})")
        return 1
    print(f"all {total} verifier messages have a failing case")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
