#!/usr/bin/env bash
# The device checks of the GPU issues (14, 15) as one prepared job, for a
# session that is lent a GPU machine (one H100/H200, the CUDA runtime and
# cuBLAS as pip wheels, PyTorch; no CUDA toolkit, no MPICH, no pf-opt).
#
#   scripts/gpu-checks.sh prepare [BUILD]   here, after the build (needs
#                                           the CUDA toolkit: ptxas)
#   scripts/gpu-checks.sh run [BUILD]       on the GPU machine, from the
#                                           repository root
#
# prepare compiles every program the checks run for GPU ranks and for CPU
# ranks, records the CPU ranks' reference losses, compiles the generated
# element-wise kernels' images and the benchmark's programs, copies the
# runtime's test programs and the shared libraries the executables need
# beyond a bare system (MPICH, OpenBLAS and what they load), and packs it
# all into BUILD/gpu-checks.tar.xz. Carry that one file (device tool:
# carry=["build/gpu-checks.tar.xz"]) and run
#
#   bash scripts/gpu-checks.sh run build
#
# which unpacks it, runs each check (ranks as MPI singletons) and prints
# `PASS name` / `FAIL name` (with the log's tail) / `SKIP name (why)`, then
# `gpu-checks: N passed, M failed, K skipped`; logs stay in
# BUILD/gpu-checks/logs. RUN_BENCH=0 skips the benchmark (bench/gpu_bench.py
# --prebuilt, whose table goes to BUILD/gpu-checks/logs/bench.out; add it to
# bench/RESULTS.md by hand or rerun with --write). GPU_CHECKS_FAKE=1 runs the
# same job here on libpfrt's emulation (PFRT_CUDA_FAKE=1), the script's own
# check: the device-only parts (the generated kernels' images, the
# benchmark, compute-sanitizer) are skipped.
#
# Where the machine has several GPUs (counted at run time: the driver's
# cuDeviceGetCount, else nvidia-smi; the emulation's PFRT_CUDA_FAKE_DEVICES
# under GPU_CHECKS_FAKE=1), everything above still runs on its first GPU
# (CUDA_VISIBLE_DEVICES narrowed to it), and a multi-GPU part runs last: a
# GPU per rank, so NCCL carries every transfer (see MULTI_GPU below). Each
# of its jobs needs a GPU a rank; with fewer it prints
# `SKIP multi-gpu-NAME (N GPU(s): needs M)`.
set -u

MODE=${1:-}
BUILD=${2:-build}
HERE=$(cd "$(dirname "$0")/.." && pwd)
OUT=$BUILD/gpu-checks
PY=${PF_PYTHON:-/usr/bin/python3}
[ -x "$PY" ] || PY=python3

# name | program | options | steps | lr | seed | tolerance against the CPU
#   [| steps compared against the CPU, default all]
PROGRAMS="
mlp-sgd|test/Conversion/PFToGPU/Inputs/cuda-mlp.mlir|optimizer=sgd momentum=0.9 accumulation-steps=2|10|0.05|7|1e-4
mlp-adam|test/Conversion/PFToGPU/Inputs/cuda-mlp.mlir|optimizer=adam accumulation-steps=4|10|0.001|7|1e-4
convnet|examples/mlir/convnet.mlir|optimizer=sgd momentum=0.9|5|0.05|7|1e-4
attention|test/Conversion/PFToGPU/Inputs/cuda-attention.mlir|optimizer=sgd|10|0.05|7|1e-4
gpt|test/Conversion/PFToGPU/Inputs/cuda-gpt.mlir|optimizer=adamw|6|0.01|7|1e-4
mlp-bf16|test/Conversion/PFToGPU/Inputs/cuda-mlp.mlir|optimizer=sgd momentum=0.9 accumulation-steps=2 autocast=bf16|10|0.05|7|1.6e-2
gpt-bf16|test/Conversion/PFToGPU/Inputs/cuda-gpt.mlir|optimizer=adamw autocast=bf16|6|0.01|7|1.6e-2
fused|test/Integration/Inputs/fused-elementwise.mlir|optimizer=sgd momentum=0.9 accumulation-steps=2|8|0.1|3|1e-4
lenet|py:examples/python/lenet_pipeline.py|optimizer=sgd momentum=0.9|6|0.01|7|1e-4
resnet50|py:examples/python/resnet50_pipeline.py|optimizer=sgd momentum=0.9 accumulation-steps=4|3|0.01|7|1e-4|1
"
# (py:FILE: the seeds' example traced by the front end, both stages on
# rank 0: FILE --compile-only --one-rank prints its IR. ResNet-50 is
# compared on its first step's four micro-batches: its training is chaotic
# in float32 here (the CPU executable with OpenBLAS's Haswell kernels
# against itself with its SkylakeX kernels: step 0 within 3e-6, step 1 off
# by 1% at lr 1e-4 and 10% at lr 1e-2), so later steps are checked for
# run-to-run and captured-to-uncaptured identity only.)
# GPU_CHECKS_ONLY=REGEX prepares only the programs and layouts it matches.
# Multi-rank GPT layouts (test/Integration/Inputs/gpt_layout.py) on one
# GPU: the ranks share it, so they talk through the host-staged transport.
# name | layout | ranks
LAYOUTS="
gpt-tp2|tp|2
gpt-pp2|pp|2
"

# The layouts matrix of test/Integration/layouts-cpu.test and every
# pipeline schedule of schedules-cpu.test on GPU ranks sharing the one GPU
# (so host-staged), each against its CPU ranks (1e-4) and against the same
# model on one GPU rank (1e-5): the seed MLP (Inputs/relayout.py) and the
# 4-stage 8-layer MLP (Inputs/gen_staged_mlp.py), SGD with momentum.
# name | model | generator arguments | ranks | pipeline options
MLP_LAYOUTS="
seed-one-rank|seed|--p0 '[0]' --p1 '[0]'|1|accumulation-steps=2
seed-pp2-gpipe|seed|--p0 '[0]' --p1 '[1]'|2|accumulation-steps=2 schedule=gpipe
seed-pp2-1f1b|seed|--p0 '[0]' --p1 '[1]'|2|accumulation-steps=2 schedule=1f1b
seed-pp2-zb|seed|--p0 '[0]' --p1 '[1]'|2|accumulation-steps=2 schedule=zb-h1
seed-dp4|seed|--p0 '[0, 1, 2, 3]' --p1 '[0, 1, 2, 3]' --x 'S(0)' --y 'S(0)' --h '?'|4|accumulation-steps=2
seed-hybrid|seed|--p0 '[0, 1]' --p1 '[0, 1]' --x 'S(0)' --y B --h B --w2 'S(0)' --b2 'S(0)'|2|accumulation-steps=2
seed-tp2|seed|--p0 '[0, 1]' --p1 '[0, 1]' --x B --y B --h B --w1 'S(0)' --b1 'S(0)' --w2 'S(1)' --b2 B|2|accumulation-steps=2
seed-grid|seed|--p0 '[[0, 1], [2, 3]]' --p1 '[[0, 1], [2, 3]]' --x 'S(0), B' --y 'S(0), B' --h '?' --w1 'B, S(0)' --b1 'B, S(0)' --w2 'B, S(1)' --b2 'B, B'|4|accumulation-steps=2
seed-px|seed|--p0 '[0, 1]' --p1 '[0, 1]' --x P --y B --h '?'|2|accumulation-steps=2
seed-px2|seed|--p0 '[[0, 1], [2, 3]]' --p1 '[[0, 1], [2, 3]]' --x 'S(0), P' --y 'S(0), B' --h '?'|4|accumulation-steps=2
seed-ppdp|seed|--p0 '[0, 1]' --p1 '[2, 3]' --x 'S(0)' --y 'S(0)' --h 'S(0)'|4|accumulation-steps=2
seed-ppdp-1f1b|seed|--p0 '[0, 1]' --p1 '[2, 3]' --x 'S(0)' --y 'S(0)' --h 'S(0)'|4|accumulation-steps=2 schedule=1f1b
seed-ppb-1f1b|seed|--p0 '[0, 1]' --p1 '[2, 3]' --x B --y B --h B|4|accumulation-steps=2 schedule=1f1b
staged-one-rank|staged|--ranks 1|1|accumulation-steps=4
staged-gpipe|staged|--ranks 4|4|accumulation-steps=4 schedule=gpipe
staged-1f1b|staged|--ranks 4|4|accumulation-steps=4 schedule=1f1b
staged-zb|staged|--ranks 4|4|accumulation-steps=4 schedule=zb-h1
staged-interleaved|staged|--ranks 2|2|accumulation-steps=4 schedule=interleaved-1f1b num-chunks=2
"

# The multi-GPU part (issue 38): the GPT under gpt_layout.py's layouts with
# a GPU per rank (the transport chosen by device, as in production: NCCL),
# each against its CPU ranks' losses (1e-4) and their communication
# (Inputs/check_comm_report.py on both runs' pf-run --comm-report: no host
# round-trip in any step, the first included, no MPI call, every kind's
# calls and bytes over NCCL equal to the CPU ranks' over MPI), every rank's
# step 1 captured as a CUDA graph; then the overlap benchmark's
# data-parallel MLP on two GPUs (its trace's all-reduces on NCCL). The same
# checks as gpu-gpt-device-only-emulated.test, on real GPUs. SP is TP2 with
# Megatron's sequence parallelism (prepare checks that its CPU ranks
# reduce-scatter), ZB-H1 the zero-bubble schedule over PP2's two stages.
# name | layout | ranks (= GPUs needed) | pipeline options
MULTI_GPU="
multi-gpu-dp2|dp|2|optimizer=adamw
multi-gpu-tp2|tp|2|optimizer=adamw
multi-gpu-pp2|pp|2|optimizer=adamw
multi-gpu-sp2|tp|2|optimizer=adamw sequence-parallel=true
multi-gpu-zb2|pp|2|optimizer=adamw accumulation-steps=2 schedule=zb-h1
multi-gpu-pp2-tp2|pp_tp|4|optimizer=adamw
"

# The overlap benchmark's MLP at a size the emulation runs (as lit's
# overlap-bench-emulated.test), for GPU_CHECKS_FAKE=1's multi-GPU part.
OVERLAP_EMULATED=(--widths "48,40,40,10" --batch 32 --bucket-bytes 4096)

# compile_gpt_layout DIR LAYOUT OPTIONS: the GPT under gpt_layout.py's
# LAYOUT compiled with OPTIONS for GPU ranks (DIR/gpu) and CPU ranks
# (DIR/cpu).
compile_gpt_layout() {
  local d=$1 layout=$2 opts=$3 bin=$BUILD/bin dev
  for dev in cuda cpu; do
    "$PY" "$HERE/test/Integration/Inputs/gpt_layout.py" "$HERE/test/Conversion/PFToGPU/Inputs/cuda-gpt.mlir" \
      --layout "$layout" --device "$dev" >"$d/$dev.mlir.in" || return 1
  done
  "$bin/pf-opt" "$d/cuda.mlir.in" -pf-compile-gpu-pipeline="$opts" -o "$d/gpu.mlir" &&
    "$bin/pf-translate" --pf-emit-rank-artifacts "$d/gpu.mlir" --pf-artifact-dir="$d/gpu" >/dev/null &&
    "$bin/pf-opt" "$d/cpu.mlir.in" -pf-compile-cpu-pipeline="$opts" -o "$d/cpu.mlir" &&
    "$bin/pf-translate" --pf-emit-rank-artifacts "$d/cpu.mlir" --pf-artifact-dir="$d/cpu" >/dev/null
}

prepare() {
  local bin=$BUILD/bin
  [ -x "$bin/pf-opt" ] || { echo "gpu-checks: no $bin/pf-opt (build first)" >&2; exit 2; }
  rm -rf "$OUT" && mkdir -p "$OUT/programs" "$OUT/lib" "$OUT/tests"
  "$PY" "$HERE/test/Integration/Inputs/gen_gpt_tokens.py" "$OUT/gpt-data" --steps 6 || exit 1
  # (fd 3: the commands below must not read the list from stdin)
  while IFS='|' read -r -u 3 name src opts steps lr seed tol cmpsteps; do
    [ -n "$name" ] || continue
    [[ "$name" =~ ${GPU_CHECKS_ONLY:-.} ]] || continue
    local d=$OUT/programs/$name
    mkdir -p "$d"
    local ir=$HERE/$src
    if [ "${src#py:}" != "$src" ]; then
      ir=$d/traced.mlir
      PYTHONPATH="$HERE/python" PIPEFLOW_CUDA_AS_CPU=1 PF_BUILD_DIR=$BUILD \
        "$PY" "$HERE/${src#py:}" --compile-only --one-rank >"$ir" ||
        { echo "gpu-checks: tracing $name failed" >&2; exit 1; }
    fi
    sed 's/"cpu"/"cuda"/g' "$ir" >"$d/gpu.mlir.in"
    sed 's/"cuda"/"cpu"/g' "$ir" >"$d/cpu.mlir.in"
    rm -f "$d/traced.mlir"
    "$bin/pf-opt" "$d/gpu.mlir.in" -pf-compile-gpu-pipeline="$opts" -o "$d/gpu.mlir" &&
      "$bin/pf-translate" --pf-emit-rank-artifacts "$d/gpu.mlir" --pf-artifact-dir="$d/gpu" >/dev/null &&
      "$bin/pf-opt" "$d/cpu.mlir.in" -pf-compile-cpu-pipeline="$opts" -o "$d/cpu.mlir" &&
      "$bin/pf-translate" --pf-emit-rank-artifacts "$d/cpu.mlir" --pf-artifact-dir="$d/cpu" >/dev/null ||
      { echo "gpu-checks: compiling $name failed" >&2; exit 1; }
    local data=()
    [[ "$name" = gpt* ]] && data=(--data="$OUT/gpt-data")
    "$bin/pf-run" -n 1 --steps "$steps" --lr "$lr" --seed "$seed" "${data[@]}" \
      --loss-out "$d/cpu.txt" "$d/cpu" >/dev/null || { echo "gpu-checks: CPU run of $name failed" >&2; exit 1; }
    rm -f "$d"/*.mlir "$d"/*.mlir.in
    rm -rf "$d/cpu"
    echo "$name|$steps|$lr|$seed|$tol|$cmpsteps" >"$d/settings"
  done 3<<<"$PROGRAMS"
  while IFS='|' read -r -u 3 name layout ranks; do
    [ -n "$name" ] || continue
    [[ "$name" =~ ${GPU_CHECKS_ONLY:-.} ]] || continue
    local d=$OUT/layouts/$name
    mkdir -p "$d"
    compile_gpt_layout "$d" "$layout" optimizer=adamw &&
      "$bin/pf-run" -n "$ranks" --steps 6 --lr 0.01 --seed 7 --data="$OUT/gpt-data" \
        --loss-out "$d/cpu.txt" "$d/cpu" >/dev/null ||
      { echo "gpu-checks: layout $name failed" >&2; exit 1; }
    rm -f "$d"/*.mlir "$d"/*.mlir.in
    rm -rf "$d/cpu"
    echo "$name|$ranks" >"$d/settings"
  done 3<<<"$LAYOUTS"
  while IFS='|' read -r -u 3 name model genargs ranks opts; do
    [ -n "$name" ] || continue
    [[ "$name" =~ ${GPU_CHECKS_ONLY:-.} ]] || continue
    local d=$OUT/mlp-layouts/$name steps=4 lr=0.01 gen=()
    mkdir -p "$d"
    eval "gen=($genargs)"
    if [ "$model" = seed ]; then
      "$PY" "$HERE/test/Integration/Inputs/relayout.py" "$HERE/examples/mlir/seed_mlp.mlir" "$d/cpu.mlir.in" "${gen[@]}"
    else
      steps=5 lr=0.05
      "$PY" "$HERE/test/Integration/Inputs/gen_staged_mlp.py" --widths 24,40,32,56,48,32,40,24,10 \
        --stages 4 --batch 16 "${gen[@]}" >"$d/cpu.mlir.in"
    fi || { echo "gpu-checks: generating $name failed" >&2; exit 1; }
    sed 's/"cpu"/"cuda"/g' "$d/cpu.mlir.in" >"$d/gpu.mlir.in"
    local all="optimizer=sgd momentum=0.9 $opts"
    "$bin/pf-opt" "$d/gpu.mlir.in" -pf-compile-gpu-pipeline="$all" -o "$d/gpu.mlir" &&
      "$bin/pf-translate" --pf-emit-rank-artifacts "$d/gpu.mlir" --pf-artifact-dir="$d/gpu" >/dev/null &&
      "$bin/pf-opt" "$d/cpu.mlir.in" -pf-compile-cpu-pipeline="$all" -o "$d/cpu.mlir" &&
      "$bin/pf-translate" --pf-emit-rank-artifacts "$d/cpu.mlir" --pf-artifact-dir="$d/cpu" >/dev/null &&
      "$bin/pf-run" -n "$ranks" --steps "$steps" --lr "$lr" --seed 7 --loss-out "$d/cpu.txt" "$d/cpu" >/dev/null ||
      { echo "gpu-checks: MLP layout $name failed" >&2; exit 1; }
    rm -f "$d"/*.mlir "$d"/*.mlir.in
    rm -rf "$d/cpu"
    echo "$name|$model|$ranks|$steps|$lr" >"$d/settings"
  done 3<<<"$MLP_LAYOUTS"
  # The multi-GPU part's programs, and their CPU ranks' losses and comm
  # reports.
  while IFS='|' read -r -u 3 name layout ranks opts; do
    [ -n "$name" ] || continue
    [[ "$name" =~ ${GPU_CHECKS_ONLY:-.} ]] || continue
    local d=$OUT/multi-gpu/$name
    mkdir -p "$d"
    if ! compile_gpt_layout "$d" "$layout" "$opts" ||
      ! "$bin/pf-run" -n "$ranks" --steps 6 --lr 0.01 --seed 7 --data="$OUT/gpt-data" --comm-report \
        --loss-out "$d/cpu.txt" "$d/cpu" >"$d/cpu-comm.txt" ||
      ! grep -q "^comm rank $((ranks - 1)) of $ranks: " "$d/cpu-comm.txt"; then
      echo "gpu-checks: multi-GPU layout $name failed" >&2
      exit 1
    fi
    if [[ " $opts " == *" sequence-parallel=true "* ]] &&
      ! grep -qE '^comm rank 0 reduce_scatter +nccl_calls 0 nccl_bytes 0 mpi_calls [1-9]' "$d/cpu-comm.txt"; then
      echo "gpu-checks: $name: no reduce-scatter on the CPU ranks (sequence parallelism off?)" >&2
      exit 1
    fi
    rm -f "$d"/*.mlir "$d"/*.mlir.in
    rm -rf "$d/cpu"
    echo "$name|$ranks" >"$d/settings"
  done 3<<<"$MULTI_GPU"
  # MPICH's launcher for them (the GPU machine has none) and pf-run.
  mkdir -p "$OUT/bin"
  cp "$(readlink -f "$(command -v mpiexec.hydra)")" "$OUT/bin/mpiexec" &&
    cp "$(command -v hydra_pmi_proxy)" "$bin/pf-run" "$OUT/bin/" || exit 1
  # The generated element-wise kernels alone (pfrt-test-cuda-generated).
  local kernels="pf-gpu-kernels,nvvm-attach-target{chip=sm_90 features=+ptx80},gpu.module(convert-gpu-to-nvvm,convert-arith-to-llvm),reconcile-unrealized-casts"
  local toolkit=${PF_CUDA_TOOLKIT:-/usr/local/cuda}
  for fmt in bin isa; do
    "$bin/pf-opt" "$HERE/test/Integration/Inputs/elementwise-kernels.mlir" \
      --pass-pipeline="builtin.module($kernels,gpu-module-to-binary{toolkit=$toolkit format=$fmt})" |
      "$bin/pf-translate" --pf-emit-gpu-binary -o "$OUT/kernels.$fmt" || exit 1
  done
  cp "$BUILD"/runtime/test/pfrt-test-cuda "$BUILD"/runtime/test/pfrt-test-cuda-twins \
    "$BUILD"/runtime/test/pfrt-test-cuda-generated "$BUILD"/runtime/test/pfrt-test-generated \
    "$BUILD"/runtime/test/pfrt-test-cuda-nccl "$BUILD"/runtime/test/pfrt-test-cuda-staged \
    "$BUILD"/runtime/test/pfrt-test-cuda-gemm-typed "$BUILD"/runtime/test/pfrt-test-split-boxing \
    "$BUILD"/runtime/test/cuda_kernels.ptx "$OUT/tests/" || exit 1
  # cuDNN's fused attention against float64 (where libpfrt has cudnn_graph.h).
  if [ -x "$BUILD"/runtime/test/pfrt-test-cuda-cudnn ]; then
    cp "$BUILD"/runtime/test/pfrt-test-cuda-cudnn "$OUT/tests/" || exit 1
  fi
  # The benchmark's programs, and the data-parallel MLP of the overlap
  # benchmark (overlap on and off; two ranks sharing the GPU).
  PF_BUILD_DIR=$BUILD "$PY" "$HERE/bench/gpu_bench.py" --compile-only --workdir "$OUT/bench" >/dev/null || exit 1
  PF_BIN=$bin "$PY" "$HERE/bench/overlap_bench.py" --compile-only --workdir "$OUT/overlap" >/dev/null || exit 1
  # (and a small one for the emulation's multi-GPU run: overlap-emulated)
  PF_BIN=$bin "$PY" "$HERE/bench/overlap_bench.py" --compile-only --workdir "$OUT/overlap-emulated" \
    "${OVERLAP_EMULATED[@]}" >/dev/null || exit 1
  # The tensor-parallel MLP of the overlap benchmark (pf-overlap-collectives
  # on and off; two GPUs), full size and the emulation's small one.
  PF_BIN=$bin "$PY" "$HERE/bench/overlap_bench.py" --layout tp --compile-only --workdir "$OUT/overlap-tp" \
    >/dev/null || exit 1
  PF_BIN=$bin "$PY" "$HERE/bench/overlap_bench.py" --layout tp --compile-only \
    --workdir "$OUT/overlap-tp-emulated" "${OVERLAP_EMULATED[@]}" >/dev/null || exit 1
  # Shared libraries beyond glibc and libstdc++ (the GPU machine has no
  # MPICH and maybe no OpenBLAS).
  # (a GPU rank's executable: the MLP's, or any, GPU_CHECKS_ONLY chose)
  local exe
  for exe in "$OUT"/programs/mlp-sgd/gpu/rank0 "$OUT"/*/*/gpu/rank0; do
    [ -x "$exe" ] && break
  done
  ldd "$exe" "$OUT/tests/pfrt-test-cuda-twins" "$OUT/bin/mpiexec" "$OUT/bin/hydra_pmi_proxy" | awk '/=> \// {print $3}' | sort -u |
    grep -vE '/(libc|libm|libdl|libpthread|librt|libresolv|libstdc\+\+|libgcc_s)\.so' |
    while read -r lib; do cp -L "$lib" "$OUT/lib/"; done
  tar -C "$BUILD" -cJf "$BUILD/gpu-checks.tar.xz" gpu-checks || exit 1
  ls -la "$BUILD/gpu-checks.tar.xz"
  echo "gpu-checks: prepared; carry $BUILD/gpu-checks.tar.xz and run: bash scripts/gpu-checks.sh run $BUILD"
}

npass=0
nfail=0
nskip=0
check() { # NAME CMD...: PASS when CMD exits 0
  local name=$1
  shift
  if timeout -k 5 "${CHECK_TIMEOUT:-300}" "$@" >"$OUT/logs/$name.out" 2>"$OUT/logs/$name.err"; then
    echo "PASS $name"
    npass=$((npass + 1))
  else
    echo "FAIL $name"
    nfail=$((nfail + 1))
    tail -n 8 "$OUT/logs/$name.out" "$OUT/logs/$name.err" | sed 's/^/    /'
  fi
}
check_fail() { # NAME PATTERN CMD...: PASS when CMD fails with PATTERN on stderr
  local name=$1 pattern=$2
  shift 2
  if ! timeout -k 5 120 "$@" >"$OUT/logs/$name.out" 2>"$OUT/logs/$name.err" &&
    grep -qF -- "$pattern" "$OUT/logs/$name.err"; then
    echo "PASS $name"
    npass=$((npass + 1))
  else
    echo "FAIL $name (expected a failure naming: $pattern)"
    nfail=$((nfail + 1))
    tail -n 8 "$OUT/logs/$name.err" | sed 's/^/    /'
  fi
}
skip() {
  echo "SKIP $1 ($2)"
  nskip=$((nskip + 1))
}

# gpu_count: how many GPUs the ranks can see: the driver's cuDeviceGetCount
# (which honours CUDA_VISIBLE_DEVICES), else nvidia-smi's list; emulated,
# PFRT_CUDA_FAKE_DEVICES (default 1). Those two at most as many as
# CUDA_VISIBLE_DEVICES names, if set; 0 when nothing answers.
gpu_count() {
  local n ids
  if [ "${GPU_CHECKS_FAKE:-0}" = 1 ]; then
    n=${PFRT_CUDA_FAKE_DEVICES:-1}
  else
    n=$("$PY" -c '
import ctypes
cuda = ctypes.CDLL("libcuda.so.1")
n = ctypes.c_int(0)
if cuda.cuInit(0) == 0 and cuda.cuDeviceGetCount(ctypes.byref(n)) == 0:
    print(n.value)' 2>/dev/null)
    if [ -n "$n" ]; then
      echo "$n"
      return
    fi
    n=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
  fi
  n=${n:-0}
  if [ -n "${CUDA_VISIBLE_DEVICES+x}" ]; then
    IFS=, read -r -a ids <<<"$CUDA_VISIBLE_DEVICES"
    [ "${#ids[@]}" -lt "$n" ] && n=${#ids[@]}
  fi
  echo "$n"
}

run() {
  if [ ! -d "$OUT" ]; then
    [ -f "$BUILD/gpu-checks.tar.xz" ] || { echo "gpu-checks: no $BUILD/gpu-checks.tar.xz (prepare it first)" >&2; exit 2; }
    tar -C "$BUILD" -xJf "$BUILD/gpu-checks.tar.xz" || exit 2
  fi
  mkdir -p "$OUT/logs"
  export LD_LIBRARY_PATH="$OUT/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export PATH="$OUT/bin:$PATH"
  unset PFRT_CUDA_FAKE PF_TRACE PFRT_CUDA_COMM
  local fake=${GPU_CHECKS_FAKE:-0}
  [ "$fake" = 1 ] && export PFRT_CUDA_FAKE=1
  nvidia-smi -L 2>/dev/null || echo "gpu-checks: no nvidia-smi"
  local cmp=$HERE/test/Integration/Inputs/compare_losses.py
  # Everything but the multi-GPU part on one GPU, the first the ranks see
  # (its multi-rank jobs share it: host-staged).
  local ngpu cvd_set=${CUDA_VISIBLE_DEVICES+1} cvd=${CUDA_VISIBLE_DEVICES-}
  ngpu=$(gpu_count)
  echo "gpu-checks: $ngpu GPU(s)"
  if [ "$ngpu" -gt 1 ]; then
    export CUDA_VISIBLE_DEVICES=${cvd%%,*}
    [ -n "$CUDA_VISIBLE_DEVICES" ] || CUDA_VISIBLE_DEVICES=0
  fi
  # The runtime's own checks (runtime/test/run_tests.sh's device part).
  if [ "$fake" = 1 ]; then
    skip cuda_gpu "the emulation runs no PTX"
  else
    check cuda_gpu "$OUT/tests/pfrt-test-cuda" "$OUT/tests/cuda_kernels.ptx"
  fi
  check cuda_twins "$OUT/tests/pfrt-test-cuda-twins" "$OUT/twins"
  check cuda_twins_no_graph env PFRT_NO_CUDA_GRAPH=1 "$OUT/tests/pfrt-test-cuda-twins" "$OUT/twins2"
  check cuda_twins_bgrad "$OUT/tests/pfrt-test-cuda-twins" "$OUT/twins3" bgrad
  check cuda_twins_no_fused_epilogues env PFRT_CUDA_NO_FUSED_EPILOGUES=1 \
    "$OUT/tests/pfrt-test-cuda-twins" "$OUT/twins5"
  check_fail cuda_twins_bad_label "pfrt_cuda_k_softmax_xent: label 7 at row 2 is outside [0, 5)" \
    "$OUT/tests/pfrt-test-cuda-twins" "$OUT/twins4" bad_label
  # Typed bf16/f16 GEMMs on tensor cores (pfrt_cuda_gemm_typed, the twin
  # pfrt_cuda_k_matmul_typed): every pair cuBLASLt runs against a float64
  # reference at assert_close's tolerances (K = 768), transposes, batches,
  # beta = 1 into f32, a bf16 bias; real cuBLASLt refusing C f16 with bf16
  # operands and C bf16 with f32 ones; misaligned operands fatal; the
  # tuner's entries keyed by the types. The programs mlp-bf16 and gpt-bf16
  # run every GEMM on bf16 data this way (their losses against the CPU's
  # widened ones, bf16's tolerance).
  check cuda_gemm_typed "$OUT/tests/pfrt-test-cuda-gemm-typed"
  check cuda_gemm_typed_tune env PFRT_CUDA_GEMM_TUNE="$OUT/gemm-typed-tune" \
    "$OUT/tests/pfrt-test-cuda-gemm-typed" tune "$OUT/gemm-typed-tune"
  check_fail cuda_gemm_typed_refuses_bf16_f16 "with A and B bf16, C and D f16, compute 32F" \
    "$OUT/tests/pfrt-test-cuda-gemm-typed" bf16_f16
  check_fail cuda_gemm_typed_refuses_f32_bf16 "with A and B f32, C and D bf16, compute 32F" \
    "$OUT/tests/pfrt-test-cuda-gemm-typed" f32_bf16
  check_fail cuda_gemm_typed_misaligned "is not 16-byte aligned: a bf16/f16 GEMM runs on tensor cores" \
    "$OUT/tests/pfrt-test-cuda-gemm-typed" misaligned_ptr
  # cuDNN 9's fused flash attention (Cudnn.cpp): bf16/f16, causal, masks,
  # forward and backward against a float64 reference at assert_close's
  # tolerances, the plan cache and a captured step; whether real cuDNN
  # finalizes the graphs and refuses a bad tensor and a mismatched matmul;
  # a first call inside a capture. Without libcudnn.so.9 on the machine:
  # SKIP naming it.
  if [ ! -x "$OUT/tests/pfrt-test-cuda-cudnn" ]; then
    skip cuda_cudnn "libpfrt was built without cudnn_graph.h"
  elif [ "$fake" != 1 ] && ! "$OUT/tests/pfrt-test-cuda-cudnn" finalize \
    >"$OUT/logs/cuda_cudnn_probe.out" 2>"$OUT/logs/cuda_cudnn_probe.err" &&
    grep -qF "no cuDNN (" "$OUT/logs/cuda_cudnn_probe.err"; then
    skip cuda_cudnn "$(grep -F "no cuDNN (" "$OUT/logs/cuda_cudnn_probe.err" | head -n 1)"
  else
    check cuda_cudnn "$OUT/tests/pfrt-test-cuda-cudnn"
    check cuda_cudnn_no_graph env PFRT_NO_CUDA_GRAPH=1 "$OUT/tests/pfrt-test-cuda-cudnn"
    check cuda_cudnn_finalize_errors "$OUT/tests/pfrt-test-cuda-cudnn" finalize
    check_fail cuda_cudnn_first_call_captured "was built before the graph capture" \
      "$OUT/tests/pfrt-test-cuda-cudnn" capture_new_shape
  fi
  if [ "$fake" = 1 ]; then
    # (its image is a placeholder only the emulation accepts)
    check generated_device "$OUT/tests/pfrt-test-generated" device "$RANDOM"
    skip cuda_generated "the emulation runs no cubin"
  else
    check cuda_generated_cubin "$OUT/tests/pfrt-test-cuda-generated" "$OUT/kernels.bin"
    check cuda_generated_ptx "$OUT/tests/pfrt-test-cuda-generated" "$OUT/kernels.isa"
  fi
  # The programs: GPU losses against the CPU's, two runs and the uncaptured
  # steps bit for bit.
  for d in "$OUT"/programs/*; do
    [ -d "$d" ] || continue
    local name steps lr seed tol cmpsteps data=() cmp_args=()
    IFS='|' read -r name steps lr seed tol cmpsteps <"$d/settings"
    [ -n "$cmpsteps" ] && cmp_args=(--steps "$cmpsteps")
    [[ "$name" = gpt* ]] && data=(--data="$OUT/gpt-data")
    local args=(--steps "$steps" --lr "$lr" --seed "$seed" "${data[@]}")
    rm -f "$d"/gpu[123].txt # --loss-out appends
    check "$name-run1" "$d/gpu/rank0" "${args[@]}" --loss-out "$d/gpu1.txt"
    check "$name-run2" "$d/gpu/rank0" "${args[@]}" --loss-out "$d/gpu2.txt"
    check "$name-no-graph" "$d/gpu/rank0" "${args[@]}" --no-cuda-graph --loss-out "$d/gpu3.txt"
    check "$name-vs-cpu" "$PY" "$cmp" "$d/cpu.txt" "$d/gpu1.txt" --tolerance "$tol" "${cmp_args[@]}"
    check "$name-repeatable" "$PY" "$cmp" "$d/gpu1.txt" "$d/gpu2.txt" --tolerance 0
    check "$name-graph-equals-uncaptured" "$PY" "$cmp" "$d/gpu1.txt" "$d/gpu3.txt" --tolerance 0
  done
  # GEMM algorithms chosen by timing (--gemm-tune FILE): the first run
  # fills the file, the second reads it; both against the CPU ranks, and
  # the two bit for bit (the same algorithms from the file).
  local tuned=$OUT/programs/mlp-sgd
  if [ -d "$tuned/gpu" ]; then
    local targs=(--steps 10 --lr 0.05 --seed 7)
    rm -f "$tuned"/tuned[12].txt "$tuned/gemm-choices.txt"
    check gemm-tune-run1 "$tuned/gpu/rank0" "${targs[@]}" --gemm-tune "$tuned/gemm-choices.txt" --loss-out "$tuned/tuned1.txt"
    check gemm-tune-run2 "$tuned/gpu/rank0" "${targs[@]}" --gemm-tune "$tuned/gemm-choices.txt" --loss-out "$tuned/tuned2.txt"
    check gemm-tune-file grep -q "^# pfrt gemm choices: device " "$tuned/gemm-choices.txt"
    check gemm-tune-vs-cpu "$PY" "$cmp" "$tuned/cpu.txt" "$tuned/tuned1.txt" --tolerance 1e-4
    check gemm-tune-repeatable "$PY" "$cmp" "$tuned/tuned1.txt" "$tuned/tuned2.txt" --tolerance 0
  fi
  # 3xTF32 GEMMs (--gemm-precision 3xtf32): the twins against a double
  # reference (float32's bound, which plain TF32 misses), the MLP against
  # its CPU ranks.
  check cuda_twins_gemm_fp32 "$OUT/tests/pfrt-test-cuda-twins" "$OUT/twins6" gemm_precision
  check cuda_twins_gemm_3xtf32 env PFRT_CUDA_GEMM_PRECISION=3xtf32 \
    "$OUT/tests/pfrt-test-cuda-twins" "$OUT/twins7" gemm_precision
  # The convolutions under 3xTF32 (grouped ones split once a run, the
  # pieces at the groups' offsets: alignments below 256 bytes told to
  # cuBLASLt's heuristic).
  check cuda_twins_conv_3xtf32 env PFRT_CUDA_GEMM_PRECISION=3xtf32 \
    "$OUT/tests/pfrt-test-cuda-twins" "$OUT/twins9" convs
  if [ -d "$tuned/gpu" ]; then
    rm -f "$tuned/3xtf32.txt"
    check gemm-3xtf32-run "$tuned/gpu/rank0" --steps 10 --lr 0.05 --seed 7 --gemm-precision 3xtf32 --loss-out "$tuned/3xtf32.txt"
    check gemm-3xtf32-vs-cpu "$PY" "$cmp" "$tuned/cpu.txt" "$tuned/3xtf32.txt" --tolerance 1e-4
  fi
  # Every collective on one-rank NCCL communicators (one GPU), and the
  # host-staged transport's twins on two ranks sharing it.
  check nccl_one_rank env PFRT_CUDA_COMM=nccl "$OUT/tests/pfrt-test-cuda-nccl"
  check staged_two_ranks mpiexec -n 2 "$OUT/tests/pfrt-test-cuda-staged"
  # The split all-gather and reduce-scatter (pf-overlap-collectives' rows)
  # on a one-rank NCCL communicator: byte-equal to the blocking twins and
  # host rows, inside a captured graph.
  check split_boxing_one_rank env PFRT_CUDA_COMM=nccl "$OUT/tests/pfrt-test-split-boxing" device
  # Multi-rank GPT layouts on one GPU (staged), against the CPU ranks.
  for d in "$OUT"/layouts/*; do
    [ -d "$d" ] || continue
    local name ranks
    IFS='|' read -r name ranks <"$d/settings"
    rm -f "$d/gpu.txt"
    check "$name-run" pf-run -n "$ranks" --steps 6 --lr 0.01 --seed 7 \
      --data="$OUT/gpt-data" --loss-out "$d/gpu.txt" "$d/gpu"
    check "$name-vs-cpu" "$PY" "$cmp" "$d/cpu.txt" "$d/gpu.txt" --tolerance 1e-4
  done
  # The MLP layouts and schedules on GPU ranks sharing the GPU (staged):
  # against their CPU ranks and against the model on one GPU rank.
  # (the one-rank runs first: the others compare against them)
  local d
  for d in "$OUT"/mlp-layouts/*-one-rank $(ls -d "$OUT"/mlp-layouts/* 2>/dev/null | grep -v -- '-one-rank$'); do
    [ -d "$d" ] || continue
    local name model ranks steps lr
    IFS='|' read -r name model ranks steps lr <"$d/settings"
    rm -f "$d/gpu.txt"
    check "$name-run" pf-run -n "$ranks" --steps "$steps" --lr "$lr" --seed 7 \
      --timeout 120 --loss-out "$d/gpu.txt" "$d/gpu"
    check "$name-vs-cpu" "$PY" "$cmp" "$d/cpu.txt" "$d/gpu.txt" --tolerance 1e-4
    local one=$OUT/mlp-layouts/$model-one-rank
    if [ "$d" != "$one" ] && [ -d "$one" ]; then
      check "$name-vs-one-gpu" "$PY" "$cmp" "$one/gpu.txt" "$d/gpu.txt" --tolerance 1e-5
    fi
  done
  # Traced, a GPU rank times its ops on the device (issue 15's overlap):
  # the data-parallel MLP's trace has its ops on the compute stream and the
  # staged all-reduce's copies on the communication stream, and overlap
  # changes no loss; then the exposed communication with and without it.
  if [ "$fake" = 1 ]; then
    skip overlap "emulated: its GEMMs are too big for the emulation (lit's overlap-bench-emulated.test and gpu-nccl-emulated.test cover the logic)"
  elif [ -d "$OUT/overlap/dp-on" ]; then
    rm -rf "$OUT/overlap/trace-check"
    check overlap-traced pf-run -n 2 --steps 4 --lr 0.01 --seed 7 --trace "$OUT/overlap/trace-check" "$OUT/overlap/dp-on"
    check overlap-trace-shape "$PY" "$HERE/test/Integration/Inputs/check_gpu_trace.py" "$OUT/overlap/trace-check" staged 4 2
    check overlap-bench env PF_BIN="$OUT/bin" "$PY" "$HERE/bench/overlap_bench.py" --prebuilt --workdir "$OUT/overlap"
    cat "$OUT/logs/overlap-bench.out"
  fi
  # A GPU rank killed mid-run: the job ends within 5 s, naming it.
  if [ -d "$OUT/mlp-layouts/seed-pp2-1f1b/gpu" ]; then
    check killed_gpu_rank "$PY" "$HERE/test/Integration/Inputs/killed_rank.py" --pf-run pf-run \
      --artifacts "$OUT/mlp-layouts/seed-pp2-1f1b/gpu" --ranks 2 --rank 1 --after 5
  fi
  if [ "$fake" = 1 ]; then
    skip sanitizer-mlp "emulated"
  elif command -v compute-sanitizer >/dev/null; then
    # (two steps: the second is the captured one)
    local p
    for p in mlp-sgd convnet gpt resnet50; do
      [ -x "$OUT/programs/$p/gpu/rank0" ] || continue
      local extra=()
      [ "$p" = gpt ] && extra=(--data="$OUT/gpt-data")
      check "sanitizer-$p" compute-sanitizer --error-exitcode 1 "$OUT/programs/$p/gpu/rank0" --steps 2 "${extra[@]}"
    done
  else
    skip sanitizer-mlp "no compute-sanitizer on this machine"
  fi
  if [ "$fake" = 1 ]; then
    skip bench "emulated"
  elif [ "${RUN_BENCH:-1}" = 1 ]; then
    check bench env PF_BUILD_DIR="$BUILD" "$PY" "$HERE/bench/gpu_bench.py" --prebuilt --direct --workdir "$OUT/bench"
    cat "$OUT/logs/bench.out"
  else
    skip bench "RUN_BENCH=0"
  fi
  # The multi-GPU part: a GPU per rank (CUDA_VISIBLE_DEVICES as given).
  if [ -n "$cvd_set" ]; then export CUDA_VISIBLE_DEVICES=$cvd; else unset CUDA_VISIBLE_DEVICES; fi
  for d in "$OUT"/multi-gpu/*; do
    [ -d "$d" ] || continue
    local name ranks
    IFS='|' read -r name ranks <"$d/settings"
    if [ "$ngpu" -lt "$ranks" ]; then
      skip "$name" "$ngpu GPU(s): needs $ranks"
      continue
    fi
    rm -f "$d/gpu.txt"
    check "$name-run" env PFRT_CUDA_VERBOSE=1 pf-run -n "$ranks" --steps 6 --lr 0.01 --seed 7 \
      --data="$OUT/gpt-data" --comm-report --timeout 120 --loss-out "$d/gpu.txt" "$d/gpu"
    check "$name-vs-cpu" "$PY" "$cmp" "$d/cpu.txt" "$d/gpu.txt" --tolerance 1e-4
    check "$name-device-only" "$PY" "$HERE/test/Integration/Inputs/check_comm_report.py" \
      "$d/cpu-comm.txt" "$OUT/logs/$name-run.out"
    # shellcheck disable=SC2016 # (the script's own $1 and $2)
    check "$name-captured" bash -c 'n=$(grep -c "step 1 captured as a CUDA graph" "$1")
      echo "$n of $2 ranks captured step 1"
      [ "$n" = "$2" ] && ! grep "share a GPU" "$1"' _ "$OUT/logs/$name-run.err" "$ranks"
  done
  # The overlap benchmark's data-parallel MLP on two GPUs: its trace's
  # split all-reduces on NCCL, overlap changing no loss, the exposed
  # communication with and without it.
  local ov=$OUT/overlap ovargs=()
  [ "$fake" = 1 ] && ov=$OUT/overlap-emulated ovargs=(--emulated "${OVERLAP_EMULATED[@]}")
  if [ ! -d "$ov/dp-on" ]; then
    :
  elif [ "$ngpu" -lt 2 ]; then
    skip multi-gpu-overlap "$ngpu GPU(s): needs 2"
  else
    rm -rf "$ov/trace-nccl"
    check multi-gpu-overlap-traced pf-run -n 2 --steps 4 --lr 0.01 --seed 7 --trace "$ov/trace-nccl" "$ov/dp-on"
    check multi-gpu-overlap-trace-shape "$PY" "$HERE/test/Integration/Inputs/check_gpu_trace.py" "$ov/trace-nccl" nccl 4 2
    check multi-gpu-overlap-bench env PF_BIN="$OUT/bin" "$PY" "$HERE/bench/overlap_bench.py" --prebuilt \
      --workdir "$ov" "${ovargs[@]}"
    cat "$OUT/logs/multi-gpu-overlap-bench.out"
  fi
  # Two GPUs: the split collectives and the start-up point-to-point plan
  # on real NCCL, and the tensor-parallel overlap benchmark (pass on
  # against off, the same run).
  local ovt=$OUT/overlap-tp ovtargs=()
  [ "$fake" = 1 ] && ovt=$OUT/overlap-tp-emulated ovtargs=(--emulated "${OVERLAP_EMULATED[@]}")
  if [ "$ngpu" -lt 2 ]; then
    skip multi-gpu-split-boxing "$ngpu GPU(s): needs 2"
    skip multi-gpu-p2p-plan "$ngpu GPU(s): needs 2"
    skip multi-gpu-overlap-tp "$ngpu GPU(s): needs 2"
  else
    check multi-gpu-split-boxing env PFRT_CUDA_COMM=nccl mpiexec -n 2 "$OUT/tests/pfrt-test-split-boxing" device
    check multi-gpu-p2p-plan mpiexec -n 2 "$OUT/tests/pfrt-test-cuda-nccl" p2p_plan
    if [ -d "$ovt/tp-on" ]; then
      check multi-gpu-overlap-tp-bench env PF_BIN="$OUT/bin" "$PY" "$HERE/bench/overlap_bench.py" --layout tp \
        --prebuilt --workdir "$ovt" "${ovtargs[@]}"
      cat "$OUT/logs/multi-gpu-overlap-tp-bench.out"
    fi
  fi
  echo "gpu-checks: $npass passed, $nfail failed, $nskip skipped"
  [ "$nfail" -eq 0 ]
}

case "$MODE" in
prepare) prepare ;;
run) run ;;
*)
  echo "usage: $0 prepare|run [BUILD]" >&2
  exit 2
  ;;
esac
