#!/usr/bin/env python3
"""Exposed gradient communication of a data-parallel step, with and without
overlap, measured from the ranks' traces (issue 15).

  overlap_bench.py [--layout dp|tp] [--widths 1024,1024,...] [--batch N]
                   [--steps S] [--bucket-bytes B] [--ranks 2] [--emulated]
                   [--workdir D]

The MLP of gen_mlp.py, data parallel over `--ranks` "cuda" ranks (the batch
split, the parameters replicated, every gradient all-reduced in buckets),
is compiled twice: overlap-gradients=on (each bucket's all-reduce started
as soon as its last gradient is made, waited for at the update) and =off
(a blocking all-reduce per bucket). Each runs under pf-run with --trace;
a traced GPU rank times every op on the device (runtime/README.md, docs/Status.md), so in
rank 0's trace:

  exposed  = the device time the compute stream spends inside the
             communication ops (pf.all_reduce, pf.all_reduce_wait): what
             the step waits for; without overlap that is the whole
             communication as the step sees it (copies, MPI, NCCL);
  hidden   = 1 - exposed(on) / exposed(off): the part overlap hides;
  comm     = (information) the split all-reduces' own spans: the host's
             MPI sums and the staging copies, or the NCCL kernels.

--layout tp (issue 38 item 2): the same MLP tensor parallel over the
ranks instead (the batch replicated; the hidden layers' weights split by
output features, then by input features, alternately; the collectives
between them are what pf-infer-sbp chooses: all-reduces of partial sums,
or all-gathers and reduce-scatters), compiled with overlap-collectives=on
(each split by pf-overlap-collectives into a start and a wait around the
work that does not need it) and =off (blocking collectives); the same
numbers, "exposed" now the compute stream's time in every communication
op. Emulated, the ranks get a GPU each (NCCL, the emulation's).

Step 0 (plans, allocations, communicators) is left out of every number:
the events before the first step's end are dropped. Traced steps are not
captured as CUDA graphs (each op is timed), so these are uncaptured steps.

On one GPU the ranks share the device, so the transport is host-staged
(NCCL refuses two ranks on one device); on a machine with a GPU per rank
it is NCCL. --emulated runs on libpfrt's host emulation (PFRT_CUDA_FAKE=1)
to test the script: its clock moves only in GEMMs, so its numbers mean
nothing. Results go to stdout as one line per configuration; paste them
into bench/RESULTS.md with the date, the GPU and the settings.
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gen_mlp  # noqa: E402

ROOT = os.path.dirname(HERE)
BIN = os.environ.get("PF_BIN", os.path.join(ROOT, "build", "bin"))
STEP_RE = re.compile(r"step (\d+) loss (.*) time_ms ([0-9.]+)")


def dp_program(widths, batch, ranks):
    """gen_mlp's one-rank MLP, data parallel on `ranks` cuda ranks."""
    text = gen_mlp.mlp_program(widths, batch)
    x = "!pf.global<%dx%dxf32, #P0, #B>" % (batch, widths[0])
    y = "!pf.global<%dxi64, #P0, #B>" % batch
    if x not in text or y not in text:
        raise SystemExit("gen_mlp's input types changed: update dp_program")
    text = text.replace(x, x.replace("#B>", "#S0>")).replace(y, y.replace("#B>", "#S0>"))
    text = text.replace('#P0 = #pf.placement<"cpu", [0]>',
                        '#P0 = #pf.placement<"cuda", [%s]>\n#S0 = #pf.sbp<[S(0)]>'
                        % ", ".join(str(r) for r in range(ranks)))
    return text


def tp_program(widths, batch, ranks):
    """gen_mlp's one-rank MLP, tensor parallel on `ranks` cuda ranks: layer
    l < last has its weight split S(0) (l even) or S(1) (l odd), its bias
    S(0) or B; the last layer and the inputs are replicated."""
    last = len(widths) - 2
    sbp = {}
    for l in range(last):
        if widths[l + 1] % ranks or widths[l] % ranks:
            raise SystemExit("--layout tp: width %d or %d does not divide over %d ranks"
                             % (widths[l], widths[l + 1], ranks))
        sbp[l] = ("#S0", "#S0") if l % 2 == 0 else ("#S1", "#B")
    out = []
    for line in gen_mlp.mlp_program(widths, batch).splitlines():
        m = re.search(r"@fc(\d+)\.(weight|bias)|%[whb](\d+)b? = ", line)
        l = int(m.group(1) or m.group(3)) if m else None
        if l in sbp:
            o, i = widths[l + 1], widths[l]
            wt = "!pf.global<%dx%dxf32, #P0, #B>" % (o, i)
            bt = "!pf.global<%dxf32, #P0, #B>" % o
            line = line.replace(wt, wt.replace("#B>", sbp[l][0] + ">"))
            if "bias" in line or "%%b%d " % l in line or "bias_add" in line:
                line = line.replace(bt, bt.replace("#B>", sbp[l][1] + ">"))
        out.append(line)
    text = "\n".join(out) + "\n"
    return text.replace('#P0 = #pf.placement<"cpu", [0]>',
                        '#P0 = #pf.placement<"cuda", [%s]>\n#S0 = #pf.sbp<[S(0)]>\n'
                        '#S1 = #pf.sbp<[S(1)]>' % ", ".join(str(r) for r in range(ranks)))


def compile_dp(widths, batch, ranks, overlap, bucket_bytes, work, layout="dp"):
    name = "%s-%s" % (layout, "on" if overlap else "off")
    src = os.path.join(work, name + ".mlir")
    with open(src, "w") as f:
        f.write((tp_program if layout == "tp" else dp_program)(widths, batch, ranks))
    lowered = os.path.join(work, name + ".llvm.mlir")
    opts = ("optimizer=sgd accumulation-steps=1 bucket-bytes=%d overlap-gradients=%s"
            % (bucket_bytes, "on" if overlap else "off"))
    if layout == "tp":
        opts = ("optimizer=sgd accumulation-steps=1 overlap-collectives=%s"
                % ("on" if overlap else "off"))
    subprocess.run([os.path.join(BIN, "pf-opt"), src,
                    "-pf-compile-gpu-pipeline=" + opts, "-o", lowered], check=True)
    art = os.path.join(work, name)
    shutil.rmtree(art, ignore_errors=True)
    subprocess.run([os.path.join(BIN, "pf-translate"), "--pf-emit-rank-artifacts",
                    lowered, "--pf-artifact-dir=" + art], check=True,
                   stdout=subprocess.DEVNULL)
    return art


def run_traced(art, ranks, steps, emulated, work, devices=None):
    trace = os.path.join(work, os.path.basename(art) + "-trace")
    shutil.rmtree(trace, ignore_errors=True)
    env = dict(os.environ)
    env.pop("PF_TRACE", None)
    if emulated:
        env["PFRT_CUDA_FAKE"] = "1"
        if devices:  # a GPU a rank: NCCL (the emulation's), not host-staged
            env["PFRT_CUDA_FAKE_DEVICES"] = str(devices)
    cmd = [os.path.join(BIN, "pf-run"), "-n", str(ranks), "--steps", str(steps),
           "--lr", "0.01", "--trace", trace, art]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        sys.stderr.write(p.stdout + p.stderr)
        raise SystemExit("the PipeFlow run failed (exit %d)" % p.returncode)
    times = [float(m.group(3)) for m in map(STEP_RE.match, p.stdout.splitlines()) if m]
    losses = [m.group(2) for m in map(STEP_RE.match, p.stdout.splitlines()) if m]
    if len(times) != steps:
        raise SystemExit("%d step lines, expected %d:\n%s" % (len(times), steps, p.stdout))
    with open(os.path.join(trace, "trace_rank0.json")) as f:
        events = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    return times, losses, events


def analyse(events, steps):
    """Per step after the first: exposed and the split all-reduces' own
    communication time (us)."""
    gpu = [e for e in events if e.get("tid") == 1]
    if not gpu:
        raise SystemExit("rank 0's trace has no device-timed events (not a GPU rank?)")
    # Step 0 ends with its last update: the (steps)-quantile of the
    # optimizer ops' end times splits the steps apart.
    updates = sorted(e["ts"] + e["dur"] for e in gpu if e["cat"] == "update")
    if len(updates) < steps or len(updates) % steps:
        raise SystemExit("%d update ops in %d steps" % (len(updates), steps))
    first_end = updates[len(updates) // steps - 1]
    later = [e for e in events if e["ts"] > first_end]
    exposed = sum(e["dur"] for e in later if e.get("tid") == 1 and e["cat"] == "comm")
    staged = sum(e["dur"] for e in later if e.get("tid") == 2)
    host = sum(e["dur"] for e in later if e.get("tid") == 0 and e["cat"] == "comm")
    return exposed / (steps - 1), (staged + host) / (steps - 1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--layout", choices=["dp", "tp"], default="dp",
                    help="data parallel (gradient buckets) or tensor parallel "
                         "(pf-overlap-collectives)")
    ap.add_argument("--widths", default="1024,1024,1024,1024,1024,1024,10")
    ap.add_argument("--batch", type=int, default=16384, help="global batch")
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--bucket-bytes", type=int, default=4 << 20)
    ap.add_argument("--emulated", action="store_true")
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--compile-only", action="store_true",
                    help="compile both variants into --workdir and stop (the "
                         "GPU machine has no pf-opt: scripts/gpu-checks.sh)")
    ap.add_argument("--prebuilt", action="store_true",
                    help="run the variants --compile-only left in --workdir")
    args = ap.parse_args()
    if args.steps < 2:
        ap.error("--steps must be at least 2 (step 0 is left out)")
    if (args.compile_only or args.prebuilt) and not args.workdir:
        ap.error("--compile-only and --prebuilt need --workdir")
    widths = [int(w) for w in args.widths.split(",")]
    work = args.workdir or tempfile.mkdtemp(prefix="pf-overlap-")
    os.makedirs(work, exist_ok=True)
    results = {}
    for overlap in (False, True):
        if args.prebuilt:
            art = os.path.join(work, "%s-%s" % (args.layout, "on" if overlap else "off"))
            if not os.path.isdir(art):
                raise SystemExit("no %s (run with --compile-only first)" % art)
        else:
            art = compile_dp(widths, args.batch, args.ranks, overlap, args.bucket_bytes, work,
                             args.layout)
        if args.compile_only:
            continue
        times, losses, events = run_traced(art, args.ranks, args.steps, args.emulated, work,
                                           args.ranks if args.layout == "tp" else None)
        exposed, comm = analyse(events, args.steps)
        results[overlap] = (statistics.median(times[1:]), exposed, comm, losses)
    if args.compile_only:
        print("overlap_bench: compiled into %s" % work)
        return
    if results[False][3] != results[True][3]:
        raise SystemExit("overlap changed the losses:\n%s\n%s"
                         % (results[False][3], results[True][3]))
    print("overlap_bench: %s%s, %d ranks, global batch %d, buckets of %d bytes%s"
          % ("TP " if args.layout == "tp" else "", "-".join(map(str, widths)), args.ranks,
             args.batch, args.bucket_bytes,
             " (EMULATED: numbers meaningless)" if args.emulated else ""))
    for overlap in (False, True):
        step, exposed, comm = results[overlap][:3]
        print("  overlap %-3s step %.3f ms  exposed comm %.3f ms  split all-reduces %.3f ms"
              % ("on" if overlap else "off", step, exposed / 1000.0, comm / 1000.0))
    off, on = results[False], results[True]
    hidden = 1.0 - on[1] / off[1] if off[1] > 0 else float("nan")
    print("  ratio: step %.3f, exposed comm %.3f (overlap on / off), hidden %.0f%%; "
          "losses equal" % (on[0] / off[0], (on[1] / off[1]) if off[1] > 0 else float("nan"),
                            100.0 * hidden))


if __name__ == "__main__":
    main()
