// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// The small cache the state-file harnesses (fuzz_cache_state, fuzz_seq_file) load into:
// two full layers and one window layer, 4-token blocks, f16 rows, and the model
// fingerprint their seed files carry.
#pragma once

#include "cache/cache.hpp"

#include <cstdint>
#include <vector>

namespace kvrt::fuzz {

inline constexpr uint64_t kFpLo = 0x0123456789abcdefull, kFpHi = 0xfedcba9876543210ull;

inline cache::CacheConfig small_cache_config() {
    cache::CacheConfig c;
    c.block_tokens = 4;
    c.budget_bytes = 64 * 1024;
    for (int i = 0; i < 3; i++) {
        cache::LayerSpec s;
        s.kind = i == 2 ? cache::LayerKind::Window : cache::LayerKind::Full;
        s.window = i == 2 ? 6 : 0;
        s.n_kv_heads = 2;
        s.head_dim = 8;
        s.dtype = DType::F16;
        c.layers.push_back(s);
    }
    return c;
}

// Writes positions [from, to) of sequence s in every layer of small_cache_config() with a
// pattern of the position and layer, and marks them computed.
inline void fill(cache::Cache& c, cache::SeqId s, int64_t from, int64_t to) {
    std::vector<uint8_t> row(2 * 8 * 2);
    for (int32_t l = 0; l < 3; l++)
        for (int64_t p = from; p < to; p++) {
            for (size_t i = 0; i < row.size(); i++) row[i] = uint8_t(p * 31 + l * 7 + i);
            c.write_rows(s, l, p, 1, row.data(), row.data());
        }
    c.mark_computed(s, to);
}

}  // namespace kvrt::fuzz
