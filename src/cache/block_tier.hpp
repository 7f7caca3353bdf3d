// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// kvrt::cache::BlockTier — a lower tier of the prefix cache (disk directory,
// Redis), below the RAM block pool.
//
// The RAM cache writes a full, computed, indexed block set there (on eviction
// and on a "persist now" call) and, on a RAM miss, looks the next block up
// there and loads it back into arena blocks. A tier stores opaque payloads
// under a TierKey; the payload is framed by tier_envelope (magic, format
// version, the full key, length, XXH3-128 checksum), so a backend returns
// bytes and the envelope decides whether they are the block asked for.
//
// Contract for every backend:
//   - never throws and never aborts: every fault (I/O error, timeout,
//     connection lost, out of memory, corrupt value) is a miss or a dropped
//     put, counted in TierStats, with the cause readable via last_error();
//   - thread-safe: the cache may call from any thread (it does not hold its
//     own mutex across tier I/O);
//   - stable keys: a key depends only on block content identity (chained
//     block hash: parent chain, tokens, model fingerprint, salt, adapter)
//     and the layout signature (dtype, block tokens, per-layer geometry),
//     never on process, machine or run.
#pragma once

#include "cache/block_hash.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kvrt::cache {

struct TierKey {
    Hash128 block;   // the chained block hash of the prefix index
    Hash128 layout;  // hash of the layout signature: dtype, block_tokens, every layer's kind/window/ratio/heads/dim
    bool operator==(const TierKey& o) const noexcept { return block == o.block && layout == o.layout; }
};

struct TierStats {
    uint64_t puts = 0;         // payloads stored
    uint64_t put_bytes = 0;
    uint64_t put_failures = 0; // puts dropped by a fault (counted, never reported to the caller)
    uint64_t gets = 0;         // lookups
    uint64_t hits = 0;         // lookups that returned a verified payload
    uint64_t get_bytes = 0;
    uint64_t misses = 0;       // not present
    uint64_t corrupt = 0;      // present but failed the envelope check (removed or ignored)
    uint64_t errors = 0;       // I/O errors, connection failures
    uint64_t timeouts = 0;
    uint64_t evictions = 0;    // entries the tier removed to stay in its budget
    uint64_t bytes_stored = 0; // bytes the tier holds now (where it can tell; else 0)
};

// One payload of a batch put (put_many): the framed bytes stay the caller's.
struct TierPut {
    TierKey key;
    const uint8_t* framed = nullptr;
    size_t n = 0;
};

class BlockTier {
public:
    virtual ~BlockTier() = default;
    // "disk" or "redis".
    virtual const char* kind() const noexcept = 0;
    // Stores a framed payload under key (replaces an equal key). Best effort.
    virtual void put(const TierKey& key, const uint8_t* framed, size_t n) noexcept = 0;
    // Stores several payloads, in order; the same contract as put for each. The Redis tier
    // pipelines them (one round trip per batch instead of one per block set); the default
    // puts them one at a time.
    virtual void put_many(const TierPut* puts, size_t n) noexcept {
        for (size_t i = 0; i < n; ++i) put(puts[i].key, puts[i].framed, puts[i].n);
    }
    // Fetches the framed payload of key into *out. false: miss or fault (counted).
    virtual bool get(const TierKey& key, std::vector<uint8_t>* out) noexcept = 0;
    // Whether key is (probably) present, without fetching the payload.
    virtual bool contains(const TierKey& key) noexcept = 0;
    // Removes key (after a corrupt payload). Best effort.
    virtual void remove(const TierKey& key) noexcept = 0;
    virtual TierStats stats() const noexcept = 0;
    // The last fault's description ("" when none).
    virtual std::string last_error() const = 0;
};

}  // namespace kvrt::cache
