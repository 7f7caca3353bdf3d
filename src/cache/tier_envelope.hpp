// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// The frame around every payload a BlockTier stores, so that a tier can only
// ever miss: what comes back is used only when its magic, format version,
// full key (block hash + layout hash), length and XXH3-128 checksum of key and
// payload all match the lookup. Anything else (a torn write, a flipped byte, a
// file of another version, another model or layout, another tenant's key) is
// `corrupt`: the caller counts it, removes it and recomputes.
//
//   "KVRTTIER" (8) | u32 version | u32 0 | key: block.lo, block.hi, layout.lo,
//   layout.hi (4 x u64) | u64 payload length | payload | XXH3-128(key, payload) (2 x u64)
//
// The payload of the prefix cache (cache_tiers.cpp) is one block set: u32
// managers, then per manager u32 present | u64 block bytes | the block's bytes.
#pragma once

#include "cache/block_tier.hpp"
#include "cache/layout.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kvrt::cache {

inline constexpr uint32_t kTierEnvelopeVersion = 1;
inline constexpr size_t kTierEnvelopeOverhead = 8 + 4 + 4 + 32 + 8 + 16;

// The framed bytes of payload[0, n) under key.
std::vector<uint8_t> tier_frame(const TierKey& key, const uint8_t* payload, size_t n);

// Checks framed[0, n) against key. On success *payload / *payload_n point into
// framed and true is returned; otherwise *why says what did not match.
bool tier_unframe(const TierKey& key, const uint8_t* framed, size_t n, const uint8_t** payload, size_t* payload_n,
                  std::string* why);

// TierKey.layout of a cache: a hash of block_tokens and every layer's kind,
// K dtype, V dtype (when it differs from K's), heads, width, window, ratio,
// source and K = V flag (stable across processes and machines), so that a
// block set of another K or V type is never a hit.
Hash128 tier_layout_hash(const ResolvedLayout& layout);

// Lower-case hex of the key (64 characters): block hash then layout hash.
std::string tier_key_hex(const TierKey& key);

}  // namespace kvrt::cache
