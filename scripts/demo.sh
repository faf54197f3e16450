#!/usr/bin/env bash
# The main demo: the seeds' two-stage pipeline MLP in pf IR, verified,
# round-tripped and drawn with the graph-dot emitter.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${PF_BUILD_DIR:-$root/build}
out=${PF_DEMO_OUT:-$root/out/demo}
"$root/scripts/setup.sh"

mkdir -p "$out"
src=$root/examples/mlir/seed_mlp.mlir
echo "== verifying $src"
"$build/bin/pf-opt" "$src" >"$out/seed_mlp.roundtrip.mlir"
"$build/bin/pf-opt" "$out/seed_mlp.roundtrip.mlir" | diff -q - "$out/seed_mlp.roundtrip.mlir" >/dev/null
echo "   parsed, verified and round-tripped: $out/seed_mlp.roundtrip.mlir"
"$build/bin/pf-translate" --pf-emit-graph-dot "$src" >"$out/seed_mlp.dot"
echo "   graph: $out/seed_mlp.dot"
if command -v dot >/dev/null; then
  dot -Tsvg "$out/seed_mlp.dot" >"$out/seed_mlp.svg"
  echo "   drawing: $out/seed_mlp.svg"
fi
echo "== the seed MLP, as pf-opt prints it"
cat "$out/seed_mlp.roundtrip.mlir"
