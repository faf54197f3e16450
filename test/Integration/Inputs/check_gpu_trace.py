#!/usr/bin/env python3
"""Checks the traces of a data-parallel run on GPU ranks (PF_TRACE /
pf-run --trace): every rank's ops are timed on the device (thread 1, "GPU
compute stream"), the split all-reduces' device work is on thread 2 ("GPU
communication streams"), host MPI on thread 0, and the spans are causal.

  check_gpu_trace.py DIR staged|nccl STEPS RANKS

(every step starts and waits for the same number of split all-reduces,
one a gradient bucket)

Prints one summary line per rank; exits non-zero with a message otherwise.
"""

import json
import os
import sys
from collections import Counter


def fail(msg):
    sys.exit("check_gpu_trace: " + msg)


def check(path, transport, steps):
    with open(path) as f:
        events = json.load(f)["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in events
             if e.get("ph") == "M" and e["name"] == "thread_name"}
    want = {0: "host", 1: "GPU compute stream", 2: "GPU communication streams"}
    if names != want:
        fail("%s: thread names %s, want %s" % (path, names, want))
    spans = [e for e in events if e.get("ph") == "X"]
    if any(e["dur"] < 0 for e in spans):
        fail("%s: a negative duration" % path)
    gpu = [e for e in spans if e["tid"] == 1]
    cats = Counter(e["cat"] for e in gpu)
    for cat in ("forward", "update", "comm"):
        if not cats[cat]:
            fail("%s: no '%s' op timed on the GPU stream (%s)" % (path, cat, dict(cats)))
    if not (cats["backward"] or cats["backward_input"]):
        fail("%s: no backward op timed on the GPU stream" % path)
    waits = [e for e in gpu if e["name"] == "pf.all_reduce_wait"]
    if not waits or len(waits) % steps:
        fail("%s: %d pf.all_reduce_wait on the GPU stream, want a positive multiple of %d"
             % (path, len(waits), steps))
    n = len(waits)  # split all-reduces: one a bucket a step
    comm = sorted((e for e in spans if e["tid"] == 2), key=lambda e: e["ts"])
    by_name = Counter(e["name"] for e in comm)
    if transport == "staged":
        to_host = [e for e in comm if e["name"] == "all_reduce_staged_to_host"]
        to_dev = [e for e in comm if e["name"] == "all_reduce_staged_to_device"]
        if len(to_host) != n or len(to_dev) != n or len(comm) != 2 * n:
            fail("%s: communication-stream spans %s, want %d copies each way"
                 % (path, dict(by_name), n))
        for h, d in zip(to_host, to_dev):
            if d["ts"] < h["ts"] + h["dur"]:
                fail("%s: a copy back at %.3f before its copy out ended at %.3f"
                     % (path, d["ts"], h["ts"] + h["dur"]))
        sums = [e for e in spans if e["tid"] == 0 and e["name"] == "all_reduce_sum"]
        if len(sums) < n:
            fail("%s: %d host MPI sums, want at least %d" % (path, len(sums), n))
    else:
        if by_name != Counter({"all_reduce_nccl": n}):
            fail("%s: communication-stream spans %s, want %d all_reduce_nccl"
                 % (path, dict(by_name), n))
    return "%d ops on the GPU stream, %d communication-stream spans (%s)" % (
        len(gpu), len(comm), ", ".join("%s %d" % kv for kv in sorted(by_name.items())))


def main():
    d, transport, steps, ranks = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    for r in range(ranks):
        path = os.path.join(d, "trace_rank%d.json" % r)
        if not os.path.exists(path):
            fail("no %s" % path)
        print("rank %d: %s" % (r, check(path, transport, steps)))


if __name__ == "__main__":
    main()
