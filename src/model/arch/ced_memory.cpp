// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

#include "model/arch/ced_memory.hpp"

#include <algorithm>
#include <cstdio>

namespace kvrt::ced {

CedMemory ced_memory(const CedConfig& c, uint32_t elem_bytes) {
    CedMemory m;
    for (int32_t s = 0; s < c.n_sources(); s++) {
        CedMemory::Source src;
        src.layer = c.source_layers[s];
        src.ratio = c.source_ratios[s];
        src.main_bytes_per_token = double(c.entry_dim) * elem_bytes / src.ratio;
        src.indexer_bytes_per_token = double(c.idx_dim) * elem_bytes / src.ratio;
        m.main_bytes_per_token += src.main_bytes_per_token;
        m.indexer_bytes_per_token += src.indexer_bytes_per_token;
        m.sources.push_back(src);
    }
    m.global_bytes_per_token = m.main_bytes_per_token + m.indexer_bytes_per_token;
    m.window_bytes_per_sequence = uint64_t(c.window) * uint64_t(c.n_layers) * c.entry_dim * elem_bytes;
    m.dense_layers = c.n_layers;
    m.dense_head_dim = 64;
    const int32_t nq = std::max(1, c.n_embd / 64);
    m.dense_kv_heads = std::max(1, nq / 4);
    m.dense_bytes_per_token = 2.0 * c.n_layers * m.dense_kv_heads * m.dense_head_dim * elem_bytes;
    return m;
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
