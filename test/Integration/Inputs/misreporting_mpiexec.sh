#!/bin/sh
# A stand-in for MPICH's mpiexec (pf-run --mpiexec) that reproduces races
# of the real one. Each "rank" is a sleep whose pid file (what pfrt_init
# leaves: written under another name, then renamed) is written here.
# STANDIN_CASE says what happens:
#   first (default): rank 1 dies first (SIGKILL), the launcher kills rank 0
#     while cleaning up, and its report then names rank 0's process;
#   failed: rank 0 fails (its pid file says so, as pfrt's fatal errors
#     leave it), the cleanup kills rank 1 before rank 0 is gone, and the
#     report names rank 1's process;
#   exitcode: rank 1 ends first, then rank 0 exits with an error code,
#     which the report names (its own finding: it stands);
#   consequence: rank 1 dies first (SIGKILL), then rank 0 fails because
#     of it (marked "failed" after rank 1's end, as an NCCL watchdog's
#     error would be), and the report names rank 1 (it stands).
host=$(uname -n)
leave() { # pid rank [end]
  printf '%s\n%s' "$2" "${3:+$3
}" > "$PF_RUN_JOB_DIR/tmp.$1"
  mv "$PF_RUN_JOB_DIR/tmp.$1" "$PF_RUN_JOB_DIR/pid.$1.$host"
}
sleep 60 & p0=$!
leave "$p0" 0
sleep 60 & p1=$!
leave "$p1" 1
sleep 1
case "${STANDIN_CASE:-first}" in
failed)
  leave "$p0" 0 failed
  kill -9 "$p1"; sleep 1; kill -9 "$p0"
  reported=$p1 code=9 string="Killed (signal 9)" ;;
exitcode)
  kill -9 "$p1"; sleep 1; kill -9 "$p0"
  reported=$p0 code=1 string="" ;;
consequence)
  kill -9 "$p1"; sleep 1; leave "$p0" 0 failed; sleep 0.3; kill -9 "$p0"
  reported=$p1 code=9 string="Killed (signal 9)" ;;
*)
  kill -9 "$p1"; sleep 1; kill -9 "$p0"
  reported=$p0 code=9 string="Killed (signal 9)" ;;
esac
wait
echo "==================================================================================="
echo "=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES"
echo "=   PID $reported RUNNING AT $host"
echo "=   EXIT CODE: $code"
echo "==================================================================================="
[ -n "$string" ] && echo "YOUR APPLICATION TERMINATED WITH THE EXIT STRING: $string"
exit "$code"
