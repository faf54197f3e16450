"""Compares two --loss-out files (one line of losses per step): the same
number of steps and losses, and every loss within --tolerance relative of
the reference's (0 means identical bits). Prints PASS or the worst loss."""

import argparse
import struct
import sys


def read(path):
    with open(path) as f:
        return [[float(v) for v in line.split()] for line in f if line.strip()]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("reference")
    ap.add_argument("candidate")
    ap.add_argument("--tolerance", type=float, default=1e-4)
    ap.add_argument("--steps", type=int, default=None,
                    help="compare the losses of the first STEPS steps only (both files must have them all)")
    args = ap.parse_args()
    ref, got = read(args.reference), read(args.candidate)
    if not ref or [len(r) for r in ref] != [len(g) for g in got]:
        sys.exit(f"FAIL: {len(ref)} steps of {args.reference} against {len(got)} of {args.candidate}")
    if args.steps is not None:
        ref, got = ref[:args.steps], got[:args.steps]
    worst, where = 0.0, None
    for step, (r, g) in enumerate(zip(ref, got)):
        for k, (a, b) in enumerate(zip(r, g)):
            if args.tolerance == 0:
                err = 0.0 if struct.pack("<f", a) == struct.pack("<f", b) else float("inf")
            else:
                err = abs(a - b) / max(abs(a), 1e-12)
            if err > worst:
                worst, where = err, (step, k, a, b)
    print(f"{sum(len(r) for r in ref)} losses over {len(ref)} steps, max relative error {worst:.3g}")
    if worst > args.tolerance:
        step, k, a, b = where
        sys.exit(f"FAIL: step {step} micro-batch {k}: {b!r} against {a!r}")
    print("PASS")


if __name__ == "__main__":
    main()
