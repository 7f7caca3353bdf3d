#!/usr/bin/env bash
# Builds everything and runs every test: Release, then Debug with
# AddressSanitizer + UBSan, then the concurrency tests under ThreadSanitizer.
# Ends with one line "kvrt: P passed, F failed" summing the three runs.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh

export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
jobs=$(nproc)
logdir=$(mktemp -d)
passed=0; failed=0

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
  passed=$((passed + total - nfail)); failed=$((failed + nfail))
  return $rc
}

status=0
echo "== Release"
scripts/build.sh build/release -DCMAKE_BUILD_TYPE=Release
run_ctest release build/release -j"$jobs" || status=1

echo "== Debug + AddressSanitizer + UBSan"
scripts/build.sh build/asan -DCMAKE_BUILD_TYPE=Debug -DKVRT_SANITIZE="address;undefined" \
  -DKVRT_BUILD_BENCH=OFF -DCMAKE_CXX_FLAGS_DEBUG="-g -O1" -DCMAKE_C_FLAGS_DEBUG="-g -O1"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
LSAN_OPTIONS=suppressions=$PWD/tests/sanitizers/lsan.supp \
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  run_ctest asan build/asan -j"$jobs" || status=1

echo "== ThreadSanitizer (tests named *concurrent*)"
scripts/build.sh build/tsan -DCMAKE_BUILD_TYPE=Debug -DKVRT_SANITIZE=thread \
  -DKVRT_BUILD_BENCH=OFF -DKVRT_BUILD_TOOLS=OFF -DCMAKE_CXX_FLAGS_DEBUG="-g -O1" -DCMAKE_C_FLAGS_DEBUG="-g -O1"
TSAN_OPTIONS=halt_on_error=1 run_ctest tsan build/tsan -R concurrent || status=1

rm -rf "$logdir"
echo "kvrt: $passed passed, $failed failed"
exit $status
