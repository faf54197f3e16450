#!/usr/bin/env bash
# Builds PipeFlow and runs every test: lit (IR, tools), gtest (C++ API),
# the runtime's MPI tests, the Python front end's pytest suite, the format
# check, the linters (scripts/lint.sh) and the fuzzer. Ends with
# "tests: N passed, M failed" and exits non-zero if anything failed.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${PF_BUILD_DIR:-$root/build}
"$root/scripts/setup.sh" || { echo "tests: 0 passed, 1 failed"; exit 1; }
echo "== setup and build: ${SECONDS}s"
last=$SECONDS

passed=0 failed=0
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT
# What failed, in detail: printed again just before the last line, so that a
# CI log's tail shows the cause and not only the counts.
details=$log/details
: >"$details"
detail() { # title file lines
  { echo "---- $1"; tail -n "$3" "$2"; echo; } >>"$details"
}

count() { # name passed failed
  echo "== $1: $2 passed, $3 failed ($((SECONDS - last))s)"
  last=$SECONDS
  passed=$((passed + $2)) failed=$((failed + $3))
}

# A part that exited non-zero without naming a failed test (it crashed, or
# its harness broke), or that ran no test at all, counts as one failure.
settle() { # name status passed failed log
  if { [ "$2" -ne 0 ] && [ "$4" -eq 0 ]; } || [ $(($3 + $4)) -eq 0 ]; then
    echo "== $1 exited with status $2 after $3 passed tests and named no failure"
    detail "$1 (exit status $2)" "$5" 40
    count "$1" "$3" $(($4 + 1))
  else
    count "$1" "$3" "$4"
  fi
}

# lit: per-test result lines ("PASS: ...", "FAIL: ..."). A failed test's
# block (its commands and output) goes to the details, 60 lines of each.
/usr/lib/llvm-22/bin/lit -v "$build/test" >"$log/lit" 2>&1
rc=$?
# (Only lit's own result lines: "RESULT: PIPEFLOW :: test"; a test's output
# may contain lines that start with "FAIL:" too.)
lit_bad='^(FAIL|XPASS|UNRESOLVED|TIMEOUT): PIPEFLOW ::'
grep -aE "$lit_bad" "$log/lit" || true
if grep -aqE "$lit_bad" "$log/lit"; then
  awk '/^\*+ TEST .PIPEFLOW/ {p = 1; n = 0} p && n++ < 60 {print}
       /^\*+$/ {p = 0}' "$log/lit" >"$log/lit-fail"
  detail lit "$log/lit-fail" 400
fi
settle lit "$rc" "$(grep -acE '^(PASS|XFAIL): PIPEFLOW ::' "$log/lit")" \
  "$(grep -acE "$lit_bad" "$log/lit")" "$log/lit"

# gtest: each failed test's lines, from its "[ RUN ]" to its "[ FAILED ]".
"$build/unittests/PFUnitTests" >"$log/gtest" 2>&1
rc=$?
gtest_bad='^\[  FAILED  \] [A-Za-z].*\('
grep -aE "$gtest_bad" "$log/gtest" || true
if grep -aqE "$gtest_bad" "$log/gtest"; then
  awk '/^\[ RUN/ {b = ""} {b = b $0 "\n"}
       /^\[  FAILED  \] [A-Za-z].*\(/ {printf "%s", b; b = ""}' \
    "$log/gtest" >"$log/gtest-fail"
  detail gtest "$log/gtest-fail" 200
fi
settle gtest "$rc" "$(grep -acE '^\[       OK \]' "$log/gtest")" \
  "$(grep -acE "$gtest_bad" "$log/gtest")" "$log/gtest"

# Runtime tests under mpiexec: each "FAIL name" line and the indented tail
# of its output under it.
if [ -x "$root/runtime/test/run_tests.sh" ] && [ -d "$build/runtime" ]; then
  "$root/runtime/test/run_tests.sh" "$build/runtime" >"$log/rt" 2>&1
  rc=$?
  grep -aE "^FAIL" "$log/rt" || true
  if grep -aqE "^FAIL" "$log/rt"; then
    awk '/^FAIL/ {p = 1; print; next} p && /^ / {print; next} {p = 0}' \
      "$log/rt" >"$log/rt-fail"
    detail runtime "$log/rt-fail" 200
  fi
  settle runtime "$rc" "$(grep -acE '^PASS' "$log/rt")" \
    "$(grep -acE '^FAIL' "$log/rt")" "$log/rt"
fi

# Python front end (Debian's python3: it has numpy and pytest). With
# pytest-xdist (Debian's python3-pytest-xdist, which setup.sh installs) the
# files run in PF_JOBS workers, a file's tests in one worker (its module
# fixtures are made once); most tests wait on pf-opt, clang and their
# launched ranks, so two workers on two cores take about 0.75 of the time.
if [ -d "$root/test/python" ]; then
  xdist=()
  /usr/bin/python3 -c "import xdist" 2>/dev/null &&
    xdist=(-n "${PF_JOBS:-2}" --dist loadfile)
  (cd "$root" && PF_OPT="$build/bin/pf-opt" PF_BUILD_DIR="$build" \
    /usr/bin/python3 -m pytest -q -rfE -p no:cacheprovider "${xdist[@]}" test/python) >"$log/py" 2>&1
  tail -n 15 "$log/py" | grep -E "FAILED|ERROR" || true
  summary=$(tail -n 1 "$log/py")
  p=$(echo "$summary" | grep -oE '[0-9]+ passed' | grep -oE '[0-9]+' || echo 0)
  f=$(echo "$summary" | grep -oE '[0-9]+ (failed|errors?)' | awk '{s += $1} END {print s + 0}')
  [ -z "$p" ] && p=0
  [ -z "$f" ] && f=0
  if [ "$p" -eq 0 ] && [ "$f" -eq 0 ]; then f=1; fi
  [ "$f" -ne 0 ] && detail pytest "$log/py" 120
  count pytest "$p" "$f"
fi

# Formatting: every tracked C/C++ file is clang-formatted (.clang-format).
if "$root/scripts/check-format.sh" >"$log/format" 2>&1; then
  count format 1 0
else
  cat "$log/format"
  detail format "$log/format" 40
  count format 0 1
fi

# Lint (scripts/lint.sh): ruff with ruff.toml on the Python files, and
# clang-tidy-22 with .clang-tidy on the C/C++ lines changed since the commit
# in scripts/lint-base. Counts the files checked without and with findings;
# each finding's line ("path:line:col: ...") and the linter's errors.
PF_BUILD_DIR="$build" "$root/scripts/lint.sh" >"$log/lint" 2>&1
rc=$?
lint_bad='^([^ :]+:[0-9]+:[0-9]+: |error: )'
grep -aE "$lint_bad" "$log/lint" || true
summary=$(grep -aE '^lint: [0-9]+ passed, [0-9]+ failed$' "$log/lint" | tail -n 1)
p=$(echo "$summary" | awk '{print $2}') f=$(echo "$summary" | awk '{print $4}')
[ -z "$p" ] && p=0 f=0
[ "$f" -ne 0 ] && detail lint "$log/lint" 80
settle lint "$rc" "$p" "$f" "$log/lint"

# Fuzzing: one minute of pf-fuzz (parser, verifiers, compile pipelines under
# AddressSanitizer; scripts/fuzz.sh builds it in build-fuzz/). A crash, a
# sanitizer report, a leak or a hang fails. PF_SKIP_FUZZ=1 skips it locally.
if [ "${PF_SKIP_FUZZ:-0}" != 1 ]; then
  if "$root/scripts/fuzz.sh" 1 >"$log/fuzz" 2>&1; then
    grep -E "^stat::number_of_executed_units|DONE" "$log/fuzz" || true
    count fuzz 1 0
  else
    tail -n 80 "$log/fuzz"
    detail fuzz "$log/fuzz" 60
    count fuzz 0 1
  fi
fi

if [ -s "$details" ]; then
  echo "== details of what failed"
  cat "$details"
fi
echo "tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
