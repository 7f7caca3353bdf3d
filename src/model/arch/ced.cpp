// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// `ced`: DeepSeek-V4.1-Flash-style causal encoder-decoder models
// (../../../docs/ced_gguf.md for the metadata, docs/ced_runtime.md for the
// runtime). Config and weights: ced_config.*, ced_weights.*; the forward, its
// caches and resume policies: runtime/ced_runtime.*, run by the one Context.
#include "model/arch/architecture.hpp"

namespace kvrt {

const Architecture kArchCed = {"ced", ArchFamily::Ced, nullptr};

}  // namespace kvrt
