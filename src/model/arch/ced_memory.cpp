// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

#include "model/arch/ced_memory.hpp"

#include "util/kv_quant.hpp"

#include <algorithm>
#include <cstdio>

namespace kvrt::ced {

namespace {
// Bytes of one stored row of width d: elements (and scales) of type t, or elem_bytes each.
struct RowBytes {
    bool typed;
    DType t;
    uint32_t elem_bytes;
    double operator()(int32_t d) const { return typed ? double(kv_head_bytes(t, d)) : double(d) * elem_bytes; }
};

CedMemory memory_of(const CedConfig& c, RowBytes bank, RowBytes idx, RowBytes win) {
    CedMemory m;
    for (int32_t s = 0; s < c.n_sources(); s++) {
        CedMemory::Source src;
        src.layer = c.source_layers[s];
        src.ratio = c.source_ratios[s];
        src.main_bytes_per_token = bank(c.entry_dim) / src.ratio;
        src.indexer_bytes_per_token = idx(c.idx_dim) / src.ratio;
        m.main_bytes_per_token += src.main_bytes_per_token;
        m.indexer_bytes_per_token += src.indexer_bytes_per_token;
        m.sources.push_back(src);
    }
    m.global_bytes_per_token = m.main_bytes_per_token + m.indexer_bytes_per_token;
    m.window_bytes_per_sequence = uint64_t(c.window) * uint64_t(c.n_layers) * uint64_t(win(c.entry_dim));
    m.dense_layers = c.n_layers;
    m.dense_head_dim = 64;
    const int32_t nq = std::max(1, c.n_embd / 64);
    m.dense_kv_heads = std::max(1, nq / 4);
    // The dense reference's K and V rows in the window rows' type (heads of 64).
    m.dense_bytes_per_token = 2.0 * c.n_layers * m.dense_kv_heads * win(m.dense_head_dim);
    return m;
}
}  // namespace

CedMemory ced_memory(const CedConfig& c, uint32_t elem_bytes) {
    const RowBytes b{false, DType::F32, elem_bytes};
    return memory_of(c, b, b, b);
}

CedMemory ced_memory(const CedConfig& c, DType bank_dtype, DType window_dtype) {
    // 4-bit indexer keys carry e8m0 scales (the layout stores them as FP4_E8).
    const DType idx = bank_dtype == DType::FP4 ? DType::FP4_E8 : bank_dtype;
    return memory_of(c, RowBytes{true, bank_dtype, 0}, RowBytes{true, idx, 0}, RowBytes{true, window_dtype, 0});
}

std::string format_memory(const CedConfig& c, const CedMemory& m) {
    std::string out;
    char line[256];
    auto add = [&](const char* fmt, auto... args) {
        std::snprintf(line, sizeof line, fmt, args...);
        out += line;
    };
    add("CED KV bytes per token (%d layers, width %d, W = %d)\n", c.n_layers, c.n_embd, c.window);
    for (const CedMemory::Source& s : m.sources)
        add("  bank of layer %-3d r = %-2d  main %9.2f B/token   indexer %8.2f B/token\n", s.layer, s.ratio,
            s.main_bytes_per_token, s.indexer_bytes_per_token);
    add("  global KV (all banks)       %9.2f B/token   (main %.2f + indexer %.2f)\n", m.global_bytes_per_token,
        m.main_bytes_per_token, m.indexer_bytes_per_token);
    add("  windows: per-sequence constant %llu B (%d layers x %d rows x %d)\n",
        static_cast<unsigned long long>(m.window_bytes_per_sequence), c.n_layers, c.window, c.entry_dim);
    add("dense GQA of the same width and depth (%d layers, %d KV heads x %d)\n", m.dense_layers, m.dense_kv_heads,
        m.dense_head_dim);
    add("  full KV                     %9.2f B/token   (CED global KV is %.3fx of it)\n", m.dense_bytes_per_token,
        m.dense_bytes_per_token > 0 ? m.global_bytes_per_token / m.dense_bytes_per_token : 0.0);
    return out;
}

}  // namespace kvrt::ced
