#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The kvrt authors

# bench/run.sh [BUILD_DIR]: runs every benchmark program, JSON lines to stdout.
set -euo pipefail
dir=${1:-build/release}
for b in "$dir"/bench/bench_*; do
  [ -x "$b" ] || continue
  echo "# $(basename "$b")" >&2
  "$b"
done
