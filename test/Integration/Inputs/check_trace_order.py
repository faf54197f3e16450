#!/usr/bin/env python3
"""Checks that the measured per-rank traces show the predicted action order.

Compiles a pf program under a pipeline schedule, stopping once at the
per-rank modules (`pf-compile-to=rank`: each rank's step function in its
scheduled order, and the `pf.schedule` op with each rank's predicted
action list), lowers exactly those modules (`-convert-pf-to-cpu`), links
the per-rank executables, runs them under `pf-run --trace` for a few steps
and reduces each rank's Chrome trace to the actions it executed, step by
step. Every step of every rank must show exactly the predicted list.

Reducing a trace to actions:
  * comm events (category "comm": the pf send/recv/collective ops and the
    runtime's own transfer events nested in them) are not actions;
  * compute events are categorised by the op's pf.phase: "forward" -> F,
    "backward_input" -> B, "backward_weight" -> W when the rank's predicted
    list has W actions (zero-bubble schedules), else B (B and W fused);
    "update" (the optimizer, after all micro-batches) is no action, and
    must come after the step's last action;
  * the micro-batch is the event's, the chunk is stage // p (p = ranks);
  * consecutive events of the same action are one action.
The trace records an op without a pf.microbatch attribute as micro-batch 0
(indistinguishable from micro-batch 0), so the trace's compute events are
matched one-to-one, by op name, with the traced ops of the rank's step
function, whose attributes tell which ops have no micro-batch (the loss's
pf.pack on the last stage, the optimizer): those are no action.

The step boundaries: every step runs the same code, so each step traces the
same number of compute events; the events are split evenly and each step's
op names must equal the step function's.

--predict-schedule KIND compares the run against another schedule's
prediction (compiled from the same program) instead of its own; the test
uses it to show that a wrong order is caught.
"""
import json
import os
import re
import shutil
import subprocess
import sys

import common

# convert-pf-to-cpu traces every op but these (PFToCPU.cpp, lowerStep).
UNTRACED = {"pf.read_param", "pf.scalar_input", "pf.reshape", "pf.flatten",
            "pf.to_global", "pf.constant", "pf.microbatch"}
# ... and gives these the category "comm".
COMM = {"pf.send", "pf.recv", "pf.all_reduce", "pf.all_gather",
        "pf.reduce_scatter", "pf.all_to_all", "pf.broadcast", "pf.reduce"}

OP_RE = re.compile(r'^\s*(?:%[^=]*=\s*)?"?([a-z_][a-z_0-9]*\.[a-z_0-9.]+)"?')
ACTION_RE = re.compile(r"^([FBW])(\d+)(?::(\d+))?$")


def parse_rank_ir(text):
    """Returns ({rank: [(op name, has micro-batch, phase)]} of each rank's
    traced non-comm ops in program order, [[action]] of pf.schedule)."""
    ops = {}
    rank = None
    in_func = False
    actions = None
    for line in text.splitlines():
        m = re.match(r"^\s*module @rank(\d+)\b", line)
        if m:
            rank = int(m.group(1))
            if rank in ops:
                sys.exit("error: two modules @rank%d" % rank)
            ops[rank] = []
            continue
        if re.match(r"^\s*func\.func\b", line):
            if in_func or rank is None or ops[rank]:
                sys.exit("error: expected one step function per rank module")
            in_func = True
            continue
        if in_func:
            if re.match(r"^\s*}\s*$", line):
                in_func = False
                continue
            if re.match(r"^\s*(func\.)?return\b", line):
                continue
            m = OP_RE.match(line)
            if not m:
                sys.exit("error: cannot parse the op in: " + line.strip())
            name = m.group(1)
            if name in UNTRACED or name in COMM:
                continue
            phase = re.search(r'pf\.phase = "([a-z_]+)"', line)
            ops[rank].append((name, "pf.microbatch =" in line,
                              phase.group(1) if phase else "forward"))
            continue
        if re.match(r"^\s*pf\.schedule\b", line):
            m = re.search(r"actions = (\[\[.*?\]\])", line)
            if not m:
                sys.exit("error: pf.schedule without actions: " + line)
            actions = json.loads(m.group(1))
    if actions is None:
        sys.exit("error: the rank-level IR has no pf.schedule op")
    return ops, actions


def parse_action(a, chunks):
    m = ACTION_RE.match(a)
    if not m:
        sys.exit("error: cannot parse the predicted action %r" % a)
    if (m.group(3) is None) != (chunks == 1):
        sys.exit("error: action %r with %d chunk(s)" % (a, chunks))
    return (m.group(1), int(m.group(2)), int(m.group(3) or 0))


def fmt(action, chunks):
    kind, mb, chunk = action
    return "%s%d" % (kind, mb) + (":%d" % chunk if chunks > 1 else "")


def measured_actions(events, ir_ops, rank, p, split_w, chunks):
    """The actions of one step's compute events, or an error string."""
    acts = []
    last_action = -1
    first_update = None
    for i, (ev, (name, has_mb, phase)) in enumerate(zip(events, ir_ops)):
        cat = ev["cat"]
        if cat != phase:
            return "event %d (%s) has category %r, the IR's op phase %r" % (
                i, name, cat, phase)
        if cat == "update":
            if first_update is None:
                first_update = i
            continue
        if not has_mb:
            continue  # e.g. the loss's pf.pack: no micro-batch, no action
        stage = ev["args"]["stage"]
        if stage < 0 or stage % p != rank:
            return "event %d (%s) on stage %d, not one of rank %d's" % (
                i, name, stage, rank)
        kind = {"forward": "F", "backward_input": "B",
                "backward_weight": "W" if split_w else "B"}.get(cat)
        if kind is None:
            return "event %d (%s) has unknown category %r" % (i, name, cat)
        action = (kind, ev["args"]["microbatch"], stage // p)
        if chunks == 1 and action[2] != 0:
            return "event %d (%s): stage %d is chunk %d of 1" % (
                i, name, stage, action[2])
        if not acts or acts[-1] != action:
            acts.append(action)
        last_action = i
    if first_update is not None and first_update < last_action:
        return "the optimizer (event %d) runs before the last action " \
               "(event %d)" % (first_update, last_action)
    return acts


def main():
    ap = common.tool_parser(mlir_help="forward + loss program")
    ap.add_argument("--ranks", type=int, required=True)
    ap.add_argument("--microbatches", type=int, required=True)
    ap.add_argument("--schedule", required=True)
    ap.add_argument("--num-chunks", type=int, default=1)
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--predict-schedule", default=None,
                    help="compare against this schedule's prediction "
                         "(default: --schedule)")
    args = ap.parse_args()

    def compile_rank(schedule, out):
        options = "accumulation-steps=%d schedule=%s num-chunks=%d" % (
            args.microbatches, schedule, args.num_chunks)
        subprocess.run([args.pf_opt, args.mlir, "-pf-compile-cpu-pipeline=" +
                        options + " pf-compile-to=rank", "-o", out],
                       check=True)
        print("compiled with", options)
        with open(out) as f:
            return parse_rank_ir(f.read())

    os.makedirs(args.workdir, exist_ok=True)
    rank_ir = os.path.join(args.workdir, "program.rank.mlir")
    lowered = os.path.join(args.workdir, "program.llvm.mlir")
    artifacts = os.path.join(args.workdir, "artifacts")
    trace_dir = os.path.join(args.workdir, "trace")
    ir_ops, actions = compile_rank(args.schedule, rank_ir)
    if args.predict_schedule and args.predict_schedule != args.schedule:
        _, actions = compile_rank(
            args.predict_schedule,
            os.path.join(args.workdir, "predicted.rank.mlir"))
        print("predicted by", args.predict_schedule)
    p = args.ranks
    if sorted(ir_ops) != list(range(p)) or len(actions) != p:
        print("FAIL: expected %d rank modules and action lists, got %d, %d"
              % (p, len(ir_ops), len(actions)))
        return 1

    # The executables run exactly the modules parsed above.
    common.compile_artifacts(args, rank_ir, ["-convert-pf-to-cpu"], lowered,
                             artifacts)
    shutil.rmtree(trace_dir, ignore_errors=True)
    subprocess.run([args.pf_run, "-n", str(p), artifacts, "--steps",
                    str(args.steps), "--trace", trace_dir, "--timeout", "120"],
                   check=True, stdout=subprocess.DEVNULL)

    chunks = args.num_chunks
    failed = False
    for r in range(p):
        predicted = [parse_action(a, chunks) for a in actions[r]]
        split_w = any(k == "W" for k, _, _ in predicted)
        with open(os.path.join(trace_dir, "trace_rank%d.json" % r)) as f:
            trace = json.load(f)
        if trace.get("pfrtDroppedEvents"):
            print("FAIL: rank %d: the trace dropped events" % r)
            return 1
        compute = [e for e in trace["traceEvents"]
                   if e.get("ph") == "X" and e["cat"] != "comm"]
        # Compute ops do not nest: the file order is the execution order.
        if any(b["ts"] < a["ts"] for a, b in zip(compute, compute[1:])):
            print("FAIL: rank %d: compute events out of time order" % r)
            return 1
        n = len(ir_ops[r])
        if len(compute) != n * args.steps:
            print("FAIL: rank %d: %d compute events, expected %d steps of "
                  "%d traced ops" % (r, len(compute), args.steps, n))
            return 1
        names = [o[0] for o in ir_ops[r]]
        for k in range(args.steps):
            step = compute[k * n:(k + 1) * n]
            if [e["name"] for e in step] != names:
                print("FAIL: rank %d step %d: the traced ops differ from the "
                      "rank's step function" % (r, k))
                return 1
            got = measured_actions(step, ir_ops[r], r, p, split_w, chunks)
            want = " ".join(fmt(a, chunks) for a in predicted)
            if isinstance(got, str):
                print("FAIL: rank %d step %d: %s" % (r, k, got))
                failed = True
                continue
            got_s = " ".join(fmt(a, chunks) for a in got)
            if got != predicted:
                print("MISMATCH rank %d step %d" % (r, k))
                print("  predicted: " + want)
                print("  measured:  " + got_s)
                failed = True
            elif k == 0:
                print("rank %d: %s" % (r, got_s))
    if failed:
        print("FAIL: the traces do not follow the predicted order")
        return 1
    print("PASS: %d ranks x %d steps follow the %s order" % (
        p, args.steps, args.predict_schedule or args.schedule))
    return 0


if __name__ == "__main__":
    sys.exit(main())
