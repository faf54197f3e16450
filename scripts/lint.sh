#!/usr/bin/env bash
# Lints the repository:
#   Python  ruff's linter with the root ruff.toml, on every tracked Python file
#           it does not exclude (ruff's npm build, @astral-sh/ruff-wasm-nodejs,
#           run by scripts/ruff.js: Debian 12 packages no ruff)
#   C/C++   clang-tidy-22 with the root .clang-tidy on the lines changed since
#           the commit in scripts/lint-base (scripts/tidy.py; --all: every
#           line of every file in the compilation database, minutes per core)
#
#   scripts/lint.sh [--all | --base REV] [--python-only | --cxx-only]
#
# Prints one line per finding ("path:line:col: ...") and ends with
# "lint: N passed, M failed": the files checked without and with findings (a
# linter that could not run counts as one failed). Exits 1 if any failed.
# Needs node and npm (the machine's, or Debian's nodejs/npm: scripts/setup.sh),
# Debian's python3 and, for C/C++, a configured and built build/ (PF_BUILD_DIR)
# with its compile_commands.json. The npm package is installed once, pinned,
# into $build/lint-tools.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${PF_BUILD_DIR:-$root/build}
ruff_wasm_version=0.17.4

tidy_args=() python=1 cxx=1
while [ $# -gt 0 ]; do
  case $1 in
    --all) tidy_args+=(--all) ;;
    --base) tidy_args+=(--base "${2:?--base needs a commit}"); shift ;;
    --python-only) cxx=0 ;;
    --cxx-only) python=0 ;;
    *) echo "usage: $0 [--all | --base REV] [--python-only | --cxx-only]" >&2; exit 2 ;;
  esac
  shift
done

passed=0 failed=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# "NAME: N passed, M failed" from a part's output, added to the totals; a
# part that exited non-zero without a count, or with no failure counted,
# counts as one failed.
tally() { # name status output
  local line p f
  line=$(grep -E "^$1: [0-9]+ passed, [0-9]+ failed$" "$3" | tail -n 1)
  p=$(echo "$line" | awk '{print $2}') f=$(echo "$line" | awk '{print $4}')
  [ -z "$p" ] && p=0 && f=0
  if [ "$2" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
  passed=$((passed + p)) failed=$((failed + f))
}

ruff() { # files...: prints findings and "ruff: N passed, M failed"
  local tools=$build/lint-tools pkg=@astral-sh/ruff-wasm-nodejs
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    echo "error: node and npm not found (apt-get install nodejs npm)"
    return 2
  fi
  if ! grep -qs "\"version\": \"$ruff_wasm_version\"" "$tools/node_modules/$pkg/package.json"; then
    mkdir -p "$tools"
    npm install --prefix "$tools" --no-save --no-package-lock --no-audit --no-fund \
      --loglevel=error "$pkg@$ruff_wasm_version" >"$tmp/npm" 2>&1 || {
      cat "$tmp/npm"
      echo "error: could not install $pkg@$ruff_wasm_version with npm"
      return 2
    }
  fi
  /usr/bin/python3 -c 'import json, sys, tomllib
json.dump(tomllib.load(open(sys.argv[1], "rb")), sys.stdout)' "$root/ruff.toml" \
    >"$tmp/ruff.json" || return 2
  (cd "$root" && NODE_PATH=$tools/node_modules node scripts/ruff.js --list "$tmp/ruff.json" "$@") \
    >"$tmp/ruff-files" || return 2
  (cd "$root" && NODE_PATH=$tools/node_modules node scripts/ruff.js "$tmp/ruff.json" "$@") \
    >"$tmp/ruff-out" 2>&1
  local rc=$? n bad
  cat "$tmp/ruff-out"
  [ $rc -gt 1 ] && return $rc
  n=$(wc -l <"$tmp/ruff-files")
  bad=$(grep -E '^[^ :]+:[0-9]+:[0-9]+: ' "$tmp/ruff-out" | cut -d: -f1 | sort -u | wc -l)
  echo "ruff on $n Python files"
  echo "ruff: $((n - bad)) passed, $bad failed"
  return $rc
}

if [ "$python" = 1 ]; then
  # Tracked and new (untracked, not ignored) files; not the deleted ones.
  py=()
  while IFS= read -r f; do
    [ -f "$root/$f" ] && py+=("$f")
  done < <(git -C "$root" ls-files --cached --others --exclude-standard -- '*.py' | sort -u)
  ruff "${py[@]}" >"$tmp/py" 2>&1
  rc=$?
  cat "$tmp/py"
  tally ruff "$rc" "$tmp/py"
fi

if [ "$cxx" = 1 ]; then
  /usr/bin/python3 "$root/scripts/tidy.py" --build "$build" "${tidy_args[@]}" >"$tmp/cxx" 2>&1
  rc=$?
  cat "$tmp/cxx"
  tally clang-tidy "$rc" "$tmp/cxx"
fi

echo "lint: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
