// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

#include "cache/block_hash.hpp"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <cstring>

namespace kvrt::cache {

static Hash128 from_xxh(XXH128_hash_t h) { return Hash128{h.low64, h.high64}; }

Hash128 hash_extra_keys(const SeqKeys& keys) {
    XXH3_state_t st;
    XXH3_128bits_reset(&st);
    const char tag = 'K';
    uint64_t words[4] = {keys.fingerprint_lo, keys.fingerprint_hi, keys.adapter_id, keys.salt.size()};
    XXH3_128bits_update(&st, &tag, 1);
    XXH3_128bits_update(&st, words, sizeof words);
    XXH3_128bits_update(&st, keys.salt.data(), keys.salt.size());
    return from_xxh(XXH3_128bits_digest(&st));
}

Hash128 hash_block(const Hash128& parent, const Hash128& extra, const int32_t* tokens, size_t n_tokens) {
    // One contiguous buffer keeps this a single XXH3 call for typical block sizes.
    uint8_t buf[32 + 4 * 256];
    size_t bytes = 32 + 4 * n_tokens;
    if (n_tokens <= 256) {
        std::memcpy(buf, &parent, 16);
        std::memcpy(buf + 16, &extra, 16);
        std::memcpy(buf + 32, tokens, 4 * n_tokens);
        return from_xxh(XXH3_128bits(buf, bytes));
    }
    XXH3_state_t st;
    XXH3_128bits_reset(&st);
    XXH3_128bits_update(&st, &parent, 16);
    XXH3_128bits_update(&st, &extra, 16);
    XXH3_128bits_update(&st, tokens, 4 * n_tokens);
    return from_xxh(XXH3_128bits_digest(&st));
}

Hash128 hash_root() {
    static const Hash128 root = from_xxh(XXH3_128bits("kvrt-prefix-v1", 14));
    return root;
}

}  // namespace kvrt::cache
