// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

#include "model/arch/decoder_config.hpp"

#include "model/gguf/gguf.hpp"
#include "util/error.hpp"

#include <cmath>

namespace kvrt {

namespace {
[[noreturn]] void bad(const GgufFile& f, const std::string& msg) {
    fail(KVRT_ERR_BAD_FORMAT, f.path() + ": " + msg);
}
}  // namespace

float DecoderConfig::softmax_scale() const noexcept {
    return attn_scale > 0.0f ? attn_scale : 1.0f / std::sqrt(static_cast<float>(head_dim));
}

DecoderConfig read_decoder_config(const GgufFile& f, RopeType rope_type) {
    DecoderConfig c;
    c.rope_type = rope_type;
    c.n_layers = f.require_u32(f.arch_key("block_count"));
    c.n_embd = f.require_u32(f.arch_key("embedding_length"));
    c.n_ff = f.require_u32(f.arch_key("feed_forward_length"));
    c.n_heads = f.require_u32(f.arch_key("attention.head_count"));
    c.n_kv_heads = f.get_u32(f.arch_key("attention.head_count_kv"), c.n_heads);
    c.n_ctx_train = f.get_u32(f.arch_key("context_length"), 2048);
    c.rope_theta = f.get_f32(f.arch_key("rope.freq_base"), 10000.0f);
    c.rms_eps = f.get_f32(f.arch_key("attention.layer_norm_rms_epsilon"), 1e-5f);
    c.sliding_window = f.get_u32(f.arch_key("attention.sliding_window"), 0);
    c.swa_pattern = f.get_u32(f.arch_key("attention.sliding_window_pattern"), 0);

    constexpr uint32_t kMaxDim = 1u << 16, kMaxLayers = 1024, kMaxHeads = 1024;
    if (c.n_layers == 0 || c.n_layers > kMaxLayers) bad(f, f.arch_key("block_count") + " = " + std::to_string(c.n_layers) + " is out of range");
    if (c.n_embd == 0 || c.n_embd > kMaxDim) bad(f, f.arch_key("embedding_length") + " = " + std::to_string(c.n_embd) + " is out of range");
    if (c.n_ff == 0 || c.n_ff > 4 * kMaxDim) bad(f, f.arch_key("feed_forward_length") + " = " + std::to_string(c.n_ff) + " is out of range");
    if (c.n_heads == 0 || c.n_heads > kMaxHeads) bad(f, f.arch_key("attention.head_count") + " = " + std::to_string(c.n_heads) + " is out of range");
    if (c.n_kv_heads == 0 || c.n_kv_heads > c.n_heads || c.n_heads % c.n_kv_heads != 0)
        bad(f, f.arch_key("attention.head_count_kv") + " = " + std::to_string(c.n_kv_heads) +
                   " does not divide attention.head_count = " + std::to_string(c.n_heads));
    if (f.has(f.arch_key("attention.key_length"))) {
        c.head_dim = f.require_u32(f.arch_key("attention.key_length"));
    } else {
        if (c.n_embd % c.n_heads != 0)
            bad(f, f.arch_key("embedding_length") + " = " + std::to_string(c.n_embd) +
                       " is not a multiple of attention.head_count = " + std::to_string(c.n_heads) +
                       " (and attention.key_length is absent)");
        c.head_dim = c.n_embd / c.n_heads;
    }
    if (f.get_u32(f.arch_key("attention.value_length"), c.head_dim) != c.head_dim)
        fail(KVRT_ERR_UNSUPPORTED, f.path() + ": " + f.arch_key("attention.value_length") +
                                       " differs from attention.key_length, which kvrt does not support");
    if (c.head_dim == 0 || c.head_dim % 2 != 0 || c.head_dim > 1024)
        bad(f, f.arch_key("attention.key_length") + ": head width " + std::to_string(c.head_dim) +
                   " must be even and at most 1024");
    c.n_rot = f.get_u32(f.arch_key("rope.dimension_count"), c.head_dim);
    if (!(c.rope_theta > 0.0f) || !std::isfinite(c.rope_theta))
        bad(f, f.arch_key("rope.freq_base") + " must be positive and finite");
    if (!(c.rms_eps > 0.0f) || c.rms_eps > 1.0f) bad(f, f.arch_key("attention.layer_norm_rms_epsilon") + " is out of range");
    if (c.n_ctx_train == 0) bad(f, f.arch_key("context_length") + " is 0");
    if (f.has(f.arch_key("rope.scaling.type"))) {
        const std::string_view t = f.get_string(f.arch_key("rope.scaling.type"), "none");
        if (t != "none" && f.get_f32(f.arch_key("rope.scaling.factor"), 1.0f) != 1.0f)
            fail(KVRT_ERR_UNSUPPORTED, f.path() + ": RoPE scaling '" + std::string(t) + "' (" +
                                           f.arch_key("rope.scaling.type") + ") is not supported");
    }
    return c;
}

void validate_decoder_config(const GgufFile& f, const DecoderConfig& c) {
    if (c.n_rot == 0 || c.n_rot > c.head_dim || c.n_rot % 2 != 0)
        bad(f, f.arch_key("rope.dimension_count") + " = " + std::to_string(c.n_rot) +
                   " must be even, non-zero and at most the head width " + std::to_string(c.head_dim));
    if (c.sliding_window > c.n_ctx_train)
        bad(f, f.arch_key("attention.sliding_window") + " = " + std::to_string(c.sliding_window) +
                   " is larger than the context length " + std::to_string(c.n_ctx_train));
    // (A pattern longer than the model is valid: every layer is then a window layer, as in
    // llama.cpp; Gemma 3 files carry no pattern key and take 6 whatever their depth.)
    if (c.rope_theta_window < 0.0f || !std::isfinite(c.rope_theta_window))
        bad(f, "the sliding-window RoPE base must be positive");
    if (!(c.embd_scale > 0.0f) || !std::isfinite(c.embd_scale)) bad(f, "the embedding scale must be positive");
}

}  // namespace kvrt
