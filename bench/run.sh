#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The kvrt authors

# bench/run.sh [BUILD_DIR]: runs every benchmark program, JSON lines to stdout; then, when the
# shared library and the real model are there, bench/mixed_rounds.py (continuous batching
# through prefill_batch, against the same work as separate calls) and bench/busy_core.py (decode
# with another program spinning on one core: the runtime's thread choice against fixed counts).
set -euo pipefail
dir=${1:-build/release}
for b in "$dir"/bench/bench_*; do
  [ -x "$b" ] || continue
  echo "# $(basename "$b")" >&2
  "$b"
done
model=${KVRT_MODEL_DIR:-$HOME/.cache/kvrt/models}/SmolLM2-135M-Instruct.Q4_1.gguf
if [ -f "$dir/libkvrt.so" ] && [ -f "$model" ]; then
  echo "# mixed_rounds.py" >&2
  KVRT_LIBRARY="$dir/libkvrt.so" python3 "$(dirname "$0")/mixed_rounds.py" --model "$model"
fi
if [ -x "$dir/tools/kvrt" ] && [ -f "$model" ]; then
  echo "# busy_core.py" >&2
  python3 "$(dirname "$0")/busy_core.py" --kvrt "$dir/tools/kvrt" --model "$model"
fi
