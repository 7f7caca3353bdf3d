// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// The demo's project document, embedded at build time from
// tools/kvrt/demo_document.txt (tools/CMakeLists.txt generates its definition).
#pragma once

#include <cstddef>

namespace kvrt_cli {
extern const unsigned char kDemoDocument[];
extern const size_t kDemoDocumentSize;
}  // namespace kvrt_cli
