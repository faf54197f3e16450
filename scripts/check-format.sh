#!/usr/bin/env bash
# Checks that C/C++ sources are clang-formatted (.clang-format: LLVM style).
#
#   scripts/check-format.sh          every tracked C/C++ file under include/
#                                    lib/ tools/ runtime/ unittests/
#   scripts/check-format.sh BASE     the C/C++ files changed since the git ref
#                                    BASE (e.g. origin/main): its merge base
#                                    with HEAD against the working tree
#
# Runs `clang-format-22 --dry-run --Werror` (or $CLANG_FORMAT) on each file,
# lists the unformatted ones and exits 1 if there are any (2 on a usage
# error). Formats nothing; `clang-format-22 -i FILE...` does.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
clang_format=${CLANG_FORMAT:-clang-format-22}
if ! command -v "$clang_format" >/dev/null; then
  echo "error: $clang_format not found (apt-get install clang-format-22, or set CLANG_FORMAT)" >&2
  exit 2
fi
if [ $# -gt 1 ]; then
  echo "usage: $0 [BASE]" >&2
  exit 2
fi

# C, C++ and CUDA sources and headers. (.def/.inc X-macro tables are left
# alone.)
is_source='\.(c|cc|cpp|cxx|h|hh|hpp|hxx|cu|cuh)$'
if [ $# -eq 1 ]; then
  if ! base=$(git merge-base "$1" HEAD 2>/dev/null); then
    echo "error: '$1' is not a git ref with a common ancestor with HEAD" >&2
    exit 2
  fi
  what="changed since $1"
  mapfile -t files < <(git diff --name-only --diff-filter=d "$base" -- |
                       grep -E "$is_source" || true)
else
  what="tracked under include/ lib/ tools/ runtime/ unittests/"
  mapfile -t files < <(git ls-files -- include lib tools runtime unittests |
                       grep -E "$is_source" || true)
fi

unformatted=()
for f in "${files[@]}"; do
  [ -f "$f" ] || continue
  if ! "$clang_format" --dry-run --Werror --style=file "$f" >/dev/null 2>&1; then
    unformatted+=("$f")
  fi
done

if [ ${#unformatted[@]} -gt 0 ]; then
  printf '%s\n' "${unformatted[@]}"
  echo "error: ${#unformatted[@]} of ${#files[@]} C/C++ files $what are not clang-formatted; fix with: $clang_format -i FILE..." >&2
  exit 1
fi
echo "all ${#files[@]} C/C++ files $what are clang-formatted"
