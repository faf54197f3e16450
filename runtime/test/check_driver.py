#!/usr/bin/python3
"""Checks the output of pfrt-test-driver (see test_driver.cpp).

  check_driver.py STDOUT_FILE LOSS_FILE|- STEPS SEED LR

STDOUT_FILE must hold exactly STEPS lines
    step <k> loss <v0> <v1> <v2> time_ms <t>
(k = 0..STEPS-1, other output allowed only if it does not start with
"step"), and LOSS_FILE (unless -) exactly STEPS lines "<v0> <v1> <v2>", with
v_mb = float32(param + lr * (k + 1) + 0.25 * mb) evaluated in float32 as the
program does, param = float32((SEED % 1000) * 0.5).
"""

import re
import sys

import numpy as np


def expected(steps, seed, lr):
    f = np.float32
    param = f(seed % 1000) * f(0.5)
    lr = f(lr)
    return [[(param + lr * f(k + 1)) + f(0.25) * f(mb) for mb in range(3)]
            for k in range(steps)]


def same(text_values, want):
    got = [np.float32(float(t)) for t in text_values]
    return len(got) == len(want) and all(g == w for g, w in zip(got, want))


def main():
    out_file, loss_file = sys.argv[1], sys.argv[2]
    steps, seed, lr = int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
    want = expected(steps, seed, lr)
    errors = []
    lines = [l.rstrip("\n") for l in open(out_file) if l.startswith("step")]
    if len(lines) != steps:
        errors.append("stdout has %d step lines, expected %d" %
                      (len(lines), steps))
    pat = re.compile(r"^step (\d+) loss ((?:\S+ )+)time_ms (\d+\.\d{3})$")
    for k, line in enumerate(lines[:steps]):
        m = pat.match(line)
        if not m:
            errors.append("malformed line: %r" % line)
            continue
        if int(m.group(1)) != k:
            errors.append("line %d says step %s" % (k, m.group(1)))
        if not same(m.group(2).split(), want[k]):
            errors.append("step %d: losses %s, expected %s" %
                          (k, m.group(2).strip(), [repr(float(v)) for v in want[k]]))
    if loss_file != "-":
        rows = [l.split() for l in open(loss_file)]
        if len(rows) != steps:
            errors.append("%s has %d lines, expected %d" %
                          (loss_file, len(rows), steps))
        for k, row in enumerate(rows[:steps]):
            if not same(row, want[k]):
                errors.append("loss file line %d: %s, expected %s" %
                              (k, row, want[k]))
    if errors:
        print("\n".join(errors))
        sys.exit(1)
    print("driver output OK (%d steps)" % steps)


if __name__ == "__main__":
    main()
