#!/usr/bin/env bash
# Runs the libpfrt test programs. Usage: run_tests.sh BUILD_DIR
#
# Prints one line per test, `PASS name` or `FAIL name` (followed by the tail
# of its output), then `N passed, N failed`; exits non-zero if any failed.
# Every test runs under `timeout`, so a hang is a failure, not a stuck run.
#
# Environment:
#   PFRT_MPIEXEC    launcher prefix (default: mpiexec). MPICH's Hydra runs
#                   local ranks with fork and needs no hostfile; if it
#                   cannot resolve this machine's hostname, use
#                   PFRT_MPIEXEC="mpiexec -host localhost" (or
#                   "mpiexec -launcher fork").
#   PFRT_PYTHON     Python with NumPy (default: /usr/bin/python3, Debian's
#                   python3-numpy).
#   PFRT_TEST_SEED  replay a failing run's data (each test prints its seed).
#   PFRT_KEEP=1     keep the scratch directory with logs.
set -u

if [ $# -ne 1 ] || [ ! -d "$1/test" ]; then
  echo "usage: $0 BUILD_DIR   (the directory holding test/pfrt-test-*)" >&2
  exit 2
fi
BIN=$(cd "$1/test" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${PFRT_PYTHON:-/usr/bin/python3}
read -r -a MPIEXEC <<<"${PFRT_MPIEXEC:-mpiexec}"
WORK=$(mktemp -d /tmp/pfrt-tests.XXXXXX)
LOGS=$WORK/logs
mkdir -p "$LOGS"
# Tests decide PF_TRACE themselves; chunking only where asked.
unset PF_TRACE PFRT_MAX_MSG_ELEMS

npass=0
nfail=0

report() { # name ok
  if [ "$2" = 1 ]; then
    echo "PASS $1"
    npass=$((npass + 1))
  else
    echo "FAIL $1"
    nfail=$((nfail + 1))
    tail -n 15 "$LOGS/$1.out" "$LOGS/$1.err" 2>/dev/null | sed 's/^/    /'
  fi
}

# run_ok NAME SECONDS CMD...: passes if CMD exits 0 in time.
run_ok() {
  local name=$1 limit=$2
  shift 2
  timeout -k 5 "$limit" "$@" >"$LOGS/$name.out" 2>"$LOGS/$name.err"
  local rc=$?
  [ $rc -eq 124 ] && echo "timed out after ${limit}s" >>"$LOGS/$name.err"
  report "$name" $([ $rc -eq 0 ] && echo 1 || echo 0)
}

# run_fail NAME SECONDS PATTERN CMD...: passes if CMD exits non-zero (not by
# the timeout) and its stderr contains PATTERN (a fixed string).
run_fail() {
  local name=$1 limit=$2 pattern=$3
  shift 3
  local t0=$SECONDS
  timeout -k 5 "$limit" "$@" >"$LOGS/$name.out" 2>"$LOGS/$name.err"
  local rc=$? ok=0
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    echo "timed out after ${limit}s: the job hung instead of aborting" \
      >>"$LOGS/$name.err"
  elif [ $rc -eq 0 ]; then
    echo "exited 0, expected a failure" >>"$LOGS/$name.err"
  elif ! grep -qF -- "$pattern" "$LOGS/$name.err"; then
    echo "stderr lacks: $pattern" >>"$LOGS/$name.err"
  else
    ok=1
  fi
  [ $ok = 1 ] && echo "rc=$rc in $((SECONDS - t0))s" >>"$LOGS/$name.out"
  report "$name" $ok
}

# run_exit NAME SECONDS RC PATTERN CMD...: passes if CMD exits with status
# RC and its stderr contains PATTERN and a usage message.
run_exit() {
  local name=$1 limit=$2 want=$3 pattern=$4
  shift 4
  timeout -k 5 "$limit" "$@" >"$LOGS/$name.out" 2>"$LOGS/$name.err"
  local rc=$? ok=0
  if [ $rc -ne "$want" ]; then
    echo "exit status $rc, expected $want" >>"$LOGS/$name.err"
  elif ! grep -qF -- "$pattern" "$LOGS/$name.err"; then
    echo "stderr lacks: $pattern" >>"$LOGS/$name.err"
  elif ! grep -qF -- "usage: " "$LOGS/$name.err"; then
    echo "stderr lacks the usage message" >>"$LOGS/$name.err"
  else
    ok=1
  fi
  report "$name" $ok
}

# For commands inside `bash -c` strings.
MPX="${MPIEXEC[*]}"

# --- bootstrap -------------------------------------------------------------
run_ok bootstrap_no_mpiexec 30 "$BIN/pfrt-test-bootstrap" 1
for n in 1 2 4; do
  run_ok bootstrap_n$n 30 "${MPIEXEC[@]}" -n $n "$BIN/pfrt-test-bootstrap" $n
done

# The pid files pf-run reads (PF_RUN_JOB_DIR/pid.<pid>.<host>): each rank's
# says its rank, then "finalized" after a clean end (2 ranks), or "failed"
# after a fatal error (1 rank, a bad PFRT_MAX_MSG_ELEMS); no temporary file
# is left behind.
pidfiles_check() { # dir expected-contents...
  local want got
  want=$(printf '%s\n' "${@:2}")
  got=$(for f in "$1"/*; do
    case "$f" in */pid.[0-9]*.*) tr '\n' ' ' <"$f"; echo ;;
    *) echo "stray file $f" ;; esac; done | sort)
  [ "$got" = "$want" ] || { printf 'found:\n%s\nwanted:\n%s\n' "$got" "$want" >&2; return 1; }
}
PIDDIR=$WORK/piddirs
mkdir -p "$PIDDIR/ok" "$PIDDIR/failed"
run_ok pid_files_finalized 30 bash -c "$(declare -f pidfiles_check)
  PF_RUN_JOB_DIR='$PIDDIR/ok' $MPX -n 2 '$BIN/pfrt-test-bootstrap' 2 >/dev/null &&
  pidfiles_check '$PIDDIR/ok' '0 finalized ' '1 finalized '"
run_ok pid_files_failed 30 bash -c "$(declare -f pidfiles_check)
  if PF_RUN_JOB_DIR='$PIDDIR/failed' PFRT_MAX_MSG_ELEMS=x $MPX -n 1 \
    '$BIN/pfrt-test-bootstrap' 1 2>/dev/null; then echo 'no failure' >&2; exit 1; fi
  pidfiles_check '$PIDDIR/failed' '0 failed '"

# --- collectives and point-to-point -----------------------------------------
for n in 1 2 3 4; do
  run_ok collectives_n$n 60 "${MPIEXEC[@]}" -n $n "$BIN/pfrt-test-collectives"
done
# Exposed communication time per kind (pfrt_comm_exposed): rank 1 sleeps
# 150 ms before an all-reduce, a broadcast and a send; the others' time
# blocked in them is at least that, rank 1's is not.
for n in 2 3; do
  run_ok collectives_exposed_n$n 60 "${MPIEXEC[@]}" -n $n \
    "$BIN/pfrt-test-collectives" exposed
done
# bf16/f16 all-reduce and box reduce-scatter (gradient-dtype): exact
# round(a + b) on two ranks.
for n in 1 2 3 4; do
  run_ok half_reduce_n$n 60 "${MPIEXEC[@]}" -n $n "$BIN/pfrt-test-half-reduce"
done
run_ok half_reduce_chunked_n4 60 env PFRT_MAX_MSG_ELEMS=300 \
  "${MPIEXEC[@]}" -n 4 "$BIN/pfrt-test-half-reduce"
# Small message cap: the chunked and derived-datatype paths.
run_ok collectives_chunked_n4 60 env PFRT_MAX_MSG_ELEMS=600 \
  "${MPIEXEC[@]}" -n 4 "$BIN/pfrt-test-collectives"
run_ok collectives_chunked_n3 60 env PFRT_MAX_MSG_ELEMS=1000 \
  "${MPIEXEC[@]}" -n 3 "$BIN/pfrt-test-collectives"
for n in 2 3 4; do
  run_ok p2p_n$n 60 "${MPIEXEC[@]}" -n $n "$BIN/pfrt-test-p2p"
done
run_ok p2p_chunked_n4 60 env PFRT_MAX_MSG_ELEMS=300 \
  "${MPIEXEC[@]}" -n 4 "$BIN/pfrt-test-p2p"

# The cross-entropy split by class against the one-rank kernels.
for n in 1 2 3; do
  run_ok vocab_xent_n$n 60 "${MPIEXEC[@]}" -n $n "$BIN/pfrt-test-vocab-xent"
done

# --- boxing: layout changes of local tensors ---------------------------------
for n in 1 2 3 4; do
  run_ok boxing_n$n 60 "${MPIEXEC[@]}" -n $n "$BIN/pfrt-test-boxing"
done
# Small message cap: the chunked and derived-datatype paths, f32 and int64.
run_ok boxing_chunked_n4 60 env PFRT_MAX_MSG_ELEMS=13 \
  "${MPIEXEC[@]}" -n 4 "$BIN/pfrt-test-boxing"

# --- initialisation ----------------------------------------------------------
run_ok init_n1 60 "${MPIEXEC[@]}" -n 1 "$BIN/pfrt-test-init"
run_ok init_n4 60 "${MPIEXEC[@]}" -n 4 "$BIN/pfrt-test-init"
run_ok philox_py_selftest 60 "$PY" "$HERE/../python/pfrt_philox.py"
IO=$WORK/interop
run_ok interop_numpy_bitexact 120 bash -c \
  "'$PY' '$HERE/check_interop.py' gen '$IO' &&
   $MPX -n 1 '$BIN/pfrt-test-interop' '$IO' &&
   '$PY' '$HERE/check_interop.py' check '$IO'"

# --- npy and checkpoints ---------------------------------------------------
for n in 1 2 3 4; do
  run_ok state_n$n 60 "${MPIEXEC[@]}" -n $n "$BIN/pfrt-test-state" "$WORK/state$n"
done
run_fail state_gap_n2 60 "pfrt_state_gather: the ranks' distinct boxes of 'gappy' hold 3 of its 12 elements" \
  "${MPIEXEC[@]}" -n 2 "$BIN/pfrt-test-state" "$WORK/stategap" gap

run_ok npy_roundtrip_n1 60 "${MPIEXEC[@]}" -n 1 "$BIN/pfrt-test-npy" "$WORK/npy1"
run_ok npy_roundtrip_n4 60 "${MPIEXEC[@]}" -n 4 "$BIN/pfrt-test-npy" "$WORK/npy4"

BAD=$WORK/bad
mkdir -p "$BAD"
"$PY" - "$BAD" <<'EOF' >"$LOGS/make_bad.out" 2>&1
import sys, numpy as np
d = sys.argv[1]
a = np.random.default_rng().standard_normal((3, 4)).astype(np.float32)
def save(name, arr, version=(1, 0)):
    with open("%s/%s.npy" % (d, name), "wb") as f:
        np.lib.format.write_array(f, arr, version=version)
def edit(name, fn):
    p = "%s/%s.npy" % (d, name)
    b = bytearray(open("%s/good.npy" % d, "rb").read())
    open(p, "wb").write(fn(b))
save("good", a)
save("good_v2", a, (2, 0))
save("wrong_dtype", a.astype(np.float64))
save("wrong_shape", a.reshape(4, 3))
save("fortran", np.asfortranarray(a))
edit("bad_magic", lambda b: b[:5] + b"X" + b[6:])
edit("bad_version", lambda b: b[:6] + bytes([3, 0]) + b[8:])
edit("truncated", lambda b: b[:-5])
edit("trailing", lambda b: b + b"\0\0\0\0")
edit("bad_header", lambda b: b.replace(b"'shape'", b"'shap3'"))
EOF
NPY=("$BIN/pfrt-test-errors" npy)
run_ok npy_read_good 20 "${NPY[@]}" "$BAD/good.npy" f4 3,4
run_ok npy_read_good_v2 20 "${NPY[@]}" "$BAD/good_v2.npy" f4 3,4
run_fail npy_error_bad_magic 20 "'$BAD/bad_magic.npy': bad magic" \
  "${NPY[@]}" "$BAD/bad_magic.npy" f4 3,4
run_fail npy_error_bad_version 20 "'$BAD/bad_version.npy': unsupported format version 3.0" \
  "${NPY[@]}" "$BAD/bad_version.npy" f4 3,4
run_fail npy_error_wrong_dtype 20 "'$BAD/wrong_dtype.npy': dtype '<f8' does not match the expected '<f4'" \
  "${NPY[@]}" "$BAD/wrong_dtype.npy" f4 3,4
run_fail npy_error_wrong_dtype_int 20 "'$BAD/good.npy': dtype '<f4' does not match the expected '<i8'" \
  "${NPY[@]}" "$BAD/good.npy" i8 3,4
run_fail npy_error_wrong_shape 20 "'$BAD/wrong_shape.npy': shape (4, 3) does not match the expected logical shape (3, 4)" \
  "${NPY[@]}" "$BAD/wrong_shape.npy" f4 3,4
run_fail npy_error_truncated 20 "'$BAD/truncated.npy': file size is" \
  "${NPY[@]}" "$BAD/truncated.npy" f4 3,4
run_fail npy_error_trailing 20 "'$BAD/trailing.npy': file size is" \
  "${NPY[@]}" "$BAD/trailing.npy" f4 3,4
run_fail npy_error_fortran 20 "'$BAD/fortran.npy': fortran_order is True" \
  "${NPY[@]}" "$BAD/fortran.npy" f4 3,4
run_fail npy_error_bad_header 20 "'$BAD/bad_header.npy': header has unexpected key 'shap3'" \
  "${NPY[@]}" "$BAD/bad_header.npy" f4 3,4
run_fail npy_error_missing 20 "'$BAD/nope.npy': cannot open" \
  "${NPY[@]}" "$BAD/nope.npy" f4 3,4
# All four ranks hit the bad file; the job must end, not hang.
run_fail npy_error_truncated_n4 20 "'$BAD/truncated.npy': file size is" \
  "${MPIEXEC[@]}" -n 4 "${NPY[@]}" "$BAD/truncated.npy" f4 3,4

# --- fatal errors end the whole job ------------------------------------------
E=$BIN/pfrt-test-errors
run_fail fatal_aborts_job_n4 20 "pfrt: rank 2: deliberate failure from rank 2" \
  "${MPIEXEC[@]}" -n 4 "$E" fatal
run_fail error_not_member_n4 20 "pfrt: rank 0: pfrt_all_reduce_sum: this rank is not a member of group [1, 2, 3]" \
  "${MPIEXEC[@]}" -n 4 "$E" not_member
run_fail error_dup_group_n2 20 "lists rank 0 twice" "${MPIEXEC[@]}" -n 2 "$E" dup_group
run_fail error_bad_root_n4 20 "root rank 3 is not in group [0, 1, 2]" \
  "${MPIEXEC[@]}" -n 4 "$E" bad_root
run_fail error_overlap_n2 20 "pfrt_all_gather: input and output buffers overlap" \
  "${MPIEXEC[@]}" -n 2 "$E" overlap
run_fail error_async_twice_n2 20 "pfrt: rank 0: pfrt_all_reduce_start: slot 3 is in flight (started and not waited for)" \
  "${MPIEXEC[@]}" -n 2 "$E" async_twice
run_fail error_async_idle_n2 20 "pfrt_all_reduce_wait: slot 4 has no all-reduce in flight" \
  "${MPIEXEC[@]}" -n 2 "$E" async_idle
run_fail error_async_range_n1 20 "pfrt_all_reduce_start: slot 64 is outside [0, 64)" \
  "${MPIEXEC[@]}" -n 1 "$E" async_range
run_fail error_async_unwaited_n2 20 "pfrt_finalize: the all-reduce started in slot 3 was never waited for (pfrt_all_reduce_wait)" \
  "${MPIEXEC[@]}" -n 2 "$E" async_unwaited
run_fail error_box_not_member_n4 20 "pfrt: rank 0: pfrt_box_all_gather: this rank is not a member of group [1, 2, 3]" \
  "${MPIEXEC[@]}" -n 4 "$E" box_not_member
run_fail error_box_indivisible_n4 20 "pfrt_box_reduce_scatter: in_shape (5, 4): dimension 0 (5) is not divisible by the group size 4" \
  "${MPIEXEC[@]}" -n 4 "$E" box_indivisible
run_fail error_box_sum_dtype_n2 20 "pfrt_box_reduce_scatter_dtype: dtype 1 is not summed (f32, bf16 or f16)" \
  "${MPIEXEC[@]}" -n 2 "$E" box_sum_dtype
run_fail error_copy_box_bounds 20 "pfrt_copy_box: box at dst_offset (0, 3) with sizes (2, 3) does not fit in dst_shape (2, 5) (dimension 1)" \
  "$E" copy_box_bounds
run_fail error_mpi_truncate_n2 20 "pfrt: rank 1: pfrt_recv: MPI_Recv failed" \
  "${MPIEXEC[@]}" -n 2 "$E" recv_truncate
run_fail error_recv_count_n2 20 "has 5 elements, expected 10" \
  "${MPIEXEC[@]}" -n 2 "$E" recv_short
run_fail error_bad_shard 20 "does not fit in logical shape (4, 6)" \
  "$E" bad_shard
run_fail error_trace_unbalanced 20 "pfrt_trace_end: no open pfrt_trace_begin" \
  env PF_TRACE="$WORK/trace_err" "$E" trace_end

# --- traces -----------------------------------------------------------------
for n in 1 4; do
  T=$WORK/trace$n
  run_ok trace_json_n$n 60 bash -c \
    "PF_TRACE='$T' $MPX -n $n '$BIN/pfrt-test-trace' &&
     '$PY' '$HERE/check_trace.py' '$T' $n"
done
# Without PF_TRACE nothing is written (bootstrap checks trace_enabled() == 0).
run_ok trace_off_writes_nothing 30 bash -c \
  "cd '$WORK' && mkdir -p off && cd off && $MPX -n 2 '$BIN/pfrt-test-bootstrap' 2 &&
   [ -z \"\$(ls -A)\" ]"

# --- BLAS -------------------------------------------------------------------
run_ok sgemm 60 "$BIN/pfrt-test-sgemm"
run_ok k_half 60 "$BIN/pfrt-test-k-half"

# --- CPU kernels: C results vs a float64 NumPy reference ---------------------
for fam in basic matmul xent conv pool norm optim logical; do
  D=$WORK/k-$fam
  run_ok kernels_$fam 120 bash -c \
    "'$BIN/pfrt-test-k-$fam' '$D' && '$PY' '$HERE/check_kernels.py' '$D'"
done
for what in predicate dtype kind b mask_dtype; do
  case $what in
  predicate) msg="pfrt_k_compare: predicate 6 is not one of" ;;
  dtype) msg="pfrt_k_where: dtype 9 is not a dtype" ;;
  kind) msg="pfrt_k_logical: kind 4 is not one of" ;;
  b) msg="pfrt_k_logical: b is NULL" ;;
  mask_dtype) msg="pfrt_k_masked_fill: maskDtype -1 is not a dtype" ;;
  esac
  run_fail kernel_error_logical_$what 20 "$msg" \
    "$BIN/pfrt-test-k-logical" "$WORK/k-logical-$what" "$what"
done
# Flash-style attention (forward and gradient) against a float64 reference
# computed in the test, and its argument errors (CPU and device twin alike).
run_ok kernels_attention 120 "$BIN/pfrt-test-k-attention"
attention_error() { # case message
  run_fail kernel_error_attention_$1 20 "pfrt_k_attention: $2" \
    "$BIN/pfrt-test-k-attention" bad "$1"
  if [ -f "$BIN/../pfrt_cuda_kernels.fatbin" ]; then
    run_fail cuda_twin_error_attention_$1 20 "pfrt_cuda_k_attention: $2" \
      env PFRT_CUDA_FAKE=1 "$BIN/pfrt-test-k-attention" bad-twin "$1"
  fi
}
attention_error null_q "q is NULL"
attention_error negative_dims "T = -3 is negative"
attention_error d_zero "D = 0: the query and key rows need at least one element"
attention_error dropout_one "dropoutP 1 is not in [0, 1)"
attention_error dropout_negative "dropoutP -0.1 is not in [0, 1)"
attention_error mask_dtype "maskDtype 1 is neither 0 (f32, additive) nor 3 (bool)"
run_fail kernel_error_label 20 \
  "pfrt_k_softmax_xent: label 7 at row 2 is outside [0, 5)" "$E" xent_label
run_fail kernel_error_softmax_mask_rows 20 \
  "pfrt_k_softmax_masked: mask_rows 4 must be positive and divide rows 6" \
  "$E" softmax_mask_rows
run_fail kernel_error_conv_dims 20 \
  "pfrt_k_conv2d: OH/OW do not match" "$E" conv_dims
run_fail kernel_error_pool_pad 20 \
  "pfrt_k_max_pool2d: padding must be in [0, kernel / 2]" "$E" pool_dims
run_fail kernel_error_matmul_batch 20 \
  "pfrt_k_matmul: batch_b = 2 must be 1 or batch = 3" "$E" matmul_batch
run_fail kernel_error_transpose_perm 20 \
  "pfrt_k_transpose: perm (0, 2, 0) is not a permutation" "$E" transpose_perm

# --- the GPU layer (pfrt_cuda.h) ----------------------------------------------
# Without a driver, pfrt_cuda_init names what is missing and exits 2 (forced
# here by an empty search path, so this runs on GPU machines too).
cuda_rc=0
PFRT_CUDA_LIB_DIR=/nonexistent PFRT_CUDA_NO_DEFAULT_PATH=1 timeout 30 \
  "$BIN/pfrt-test-cuda" - init_only >"$LOGS/cuda_no_driver.out" \
  2>"$LOGS/cuda_no_driver.err" || cuda_rc=$?
report cuda_no_driver_exits_2 $([ $cuda_rc -eq 2 ] && grep -qF \
  "no CUDA driver (libcuda.so.1 not found in: /nonexistent)" \
  "$LOGS/cuda_no_driver.err" && echo 1 || echo 0)
# As found: a device initialises, or one clear line and status 2.
# The generated kernels' table: host rows, and the device twins on the
# emulation (PFRT_CUDA_FAKE=1) where libpfrt has its CUDA layer.
GSEED=${PFRT_TEST_SEED:-$RANDOM}
run_ok generated_host 30 "$BIN/pfrt-test-generated" host "$GSEED"
run_fail generated_unregistered 30 \
  "pfrt_launch_generated: no kernel table registered" \
  "$BIN/pfrt-test-generated" unregistered "$GSEED"
run_fail generated_wrong_count 30 \
  "pfrt_launch_generated: pf_ew_neg takes 2 buffers, launched with 3" \
  "$BIN/pfrt-test-generated" wrong_count "$GSEED"
run_fail generated_null_buffer 30 \
  "pfrt_launch_generated: buffer 2 of pf_ew_fused_0 is NULL" \
  "$BIN/pfrt-test-generated" null_buffer "$GSEED"
run_fail generated_bad_index 30 \
  "pfrt_launch_generated: kernel 2 of a table of 2" \
  "$BIN/pfrt-test-generated" bad_index "$GSEED"
run_fail generated_bad_table 30 \
  "pfrt_generated_kernels: kernel 1 of the table is malformed (name pf_ew_neg, 9 pointers, at most 8)" \
  "$BIN/pfrt-test-generated" bad_table "$GSEED"
if [ -f "$BIN/../pfrt_cuda_kernels.fatbin" ]; then
  run_ok generated_device_emulated 60 env PFRT_CUDA_FAKE=1 \
    "$BIN/pfrt-test-generated" device "$GSEED"
  run_fail generated_device_wrong_count 30 \
    "pfrt_cuda_launch_generated: pf_ew_fused_0 takes 4 buffers, launched with 2" \
    env PFRT_CUDA_FAKE=1 "$BIN/pfrt-test-generated" device_wrong_count "$GSEED"
else
  echo "SKIP generated_device* (libpfrt built without its CUDA kernels)"
fi

cuda_rc=0
timeout 60 "$BIN/pfrt-test-cuda" - init_only >"$LOGS/cuda_init.out" \
  2>"$LOGS/cuda_init.err" || cuda_rc=$?
report cuda_init_or_clean_failure $( { [ $cuda_rc -eq 0 ] ||
  { [ $cuda_rc -eq 2 ] && grep -qE "^pfrt: rank 0: (no CUDA|libpfrt was built without)" \
      "$LOGS/cuda_init.err"; }; } && echo 1 || echo 0)
# The device twins: a compiled GPU rank starts with pfrt_cuda_arena_plan,
# which picks and initialises its GPU; without a driver it must end the
# same way, exit status 2 and one line (forced, then as found).
cuda_rc=0
PFRT_CUDA_LIB_DIR=/nonexistent PFRT_CUDA_NO_DEFAULT_PATH=1 timeout 30 \
  "$BIN/pfrt-test-cuda" - plan >"$LOGS/cuda_twins_no_driver.out" \
  2>"$LOGS/cuda_twins_no_driver.err" || cuda_rc=$?
report cuda_twins_no_driver_exits_2 $([ $cuda_rc -eq 2 ] &&
  [ "$(wc -l <"$LOGS/cuda_twins_no_driver.err")" -eq 1 ] && grep -qE \
  "^pfrt: rank 0: (no CUDA driver \(libcuda.so.1 not found in: /nonexistent\)|libpfrt was built without)" \
  "$LOGS/cuda_twins_no_driver.err" && echo 1 || echo 0)
cuda_rc=0
timeout 60 "$BIN/pfrt-test-cuda" - plan >"$LOGS/cuda_twins_plan.out" \
  2>"$LOGS/cuda_twins_plan.err" || cuda_rc=$?
report cuda_twins_plan_or_clean_failure $( { [ $cuda_rc -eq 0 ] ||
  { [ $cuda_rc -eq 2 ] && [ "$(wc -l <"$LOGS/cuda_twins_plan.err")" -eq 1 ] &&
    grep -qE "^pfrt: rank 0: (no CUDA|libpfrt was built without)" \
      "$LOGS/cuda_twins_plan.err"; }; } && echo 1 || echo 0)
# The twins' kernel bodies, built for the host, against the CPU kernels.
run_ok cuda_bodies 60 "$BIN/pfrt-test-cuda-bodies"
run_ok cuda_logical_bodies 60 "$BIN/pfrt-test-cuda-logical"
# The embedded kernels: an sm_90 ELF with every kernel and compute_90 PTX.
FATBIN=$(cd "$1" && pwd)/pfrt_cuda_kernels.fatbin
if [ -f "$FATBIN" ]; then
  run_ok cuda_fatbin_contents 30 "$PY" "$HERE/check_fatbin.py" "$FATBIN" \
    "$HERE/.."
  CUOBJDUMP=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
  if [ -x "$CUOBJDUMP" ]; then
    run_ok cuda_fatbin_cuobjdump 30 bash -c \
      "'$CUOBJDUMP' --list-elf --list-ptx '$FATBIN' &&
       '$CUOBJDUMP' --list-elf '$FATBIN' | grep -q 'sm_90' &&
       '$CUOBJDUMP' --list-ptx '$FATBIN' | grep -q 'ptx'"
  else
    echo "SKIP cuda_fatbin_cuobjdump (no cuobjdump)"
  fi
else
  echo "SKIP cuda_fatbin (libpfrt was built without its CUDA kernels)"
fi
# On a GPU: kernels, graphs and cuBLASLt against the CPU (SKIP elsewhere).
cuda_rc=0
timeout 120 "$BIN/pfrt-test-cuda" "$BIN/cuda_kernels.ptx" \
  >"$LOGS/cuda_gpu.out" 2>"$LOGS/cuda_gpu.err" || cuda_rc=$?
if [ $cuda_rc -eq 77 ]; then
  echo "SKIP cuda_gpu (no CUDA device)"
else
  report cuda_gpu $([ $cuda_rc -eq 0 ] && echo 1 || echo 0)
fi

# On a GPU: every device twin against its host row (SKIP elsewhere), and an
# out-of-range label found by the kernel, reported as a fatal error.
cuda_rc=0
timeout 180 "$BIN/pfrt-test-cuda-twins" "$WORK/cuda_twins" \
  >"$LOGS/cuda_twins.out" 2>"$LOGS/cuda_twins.err" || cuda_rc=$?
if [ $cuda_rc -eq 77 ]; then
  echo "SKIP cuda_twins (no CUDA device)"
  echo "SKIP cuda_twins_bad_label (no CUDA device)"
else
  report cuda_twins $([ $cuda_rc -eq 0 ] && echo 1 || echo 0)
  run_ok cuda_logical_twins 60 "$BIN/pfrt-test-cuda-logical" twins
  run_ok cuda_attention_twins 120 "$BIN/pfrt-test-k-attention" twins
  run_fail cuda_twins_bad_label 60 \
    "pfrt_cuda_k_softmax_xent: label 7 at row 2 is outside [0, 5)" \
    "$BIN/pfrt-test-cuda-twins" "$WORK/cuda_twins_bad" bad_label
fi

# The same on libpfrt's host emulation of the driver and cuBLASLt
# (PFRT_CUDA_FAKE=1, src/cuda/emulation/FakeDevice.h): every twin against
# its host row, device state, graph capture and replay, pfrt_cuda_run_step,
# here.
# Needs libpfrt built with its CUDA layer and kernels (the fatbin).
if [ -f "$BIN/../pfrt_cuda_kernels.fatbin" ]; then
  run_ok cuda_twins_emulated 300 env PFRT_CUDA_FAKE=1 \
    "$BIN/pfrt-test-cuda-twins" "$WORK/cuda_twins_fake"
  run_ok cuda_logical_twins_emulated 60 env PFRT_CUDA_FAKE=1 \
    "$BIN/pfrt-test-cuda-logical" twins
  run_ok cuda_attention_twins_emulated 120 env PFRT_CUDA_FAKE=1 \
    "$BIN/pfrt-test-k-attention" twins
  # cuDNN's fused attention on the emulated backend API (FakeCudnn.h):
  # bf16/f16, causal, masks, forward and backward against float64, the
  # plan cache, a captured step; its Finalize errors; the library absent
  # (exit 2 naming it); a first call of a shape inside a capture (fatal).
  if [ -x "$BIN/pfrt-test-cuda-cudnn" ]; then
    run_ok cuda_cudnn_emulated 120 env PFRT_CUDA_FAKE=1 \
      "$BIN/pfrt-test-cuda-cudnn"
    run_ok cuda_cudnn_emulated_no_graph 120 env PFRT_CUDA_FAKE=1 \
      PFRT_NO_CUDA_GRAPH=1 "$BIN/pfrt-test-cuda-cudnn"
    run_ok cuda_cudnn_finalize_errors_emulated 30 env PFRT_CUDA_FAKE=1 \
      "$BIN/pfrt-test-cuda-cudnn" finalize
    cudnn_rc=0
    env PFRT_CUDA_FAKE=1 PFRT_CUDA_FAKE_NO_CUDNN=1 \
      timeout 30 "$BIN/pfrt-test-cuda-cudnn" absent \
      >"$LOGS/cuda_cudnn_absent.out" 2>"$LOGS/cuda_cudnn_absent.err" ||
      cudnn_rc=$?
    report cuda_cudnn_absent_exits_2 $([ $cudnn_rc -eq 2 ] && grep -qF \
      "pfrt: rank 0: no cuDNN (libcudnn.so.9 not found in: emulated" \
      "$LOGS/cuda_cudnn_absent.err" && echo 1 || echo 0)
    run_fail cuda_cudnn_first_call_captured 30 \
      "no cuDNN plan for forward B=1 H=2 T=8 S=8 D=8 Dv=8 f16 was built before the graph capture" \
      env PFRT_CUDA_FAKE=1 "$BIN/pfrt-test-cuda-cudnn" capture_new_shape
  fi
  run_ok cuda_twins_emulated_no_bgradb 60 env PFRT_CUDA_FAKE=1 \
    PFRT_CUDA_FAKE_NO_BGRADB=1 "$BIN/pfrt-test-cuda-twins" \
    "$WORK/cuda_twins_fake3" bgrad
  # cuBLASLt's RELU_BIAS and BGRADB epilogues off: the bias-only GEMM and
  # ReLU kernel, the GEMM and reduction, against the same host rows.
  run_ok cuda_twins_emulated_no_fused_epilogues 300 env PFRT_CUDA_FAKE=1 \
    PFRT_CUDA_NO_FUSED_EPILOGUES=1 "$BIN/pfrt-test-cuda-twins" \
    "$WORK/cuda_twins_fake4"
  # The GEMM twins' precision modes against a double reference: exact
  # float32 and 3xTF32 within 4e-6 of the terms' magnitude, plain TF32 not.
  # A bias pointer not 16-byte aligned: BGRADB falls back, BIAS is fatal
  # (the emulation refuses such a bias as cuBLASLt's epilogues may).
  run_fail cuda_twins_emulated_misaligned_bias 60 \
    "epilogue 2's bias pointer" env PFRT_CUDA_FAKE=1 \
    "$BIN/pfrt-test-cuda-twins" "$WORK/cuda_twins_fake10" misaligned_bias
  # The convolutions (grouped ones: each run's weight and columns split
  # once for all groups) under 3xTF32 against the CPU's, within 1e-5 of
  # the terms' magnitude.
  run_ok cuda_twins_emulated_conv_3xtf32 120 env PFRT_CUDA_FAKE=1 \
    PFRT_CUDA_GEMM_PRECISION=3xtf32 "$BIN/pfrt-test-cuda-twins" \
    "$WORK/cuda_twins_fake9" convs
  run_ok cuda_twins_emulated_gemm_fp32 120 env PFRT_CUDA_FAKE=1 \
    "$BIN/pfrt-test-cuda-twins" "$WORK/cuda_twins_fake6" gemm_precision
  run_ok cuda_twins_emulated_gemm_3xtf32 120 env PFRT_CUDA_FAKE=1 \
    PFRT_CUDA_GEMM_PRECISION=3xtf32 "$BIN/pfrt-test-cuda-twins" \
    "$WORK/cuda_twins_fake7" gemm_precision
  run_fail cuda_twins_emulated_gemm_bad_precision 60 \
    "PFRT_CUDA_GEMM_PRECISION=fp16: expected fp32 or 3xtf32" \
    env PFRT_CUDA_FAKE=1 PFRT_CUDA_GEMM_PRECISION=fp16 \
    "$BIN/pfrt-test-cuda-twins" "$WORK/cuda_twins_fake8" gemm_precision
  # The mixed-precision GEMMs (pfrt_cuda_gemm_typed, the twin
  # pfrt_cuda_k_matmul_typed): every pair cuBLASLt runs against a float64
  # reference, the pairs it refuses and misaligned bf16 operands fatal, the
  # tuner's entries keyed by the types.
  run_ok cuda_gemm_typed_emulated 120 env PFRT_CUDA_FAKE=1 \
    "$BIN/pfrt-test-cuda-gemm-typed"
  run_ok cuda_gemm_typed_emulated_tune 60 env PFRT_CUDA_FAKE=1 \
    PFRT_CUDA_GEMM_TUNE="$WORK/gemm_typed_tune" \
    "$BIN/pfrt-test-cuda-gemm-typed" tune "$WORK/gemm_typed_tune"
  run_fail cuda_gemm_typed_emulated_refuses_bf16_f16 60 \
    "with A and B bf16, C and D f16, compute 32F" env PFRT_CUDA_FAKE=1 \
    "$BIN/pfrt-test-cuda-gemm-typed" bf16_f16
  run_fail cuda_gemm_typed_emulated_refuses_f32_bf16 60 \
    "with A and B f32, C and D bf16, compute 32F" env PFRT_CUDA_FAKE=1 \
    "$BIN/pfrt-test-cuda-gemm-typed" f32_bf16
  run_fail cuda_gemm_typed_emulated_misaligned_ld 60 \
    "B (bf16 at 0x" env PFRT_CUDA_FAKE=1 \
    "$BIN/pfrt-test-cuda-gemm-typed" misaligned_ld
  run_fail cuda_gemm_typed_emulated_misaligned_ptr 60 \
    "is not 16-byte aligned: a bf16/f16 GEMM runs on tensor cores" \
    env PFRT_CUDA_FAKE=1 "$BIN/pfrt-test-cuda-gemm-typed" misaligned_ptr
  run_ok cuda_twins_emulated_no_graph 300 env PFRT_CUDA_FAKE=1 \
    PFRT_NO_CUDA_GRAPH=1 "$BIN/pfrt-test-cuda-twins" "$WORK/cuda_twins_fake2"
  run_fail cuda_twins_emulated_bad_label 60 \
    "pfrt_cuda_k_softmax_xent: label 7 at row 2 is outside [0, 5)" \
    env PFRT_CUDA_FAKE=1 "$BIN/pfrt-test-cuda-twins" \
    "$WORK/cuda_twins_fake_bad" bad_label
else
  echo "SKIP cuda_twins_emulated* (libpfrt built without its CUDA kernels)"
fi
# The twins that take shapes, descriptors or several buffers (boxing:
# DeviceBoxing.cpp, the vocabulary cross-entropy: DeviceVocabXent.cpp, both
# host-staged where the ranks share a GPU; p2p_batch, state parts:
# StagedComm.cpp) against their host rows on 2 to 4 emulated GPU ranks;
# argument errors are the host rows'.
if [ -f "$BIN/../pfrt_cuda_kernels.fatbin" ]; then
  for n in 2 3 4; do
    run_ok cuda_staged_emulated_n$n 120 env PFRT_CUDA_FAKE=1 \
      "${MPIEXEC[@]}" -n $n "$BIN/pfrt-test-cuda-staged"
  done
  run_ok cuda_staged_emulated_chunked_n3 120 env PFRT_CUDA_FAKE=1 \
    PFRT_MAX_MSG_ELEMS=100 "${MPIEXEC[@]}" -n 3 "$BIN/pfrt-test-cuda-staged"
  # Each rank with a GPU of its own (4 emulated GPUs): the boxing twins
  # and the vocabulary cross-entropy over NCCL (the emulation's), the same
  # comparisons on 1 to 4 ranks, and their counters (no host round-trip).
  for n in 1 2 3 4; do
    run_ok cuda_staged_emulated_nccl_n$n 120 env PFRT_CUDA_FAKE=1 \
      PFRT_CUDA_FAKE_DEVICES=4 "${MPIEXEC[@]}" -n $n \
      "$BIN/pfrt-test-cuda-staged" nccl
  done
  # The vocabulary cross-entropy on the device: a bad label is data, found
  # by its kernel and fatal at the report.
  run_fail cuda_staged_emulated_nccl_bad_label 60 \
    "pfrt_cuda_softmax_xent_vocab: label 16 at row 1 is outside [0, 8) (found on the GPU" \
    env PFRT_CUDA_FAKE=1 PFRT_CUDA_FAKE_DEVICES=2 "${MPIEXEC[@]}" -n 2 \
    "$BIN/pfrt-test-cuda-staged" bad_label
  run_fail cuda_staged_emulated_bad_index 60 \
    "pfrt_box_slice: index 5 is outside [0, 2)" \
    env PFRT_CUDA_FAKE=1 "${MPIEXEC[@]}" -n 2 "$BIN/pfrt-test-cuda-staged" \
    bad_index
  run_fail cuda_staged_emulated_overlap 60 \
    "pfrt_box_all_gather: in and out overlap" \
    env PFRT_CUDA_FAKE=1 "${MPIEXEC[@]}" -n 2 "$BIN/pfrt-test-cuda-staged" \
    overlap
else
  echo "SKIP cuda_staged_emulated* (libpfrt built without its CUDA kernels)"
fi
# The split all-gather and reduce-scatter (pf-overlap-collectives' rows:
# mpi/AsyncBoxing.cpp, cuda/AsyncBoxing.cpp) against the blocking rows on 1
# to 4 ranks, byte for byte; on emulated GPUs a rank (NCCL) against the
# blocking twins too and inside a captured graph; their slot errors, and a
# capture left unjoined by a start never waited for (CUDA's 904).
for n in 1 2 3 4; do
  run_ok split_boxing_host_n$n 120 "${MPIEXEC[@]}" -n $n \
    "$BIN/pfrt-test-split-boxing" host
done
run_fail split_boxing_double_start 60 \
  "pfrt_box_all_gather_start: slot 3 is in flight" \
  "${MPIEXEC[@]}" -n 2 "$BIN/pfrt-test-split-boxing" double_start
run_fail split_boxing_wait_idle 60 \
  "pfrt_box_collective_wait: slot 4 has no boxing collective in flight" \
  "${MPIEXEC[@]}" -n 2 "$BIN/pfrt-test-split-boxing" wait_idle
run_fail split_boxing_leak 60 \
  "the boxing collective started in slot 3 was never waited for" \
  "${MPIEXEC[@]}" -n 2 "$BIN/pfrt-test-split-boxing" leak
if [ -f "$BIN/../pfrt_cuda_kernels.fatbin" ]; then
  for n in 1 2 3 4; do
    run_ok split_boxing_emulated_nccl_n$n 120 env PFRT_CUDA_FAKE=1 \
      PFRT_CUDA_FAKE_DEVICES=4 "${MPIEXEC[@]}" -n $n \
      "$BIN/pfrt-test-split-boxing" device
  done
  run_ok split_boxing_emulated_staged_n2 120 env PFRT_CUDA_FAKE=1 \
    "${MPIEXEC[@]}" -n 2 "$BIN/pfrt-test-split-boxing" device_staged
  run_fail split_boxing_emulated_unjoined 60 \
    "cuStreamEndCapture failed: CUDA_ERROR (emulated) (904)" \
    env PFRT_CUDA_FAKE=1 PFRT_CUDA_FAKE_DEVICES=2 "${MPIEXEC[@]}" -n 2 \
    "$BIN/pfrt-test-split-boxing" unjoined
else
  echo "SKIP split_boxing_emulated* (libpfrt built without its CUDA kernels)"
fi
# The collective twins on NCCL (Nccl.cpp) against their host rows on 2 and
# 3 emulated GPU ranks (PFRT_CUDA_COMM=nccl: emulation/FakeNccl.cpp),
# sub-groups and a captured graph replayed over new data; the transport
# choice and its errors.
if [ -f "$BIN/../pfrt_cuda_kernels.fatbin" ] && [ -x "$BIN/pfrt-test-cuda-nccl" ]; then
  # nccl_fail NAME RANKS MODE PATTERN: pfrt-test-cuda-nccl MODE on RANKS
  # emulated GPU ranks over NCCL fails, saying PATTERN.
  nccl_fail() {
    run_fail "$1" 60 "$4" env PFRT_CUDA_FAKE=1 PFRT_CUDA_COMM=nccl \
      "${MPIEXEC[@]}" -n "$2" "$BIN/pfrt-test-cuda-nccl" "$3"
  }
  for n in 1 2 3; do
    run_ok cuda_nccl_emulated_n$n 120 env PFRT_CUDA_FAKE=1 PFRT_CUDA_COMM=nccl \
      "${MPIEXEC[@]}" -n $n "$BIN/pfrt-test-cuda-nccl"
  done
  run_ok cuda_nccl_emulated_chunked_n3 120 env PFRT_CUDA_FAKE=1 \
    PFRT_CUDA_COMM=nccl PFRT_MAX_MSG_ELEMS=100 "${MPIEXEC[@]}" -n 3 \
    "$BIN/pfrt-test-cuda-nccl"
  # Unforced, the emulated ranks share one device: host-staged, and the
  # same comparisons hold.
  run_ok cuda_nccl_emulated_unforced_staged_n3 120 env PFRT_CUDA_FAKE=1 \
    "${MPIEXEC[@]}" -n 3 "$BIN/pfrt-test-cuda-nccl" staged
  # ... and the graph capture then fails: the capture above went over NCCL.
  run_fail cuda_nccl_emulated_staged_not_captured 60 \
    "pfrt_cuda_all_reduce_sum: the host-staged transport cannot be captured" \
    env PFRT_CUDA_FAKE=1 PFRT_CUDA_COMM=staged "${MPIEXEC[@]}" -n 2 \
    "$BIN/pfrt-test-cuda-nccl"
  run_ok cuda_nccl_emulated_verbose 120 bash -c "PFRT_CUDA_FAKE=1 \
    PFRT_CUDA_COMM=nccl PFRT_CUDA_VERBOSE=1 $MPX -n 2 '$BIN/pfrt-test-cuda-nccl' \
    2>&1 | grep -c 'CUDA collectives: NCCL, emulated' | grep -qx 1"
  # The job's communicators split from the world's at start-up
  # (pfrt_cuda_comm_groups), the same comparisons on them; on 4 ranks six
  # groups take five splits ({0, 1} and {2, 3} share one), and only the
  # test's four one-rank groups (not in the table) are made at first use.
  for n in 2 3; do
    run_ok cuda_nccl_emulated_split_n$n 120 bash -c "PFRT_CUDA_FAKE=1 \
      PFRT_CUDA_COMM=nccl PFRT_CUDA_VERBOSE=1 $MPX -n $n \
      '$BIN/pfrt-test-cuda-nccl' split > /tmp/pfrt-split$n.\$\$ 2>&1; rc=\$?; \
      grep -q 'groups split from the world communicator' /tmp/pfrt-split$n.\$\$; \
      ok=\$?; rm -f /tmp/pfrt-split$n.\$\$; [ \$rc = 0 ] && [ \$ok = 0 ]"
  done
  run_ok cuda_nccl_emulated_split_n4 120 bash -c "PFRT_CUDA_FAKE=1 \
    PFRT_CUDA_COMM=nccl PFRT_CUDA_VERBOSE=1 $MPX -n 4 '$BIN/pfrt-test-cuda-nccl' \
    split > /tmp/pfrt-split.\$\$ 2>&1; rc=\$?; \
    grep -q \"the job's 6 groups split from the world communicator in 5 ncclCommSplit calls\" /tmp/pfrt-split.\$\$ && \
    grep -c 'NCCL communicator of group .* split from the world' /tmp/pfrt-split.\$\$ | grep -qx 6 && \
    grep -c 'communicator of group .* made' /tmp/pfrt-split.\$\$ | grep -qx 4; ok=\$?; \
    rm -f /tmp/pfrt-split.\$\$; [ \$rc = 0 ] && [ \$ok = 0 ]"
  nccl_fail cuda_nccl_emulated_groups_bad_rank 2 groups_bad_rank \
    "pfrt_cuda_comm_groups: group [0, 7] at entry 0: rank 7 is not a rank of the job"
  nccl_fail cuda_nccl_emulated_groups_mismatch 2 groups_mismatch \
    "pfrt_cuda_comm_groups: the ranks hold different tables of the job's groups"
  # One rank on NCCL, the other host-staged: a hang at the first
  # collective without the start-up's agreement.
  run_fail cuda_nccl_emulated_groups_disagree 60 \
    "pfrt_cuda_comm_groups: the ranks disagree on NCCL (this rank cannot use it" \
    "${MPIEXEC[@]}" -n 1 env PFRT_CUDA_FAKE=1 PFRT_CUDA_COMM=nccl \
    "$BIN/pfrt-test-cuda-nccl" split : -n 1 env PFRT_CUDA_FAKE=1 \
    PFRT_CUDA_COMM=staged "$BIN/pfrt-test-cuda-nccl" split
  nccl_fail cuda_nccl_emulated_groups_again 2 groups_again \
    "pfrt_cuda_comm_groups: called again with another table"
  run_fail cuda_nccl_bogus_transport 60 \
    "PFRT_CUDA_COMM=bogus: expected nccl or staged" \
    env PFRT_CUDA_FAKE=1 PFRT_CUDA_COMM=bogus "${MPIEXEC[@]}" -n 2 \
    "$BIN/pfrt-test-cuda-nccl"
  run_fail cuda_nccl_emulated_shared_device 60 \
    "PFRT_CUDA_COMM=nccl, but ranks 0 and 1 of group [0, 1] use the same GPU" \
    env PFRT_CUDA_FAKE=1 PFRT_CUDA_COMM=nccl PFRT_CUDA_FAKE_NCCL_SHARED=1 \
    "${MPIEXEC[@]}" -n 2 "$BIN/pfrt-test-cuda-nccl"
  # Point to point: the first step host-staged, then over NCCL and
  # captured (said on stderr); records that disagree are fatal when NCCL
  # is forced.
  run_ok cuda_nccl_emulated_p2p_over_nccl 120 bash -c "PFRT_CUDA_FAKE=1 \
    PFRT_CUDA_COMM=nccl PFRT_CUDA_VERBOSE=1 $MPX -n 3 '$BIN/pfrt-test-cuda-nccl' \
    > /tmp/pfrt-p2p.\$\$ 2>&1; rc=\$?; grep -c 'point-to-point over NCCL with 2 peers' /tmp/pfrt-p2p.\$\$ | grep -qx 3 && \
    grep -c 'step 1 captured as a CUDA graph' /tmp/pfrt-p2p.\$\$ | grep -qx 3; ok=\$?; rm -f /tmp/pfrt-p2p.\$\$; [ \$rc = 0 ] && [ \$ok = 0 ]"
  nccl_fail cuda_nccl_emulated_p2p_order 2 p2p_order \
    "point-to-point cannot go over NCCL: the ranks post their messages in different orders (message 0 from rank 0 to rank 1: rank 0 sends 3 floats (tag 1), rank 1 receives 5 floats (tag 2))"
  nccl_fail cuda_nccl_emulated_p2p_new_peer 3 p2p_new_peer \
    "is not a peer of this rank's point-to-point over NCCL (the first step exchanged nothing with it"
  # Point to point planned at start-up (pfrt_cuda_p2p_plan, as a compiled
  # rank does): over NCCL from the first step on (the counters: no host
  # round-trip, no MPI message), on 2 to 4 ranks with a GPU each (chosen
  # by device, not forced); host-staged in every step, and correct, where
  # two ranks share one (3 ranks on 2 emulated GPUs); plans that disagree,
  # a step that posts another message or fewer, a bad table: fatal.
  for n in 2 3 4; do
    run_ok cuda_nccl_emulated_p2p_plan_n$n 120 env PFRT_CUDA_FAKE=1 \
      PFRT_CUDA_FAKE_DEVICES=$n "${MPIEXEC[@]}" -n $n \
      "$BIN/pfrt-test-cuda-nccl" p2p_plan
  done
  run_ok cuda_nccl_emulated_p2p_plan_shared 120 bash -c "PFRT_CUDA_FAKE=1 \
    PFRT_CUDA_FAKE_DEVICES=2 PFRT_CUDA_VERBOSE=1 $MPX -n 3 \
    '$BIN/pfrt-test-cuda-nccl' p2p_plan_staged > /tmp/pfrt-plan.\$\$ 2>&1; \
    rc=\$?; grep -q 'point-to-point stays host-staged: ranks 0 and 2 share a GPU' \
    /tmp/pfrt-plan.\$\$; ok=\$?; rm -f /tmp/pfrt-plan.\$\$; [ \$rc = 0 ] && [ \$ok = 0 ]"
  nccl_fail cuda_nccl_emulated_p2p_plan_disagree 2 p2p_plan_disagree \
    "point-to-point cannot go over NCCL: the ranks post their messages in different orders (message 0 from rank 0 to rank 1: rank 0 sends 3 floats (tag 1), rank 1 receives 4 floats (tag 1))"
  nccl_fail cuda_nccl_emulated_p2p_plan_deviate 2 p2p_plan_deviate \
    "message 0 of this step to rank 1 is 3 floats (tag 1), but the compiled plan (pfrt_cuda_p2p_plan) lists 5 floats (tag 2)"
  nccl_fail cuda_nccl_emulated_p2p_plan_short 2 p2p_plan_short \
    "planned receives from it (pfrt_cuda_p2p_plan): the steps must post the planned messages"
  nccl_fail cuda_nccl_emulated_p2p_plan_bad 2 p2p_plan_bad \
    "pfrt_cuda_p2p_plan: a table of 3 entries"
  run_fail cuda_nccl_emulated_call_error 60 \
    "pfrt_all_reduce_sum: ncclAllReduce failed: unhandled system error" \
    env PFRT_CUDA_FAKE=1 PFRT_CUDA_COMM=nccl PFRT_CUDA_FAKE_NCCL_ERROR=1 \
    "${MPIEXEC[@]}" -n 2 "$BIN/pfrt-test-cuda-nccl" nccl_error
else
  echo "SKIP cuda_nccl_emulated* (libpfrt built without its CUDA kernels or NCCL)"
fi

# --- memory services and the pfrt_main driver --------------------------------
run_ok memory_arena_persistent_scalars 30 "$BIN/pfrt-test-memory"
run_ok inputs_by_parts 30 "$BIN/pfrt-test-inputs"
run_fail inputs_part_mismatch 20 \
  "pfrt_load_input_part: input 0: 3 parts of 2 boxes" \
  "$BIN/pfrt-test-inputs" part_mismatch
run_fail memory_plan_too_large 20 \
  "cannot allocate the planned arena: 4096 bytes asked, 1000 bytes available" \
  env PFRT_ARENA_LIMIT=1000 "$BIN/pfrt-test-memory" plan_too_large
run_fail memory_at_outside 20 \
  "pfrt_arena_at: [4032, 4032 + 128) is outside the planned arena of 4096" \
  "$BIN/pfrt-test-memory" at_outside
run_fail memory_plan_grows 20 \
  "the arena was planned with 4096 bytes, now 8192 are asked" \
  "$BIN/pfrt-test-memory" plan_grows
run_fail memory_at_unplanned 20 "no planned arena" \
  "$BIN/pfrt-test-memory" at_unplanned
DRV=$WORK/driver
mkdir -p "$DRV"
D=$BIN/pfrt-test-driver
CD="'$PY' '$HERE/check_driver.py'"
run_ok driver_steps_seed_lr_loss_out 30 bash -c \
  "'$D' --steps 3 --seed 1234 --lr 0.25 --loss-out '$DRV/loss.txt' \
     >'$DRV/out.txt' && $CD '$DRV/out.txt' '$DRV/loss.txt' 3 1234 0.25"
run_ok driver_defaults 30 bash -c \
  "'$D' >'$DRV/def.txt' && $CD '$DRV/def.txt' - 1 0 0.001"
# Only the last rank reports losses, so only it prints and appends.
run_ok driver_n2 30 bash -c \
  "$MPX -n 2 '$D' --steps=2 --seed=77 --lr=0.5 --loss-out='$DRV/loss2.txt' \
     >'$DRV/out2.txt' && $CD '$DRV/out2.txt' '$DRV/loss2.txt' 2 77 0.5"
run_ok driver_help 30 bash -c "'$D' --help | grep -q '^usage: '"
run_exit driver_unknown_flag 20 2 "unknown flag '--bogus'" "$D" --bogus
run_exit driver_missing_value 20 2 "flag '--steps' needs a value" "$D" --steps
run_exit driver_bad_value 20 2 "bad value 'abc' for flag '--lr'" "$D" --lr abc
run_exit driver_bad_threads 20 2 "bad value '0' for flag '--threads'" \
  "$D" --threads=0
run_exit driver_positional_arg 20 2 "unexpected argument 'extra'" "$D" extra
run_exit driver_unknown_flag_n2 20 2 "unknown flag '--bogus'" \
  "${MPIEXEC[@]}" -n 2 "$D" --steps 2 --bogus
run_fail driver_missing_microbatch 20 \
  "micro-batch 1 reported no loss this step, but micro-batch 2 did" \
  env PFRT_TEST_DRIVER_MODE=gap "$D"
run_fail driver_loss_reported_twice 20 \
  "pfrt_report_loss: micro-batch 0 reported twice in one step" \
  env PFRT_TEST_DRIVER_MODE=twice "$D"

echo "$npass passed, $nfail failed"
if [ "${PFRT_KEEP:-0}" = 1 ] || [ $nfail -ne 0 ]; then
  echo "logs: $LOGS"
else
  rm -rf "$WORK"
fi
[ $nfail -eq 0 ]
