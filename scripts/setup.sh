#!/usr/bin/env bash
# Installs PipeFlow's build and test dependencies (Debian 12 packages) if any
# is missing, then configures and builds. Idempotent: a no-op rebuild when all
# is in place.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${PF_BUILD_DIR:-$root/build}

packages=(llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools clang-22 lld-22
  ccache ninja-build cmake mpich libmpich-dev libopenblas-dev python3-numpy
  python3-pytest python3-pytest-xdist python3-hypothesis python3-torch libgtest-dev graphviz clang-format-22 g++-12
  clang-tidy-22)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$p")
done
# scripts/lint.sh runs ruff's npm build with node: the machine's Node.js and
# npm where it has them (Debian's npm conflicts with NodeSource's nodejs),
# else Debian's.
command -v node >/dev/null && command -v npm >/dev/null || missing+=(nodejs npm)
if [ ${#missing[@]} -gt 0 ]; then
  echo "== installing: ${missing[*]}"
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo=sudo
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

"$root/scripts/configure.sh" "$build"
echo "== building"
ninja -C "$build" ${PF_JOBS:+-j "$PF_JOBS"}
