#!/usr/bin/env bash
# scripts/configure.sh BUILD_DIR [extra cmake arguments...]
#
# Configures a PipeFlow build in BUILD_DIR (once: an existing build.ninja is
# kept) with the toolchain the project uses: Debian's LLVM/MLIR 22, clang-22,
# lld, ccache, Ninja, libMLIR.so. scripts/setup.sh configures build/ with it,
# scripts/fuzz.sh its sanitizer build.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:?usage: scripts/configure.sh BUILD_DIR [cmake args...]}
shift
[ -f "$build/build.ninja" ] && exit 0
echo "== configuring $build"
cmake -G Ninja -S "$root" -B "$build" \
  -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
  -DLLVM_USE_LINKER=lld \
  -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
  -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
  -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
  -DMLIR_LINK_MLIR_DYLIB=ON "$@" >/dev/null
