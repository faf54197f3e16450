#!/bin/sh
# A stand-in for MPICH's mpiexec (pf-run --mpiexec) that reproduces a race
# of the real one: rank 1 dies first (SIGKILL), the launcher kills rank 0
# while cleaning up, and its report then names rank 0's process. Each
# "rank" is a sleep whose pid file (what pfrt_init leaves) is written here.
host=$(hostname)
sleep 60 & p0=$!
echo 0 > "$PF_RUN_JOB_DIR/pid.$p0.$host"
sleep 60 & p1=$!
echo 1 > "$PF_RUN_JOB_DIR/pid.$p1.$host"
sleep 1
kill -9 "$p1"
sleep 0.3
kill -9 "$p0"
wait
echo "==================================================================================="
echo "=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES"
echo "=   PID $p0 RUNNING AT $host"
echo "=   EXIT CODE: 9"
echo "==================================================================================="
echo "YOUR APPLICATION TERMINATED WITH THE EXIT STRING: Killed (signal 9)"
exit 9
