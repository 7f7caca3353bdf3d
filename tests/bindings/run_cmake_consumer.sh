#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The kvrt authors

# Configures, builds and runs examples/consumers/cmake against the installed
# prefix only ($CMAKE_PREFIX_PATH; no package registry, no build tree).
set -euo pipefail
out=$1 cmake=$2
rm -rf "$out"
"$cmake" -S "$KVRT_SOURCE_DIR/examples/consumers/cmake" -B "$out" \
  -DCMAKE_PREFIX_PATH="$KVRT_PREFIX" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF \
  -DCMAKE_BUILD_TYPE=Release >/dev/null
"$cmake" --build "$out"
exec "$out/kvrt_consumer"
