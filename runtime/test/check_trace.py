#!/usr/bin/python3
"""Validates the traces pfrt-test-trace wrote: check_trace.py DIR NRANKS."""

import json
import os
import sys


def main():
    d, n = sys.argv[1], int(sys.argv[2])
    files = sorted(os.listdir(d))
    want = sorted("trace_rank%d.json" % r for r in range(n))
    assert files == want, (files, want)
    for r in range(n):
        with open(os.path.join(d, "trace_rank%d.json" % r)) as f:
            doc = json.load(f)  # must be valid JSON
        events = [e for e in doc["traceEvents"] if e["ph"] == "X"]
        for e in events:
            for k in ("name", "cat", "ts", "dur", "pid", "tid", "args"):
                assert k in e, (k, e)
            assert e["pid"] == r and e["tid"] == 0, e
            assert e["dur"] >= 0 and e["ts"] >= 0, e
            assert "microbatch" in e["args"] and "stage" in e["args"], e
        outer = [e for e in events if e["name"] == 'forward "mb"\\']
        inner = [e for e in events if e["name"] == "matmul"]
        assert len(outer) == 3 and len(inner) == 3, (len(outer), len(inner))
        for mb in range(3):
            o = [e for e in outer if e["args"]["microbatch"] == mb]
            i = [e for e in inner if e["args"]["microbatch"] == mb]
            assert len(o) == 1 and len(i) == 1, mb
            o, i = o[0], i[0]
            assert o["args"]["stage"] == r and o["cat"] == "compute", o
            # Nested event lies inside its parent (1 us slack for rounding).
            assert o["ts"] - 1 <= i["ts"], (o, i)
            assert i["ts"] + i["dur"] <= o["ts"] + o["dur"] + 1, (o, i)
            assert i["dur"] >= 150, i  # it slept 200 us
            comm = [e for e in events if e["cat"] == "comm" and
                    e["args"]["microbatch"] == mb]
            names = sorted(e["name"] for e in comm)
            expect = ["all_reduce_sum"] + (["p2p_batch"] if n >= 2 else [])
            assert names == expect, (names, expect)
            for c in comm:
                assert c["args"]["stage"] == r, c
                assert o["ts"] - 1 <= c["ts"], (o, c)
                assert c["ts"] + c["dur"] <= o["ts"] + o["dur"] + 1, (o, c)
            ar = [c for c in comm if c["name"] == "all_reduce_sum"][0]
            assert ar["args"]["bytes"] == 4000, ar
            assert ar["args"]["group_size"] == n, ar
        loose = [e for e in events if e["name"] == "broadcast"]
        assert len(loose) == 1 and loose[0]["args"]["microbatch"] == -1, loose
    print("traces ok: %d ranks" % n)


if __name__ == "__main__":
    main()
