#!/usr/bin/env bash
# Builds everything and runs every test: Release, then Debug with
# AddressSanitizer + UBSan, then the concurrency tests under ThreadSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh

export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
jobs=$(nproc)

echo "== Release"
scripts/build.sh build/release -DCMAKE_BUILD_TYPE=Release
ctest --test-dir build/release --output-on-failure -j"$jobs"

echo "== Debug + AddressSanitizer + UBSan"
scripts/build.sh build/asan -DCMAKE_BUILD_TYPE=Debug -DKVRT_SANITIZE="address;undefined" \
  -DKVRT_BUILD_BENCH=OFF -DCMAKE_CXX_FLAGS_DEBUG="-g -O1" -DCMAKE_C_FLAGS_DEBUG="-g -O1"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
LSAN_OPTIONS=suppressions=$PWD/tests/sanitizers/lsan.supp \
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build/asan --output-on-failure -j"$jobs"

echo "== ThreadSanitizer (tests named *concurrent*)"
scripts/build.sh build/tsan -DCMAKE_BUILD_TYPE=Debug -DKVRT_SANITIZE=thread \
  -DKVRT_BUILD_BENCH=OFF -DKVRT_BUILD_TOOLS=OFF -DCMAKE_CXX_FLAGS_DEBUG="-g -O1" -DCMAKE_C_FLAGS_DEBUG="-g -O1"
TSAN_OPTIONS=halt_on_error=1 ctest --test-dir build/tsan --output-on-failure -R concurrent

echo "== all test suites passed"
