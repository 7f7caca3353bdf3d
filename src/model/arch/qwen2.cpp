// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// `qwen2` (Qwen2, Qwen2.5, Qwen2.5-Coder): llama's layer with biases on the
// Q, K and V projections (attn_{q,k,v}.bias), RoPE on halves (NEOX type) with
// a large base (1e6), and a separate output head (output.weight) unless the
// file ties it to the embeddings.
#include "model/arch/architecture.hpp"
#include "model/gguf/gguf.hpp"

namespace kvrt {

namespace {
DecoderConfig qwen2_config(const GgufFile& f) {
    DecoderConfig c = read_decoder_config(f, RopeType::Neox);
    c.qkv_bias = true;
    validate_decoder_config(f, c);
    return c;
}
}  // namespace

const Architecture kArchQwen2 = {"qwen2", ArchFamily::Decoder, &qwen2_config};

}  // namespace kvrt
