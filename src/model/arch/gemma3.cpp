// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// `gemma3` (text part of Gemma 3): interleaved local/global attention: every
// 6th layer (5, 11, 17, ...) attends to the whole context, the others to a
// sliding window of gemma3.attention.sliding_window (512) positions, with RoPE
// base 10,000 on the local layers and rope.freq_base (1e6) on the global ones
// (NEOX pairing). Head width key_length (256) independent of the model width;
// Q and K heads RMS-normalised (attn_{q,k}_norm) before RoPE; softmax scale
// 1/sqrt(key_length); "sandwich" norms: post_attention_norm and post_ffw_norm
// on each sub-layer's output before its residual add; GeGLU FFN (GELU, tanh
// approximation); embeddings multiplied by sqrt(n_embd); the output head tied
// to the embeddings. The converter already stored the RMSNorm weights as
// (1 + w), so every norm is the plain RMSNorm. As llama.cpp's
// llm_build_gemma3_iswa (the layer pattern is fixed at 6 there too, since the
// GGUF has no pattern key).
#include "model/arch/architecture.hpp"
#include "model/gguf/gguf.hpp"
#include "util/error.hpp"

#include <cmath>

namespace kvrt {

namespace {
DecoderConfig gemma3_config(const GgufFile& f) {
    DecoderConfig c = read_decoder_config(f, RopeType::Neox);
    if (c.sliding_window == 0)
        fail(KVRT_ERR_BAD_FORMAT, f.path() + ": " + f.arch_key("attention.sliding_window") +
                                      " is missing or 0 (Gemma 3's local layers need it)");
    if (c.swa_pattern == 0) c.swa_pattern = 6;
    c.rope_theta_window = 10000.0f;
    c.qk_norm = true;
    c.post_norms = true;
    c.ffn_act = FfnAct::GeluTanh;
    c.embd_scale = std::sqrt(static_cast<float>(c.n_embd));
    c.attn_scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
    validate_decoder_config(f, c);
    return c;
}
}  // namespace

const Architecture kArchGemma3 = {"gemma3", ArchFamily::Decoder, &gemma3_config};

}  // namespace kvrt
