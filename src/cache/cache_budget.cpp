// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Cache memory control: a live cache's budget and releasing cached blocks on demand
// (kvrt_cache_set_budget, kvrt_cache_trim).
#include "cache/cache.hpp"

#include "util/log.hpp"

#include <string>

namespace kvrt::cache {

void Cache::set_budget(uint64_t budget_bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    const uint64_t before = pool_.budget(), ev = pool_.evictions();
    pool_.set_budget(budget_bytes);
    kvrt::log::at(kvrt::log::Info, [&] {
        return "cache: budget " + std::to_string(before) + " -> " + std::to_string(budget_bytes) + " bytes (" +
               std::to_string(pool_.evictions() - ev) + " cached blocks evicted)";
    });
}

uint64_t Cache::trim(uint64_t keep_bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    const uint64_t freed = pool_.trim_cached(keep_bytes);
    kvrt::log::at(kvrt::log::Info, [&] {
        return "cache: trimmed " + std::to_string(freed) + " bytes of cached blocks (" +
               std::to_string(pool_.cached_bytes()) + " cached bytes left)";
    });
    return freed;
}

}  // namespace kvrt::cache
