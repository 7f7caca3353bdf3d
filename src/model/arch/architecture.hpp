// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// The architecture interface: what kvrt needs to know about one
// `general.architecture` to run it through the one Model and the one Context.
//
// Two families share the runtime:
//   Decoder  decoder-only transformers (llama, qwen2, gemma3): the architecture
//            supplies a DecoderConfig (sizes + features) from the GGUF metadata;
//            weights load by the common tensor names, the forward is
//            decoder_forward() over a paged KV cache whose layout (full or
//            window(W) per layer) follows from the config, and the resume
//            policy on a prefix hit is longest-prefix reuse cut by each window
//            layer's rule (cache/README.md).
//   Ced      DeepSeek-V4.1-Flash-style causal encoder-decoder models
//            (docs/ced_runtime.md): config, weights, bank/indexer/window caches
//            and the resume policies (window checkpoints, bounded replay) of the
//            CED runtime.
// Adding a decoder architecture is one file (see llama.cpp, qwen2.cpp,
// gemma3.cpp beside this one) that fills a DecoderConfig, one line in the
// table of architecture.cpp, and its tests.
#pragma once

#include "model/arch/decoder_config.hpp"

#include <string>
#include <string_view>

namespace kvrt {

class GgufFile;

enum class ArchFamily : uint8_t { Decoder = 0, Ced = 1 };

struct Architecture {
    const char* name;  // general.architecture
    ArchFamily family;
    // Decoder family: reads the config and sets the architecture's features.
    // Throws kvrt::Error (KVRT_ERR_BAD_FORMAT naming the key) on bad metadata.
    DecoderConfig (*decoder_config)(const GgufFile& file);
};

// The architecture named `name`, or nullptr when kvrt does not run it.
const Architecture* find_architecture(std::string_view name) noexcept;
// "llama, qwen2, gemma3, ced": for error messages and `kvrt inspect`.
std::string supported_architectures();

// One per architecture file.
extern const Architecture kArchLlama;
extern const Architecture kArchQwen2;
extern const Architecture kArchGemma3;
extern const Architecture kArchCed;

}  // namespace kvrt
