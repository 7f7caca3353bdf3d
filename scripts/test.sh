#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The kvrt authors

# Builds everything and runs every test: Release, then Debug with
# AddressSanitizer + UBSan, then the concurrency tests under ThreadSanitizer.
# Ends with one line "kvrt: P passed, F failed" summing the three runs.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh

export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
# ctest runs two tests at once on a machine of about two cores, each with two OpenMP
# threads: threads that spin at barriers (libgomp's default) take the cores the working
# threads of the other test need. Sleeping waits cost a test microseconds per barrier
# instead. (Speed is measured by bench/, never by tests.)
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
jobs=$(nproc)
logdir=$(mktemp -d)
passed=0; failed=0; notrun=0

# run_ctest NAME BUILD_DIR [ctest args...]: runs ctest, adds its counts to the totals.
run_ctest() {
  local name=$1 dir=$2; shift 2
  local rc=0
  ctest --test-dir "$dir" --output-on-failure --no-tests=error "$@" 2>&1 | tee "$logdir/$name.log" || rc=$?
  local line total nfail
  line=$(grep -E "tests passed, [0-9]+ tests failed out of [0-9]+" "$logdir/$name.log" | tail -1 || true)
  if [ -z "$line" ]; then
    echo "test.sh: $name: ctest printed no summary" >&2
    failed=$((failed + 1)); return 1
  fi
  total=$(sed -E 's/.*out of ([0-9]+).*/\1/' <<<"$line")
  nfail=$(sed -E 's/.* ([0-9]+) tests failed.*/\1/' <<<"$line")
  # Tests ctest reports as not run (e.g. "(Skipped)") are not passes.
  nskip=$(grep -cE "^[[:space:]]*[0-9]+ - .* \(Skipped\)$" "$logdir/$name.log" || true)
  passed=$((passed + total - nfail - nskip)); failed=$((failed + nfail)); notrun=$((notrun + nskip))
  return $rc
}

# The Redis tier's tests use a redis-server of their own on 127.0.0.1:6390 (the
# CMake default of KVRT_TEST_REDIS_URL), started here and shut down on exit; with
# KVRT_REQUIRE_REDIS=1 a test that cannot reach it fails instead of not running.
redis_port=6390
redis_dir=$(mktemp -d)
stop_redis() {
  redis-cli -p "$redis_port" shutdown nosave >/dev/null 2>&1 || true
  rm -rf "$redis_dir"
}
trap stop_redis EXIT
redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no --daemonize yes \
  --dir "$redis_dir" --pidfile "$redis_dir/redis.pid" --logfile "$redis_dir/redis.log"
for _ in $(seq 50); do
  redis-cli -p "$redis_port" ping 2>/dev/null | grep -q PONG && break
  sleep 0.1
done
redis-cli -p "$redis_port" ping | grep -q PONG || { echo "test.sh: redis-server on port $redis_port did not start" >&2; cat "$redis_dir/redis.log" >&2 || true; }
export KVRT_REQUIRE_REDIS=1

status=0
# phase NAME: prints the phase's name and the time since the script started.
phase() { echo "== $1 (at $((SECONDS / 60)) min $((SECONDS % 60)) s)"; }
phase "Release"
scripts/build.sh build/release -DCMAKE_BUILD_TYPE=Release
run_ctest release build/release -j"$jobs" || status=1

phase "Debug + AddressSanitizer + UBSan"
# -g1: line tables only. A sanitizer report needs file:line in its stack, not the
# variables' locations; full -g doubles the compile time of the per-ISA kernel objects
# (attention_avx512*.cpp: ~115 s -> ~64 s each under ASan + UBSan on a 2-vCPU Ice Lake).
scripts/build.sh build/asan -DCMAKE_BUILD_TYPE=Debug -DKVRT_SANITIZE="address;undefined" \
  -DKVRT_BUILD_BENCH=OFF -DCMAKE_CXX_FLAGS_DEBUG="-g1 -O1" -DCMAKE_C_FLAGS_DEBUG="-g1 -O1"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
LSAN_OPTIONS=suppressions=$PWD/tests/sanitizers/lsan.supp \
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  run_ctest asan build/asan -j"$jobs" || status=1

phase "ThreadSanitizer (tests named *concurrent*)"
# Only what the tests named *concurrent* run is built (the unit tests and one C test).
cmake -S . -B build/tsan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DKVRT_SANITIZE=thread \
  -DKVRT_BUILD_BENCH=OFF -DKVRT_BUILD_TOOLS=OFF -DCMAKE_CXX_FLAGS_DEBUG="-g1 -O1" -DCMAKE_C_FLAGS_DEBUG="-g1 -O1" >/dev/null
cmake --build build/tsan --target kvrt_unit_tests c_test_cancel_concurrent
TSAN_OPTIONS=halt_on_error=1 run_ctest tsan build/tsan -R concurrent || status=1

phase "libFuzzer harnesses (clang + ASan + UBSan, ${KVRT_FUZZ_SECONDS:-30} s each)"
# Each harness is one test: it passes when its bounded run ends without a crash,
# sanitizer report, leak or timeout (tests/fuzz/README.md).
# Only the harnesses and the parsers' slice of the library are built (kvrt_fuzzers).
if CC=clang-14 CXX=clang++-14 cmake -S . -B build/fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKVRT_BUILD_FUZZ=ON \
     -DKVRT_SANITIZE="address;undefined" -DKVRT_BUILD_TESTS=OFF -DKVRT_BUILD_BENCH=OFF -DKVRT_BUILD_TOOLS=OFF >/dev/null &&
   cmake --build build/fuzz --target kvrt_fuzzers; then
  scripts/fuzz.sh build/fuzz "${KVRT_FUZZ_SECONDS:-30}" | tee "$logdir/fuzz.log" || status=1
  passed=$((passed + $(grep -c "no findings" "$logdir/fuzz.log" || true)))
  failed=$((failed + $(grep -c "FAILED" "$logdir/fuzz.log" || true)))
else
  echo "test.sh: the fuzz build failed" >&2
  failed=$((failed + 1)); status=1
fi

rm -rf "$logdir"
phase "end"
if [ "$notrun" -gt 0 ]; then
  echo "kvrt: $passed passed, $failed failed, $notrun not run"
else
  echo "kvrt: $passed passed, $failed failed"
fi
exit $status
