// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// kvrt_tier_config_init, kvrt_cache_add_tier, kvrt_cache_persist,
// kvrt_cache_n_tiers, kvrt_tier_stats_init, kvrt_cache_tier_stats_get.
#include "api/tier_api.hpp"

#include "api/boundary.hpp"
#include "api/cache_handles.hpp"
#include "api/struct_versions.h"
#include "cache/disk_tier.hpp"
#ifdef KVRT_HAVE_HIREDIS
#include "cache/redis_tier.hpp"
#endif

#include <cstring>
#include <string>

using kvrt::Error;
using kvrt::api::guard;
using kvrt::api::require_non_null;

namespace kvrt::api {

std::shared_ptr<cache::BlockTier> make_tier(const kvrt_tier_config* user, const char* name) {
    require_non_null(user, name);
    const std::string n = name;
    if (user->struct_size < KVRT_MIN_SIZE_kvrt_tier_config || user->struct_size > sizeof(kvrt_tier_config))
        throw Error(KVRT_ERR_INVALID_ARGUMENT,
                    n + "->struct_size is " + std::to_string(user->struct_size) + "; initialise it with kvrt_tier_config_init");
    kvrt_tier_config c;
    kvrt_tier_config_init(&c, sizeof c);
    std::memcpy(static_cast<void*>(&c), user, user->struct_size);
    if (c.location == nullptr || c.location[0] == '\0')
        throw Error(KVRT_ERR_INVALID_ARGUMENT, n + "->location is NULL or empty (a directory or a redis:// URL)");
    if (c.kind == KVRT_TIER_DISK) {
        cache::DiskTierOptions o;
        o.dir = c.location;
        o.budget_bytes = c.budget_bytes;
        return cache::make_disk_tier(o);
    }
    if (c.kind == KVRT_TIER_REDIS) {
#ifdef KVRT_HAVE_HIREDIS
        std::string host, err;
        int port = 0, db = 0;
        if (!cache::parse_redis_url(c.location, &host, &port, &db, &err))
            throw Error(KVRT_ERR_INVALID_ARGUMENT, n + "->location: " + err);
        cache::RedisTierOptions o;
        o.url = c.location;
        o.budget_bytes = c.budget_bytes;
        o.timeout_ms = c.timeout_ms == 0 ? 200 : c.timeout_ms;
        if (c.key_prefix) o.key_prefix = c.key_prefix;
        return cache::make_redis_tier(o);
#else
        throw Error(KVRT_ERR_UNSUPPORTED, n + ": this kvrt was built without Redis support (hiredis)");
#endif
    }
    throw Error(KVRT_ERR_INVALID_ARGUMENT,
                n + "->kind " + std::to_string(c.kind) + " is not KVRT_TIER_DISK (1) or KVRT_TIER_REDIS (2)");
}

void add_tiers(cache::Cache& c, const kvrt_tier_config* cfgs, size_t n, const char* name) {
    if (n == 0) return;
    require_non_null(cfgs, name);
    std::vector<std::shared_ptr<cache::BlockTier>> made;
    for (size_t i = 0; i < n; i++) {
        // An array of the caller's struct: entries cfgs[0].struct_size bytes apart (all must agree).
        const auto* e = reinterpret_cast<const kvrt_tier_config*>(reinterpret_cast<const char*>(cfgs) +
                                                                  i * cfgs[0].struct_size);
        if (i > 0 && e->struct_size != cfgs[0].struct_size)
            throw Error(KVRT_ERR_INVALID_ARGUMENT, std::string(name) + "[" + std::to_string(i) +
                                                       "].struct_size differs from the first entry's");
        made.push_back(make_tier(e, (std::string(name) + "[" + std::to_string(i) + "]").c_str()));
    }
    for (auto& t : made) c.add_tier(std::move(t));
}

}  // namespace kvrt::api

extern "C" {

KVRT_API kvrt_status kvrt_tier_config_init(kvrt_tier_config* cfg, size_t struct_size) {
    return guard("kvrt_tier_config_init", [&] {
        require_non_null(cfg, "cfg");
        if (struct_size < KVRT_MIN_SIZE_kvrt_tier_config || struct_size > sizeof(kvrt_tier_config))
            throw Error(KVRT_ERR_INVALID_ARGUMENT,
                        "struct_size " + std::to_string(struct_size) + " is not a known size of kvrt_tier_config");
        std::memset(static_cast<void*>(cfg), 0, struct_size);
        cfg->struct_size = struct_size;
        cfg->kind = KVRT_TIER_DISK;
        cfg->timeout_ms = 200;
    });
}

KVRT_API kvrt_status kvrt_cache_add_tier(kvrt_cache* cache, const kvrt_tier_config* cfg) {
    return guard("kvrt_cache_add_tier", [&] {
        auto c = kvrt::api::cache_from_handle(cache);
        c->add_tier(kvrt::api::make_tier(cfg, "cfg"));
    });
}

KVRT_API kvrt_status kvrt_cache_persist(uint64_t* out_blocks, kvrt_cache* cache) {
    if (out_blocks) *out_blocks = 0;
    return guard("kvrt_cache_persist", [&] {
        const uint64_t n = kvrt::api::cache_from_handle(cache)->persist();
        if (out_blocks) *out_blocks = n;
    });
}

KVRT_API kvrt_status kvrt_cache_n_tiers(size_t* out, const kvrt_cache* cache) {
    return guard("kvrt_cache_n_tiers", [&] {
        auto c = kvrt::api::cache_from_handle(cache);
        require_non_null(out, "out");
        *out = c->tier_reports().size();
    });
}

KVRT_API kvrt_status kvrt_tier_stats_init(kvrt_tier_stats* stats, size_t struct_size) {
    return guard("kvrt_tier_stats_init", [&] {
        require_non_null(stats, "stats");
        if (struct_size < KVRT_MIN_SIZE_kvrt_tier_stats || struct_size > sizeof(kvrt_tier_stats))
            throw Error(KVRT_ERR_INVALID_ARGUMENT,
                        "struct_size " + std::to_string(struct_size) + " is not a known size of kvrt_tier_stats");
        std::memset(static_cast<void*>(stats), 0, struct_size);
        stats->struct_size = struct_size;
    });
}

KVRT_API kvrt_status kvrt_cache_tier_stats_get(kvrt_tier_stats* out, const kvrt_cache* cache, size_t index) {
    return guard("kvrt_cache_tier_stats_get", [&] {
        auto c = kvrt::api::cache_from_handle(cache);
        require_non_null(out, "out");
        const size_t n = out->struct_size;
        if (n < KVRT_MIN_SIZE_kvrt_tier_stats || n > sizeof(kvrt_tier_stats))
            throw Error(KVRT_ERR_INVALID_ARGUMENT, "out->struct_size is " + std::to_string(n) +
                                                       "; initialise it with kvrt_tier_stats_init");
        const auto reports = c->tier_reports();
        if (index >= reports.size())
            throw Error(KVRT_ERR_OUT_OF_RANGE, "tier " + std::to_string(index) + " does not exist; the cache has " +
                                                   std::to_string(reports.size()));
        const kvrt::cache::TierReport& r = reports[index];
        kvrt_tier_stats v;
        std::memset(&v, 0, sizeof v);
        v.kind = r.kind == "disk" ? KVRT_TIER_DISK : KVRT_TIER_REDIS;
        v.puts = r.puts;
        v.put_bytes = r.put_bytes;
        v.put_failures = r.put_failures;
        v.gets = r.gets;
        v.hits = r.hits;
        v.get_bytes = r.get_bytes;
        v.misses = r.misses;
        v.corrupt = r.corrupt;
        v.errors = r.errors;
        v.timeouts = r.timeouts;
        v.evictions = r.evictions;
        v.bytes_stored = r.bytes_stored;
        v.loaded_blocks = r.loaded_blocks;
        std::memcpy(reinterpret_cast<char*>(out) + sizeof(size_t), reinterpret_cast<const char*>(&v) + sizeof(size_t),
                    n - sizeof(size_t));
    });
}

}  // extern "C"
