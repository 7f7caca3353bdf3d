// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// `llama` (and the families converted under its name: SmolLM2, Llama 2/3,
// Mistral, ...): the plain pre-norm decoder. RMSNorm, Q/K/V without biases,
// RoPE on adjacent pairs (llama.cpp's NORM type: the converter permuted Q/K
// for it), SwiGLU FFN, optional sliding window
// (llama.attention.sliding_window[_pattern]).
#include "model/arch/architecture.hpp"
#include "model/gguf/gguf.hpp"

namespace kvrt {

namespace {
DecoderConfig llama_config(const GgufFile& f) {
    DecoderConfig c = read_decoder_config(f, RopeType::Norm);
    validate_decoder_config(f, c);
    return c;
}
}  // namespace

const Architecture kArchLlama = {"llama", ArchFamily::Decoder, &llama_config};

}  // namespace kvrt
