// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

#include "model/arch/ced_weights.hpp"

#include "model/gguf/gguf.hpp"
#include "util/error.hpp"

#include <cstring>
#include <string>

namespace kvrt::ced {
namespace {

std::string blk(int32_t l, const char* name) { return "blk." + std::to_string(l) + "." + name; }

PackedWeight matrix(const GgufFile& f, const std::string& name, uint64_t k, uint64_t n) {
    const GgufTensor& t = f.expect_tensor(name, {k, n});
    return PackedWeight(t.type, t.data, static_cast<int64_t>(n), static_cast<int64_t>(k));
}

std::vector<float> vec(const GgufFile& f, const std::string& name, uint64_t n) {
    const GgufTensor& t = f.expect_tensor(name, {n}, {TensorType::F32});
    std::vector<float> v(n);
    std::memcpy(v.data(), t.data, n * sizeof(float));
    return v;
}

}  // namespace

std::shared_ptr<const CedWeights> CedWeights::load(const GgufFile& f) {
    auto w = std::make_shared<CedWeights>();
    w->cfg = config_from_gguf(f);
    const CedConfig& c = w->cfg;
    const uint64_t E = c.n_embd, V = c.n_vocab, H = c.n_heads, D = c.entry_dim, F = c.n_ff;
    const uint64_t Hi = c.idx_heads, Di = c.idx_dim;
    w->tok_embd.emplace(matrix(f, "token_embd.weight", E, V));
    w->output.emplace(matrix(f, "output.weight", E, V));
    w->output_norm = vec(f, "output_norm.weight", E);
    w->layers.resize(c.n_layers);
    for (int32_t l = 0; l < c.n_layers; l++) {
        CedLayerWeights& L = w->layers[l];
        L.attn_norm = vec(f, blk(l, "attn_norm.weight"), E);
        L.wq.emplace(matrix(f, blk(l, "attn_q.weight"), E, H * D));
        L.wkv.emplace(matrix(f, blk(l, "attn_kv.weight"), E, D));
        L.kv_norm = vec(f, blk(l, "attn_kv_norm.weight"), D);
        L.wo.emplace(matrix(f, blk(l, "attn_output.weight"), H * D, E));
        L.sinks = vec(f, blk(l, "attn_sinks.weight"), H);
        L.ffn_norm = vec(f, blk(l, "ffn_norm.weight"), E);
        L.ffn_gate.emplace(matrix(f, blk(l, "ffn_gate.weight"), E, F));
        L.ffn_up.emplace(matrix(f, blk(l, "ffn_up.weight"), E, F));
        L.ffn_down.emplace(matrix(f, blk(l, "ffn_down.weight"), F, E));
        if (c.is_source[l]) {
            L.bank_kv.emplace(matrix(f, blk(l, "bank_kv.weight"), E, D));
            if (c.ratio_of_layer(l) > 1) L.bank_gate.emplace(matrix(f, blk(l, "bank_gate.weight"), E, D));
            L.bank_norm = vec(f, blk(l, "bank_norm.weight"), D);
            L.idx_k.emplace(matrix(f, blk(l, "idx_k.weight"), D, Di));
            L.idx_k_norm = vec(f, blk(l, "idx_k_norm.weight"), Di);
        }
        if (c.is_index[l]) {
            L.idx_q.emplace(matrix(f, blk(l, "idx_q.weight"), E, Hi * Di));
            L.idx_w.emplace(matrix(f, blk(l, "idx_w.weight"), E, Hi));
        }
    }
    return w;
}

}  // namespace kvrt::ced
