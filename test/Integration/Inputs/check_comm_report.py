#!/usr/bin/env python3
"""Compares the pf-run --comm-report of GPU ranks (GPU) with that of the
same job on CPU ranks (CPU): a GPU rank's step must not go through the
host. Checks, for every rank:

  - host_round_trips is 0: no step made a host round-trip, the first
    included (a compiled rank plans its point-to-point at start-up,
    pfrt_cuda_p2p_plan, so its first step's messages go over NCCL too),
    and so is steady_round_trips (the most in a step after the first);
  - every collective kind and point to point went over NCCL only (no MPI
    call);
  - per kind, the calls and bytes (NCCL plus MPI) equal the CPU rank's MPI
    calls and bytes: every step made every collective (a captured step's
    NCCL calls are counted at each replay of its graph).

Prints one line per rank and PASS, or FAIL and the reasons (exit 1)."""

import re
import sys

HEAD = re.compile(
    r"comm rank (\d+) of (\d+): host_round_trips (\d+) bytes (\d+) "
    r"exposed_mpi_ms [0-9.]+ steady_round_trips (\d+)")
KIND = re.compile(
    r"comm rank (\d+) (\w+)\s+nccl_calls (\d+) nccl_bytes (\d+) "
    r"mpi_calls (\d+) mpi_bytes (\d+)")


def parse(path):
    ranks = {}
    with open(path) as f:
        for line in f:
            m = HEAD.match(line)
            if m:
                r = int(m.group(1))
                ranks[r] = {"trips": int(m.group(3)),
                            "steady": int(m.group(5)), "kinds": {}}
                continue
            m = KIND.match(line)
            if m:
                ranks[int(m.group(1))]["kinds"][m.group(2)] = tuple(
                    int(m.group(i)) for i in range(3, 7))
    return ranks


def main():
    cpu, gpu = parse(sys.argv[1]), parse(sys.argv[2])
    errors = []
    if not gpu or sorted(cpu) != sorted(gpu):
        errors.append(f"ranks: CPU {sorted(cpu)}, GPU {sorted(gpu)}")
    for r in sorted(gpu):
        g = gpu[r]
        if g["steady"] != 0:
            errors.append(f"rank {r}: {g['steady']} host round-trips in a "
                          "step after the first")
        if g["trips"] != 0:
            errors.append(f"rank {r}: {g['trips']} host round-trips in all "
                          "(the first step included)")
        for kind, (nc, nb, mc, mb) in sorted(g["kinds"].items()):
            if mc != 0:
                errors.append(f"rank {r}: {kind}: {mc} MPI calls "
                              f"({mb} bytes)")
            want = cpu.get(r, {}).get("kinds", {}).get(kind)
            if want is None or want[0] != 0 or want[1] != 0:
                errors.append(f"rank {r}: {kind}: no CPU count to compare")
                continue
            if (nc + mc, nb + mb) != (want[2], want[3]):
                errors.append(f"rank {r}: {kind}: {nc} + {mc} calls of "
                              f"{nb} + {mb} bytes (NCCL + MPI), the CPU "
                              f"rank {want[2]} of {want[3]}")
        moved = sum(v[1] for v in g["kinds"].values())
        print(f"rank {r}: {moved} bytes over NCCL, {g['trips']} host "
              f"round-trips, {g['steady']} at most in a later step")
    if errors:
        print("FAIL")
        for e in errors:
            print("  " + e)
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
