#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The kvrt authors

# Builds examples/c with the installed prefix's pkg-config file only, and runs it.
set -euo pipefail
out=$1
mkdir -p "$out"
cc=${CC:-cc}
# shellcheck disable=SC2046
$cc -std=c99 -Wall -Wextra -pedantic -Werror $(pkg-config --cflags kvrt) \
    "$KVRT_SOURCE_DIR/examples/c/prefix_cache.c" -o "$out/prefix_cache" \
    $(pkg-config --libs kvrt) -Wl,-rpath,"$(pkg-config --variable=libdir kvrt)"
exec "$out/prefix_cache"
