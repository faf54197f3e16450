#!/usr/bin/env python3
"""Writes the one-layer GPT of Conversion/PFToGPU/Inputs/cuda-gpt.mlir (read
from SOURCE) under a multi-rank layout, on "cuda" or "cpu" ranks, to stdout:

  tp     Megatron's tensor parallelism on ranks [0, 1]: c_attn's weight
         (attn_w) and c_fc (fc_w, fc_b) column-split S(0), both output
         projections (proj_w, fc2_w) row-split S(1), the token table and the
         head split by vocabulary S(0), everything else replicated;
  dp     data parallel on ranks [0, 1]: tokens and targets split S(0);
  pp     two pipeline stages: embeddings and the block on rank 0, the final
         layer norm, the head and the loss on rank 1;
  pp_tp  the two stages on [0, 1] and [2, 3], each tensor parallel as tp.

The program text is cuda-gpt.mlir's; only placements, SBPs and the stage
boundary change, so every layout computes the same logical step."""

import argparse
import re
import sys

# The weights Megatron splits and how (the shapes of cuda-gpt.mlir's).
TP_SPLITS = {
    "48x16xf32": "S(0)",  # attn_w
    # attn_b (48xf32): replicated, or split S(0) with --split-attn-b under
    # tp (each rank holds three 8-float parts of a grouped split, q, k and
    # v, 32 bytes apart); pp_tp keeps it replicated (pf-lower-boxing has no
    # boxing from the grouped split S(2, 3) to S(0) there yet).
    "64x16xf32": "S(0)",  # fc_w
    "64xf32": "S(0)",  # fc_b
    "16x16xf32": "S(1)",  # proj_w
    "16x64xf32": "S(1)",  # fc2_w
    "32x16xf32": "S(0)",  # wte and head_w: split by vocabulary
}
# Stage 1 of the pipelined layouts: these parameters and everything from
# the final layer norm on.
STAGE1_PARAMS = ("@lnf_g", "@lnf_b", "@head_w")
STAGE1_FIRST = "%gf = "


def tensor_parallel(text, split_attn_b=False):
    splits = dict(TP_SPLITS)
    if split_attn_b:
        splits["48xf32"] = "S(0)"
    for shape, split in splits.items():
        text = text.replace("!pf.global<%s, #P, #B>" % shape,
                            "!pf.global<%s, #P, #pf.sbp<[%s]>>" % (shape, split))
    return text


def with_stage(line, stage):
    """`line` (one op) with pf.stage = stage in its attributes."""
    m = re.match(r"(\s*%\S+ = pf\.\w+ [^:{]*)\{", line)
    if m:
        return line[:m.end()] + "pf.stage = %d, " % stage + line[m.end():]
    head, sep, rest = line.partition(" : ")
    return head + " {pf.stage = %d}" % stage + sep + rest


def pipelined(text):
    """Two stages: #P -> #P0 before the final layer norm, #P1 from it on,
    with a pf.to_global of the residual stream between them."""
    out, stage = [], 0
    for line in text.splitlines():
        if line.startswith("#P = "):
            out.append(line.replace("#P = ", "#P0 = ").replace("[0]", "__R0__"))
            out.append(line.replace("#P = ", "#P1 = ").replace("[0]", "__R1__"))
            continue
        if line.startswith("pf.param"):
            stage_of_param = 1 if any(p + " " in line for p in STAGE1_PARAMS) else 0
            out.append(line.replace("#P,", "#P%d," % stage_of_param))
            continue
        if line.startswith("func.func"):
            # tokens on stage 0, targets and the loss on stage 1.
            line = line.replace("%idx: !pf.global<2x8xi64, #P,", "%idx: !pf.global<2x8xi64, #P0,")
            line = line.replace("%tgt: !pf.global<2x8xi64, #P,", "%tgt: !pf.global<2x8xi64, #P1,")
            line = line.replace("-> !pf.global<f32, #P>", "-> !pf.global<f32, #P1>")
            out.append(line)
            continue
        if line.lstrip().startswith(STAGE1_FIRST):
            out.append("  %x2s = pf.to_global %x2 : !pf.global<2x8x16xf32, #P0> -> "
                       "!pf.global<2x8x16xf32, #P1, #B>")
            stage = 1
        if line.lstrip().startswith("%hf = "):
            line = line.replace("%x2,", "%x2s,").replace(
                "(!pf.global<2x8x16xf32, #P>,", "(!pf.global<2x8x16xf32, #P, #B>,")
        if any(line.lstrip().startswith(v) for v in ("%tok = ", "%hf = ", "%t2 = ")):
            line = with_stage(line, stage)
        out.append(re.sub(r"#P\b", "#P%d" % stage, line))
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("source")
    ap.add_argument("--layout", required=True, choices=["tp", "dp", "pp", "pp_tp"])
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--split-attn-b", action="store_true",
                    help="tp: split c_attn's bias too (three parts a rank)")
    args = ap.parse_args()
    text = open(args.source).read()
    text = "\n".join(l for l in text.splitlines() if not l.startswith("//")) + "\n"
    if args.layout == "tp":
        text = text.replace('#pf.placement<"cuda", [0]>', '#pf.placement<"cuda", [0, 1]>')
        text = tensor_parallel(text, split_attn_b=args.split_attn_b)
    elif args.layout == "dp":
        text = text.replace('#pf.placement<"cuda", [0]>', '#pf.placement<"cuda", [0, 1]>')
        # The tokens and targets (the only 2x8xi64 values) split by batch.
        text = text.replace("!pf.global<2x8xi64, #P, #B>", "!pf.global<2x8xi64, #P, #pf.sbp<[S(0)]>>")
    elif args.layout in ("pp", "pp_tp"):
        r0, r1 = ("0", "1") if args.layout == "pp" else ("0, 1", "2, 3")
        if args.layout == "pp_tp":
            text = tensor_parallel(text)
        text = pipelined(text).replace("__R0__", "[%s]" % r0).replace("__R1__", "[%s]" % r1)
    if args.device == "cpu":
        text = text.replace('#pf.placement<"cuda",', '#pf.placement<"cpu",')
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
