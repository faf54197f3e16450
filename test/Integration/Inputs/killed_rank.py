"""Kills one rank of a running pf-run job with SIGKILL and checks that the
job ends soon after (no rank left hanging on its dead peer) and that pf-run
names the rank that died.

  killed_rank.py --pf-run pf-run --artifacts DIR --ranks N --rank K \
      [--after 2] [--within 5] [pf-run options...]

The artifacts are copied; rank K's executable is wrapped by a shell script
that starts a timer and then execs the real executable (same process id,
so it is the process the launcher started): --after seconds after every
rank has left its pid file in pf-run's job directory, the timer writes
the time and kills it. Prints the seconds from the kill to
the job's end and PASS, or FAIL with what was wrong."""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pf-run", default="pf-run")
    ap.add_argument("--artifacts", required=True)
    ap.add_argument("--ranks", type=int, required=True)
    ap.add_argument("--rank", type=int, required=True)
    ap.add_argument("--after", type=float, default=2.0)
    ap.add_argument("--within", type=float, default=5.0)
    args, extra = ap.parse_known_args()
    with tempfile.TemporaryDirectory() as tmp:
        art = os.path.join(tmp, "art")
        shutil.copytree(args.artifacts, art)
        exe = os.path.join(art, "rank%d" % args.rank)
        os.rename(exe, exe + ".real")
        stamp = os.path.join(tmp, "killed_at")
        # The timer starts once every rank has left its pid file in
        # pf-run's job directory (pfrt_init): on a loaded machine MPI's
        # start can take longer than --after, and a rank killed before
        # pf-run knows its process cannot be named by pf-run (MPICH's
        # report, naming a process its cleanup killed, would stand).
        with open(exe, "w") as f:
            f.write("#!/bin/sh\n"
                    "(i=0; while [ $i -lt 600 ] && [ \"$(ls \"$PF_RUN_JOB_DIR\""
                    " 2>/dev/null | grep -c '^pid\\.')\" -lt %d ]; do"
                    " sleep 0.1; i=$((i+1)); done;"
                    " sleep %g; python3 -c 'import time; print(time.time())' > %s 2>/dev/null"
                    " || date +%%s.%%N > %s; kill -9 $$) &\n"
                    'exec "$0.real" "$@"\n' % (args.ranks, args.after, stamp, stamp))
        os.chmod(exe, 0o755)
        cmd = [args.pf_run, "-n", str(args.ranks), art, "--steps", "100000000",
               "--timeout", "120"] + extra
        run = subprocess.run(cmd, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        ended = time.time()
        if not os.path.exists(stamp):
            sys.exit("FAIL: the job ended before the kill (exit %d):\n%s" %
                     (run.returncode, run.stderr[-2000:]))
        killed = float(open(stamp).read().split()[0])
    took = ended - killed
    print("exit code %d, %.2f s from the kill to the end of the job" %
          (run.returncode, took))
    # "rank R (process P on H) ended the job[ first (mpiexec reported ...)]"
    # or, when pf-run saw several end at once, "ranks R1, R2 (processes P1,
    # P2 on H) ended the job together (...)".
    named = re.search(r"pf-run: ranks? ([0-9, ]+) \(process(?:es)? [0-9, ]+ "
                      r"on \S+\) ended the job.*", run.stderr)
    print(named.group(0) if named else "(no rank named)")
    if run.returncode == 0:
        sys.exit("FAIL: the job succeeded")
    if "ran past --timeout" in run.stderr:
        sys.exit("FAIL: the job hung until pf-run's --timeout")
    if took > args.within:
        sys.exit("FAIL: the job took %.2f s to end (more than %g s)" %
                 (took, args.within))
    if not named or args.rank not in [
            int(r) for r in named.group(1).split(", ")]:
        sys.exit("FAIL: pf-run did not name rank %d:\n%s" %
                 (args.rank, run.stderr[-2000:]))
    print("PASS")


if __name__ == "__main__":
    main()
