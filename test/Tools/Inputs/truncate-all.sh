#!/usr/bin/env bash
# usage: truncate-all.sh STEP FILE TOOL [ARGS...]
# Feeds every prefix (in steps of STEP bytes) of FILE to TOOL and fails if any
# run crashes, or fails without a located "error:" line.
set -u
step=$1 file=$2
shift 2
size=$(wc -c <"$file")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0 runs=0 errors=0
for ((n = 1; n < size; n += step)); do
  head -c "$n" "$file" >"$tmp/in.mlir"
  "$@" "$tmp/in.mlir" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  runs=$((runs + 1))
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 1 ]; then
    echo "prefix of $n bytes: exit code $rc (crash?)"; cat "$tmp/err"; fails=$((fails + 1))
  elif [ "$rc" -eq 1 ]; then
    errors=$((errors + 1))
    if ! grep -qE "in.mlir:[0-9]+:[0-9]+: error: " "$tmp/err"; then
      echo "prefix of $n bytes: failed without a located error"; cat "$tmp/err"; fails=$((fails + 1))
    fi
  fi
done
echo "runs=$runs errors=$errors fails=$fails"
[ "$fails" -eq 0 ] && [ "$errors" -gt 0 ]
