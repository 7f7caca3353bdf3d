#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The kvrt authors
# scripts/fuzz.sh BUILD_DIR SECONDS [HARNESS...]: runs each libFuzzer harness of
# BUILD_DIR (configured with -DKVRT_BUILD_FUZZ=ON, see tests/fuzz/README.md) for
# SECONDS over a copy of its seed corpus (tests/fuzz/corpus/<name>; the committed
# corpus is never written), one input at a time, each input limited to 1 s. Fails on
# any crash, sanitizer report, leak, timeout or out-of-memory (libFuzzer writes the
# input to BUILD_DIR/fuzz-artifacts/<name>/). Default harnesses: every fuzz_* in
# BUILD_DIR/tests/fuzz. Prints one line per harness: executions, exec/s, result.
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
status=0
for h in "${harnesses[@]}"; do
  exe=$dir/tests/fuzz/fuzz_$h
  work=$dir/fuzz-work/$h; art=$dir/fuzz-artifacts/$h
  rm -rf "$work"; mkdir -p "$work" "$art"
  [ -d "$root/tests/fuzz/corpus/$h" ] && cp -r "$root/tests/fuzz/corpus/$h/." "$work/"
  log=$dir/fuzz-$h.log
  # Longest input: a whole small GGUF or state file (64 KiB); texts for the tokenizers up
  # to 4 KiB (every pre-tokenizer rule and merge path is reached by then; a longer text
  # only repeats them at a cost that grows with its length).
  case $h in tokenizer) max_len=4096 ;; *) max_len=65536 ;; esac
  rc=0
  "$exe" "$work" -max_total_time="$secs" -timeout=1 -rss_limit_mb=2048 -malloc_limit_mb=1024 \
    -max_len=$max_len -print_final_stats=1 -artifact_prefix="$art/" >"$log" 2>&1 || rc=$?
  runs=$(grep -E "^stat::number_of_executed_units:" "$log" | awk '{print $2}' || true)
  rate=$(grep -E "^stat::average_exec_per_sec:" "$log" | awk '{print $2}' || true)
  if [ $rc -ne 0 ]; then
    echo "fuzz $h: FAILED (exit $rc) after ${runs:-?} executions; log $log, input in $art/"
    grep -E "ERROR|SUMMARY|runtime error|Test unit written" "$log" | head -5 || true
    status=1
  else
    echo "fuzz $h: ${runs:-?} executions in ${secs} s (${rate:-?} exec/s), no findings"
  fi
done
exit $status
