// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// 128-bit block hashes for the prefix index: XXH3-128 (libxxhash, inlined so
// no xxhash symbol is exported).
//
//   extra = H(tag 'K', model fingerprint (16 B), adapter id (8 B), salt length (8 B), salt bytes)
//   block_0 = H(root, extra, tokens of block 0)
//   block_i = H(block_{i-1}, extra, tokens of block i)
//
// A hit on block i therefore certifies the whole prefix [0, (i+1) * block_tokens)
// and the extra keys: two salts never share a block.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace kvrt::cache {

struct Hash128 {
    uint64_t lo = 0;
    uint64_t hi = 0;
    bool operator==(const Hash128& o) const noexcept { return lo == o.lo && hi == o.hi; }
    bool operator!=(const Hash128& o) const noexcept { return !(*this == o); }
};

struct Hash128Hasher {
    size_t operator()(const Hash128& h) const noexcept { return static_cast<size_t>(h.lo ^ (h.hi * 0x9e3779b97f4a7c15ull)); }
};

// Typed extra keys of a sequence: only sequences with equal keys share blocks.
struct SeqKeys {
    uint64_t fingerprint_lo = 0;  // model fingerprint, 128 bits
    uint64_t fingerprint_hi = 0;
    std::string salt;             // cache salt (bytes; empty = none)
    uint64_t adapter_id = 0;      // 0 = no adapter
};

Hash128 hash_extra_keys(const SeqKeys& keys);
Hash128 hash_block(const Hash128& parent, const Hash128& extra, const int32_t* tokens, size_t n_tokens);
// The parent of block 0.
Hash128 hash_root();

}  // namespace kvrt::cache
