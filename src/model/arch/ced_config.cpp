// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

#include "model/arch/ced_config.hpp"

#include "model/gguf/gguf.hpp"
#include "model/gguf/gguf_writer.hpp"
#include "util/error.hpp"

#include <cmath>
#include <string>

namespace kvrt::ced {
namespace {

[[noreturn]] void bad(const char* k, const std::string& why) {
    fail(KVRT_ERR_BAD_FORMAT, std::string("ced model: metadata key '") + k + "' " + why);
}

void need_range(const char* k, int64_t v, int64_t lo, int64_t hi) {
    if (v < lo || v > hi)
        bad(k, "is " + std::to_string(v) + "; must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
}

void need_mult32(const char* k, int32_t v) {
    if (v % 32 != 0) bad(k, "is " + std::to_string(v) + "; must be a multiple of 32 (the weight block size)");
}

std::string list(const std::vector<int32_t>& v) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); i++) s += (i ? ", " : "") + std::to_string(v[i]);
    return s + "]";
}

}  // namespace

void CedConfig::validate() {
    constexpr int32_t kMaxDim = 1 << 20;
    need_range(key::kBlockCount, n_layers, 2, 1024);
    if (n_layers % 2 != 0) bad(key::kBlockCount, "is " + std::to_string(n_layers) + "; must be even (encoder L/2 + decoder L/2)");
    need_range(key::kEmbd, n_embd, 32, kMaxDim);
    need_mult32(key::kEmbd, n_embd);
    need_range(key::kFf, n_ff, 32, kMaxDim);
    need_mult32(key::kFf, n_ff);
    need_range(key::kVocab, n_vocab, 1, 1 << 24);
    need_range(key::kCtx, n_ctx_train, 0, INT32_MAX);
    need_range(key::kHeads, n_heads, 1, 4096);
    need_range(key::kEntry, entry_dim, 32, 65536);
    need_mult32(key::kEntry, entry_dim);
    if (static_cast<int64_t>(n_heads) * entry_dim > kMaxDim)
        bad(key::kHeads, "times " + std::string(key::kEntry) + " exceeds " + std::to_string(kMaxDim));
    need_range(key::kWindow, window, 1, 1 << 20);
    need_range(key::kIdxHeads, idx_heads, 1, 4096);
    need_range(key::kIdxDim, idx_dim, 2, 65536);
    need_range(key::kRopeDims, rope_dims, 2, entry_dim);
    if (rope_dims % 2 != 0) bad(key::kRopeDims, "is " + std::to_string(rope_dims) + "; must be even");
    if (rope_dims > idx_dim)
        bad(key::kRopeDims, "is " + std::to_string(rope_dims) + "; must not exceed " + key::kIdxDim + " (" +
                                std::to_string(idx_dim) + ")");
    if (!(std::isfinite(rope_theta) && rope_theta > 0)) bad(key::kRopeBase, "must be a positive finite number");
    if (!(std::isfinite(rms_eps) && rms_eps > 0 && rms_eps < 1)) bad(key::kEps, "must be in (0, 1)");
    need_range(key::kTopK, top_k, 1, 1 << 20);
    need_range(key::kCandBlock, cand_block, 1, 1 << 16);
    need_range(key::kCandBlocks, cand_blocks, 1, 1 << 20);

    n_encoder = n_layers / 2;
    if (source_layers.empty()) bad(key::kSrcLayers, "is empty; the first decoder layer must be a source");
    if (source_ratios.size() != source_layers.size())
        bad(key::kSrcRatios, "has " + std::to_string(source_ratios.size()) + " entries; " + key::kSrcLayers + " has " +
                                 std::to_string(source_layers.size()));
    for (size_t i = 0; i < source_layers.size(); i++) {
        need_range(key::kSrcLayers, source_layers[i], 0, n_encoder);
        if (i > 0 && source_layers[i] <= source_layers[i - 1])
            bad(key::kSrcLayers, "is " + list(source_layers) + "; must be strictly ascending");
        need_range(key::kSrcRatios, source_ratios[i], 1, 64);
    }
    if (source_layers.back() != n_encoder)
        bad(key::kSrcLayers, "is " + list(source_layers) + "; its last entry must be the first decoder layer " +
                                 std::to_string(n_encoder));
    if (source_ratios.back() != 1)
        bad(key::kSrcRatios, "is " + list(source_ratios) + "; the decoder source (layer " + std::to_string(n_encoder) +
                                 ") must have ratio 1");
    if (index_layers.empty()) bad(key::kIdxLayers, "is empty; every source layer must be an index source");
    for (size_t i = 0; i < index_layers.size(); i++) {
        need_range(key::kIdxLayers, index_layers[i], source_layers[0], n_layers - 1);
        if (i > 0 && index_layers[i] <= index_layers[i - 1])
            bad(key::kIdxLayers, "is " + list(index_layers) + "; must be strictly ascending");
    }
    is_source.assign(n_layers, 0);
    is_index.assign(n_layers, 0);
    bank_of.assign(n_layers, -1);
    for (int32_t l : index_layers) is_index[l] = 1;
    for (size_t i = 0; i < source_layers.size(); i++) {
        is_source[source_layers[i]] = 1;
        if (!is_index[source_layers[i]])
            bad(key::kIdxLayers, "is " + list(index_layers) + "; it must contain every source layer (missing " +
                                     std::to_string(source_layers[i]) + ")");
    }
    int32_t cur = -1;
    for (int32_t l = 0; l < n_layers; l++) {
        if (is_source[l]) cur++;
        bank_of[l] = cur;
    }
}

uint64_t CedConfig::n_params() const {
    const uint64_t E = n_embd, F = n_ff, V = n_vocab, H = n_heads, D = entry_dim, Hi = idx_heads, Di = idx_dim;
    uint64_t n = 2 * V * E + E;
    for (int32_t l = 0; l < n_layers; l++) {
        n += E + E * H * D + E * D + D + H * D * E + H + E + 3 * E * F;
        if (is_source.size() == static_cast<size_t>(n_layers) && is_source[l]) {
            n += E * D + D + D * Di + Di;
            if (ratio_of_layer(l) > 1) n += E * D;
        }
        if (is_index.size() == static_cast<size_t>(n_layers) && is_index[l]) n += E * Hi * Di + E * Hi;
    }
    return n;
}

CedConfig config_from_gguf(const GgufFile& f) {
    std::string_view arch = f.architecture();
    KVRT_CHECK(arch == kArch, KVRT_ERR_UNSUPPORTED,
               "ced model: general.architecture is '" + std::string(arch) + "', expected 'ced'");
    CedConfig c;
    // require_* throw BAD_FORMAT naming the key when absent or of the wrong type.
    c.n_layers = f.require_i32(key::kBlockCount);
    c.n_embd = f.require_i32(key::kEmbd);
    c.n_ff = f.require_i32(key::kFf);
    c.n_vocab = f.require_i32(key::kVocab);
    c.n_ctx_train = f.get_i32(key::kCtx, 0);
    c.n_heads = f.require_i32(key::kHeads);
    c.entry_dim = f.require_i32(key::kEntry);
    c.window = f.require_i32(key::kWindow);
    c.rms_eps = f.get_f32(key::kEps, 1e-6f);
    c.rope_dims = f.require_i32(key::kRopeDims);
    c.rope_theta = f.get_f32(key::kRopeBase, 10000.0f);
    c.source_layers = f.require_i32_array(key::kSrcLayers);
    c.source_ratios = f.require_i32_array(key::kSrcRatios);
    c.index_layers = f.require_i32_array(key::kIdxLayers);
    c.idx_heads = f.require_i32(key::kIdxHeads);
    c.idx_dim = f.require_i32(key::kIdxDim);
    c.top_k = f.require_i32(key::kTopK);
    c.cand_block = f.require_i32(key::kCandBlock);
    c.cand_blocks = f.require_i32(key::kCandBlocks);
    c.validate();
    return c;
}

void config_to_gguf(const CedConfig& c, GgufWriter& w) {
    w.set_string("general.architecture", kArch);
    w.set_u32(key::kBlockCount, static_cast<uint32_t>(c.n_layers));
    w.set_u32(key::kEmbd, static_cast<uint32_t>(c.n_embd));
    w.set_u32(key::kFf, static_cast<uint32_t>(c.n_ff));
    w.set_u32(key::kVocab, static_cast<uint32_t>(c.n_vocab));
    w.set_u32(key::kCtx, static_cast<uint32_t>(c.n_ctx_train));
    w.set_u32(key::kHeads, static_cast<uint32_t>(c.n_heads));
    w.set_u32(key::kEntry, static_cast<uint32_t>(c.entry_dim));
    w.set_u32(key::kWindow, static_cast<uint32_t>(c.window));
    w.set_f32(key::kEps, c.rms_eps);
    w.set_u32(key::kRopeDims, static_cast<uint32_t>(c.rope_dims));
    w.set_f32(key::kRopeBase, c.rope_theta);
    w.set_i32_array(key::kSrcLayers, c.source_layers);
    w.set_i32_array(key::kSrcRatios, c.source_ratios);
    w.set_i32_array(key::kIdxLayers, c.index_layers);
    w.set_u32(key::kIdxHeads, static_cast<uint32_t>(c.idx_heads));
    w.set_u32(key::kIdxDim, static_cast<uint32_t>(c.idx_dim));
    w.set_u32(key::kTopK, static_cast<uint32_t>(c.top_k));
    w.set_u32(key::kCandBlock, static_cast<uint32_t>(c.cand_block));
    w.set_u32(key::kCandBlocks, static_cast<uint32_t>(c.cand_blocks));
}

CedConfig preset(const std::string& name) {
    CedConfig c;
    if (name == "tiny") {
        // 3 encoder layers (0: window only, 1: r = 2 source, 2: reuses it) and
        // 3 decoder layers (3: r = 1 source + candidates, 4: reuses, 5: re-ranks).
        c.n_layers = 6;
        c.n_embd = 64;
        c.n_ff = 128;
        c.n_vocab = 256;
        c.n_ctx_train = 4096;
        c.n_heads = 2;
        c.entry_dim = 32;
        c.rope_dims = 16;
        c.window = 8;
        c.source_layers = {1, 3};
        c.source_ratios = {2, 1};
        c.index_layers = {1, 3, 5};
        c.idx_heads = 2;
        c.idx_dim = 16;
        c.top_k = 6;
        c.cand_block = 2;
        c.cand_blocks = 5;
    } else if (name == "base") {
        // ~100M parameters: 6 + 6 layers, width 768, two r = 2 encoder sources.
        c.n_layers = 12;
        c.n_embd = 768;
        c.n_ff = 2048;
        c.n_vocab = 16384;
        c.n_ctx_train = 1 << 20;
        c.n_heads = 4;
        c.entry_dim = 256;
        c.rope_dims = 64;
        c.window = 128;
        c.source_layers = {2, 4, 6};
        c.source_ratios = {2, 2, 1};
        c.index_layers = {2, 4, 6, 8, 10};
        c.idx_heads = 4;
        c.idx_dim = 64;
        c.top_k = 512;
        c.cand_block = 8;
        c.cand_blocks = 256;
    } else {
        fail(KVRT_ERR_INVALID_ARGUMENT, "ced preset '" + name + "' is unknown; use 'tiny' or 'base'");
    }
    c.validate();
    return c;
}

}  // namespace kvrt::ced
