#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The kvrt authors
# scripts/fuzz.sh BUILD_DIR SECONDS [HARNESS...]: runs each libFuzzer harness of
# BUILD_DIR (configured with -DKVRT_BUILD_FUZZ=ON, see tests/fuzz/README.md) for
# SECONDS over a copy of its seed corpus (tests/fuzz/corpus/<name>; the committed
# corpus is never written), one input at a time, each input limited to 1 s. Fails on
# any crash, sanitizer report, leak, timeout or out-of-memory (libFuzzer writes the
# input to BUILD_DIR/fuzz-artifacts/<name>/). Default harnesses: every fuzz_* in
# BUILD_DIR/tests/fuzz. Runs KVRT_FUZZ_JOBS harnesses at once (default: the number of
# CPUs; each harness is one process of one thread). Prints one line per harness, in the
# order given: executions, exec/s, result.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$(cd "$1" && pwd); secs=$2; shift 2
harnesses=("$@")
if [ ${#harnesses[@]} -eq 0 ]; then
  for f in "$dir"/tests/fuzz/fuzz_*; do [ -x "$f" ] && harnesses+=("$(basename "$f" | sed 's/^fuzz_//')"); done
fi
if [ ${#harnesses[@]} -eq 0 ]; then
  echo "fuzz.sh: no harness in $dir/tests/fuzz (configure with -DKVRT_BUILD_FUZZ=ON)" >&2; exit 1
fi
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:allocator_may_return_null=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# fuzz_one H: fuzzes harness H; its line (and on failure the report's first lines) goes to
# BUILD_DIR/fuzz-H.result; returns non-zero on a finding.
fuzz_one() {
  local h=$1
  local exe=$dir/tests/fuzz/fuzz_$h
  local work=$dir/fuzz-work/$h art=$dir/fuzz-artifacts/$h
  rm -rf "$work"; mkdir -p "$work" "$art"
  [ -d "$root/tests/fuzz/corpus/$h" ] && cp -r "$root/tests/fuzz/corpus/$h/." "$work/"
  local log=$dir/fuzz-$h.log out=$dir/fuzz-$h.result
  # Longest input: a whole small GGUF or state file (64 KiB); texts for the tokenizers up
  # to 4 KiB (every pre-tokenizer rule and merge path is reached by then; a longer text
  # only repeats them at a cost that grows with its length).
  local max_len=65536
  [ "$h" = tokenizer ] && max_len=4096
  local rc=0
  "$exe" "$work" -max_total_time="$secs" -timeout=1 -rss_limit_mb=2048 -malloc_limit_mb=1024 \
    -max_len=$max_len -print_final_stats=1 -artifact_prefix="$art/" >"$log" 2>&1 || rc=$?
  local runs rate
  runs=$(grep -E "^stat::number_of_executed_units:" "$log" | awk '{print $2}' || true)
  rate=$(grep -E "^stat::average_exec_per_sec:" "$log" | awk '{print $2}' || true)
  if [ $rc -ne 0 ]; then
    { echo "fuzz $h: FAILED (exit $rc) after ${runs:-?} executions; log $log, input in $art/"
      grep -E "ERROR|SUMMARY|runtime error|Test unit written" "$log" | head -5 || true; } >"$out"
    return 1
  fi
  echo "fuzz $h: ${runs:-?} executions in ${secs} s (${rate:-?} exec/s), no findings" >"$out"
}

parallel=${KVRT_FUZZ_JOBS:-$(nproc)}
[ "$parallel" -ge 1 ] 2>/dev/null || { echo "fuzz.sh: KVRT_FUZZ_JOBS must be a positive number" >&2; exit 1; }
pids=()
for h in "${harnesses[@]}"; do
  [ -x "$dir/tests/fuzz/fuzz_$h" ] || { echo "fuzz.sh: no harness $dir/tests/fuzz/fuzz_$h" >&2; exit 1; }
  rm -f "$dir/fuzz-$h.result"
  while [ "$(jobs -rp | wc -l)" -ge "$parallel" ]; do wait -n || true; done
  fuzz_one "$h" &
  pids+=($!)
done
status=0
for i in "${!harnesses[@]}"; do
  wait "${pids[$i]}" || status=1
  h=${harnesses[$i]}
  if [ -f "$dir/fuzz-$h.result" ]; then cat "$dir/fuzz-$h.result"
  else echo "fuzz $h: FAILED (the harness run ended without a result)"; status=1; fi
done
exit $status
