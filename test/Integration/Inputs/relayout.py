#!/usr/bin/env python3
"""Rewrites the seed MLP (examples/mlir/seed_mlp.mlir) into another parallel
layout of the same logical program: other placements for its two stages and
other SBPs for the input, the labels, the stage-boundary activation and the
output layer's parameters. The logical computation is unchanged, so the
losses must equal the single-rank NumPy reference.

  relayout.py IN OUT --p0 '[0, 1, 2, 3]' --p1 '[0, 1, 2, 3]' --x 'S(0)' \
      --y 'S(0)' --h '?' --w1 B --b1 B --w2 'S(0)' --b2 'S(0)'

An SBP of '?' leaves the layout to pf-infer-sbp.
"""
import argparse
import re
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("--p0", default="[0]")
    ap.add_argument("--p1", default="[1]")
    for name in ("x", "y", "h", "w1", "b1", "w2", "b2"):
        ap.add_argument("--" + name, default="B")
    args = ap.parse_args()
    text = open(args.input).read()
    text = text.replace('#P0 = #pf.placement<"cpu", [0]>',
                        '#P0 = #pf.placement<"cpu", %s>' % args.p0)
    text = text.replace('#P1 = #pf.placement<"cpu", [1]>',
                        '#P1 = #pf.placement<"cpu", %s>' % args.p1)
    # The placements' hierarchy rank decides how many SBP entries there are.
    dims = 2 if args.p0.strip().startswith("[[") else 1

    def sbp(spec):
        if spec == "?":
            return ">"
        entries = [e.strip() for e in spec.split(",")]
        if len(entries) == 1 and dims == 2:
            entries = entries * 2
        return ", #pf.sbp<[%s]>>" % ", ".join(entries)

    if dims == 2:
        text = text.replace("#B = #pf.sbp<[B]>", "#B = #pf.sbp<[B, B]>")
    subs = [("16x1x28x28xf32, #P0, #B>", "16x1x28x28xf32, #P0" + sbp(args.x)),
            ("16xi64, #P1, #B>", "16xi64, #P1" + sbp(args.y)),
            ("16x512xf32, #P1, #B>", "16x512xf32, #P1" + sbp(args.h)),
            ("512x512xf32, #P1, #B>", "512x512xf32, #P1" + sbp(args.w1)),
            ("512xf32, #P1, #B>", "512xf32, #P1" + sbp(args.b1)),
            ("10x512xf32, #P1, #B>", "10x512xf32, #P1" + sbp(args.w2)),
            ("10xf32, #P1, #B>", "10xf32, #P1" + sbp(args.b2))]
    for old, new in subs:
        # Whole types only: 512xf32 must not match inside 10x512xf32.
        pattern = r"(?<![0-9x])" + re.escape(old)
        if not re.search(pattern, text):
            sys.exit("relayout.py: %r not found" % old)
        text = re.sub(pattern, new, text)
    open(args.output, "w").write(text)


if __name__ == "__main__":
    main()
