// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// kvrt::cache::RedisTier — the shared prefix-cache tier on a Redis server
// (hiredis), for several kvrt processes on several hosts sharing prefix blocks.
//
// Keys:   key_prefix + hex(layout) + ":" + hex(block)   (32 lowercase hex digits each,
//         hi word first), e.g. "kvrt:0123...ef:89ab...01". Both hashes are stable
//         across processes, machines and runs; the block hash carries the salt, so
//         two tenants never share a key.
// Values: the framed payload exactly as given to put() (tier_envelope: magic,
//         version, full key, length, checksum); get() returns the raw bytes and the
//         cache verifies them.
//
// Faults never throw or abort: connect/command timeouts (timeout_ms each),
// connection loss, error replies (OOM under maxmemory + noeviction, READONLY,
// WRONGTYPE, ...) are counted in TierStats (errors / timeouts / put_failures)
// with the cause in last_error(), and the call is a miss or a dropped put. After a
// failure the tier reconnects lazily; after repeated failures it skips the server
// for a back-off period (doubling, capped) instead of paying a timeout per call.
//
// Budget: budget_bytes > 0 is a client-side cap on the bytes THIS process has
// stored (the sum of the sizes of its successful puts minus its removes): a put
// that would exceed it is dropped and counted in put_failures. It is not a cap on
// the server, which may be shared by many processes: bound the server with its own
// maxmemory and `maxmemory-policy allkeys-lru` (entries the server evicts read as
// misses). Every key is written with a TTL (kTtlSeconds) so an unused shared
// server does not keep blocks of models nobody runs forever. budget_bytes = 0:
// no client-side cap.
#pragma once

#include "cache/block_tier.hpp"

#include <cstdint>
#include <memory>
#include <string>

namespace kvrt::cache {

struct RedisTierOptions {
    std::string url;                 // "redis://host:port[/db]" (host may be an IPv4 address or a name; port defaults to 6379)
    uint64_t budget_bytes = 0;       // client-side cap on this process's stored bytes; 0 = none (see above)
    uint32_t timeout_ms = 200;       // connect and per-command timeout
    std::string key_prefix = "kvrt:";
};

// A Redis-backed BlockTier. Never throws. A bad URL or a server that is down
// gives a tier whose calls miss and count errors (last_error() says why).
// Without hiredis (KVRT_WITH_REDIS=OFF) the tier is a stub whose every call
// misses and counts an error "kvrt was built without Redis support".
std::unique_ptr<BlockTier> make_redis_tier(const RedisTierOptions& options);

// Parses "redis://host:port[/db]" (also "redis://host", "host:port"). false and
// *error set on a malformed URL. Exposed for the config validation and tests.
bool parse_redis_url(const std::string& url, std::string* host, int* port, int* db, std::string* error);

// The Redis key of a tier key under a prefix (exposed for tests and tools).
std::string redis_tier_key(const std::string& key_prefix, const TierKey& key);

// Redis-specific counters beside TierStats (zeros for a tier of another kind).
// Every skipped call is also counted in TierStats::errors, every error reply in
// TierStats::errors, every over-budget put in TierStats::put_failures.
struct RedisTierCounters {
    uint64_t skipped = 0;        // calls answered at once (miss / dropped put) during a back-off window
    uint64_t connects = 0;       // connections opened
    uint64_t error_replies = 0;  // error replies from the server (OOM under noeviction, READONLY, ...)
    uint64_t over_budget = 0;    // puts dropped because one payload exceeds the whole budget
};
RedisTierCounters redis_tier_counters(const BlockTier& tier) noexcept;

// Ends a back-off window now (the next call tries the server). For tests and an
// operator's "retry now"; a tier of another kind is left alone.
void redis_tier_reset_backoff(BlockTier& tier) noexcept;

// Whether this build has the Redis tier (hiredis linked; KVRT_WITH_REDIS=ON).
bool redis_tier_available() noexcept;

// Seconds every key lives after its last put (a shared server forgets blocks nobody wrote again).
constexpr int kRedisTierTtlSeconds = 7 * 24 * 3600;

}  // namespace kvrt::cache
