// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

#include "cache/tier_envelope.hpp"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <cstring>

namespace kvrt::cache {

namespace {
const char kMagic[8] = {'K', 'V', 'R', 'T', 'T', 'I', 'E', 'R'};

// Appends x's 8 bytes at p; returns the end.
uint8_t* put64(uint8_t* p, uint64_t x) {
    std::memcpy(p, &x, 8);
    return p + 8;
}
uint64_t get64(const uint8_t* p) {
    uint64_t x;
    std::memcpy(&x, p, 8);
    return x;
}
XXH128_hash_t checksum(const TierKey& key, const uint8_t* payload, size_t n) {
    XXH3_state_t st;
    XXH3_128bits_reset(&st);
    const uint64_t k[4] = {key.block.lo, key.block.hi, key.layout.lo, key.layout.hi};
    XXH3_128bits_update(&st, k, sizeof k);
    const uint64_t len = n;
    XXH3_128bits_update(&st, &len, 8);
    if (n) XXH3_128bits_update(&st, payload, n);
    return XXH3_128bits_digest(&st);
}
}  // namespace

std::vector<uint8_t> tier_frame(const TierKey& key, const uint8_t* payload, size_t n) {
    // Written in place into a vector of its final size (appending byte ranges to a reserved
    // vector made GCC 12 warn -Wstringop-overflow about an overflow that cannot happen).
    std::vector<uint8_t> v(kTierEnvelopeOverhead + n);
    uint8_t* p = v.data();
    std::memcpy(p, kMagic, 8);
    const uint32_t ver[2] = {kTierEnvelopeVersion, 0};
    std::memcpy(p + 8, ver, 8);
    p += 16;
    p = put64(p, key.block.lo);
    p = put64(p, key.block.hi);
    p = put64(p, key.layout.lo);
    p = put64(p, key.layout.hi);
    p = put64(p, n);
    if (n) std::memcpy(p, payload, n);
    p += n;
    const XXH128_hash_t h = checksum(key, payload, n);
    p = put64(p, h.low64);
    put64(p, h.high64);
    return v;
}

bool tier_unframe(const TierKey& key, const uint8_t* f, size_t n, const uint8_t** payload, size_t* payload_n,
                  std::string* why) {
    auto bad = [&](const char* w) {
        if (why) *why = w;
        return false;
    };
    if (f == nullptr || n < kTierEnvelopeOverhead) return bad("shorter than a tier envelope");
    if (std::memcmp(f, kMagic, 8) != 0) return bad("not a kvrt tier entry (magic)");
    uint32_t ver;
    std::memcpy(&ver, f + 8, 4);
    if (ver != kTierEnvelopeVersion) return bad("another tier format version");
    const TierKey got{{get64(f + 16), get64(f + 24)}, {get64(f + 32), get64(f + 40)}};
    if (!(got.layout == key.layout)) return bad("written for another cache layout (dtype, block size or model shape)");
    if (!(got.block == key.block)) return bad("holds another block (key differs)");
    const uint64_t len = get64(f + 48);
    if (len != n - kTierEnvelopeOverhead) return bad("payload length does not match (truncated)");
    const uint8_t* p = f + 56;
    XXH128_hash_t h = checksum(key, p, len);
    if (h.low64 != get64(p + len) || h.high64 != get64(p + len + 8)) return bad("checksum mismatch (corrupted)");
    *payload = p;
    *payload_n = len;
    return true;
}

Hash128 tier_layout_hash(const ResolvedLayout& l) {
    std::vector<int64_t> words{0x4b56525454494552ll /* tag */, l.block_tokens, static_cast<int64_t>(l.layers.size())};
    for (size_t i = 0; i < l.layers.size(); i++) {
        const LayerSpec& s = l.layers[i];
        words.insert(words.end(), {int64_t(s.kind), int64_t(s.dtype), s.n_kv_heads, s.head_dim, s.window, s.ratio,
                                   s.source, int64_t(s.shared_kv)});
        // V rows of another type than K (issue 15: int8 / fp8 V with f16 K, ...): a word of its
        // own, only then, so that the keys of layouts with one type stay what they were.
        if (i < l.geometry.size() && l.geometry[i].separate_v && l.geometry[i].v_dtype != s.dtype)
            words.push_back(1000 + int64_t(l.geometry[i].v_dtype));
    }
    XXH128_hash_t h = XXH3_128bits(words.data(), words.size() * sizeof(int64_t));
    return Hash128{h.low64, h.high64};
}

std::string tier_key_hex(const TierKey& key) {
    static const char* digits = "0123456789abcdef";
    std::string s;
    s.reserve(64);
    for (uint64_t w : {key.block.hi, key.block.lo, key.layout.hi, key.layout.lo})
        for (int i = 60; i >= 0; i -= 4) s.push_back(digits[(w >> i) & 15]);
    return s;
}

}  // namespace kvrt::cache
