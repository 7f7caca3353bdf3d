// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// DecoderConfig: the hyper-parameters of a decoder-only transformer (llama,
// qwen2, gemma3, ...): sizes read from the GGUF's "<arch>.*" keys, checked for
// consistency, plus the features the architecture switches on (biases, Q/K
// norms, sandwich norms, activation, embedding scale, per-layer windows and
// RoPE bases). One forward (decoder_forward.hpp) runs every such architecture;
// each architecture file (llama.cpp, qwen2.cpp, gemma3.cpp) only fills this in.
#pragma once

#include <cstdint>
#include <string>

namespace kvrt {

class GgufFile;

// How RoPE pairs the dimensions of a head (llama.cpp's rope types).
enum class RopeType : uint8_t {
    Norm = 0,  // adjacent pairs (x[2i], x[2i+1]): LLM_ARCH_LLAMA (the converter permutes Q/K for it)
    Neox = 2,  // halves (x[i], x[i + n_rot/2]): qwen2, gemma3
};

// The gated FFN's activation: act(gate) * up.
enum class FfnAct : uint8_t {
    Silu = 0,      // SwiGLU (llama, qwen2)
    GeluTanh = 1,  // GeGLU with GELU's tanh approximation (gemma3)
};

struct DecoderConfig {
    uint32_t n_layers = 0;
    uint32_t n_embd = 0;
    uint32_t n_ff = 0;
    uint32_t n_heads = 0;
    uint32_t n_kv_heads = 0;
    uint32_t head_dim = 0;         // key_length = value_length (may differ from n_embd / n_heads)
    uint32_t n_vocab = 0;
    uint32_t n_ctx_train = 0;
    uint32_t n_rot = 0;            // rotated dims per head (<= head_dim)
    float rope_theta = 10000.0f;   // RoPE base of full-attention layers
    float rope_theta_window = 0;   // RoPE base of sliding-window layers (0 = rope_theta)
    float rms_eps = 1e-5f;
    RopeType rope_type = RopeType::Norm;
    // Sliding window: 0 = none. When set, layers whose index matches the
    // pattern attend only to their last `sliding_window` positions.
    uint32_t sliding_window = 0;
    // Every `swa_pattern`-th layer (1-based) is full when a window is set
    // (Gemma 2/3: 6 -> layers 5, 11, 17, ... are global); 0 or 1 = every layer windowed.
    uint32_t swa_pattern = 0;

    // Features.
    bool qkv_bias = false;     // attn_{q,k,v}.bias added after the projections (qwen2)
    bool qk_norm = false;      // attn_{q,k}_norm: RMSNorm of each Q/K head before RoPE (gemma3)
    bool post_norms = false;   // post_attention_norm / post_ffw_norm before each residual add (gemma3)
    FfnAct ffn_act = FfnAct::Silu;
    float embd_scale = 1.0f;   // embeddings multiplied by this (gemma3: sqrt(n_embd))
    float attn_scale = 0.0f;   // softmax scale of Q.K (0 = 1/sqrt(head_dim))

    bool layer_is_window(uint32_t layer) const noexcept {
        if (sliding_window == 0) return false;
        if (swa_pattern <= 1) return true;
        return (layer + 1) % swa_pattern != 0;
    }
    float layer_rope_theta(uint32_t layer) const noexcept {
        return layer_is_window(layer) && rope_theta_window > 0.0f ? rope_theta_window : rope_theta;
    }
    float softmax_scale() const noexcept;
    uint32_t q_dim() const noexcept { return n_heads * head_dim; }
    uint32_t kv_dim() const noexcept { return n_kv_heads * head_dim; }
};

// Reads the keys every decoder architecture shares ("<arch>.block_count",
// embedding_length, feed_forward_length, attention.head_count[_kv],
// attention.key_length/value_length, context_length, rope.freq_base,
// rope.dimension_count, attention.layer_norm_rms_epsilon,
// attention.sliding_window[_pattern]) and validates them. Throws kvrt::Error
// KVRT_ERR_BAD_FORMAT naming the key when a value is missing, zero, or
// inconsistent (heads not dividing, a head width that does not divide the
// width when key_length is absent, absurd sizes), KVRT_ERR_UNSUPPORTED for
// key_length != value_length or RoPE scaling.
DecoderConfig read_decoder_config(const GgufFile& file, RopeType rope_type);

// Checks the finished config (after the architecture set its features):
// rope dims, window vs context. Throws KVRT_ERR_BAD_FORMAT naming the key.
void validate_decoder_config(const GgufFile& file, const DecoderConfig& c);

}  // namespace kvrt
