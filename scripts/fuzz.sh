#!/usr/bin/env bash
# scripts/fuzz.sh MINUTES [extra libFuzzer flags...]
#
# Builds pf-fuzz (tools/pf-fuzz: parser, verifiers, pf-compile-cpu-pipeline
# for training and inference) with every PipeFlow library instrumented by
# -fsanitize=fuzzer-no-link,address, in build-fuzz/ (PF_FUZZ_BUILD_DIR),
# and runs it for MINUTES minutes over a corpus seeded with the .mlir files
# of test/ (build-fuzz/corpus keeps what it finds between runs). A crash,
# assertion, sanitizer report, leak or hang (10 s per input) stops it with
# the input saved as build-fuzz/crash-* (or timeout-*/leak-*) and a non-zero
# exit. Prints libFuzzer's final statistics (executions, coverage).
set -euo pipefail
minutes=${1:?usage: scripts/fuzz.sh MINUTES [libFuzzer flags...]}
shift
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${PF_FUZZ_BUILD_DIR:-$root/build-fuzz}
jobs=${PF_JOBS:-2}

if ! ls /usr/lib/llvm-22/lib/clang/22/lib/linux/libclang_rt.fuzzer-x86_64.a \
    >/dev/null 2>&1; then
  echo "fuzz: installing libclang-rt-22-dev (libFuzzer, sanitizers)"
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo=sudo
  $sudo apt-get install -y -q libclang-rt-22-dev >/dev/null
fi
# -O1: the instrumented build is most of CI's fuzzing time, and a minute of
# fuzzing gains little from -O3.
"$root/scripts/configure.sh" "$build" -DPF_ENABLE_CUDA=OFF -DPF_ENABLE_FUZZER=ON \
  "-DCMAKE_CXX_FLAGS=-fsanitize=fuzzer-no-link,address -fno-omit-frame-pointer" \
  "-DCMAKE_CXX_FLAGS_RELEASE=-O1 -DNDEBUG"
ninja -C "$build" -j "$jobs" pf-fuzz >/dev/null

corpus=$build/corpus
mkdir -p "$corpus"
# The seed corpus: every .mlir of the test suite (RUN lines are comments).
while IFS= read -r f; do
  rel=${f#"$root/test/"}
  cp "$f" "$corpus/seed-${rel//\//_}"
done < <(find "$root/test" -name '*.mlir' -size -64k)
cd "$build"
# allow_user_poisoning=0: LLVM's BumpPtrAllocator (inline in our
# instrumented code, but also in the uninstrumented libMLIR) poisons slabs
# by hand; mixing the two gives false use-after-poison reports.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:allow_user_poisoning=0}
exec ./bin/pf-fuzz "$corpus" -max_total_time=$((minutes * 60)) -timeout=10 \
  -rss_limit_mb=4096 -max_len=65536 -print_final_stats=1 "$@"
