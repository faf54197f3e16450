#!/usr/bin/env bash
# The main demo: the seeds' two-stage pipeline MLP (stage 0 on rank 0,
# stage 1 on rank 1, SGD lr 0.001, batch 16, 2 micro-batches) compiled ahead
# of time into one executable per rank and trained for 20 steps on two CPU
# ranks under MPI. Each step prints one loss per micro-batch.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${PF_BUILD_DIR:-$root/build}
out=${PF_DEMO_OUT:-$root/out/demo}
"$root/scripts/setup.sh"

mkdir -p "$out"
src=$root/examples/mlir/seed_mlp.mlir
echo "== 1. the program: $src (forward + loss, global tensors, stages)"
"$build/bin/pf-translate" --pf-emit-graph-dot "$src" >"$out/seed_mlp.dot"
if command -v dot >/dev/null; then
  dot -Tsvg "$out/seed_mlp.dot" >"$out/seed_mlp.svg"
  echo "   drawn: $out/seed_mlp.svg"
fi
echo "== 2. compile: autodiff + SGD, 2 micro-batches, per-rank partitioning, lowering"
options="optimizer=sgd accumulation-steps=2"
"$build/bin/pf-opt" "$src" -pf-compile-cpu-pipeline="$options" \
  -o "$out/seed_mlp.llvm.mlir"
"$build/bin/pf-opt" "$src" -pf-compile-cpu-pipeline="$options pf-compile-to=rank" \
  -o "$out/seed_mlp.ranks.mlir"
echo "   per-rank pf programs: $out/seed_mlp.ranks.mlir"
echo "== 3. emit one executable per rank"
"$build/bin/pf-translate" --pf-emit-rank-artifacts "$out/seed_mlp.llvm.mlir" \
  --pf-artifact-dir="$out/artifacts" >/dev/null
ls "$out/artifacts"
echo "== 4. train 20 steps on 2 CPU ranks (pf-run -> mpiexec)"
"$build/bin/pf-run" -n 2 "$out/artifacts" --steps 20 --lr 0.001 \
  --trace "$out/trace"
echo "   per-rank Chrome traces: $out/trace/trace_rank{0,1}.json"
