// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Cache::Sequence: the state of one sequence (or pin) inside a Cache.
// Private to src/cache (cache.cpp, cache_state.cpp); guarded by the Cache's mutex.
#pragma once

#include "cache/cache.hpp"

#include <vector>

namespace kvrt::cache {

struct Cache::Sequence {
    SeqId id = 0;
    SeqKeys keys;
    Hash128 extra;
    bool pin = false;
    std::vector<int32_t> tokens;  // length = tokens.size()
    int64_t computed = 0;
    std::vector<Hash128> hashes;                      // chained hashes of blocks [0, hashes.size()) (full, computed)
    std::vector<std::vector<BlockId>> tables;         // per manager: logical block -> block id (0 = null)
    std::vector<std::vector<const uint8_t*>> ptrs;    // per manager: same table as memory addresses
    // Per manager (empty = all 0): table entries [0, dropped[m]) are null (window-dropped), so that
    // append and seq_info never walk the dropped prefix again (O(1) amortised per step at any
    // length). A lower bound: entries at or above it may be null too (a loaded sequence's gaps).
    std::vector<int64_t> dropped;
    int64_t length() const { return static_cast<int64_t>(tokens.size()); }
};

}  // namespace kvrt::cache
