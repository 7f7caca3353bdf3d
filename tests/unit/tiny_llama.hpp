// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// A tiny random `llama` GGUF for fast tests of the runtime (bad input, sliding
// windows, exactness under the sanitizers): 2 layers, width 64, 4 query / 2 KV
// heads of 16, FFN 96, a byte-level vocabulary of 256 byte tokens + "ab" +
// <|endoftext|> (BOS/EOS) + <|im_start|> / <|im_end|>, ChatML template.
#pragma once

#include "model/tokenizer/bpe.hpp"
#include "model/gguf/gguf_writer.hpp"

#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

namespace kvrt::test {

struct TinyLlamaOptions {
    std::string architecture = "llama";
    uint32_t n_layers = 2;
    uint32_t n_embd = 64;
    uint32_t n_heads = 4;
    uint32_t n_kv_heads = 2;
    uint32_t n_ff = 96;
    uint32_t n_ctx = 512;
    uint32_t sliding_window = 0;  // 0: no key written
    TensorType weight_type = TensorType::Q8_0;
    bool tied = true;
    bool drop_q0 = false;          // omit blk.0.attn_q.weight
    bool bad_q_shape = false;      // blk.0.attn_q.weight with the wrong shape
    uint32_t seed = 1;
};

inline std::string utf8_of(uint32_t cp) {
    std::string o;
    if (cp < 0x80) {
        o += static_cast<char>(cp);
    } else if (cp < 0x800) {
        o += static_cast<char>(0xC0 | (cp >> 6));
        o += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        o += static_cast<char>(0xE0 | (cp >> 12));
        o += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        o += static_cast<char>(0x80 | (cp & 0x3F));
    }
    return o;
}

inline uint32_t tiny_vocab_size() { return 256 + 4; }

inline GgufWriter tiny_llama_writer(const TinyLlamaOptions& o) {
    GgufWriter w;
    const std::string a = o.architecture;
    w.set_string("general.architecture", a);
    w.set_string("general.name", "tiny-test-llama");
    w.set_u32(a + ".block_count", o.n_layers);
    w.set_u32(a + ".context_length", o.n_ctx);
    w.set_u32(a + ".embedding_length", o.n_embd);
    w.set_u32(a + ".feed_forward_length", o.n_ff);
    w.set_u32(a + ".attention.head_count", o.n_heads);
    w.set_u32(a + ".attention.head_count_kv", o.n_kv_heads);
    w.set_f32(a + ".rope.freq_base", 10000.0f);
    w.set_f32(a + ".attention.layer_norm_rms_epsilon", 1e-5f);
    if (o.sliding_window) w.set_u32(a + ".attention.sliding_window", o.sliding_window);

    std::vector<std::string> tokens;
    std::vector<int32_t> types;
    for (int b = 0; b < 256; ++b) {
        tokens.push_back(utf8_of(bpe::byte_to_cp(static_cast<uint8_t>(b))));
        types.push_back(1);
    }
    tokens.push_back("ab");
    types.push_back(1);
    tokens.push_back("<|endoftext|>");
    types.push_back(3);
    tokens.push_back("<|im_start|>");
    types.push_back(3);
    tokens.push_back("<|im_end|>");
    types.push_back(3);
    w.set_string("tokenizer.ggml.model", "gpt2");
    w.set_string("tokenizer.ggml.pre", "gpt-2");
    w.set_string_array("tokenizer.ggml.tokens", tokens);
    w.set_i32_array("tokenizer.ggml.token_type", types);
    w.set_string_array("tokenizer.ggml.merges", {"a b"});
    w.set_u32("tokenizer.ggml.bos_token_id", 257);
    w.set_u32("tokenizer.ggml.eos_token_id", 257);
    w.set_bool("tokenizer.ggml.add_bos_token", false);
    w.set_string("tokenizer.chat_template",
                 "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
                 "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}");

    std::mt19937 rng(o.seed);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    auto rnd = [&](size_t n, float scale) {
        std::vector<float> v(n);
        for (float& x : v) x = nd(rng) * scale;
        return v;
    };
    auto ones = [](size_t n) {
        std::vector<float> v(n);
        for (size_t i = 0; i < n; ++i) v[i] = 1.0f + 0.01f * static_cast<float>(i % 7);
        return v;
    };
    const uint64_t E = o.n_embd, V = tiny_vocab_size(), F = o.n_ff;
    const uint64_t hd = o.n_embd / o.n_heads, KD = hd * o.n_kv_heads;
    auto mat = [&](const std::string& name, uint64_t k, uint64_t n) {
        std::vector<float> v = rnd(k * n, 1.0f / std::sqrt(static_cast<float>(k)));
        w.add_tensor_quantized(name, o.weight_type, {k, n}, v.data());
    };
    mat("token_embd.weight", E, V);
    std::vector<float> on = ones(E);
    w.add_tensor("output_norm.weight", TensorType::F32, {E}, on.data(), E * 4);
    if (!o.tied) mat("output.weight", E, V);
    for (uint32_t l = 0; l < o.n_layers; ++l) {
        const std::string p = "blk." + std::to_string(l) + ".";
        w.add_tensor(p + "attn_norm.weight", TensorType::F32, {E}, on.data(), E * 4);
        w.add_tensor(p + "ffn_norm.weight", TensorType::F32, {E}, on.data(), E * 4);
        if (!(l == 0 && o.drop_q0)) mat(p + "attn_q.weight", E, (l == 0 && o.bad_q_shape) ? E + 32 : E);
        mat(p + "attn_k.weight", E, KD);
        mat(p + "attn_v.weight", E, KD);
        mat(p + "attn_output.weight", E, E);
        mat(p + "ffn_gate.weight", E, F);
        mat(p + "ffn_up.weight", E, F);
        mat(p + "ffn_down.weight", F, E);
    }
    return w;
}

// Writes a tiny model to a fresh file under the temp directory and returns its path.
inline std::string write_tiny_llama(const std::string& name, const TinyLlamaOptions& o = {}) {
    const std::string path = (std::filesystem::temp_directory_path() / ("kvrt_test_" + name + "_" + std::to_string(::getpid()) + ".gguf")).string();
    tiny_llama_writer(o).write(path);
    return path;
}

}  // namespace kvrt::test
