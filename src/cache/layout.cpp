// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

#include "cache/layout.hpp"

#include "memory/arena.hpp"
#include "util/error.hpp"
#include "util/kv_quant.hpp"

#include <limits>

namespace kvrt::cache {

const char* layer_kind_name(LayerKind k) {
    switch (k) {
        case LayerKind::Full: return "full";
        case LayerKind::Window: return "window";
        case LayerKind::BankSource: return "bank";
        case LayerKind::BankReader: return "bank-reader";
        case LayerKind::IndexerKeys: return "indexer-keys";
    }
    return "?";
}

namespace {
constexpr int32_t kMaxLayers = 1 << 16;
constexpr int32_t kMaxBlockTokens = 1 << 16;
constexpr size_t kMaxBlockBytes = size_t(1) << 32;  // 4 GiB per block is already absurd

size_t checked_mul(size_t a, size_t b, const std::string& what) {
    if (a != 0 && b > std::numeric_limits<size_t>::max() / a) fail(KVRT_ERR_OVERFLOW, what + " overflows");
    return a * b;
}
size_t align_up(size_t x) { return (x + memory::kBlockAlign - 1) / memory::kBlockAlign * memory::kBlockAlign; }
}  // namespace

ResolvedLayout resolve_layout(const CacheConfig& cfg) {
    ResolvedLayout out;
    const int32_t bt = cfg.block_tokens;
    KVRT_CHECK(bt > 0 && bt <= kMaxBlockTokens, KVRT_ERR_INVALID_ARGUMENT,
               "block_tokens is " + std::to_string(bt) + "; it must be in [1, 65536]");
    KVRT_CHECK(!cfg.layers.empty(), KVRT_ERR_INVALID_ARGUMENT, "the layout has no layers");
    KVRT_CHECK(cfg.layers.size() <= size_t(kMaxLayers), KVRT_ERR_OVERFLOW,
               "the layout has " + std::to_string(cfg.layers.size()) + " layers; at most 65536");
    KVRT_CHECK(cfg.budget_bytes > 0, KVRT_ERR_INVALID_ARGUMENT, "budget_bytes is 0");
    out.block_tokens = bt;
    out.layers = cfg.layers;
    const int32_t n = static_cast<int32_t>(cfg.layers.size());
    out.geometry.resize(n);

    for (int32_t i = 0; i < n; i++) {
        const LayerSpec& s = cfg.layers[i];
        const std::string L = "layer " + std::to_string(i) + " (" + layer_kind_name(s.kind) + "): ";
        KVRT_CHECK(static_cast<int>(s.kind) < kNumLayerKinds,
                   KVRT_ERR_INVALID_ARGUMENT, "layer " + std::to_string(i) + ": unknown kind " +
                                                  std::to_string(static_cast<int>(s.kind)));
        LayerGeometry& g = out.geometry[i];
        g.kind = s.kind;
        g.row_layer = i;
        if (s.kind == LayerKind::BankReader || s.kind == LayerKind::IndexerKeys) {
            KVRT_CHECK(s.source >= 0 && s.source < n && cfg.layers[s.source].kind == LayerKind::BankSource,
                       KVRT_ERR_INVALID_ARGUMENT,
                       L + "source " + std::to_string(s.source) + " is not a bank source layer");
        }
        if (s.kind == LayerKind::BankReader) continue;  // filled below from its source
        KVRT_CHECK(s.n_kv_heads > 0, KVRT_ERR_INVALID_ARGUMENT, L + "n_kv_heads is " + std::to_string(s.n_kv_heads));
        KVRT_CHECK(s.head_dim > 0, KVRT_ERR_INVALID_ARGUMENT, L + "head_dim is " + std::to_string(s.head_dim));
        // 4-bit (FP4) rows: bank rows keep f16 scales, indexer keys e8m0 ones (FP4_E8; util/kv_quant.hpp).
        const bool fp4_kind = s.kind == LayerKind::BankSource || s.kind == LayerKind::IndexerKeys;
        const DType sdt = dtype_fp4(s.dtype) && fp4_kind
                              ? (s.kind == LayerKind::IndexerKeys ? DType::FP4_E8 : DType::FP4)
                              : s.dtype;
        const DType vdt = s.v_dtype ? *s.v_dtype : sdt;
        for (DType t : {sdt, vdt}) {
            KVRT_CHECK(static_cast<int>(t) <= static_cast<int>(DType::FP8_E4M3) || dtype_fp4(t), KVRT_ERR_UNSUPPORTED,
                       L + "element type " + std::to_string(static_cast<int>(t)) +
                           " is not supported (f32, f16, bf16, int8, fp8, fp4)");
            KVRT_CHECK(!dtype_fp4(t) || fp4_kind, KVRT_ERR_UNSUPPORTED,
                       L + "element type fp4 is only held by bank source and indexer key layers (CED banks); "
                           "full and window layers take f32, f16, bf16, int8 or fp8");
            KVRT_CHECK(!dtype_quantized(t) || dtype_fp4(t) || s.kind == LayerKind::Full || s.kind == LayerKind::Window,
                       KVRT_ERR_UNSUPPORTED,
                       L + "element type " + dtype_name(t) + " is only held by full and window layers");
            KVRT_CHECK(kv_head_dim_ok(t, s.head_dim), KVRT_ERR_INVALID_ARGUMENT,
                       L + "head_dim " + std::to_string(s.head_dim) + " is not a multiple of " + dtype_name(t) +
                           "'s scale group of " + std::to_string(kv_scale_group(t, s.head_dim)) + " elements");
        }
        KVRT_CHECK(!s.v_dtype || (s.kind != LayerKind::BankSource && s.kind != LayerKind::IndexerKeys && !s.shared_kv) ||
                       *s.v_dtype == s.dtype,
                   KVRT_ERR_INVALID_ARGUMENT, L + "a V type differing from the K type needs separate K and V rows");
        if (s.kind == LayerKind::Window)
            KVRT_CHECK(s.window > 0, KVRT_ERR_INVALID_ARGUMENT, L + "window is " + std::to_string(s.window));
        int32_t ratio = 1;
        if (s.kind == LayerKind::BankSource) ratio = s.ratio;
        if (s.kind == LayerKind::IndexerKeys) ratio = cfg.layers[s.source].ratio;
        if (s.kind == LayerKind::BankSource) {
            KVRT_CHECK(ratio > 0, KVRT_ERR_INVALID_ARGUMENT, L + "ratio is " + std::to_string(ratio));
            KVRT_CHECK(bt % ratio == 0, KVRT_ERR_INVALID_ARGUMENT,
                       L + "block_tokens " + std::to_string(bt) + " is not a multiple of ratio " +
                           std::to_string(ratio));
        }
        g.ratio = ratio;
        g.rows_per_block = bt / ratio;
        g.n_kv_heads = s.n_kv_heads;
        g.head_dim = s.head_dim;
        g.dtype = sdt;
        g.window = s.kind == LayerKind::Window ? s.window : 0;
        g.separate_v = (s.kind == LayerKind::Full || s.kind == LayerKind::Window) && !s.shared_kv;
        checked_mul(checked_mul(size_t(s.n_kv_heads), size_t(s.head_dim), L + "row width"), 4, L + "row bytes");
        g.row_bytes = size_t(s.n_kv_heads) * kv_head_bytes(sdt, s.head_dim);
        g.v_dtype = g.separate_v ? vdt : sdt;
        g.v_row_bytes = size_t(s.n_kv_heads) * kv_head_bytes(g.v_dtype, s.head_dim);
    }
    // Bank readers share their source's geometry.
    for (int32_t i = 0; i < n; i++) {
        if (cfg.layers[i].kind != LayerKind::BankReader) continue;
        int32_t src = cfg.layers[i].source;
        out.geometry[i] = out.geometry[src];
        out.geometry[i].kind = LayerKind::BankReader;
        out.geometry[i].row_layer = src;
    }
    // Managers: one per (kind, W, r), in order of first appearance.
    for (int32_t i = 0; i < n; i++) {
        LayerGeometry& g = out.geometry[i];
        if (g.kind == LayerKind::BankReader) continue;
        int32_t m = -1;
        for (size_t j = 0; j < out.managers.size(); j++) {
            const ManagerSpec& ms = out.managers[j];
            if (ms.kind == g.kind && ms.window == g.window && ms.ratio == g.ratio) m = static_cast<int32_t>(j);
        }
        if (m < 0) {
            ManagerSpec ms;
            ms.kind = g.kind;
            ms.window = g.window;
            ms.ratio = g.ratio;
            out.managers.push_back(ms);
            m = static_cast<int32_t>(out.managers.size() - 1);
        }
        ManagerSpec& ms = out.managers[m];
        g.manager = m;
        const std::string L = "layer " + std::to_string(i) + ": ";
        size_t region = checked_mul(g.row_bytes, size_t(g.rows_per_block), L + "block region");
        size_t aligned = align_up(region);
        KVRT_CHECK(aligned >= region, KVRT_ERR_OVERFLOW, L + "block region overflows");
        g.k_offset = ms.block_bytes;
        ms.block_bytes += aligned;
        ms.padding_bytes += aligned - region;
        if (g.separate_v) {
            const size_t vregion = checked_mul(g.v_row_bytes, size_t(g.rows_per_block), L + "block region");
            const size_t valigned = align_up(vregion);
            g.v_offset = ms.block_bytes;
            ms.block_bytes += valigned;
            ms.padding_bytes += valigned - vregion;
        } else {
            g.v_offset = g.k_offset;
        }
        KVRT_CHECK(ms.block_bytes <= kMaxBlockBytes, KVRT_ERR_OVERFLOW,
                   "a block of the " + std::string(layer_kind_name(ms.kind)) + " manager exceeds 4 GiB");
        ms.layers.push_back(i);
    }
    for (int32_t i = 0; i < n; i++)
        if (out.geometry[i].kind == LayerKind::BankReader) out.geometry[i].manager = out.geometry[out.geometry[i].row_layer].manager;
    return out;
}

double layer_bytes_per_token(const LayerGeometry& g) {
    if (g.kind == LayerKind::BankReader) return 0.0;
    double per_row = static_cast<double>(g.row_bytes) + (g.separate_v ? static_cast<double>(g.v_row_bytes) : 0.0);
    return per_row / static_cast<double>(g.ratio);
}

std::string layout_dtype_signature(const ResolvedLayout& l) {
    std::string s;
    for (const LayerGeometry& g : l.geometry) {
        s += dtype_name(g.dtype);
        s += '/';
        s += dtype_name(g.v_dtype);
        s += ';';
    }
    return s;
}

}  // namespace kvrt::cache
