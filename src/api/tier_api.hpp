// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Building lower tiers of the prefix cache from kvrt_tier_config (kvrt/cache.h),
// for kvrt_cache_add_tier and for caches a context creates (kvrt_context_config.tiers).
#pragma once

#include "cache/block_tier.hpp"
#include "cache/cache.hpp"
#include "kvrt/cache.h"

#include <memory>
#include <vector>

namespace kvrt::api {

// Validates cfg (name names it in messages) and makes the tier. Throws kvrt::Error:
// INVALID_ARGUMENT, IO (directory), UNSUPPORTED (Redis without hiredis).
std::shared_ptr<cache::BlockTier> make_tier(const kvrt_tier_config* cfg, const char* name);

// Makes every tier of cfgs[0, n) first (all or nothing), then adds them to c.
void add_tiers(cache::Cache& c, const kvrt_tier_config* cfgs, size_t n, const char* name);

}  // namespace kvrt::api
