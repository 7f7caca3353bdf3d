// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Top-k row selection and the block-max candidate selection (CED.md "Sparse selection").
#include "kernels/indexer.hpp"
#include "util/error.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <vector>

namespace kvrt {

namespace {
// The rank order ("ranks before" = smaller key): higher score first, NaN last, ties by the
// smaller id. The high half orders scores descending (-0 as +0, NaN after every number),
// the low half ids ascending (signed).
inline uint64_t rank_key(float s, int32_t id) {
    uint32_t hi;
    if (std::isnan(s)) {
        hi = 0xFFFFFFFFu;
    } else {
        if (s == 0.0f) s = 0.0f;
        uint32_t u;
        std::memcpy(&u, &s, 4);
        u = (u & 0x80000000u) ? ~u : (u | 0x80000000u);  // ascending with the float
        hi = ~u;                                           // descending; NaN's 0xFFFFFFFF is above every number's
    }
    return (uint64_t(hi) << 32) | (uint32_t(id) ^ 0x80000000u);
}
}  // namespace

namespace {
// Threshold pre-filter of topk_rows.
constexpr int32_t kFilterMinN = 1024;  // and k <= n / 2
constexpr int32_t kSampleMax = 2048;

// A score threshold tau such that (most likely) a little more than k scores are >= tau,
// from a fixed, evenly spaced sample (deterministic). NaN when the sample cannot give one.
float sample_threshold(const float* scores, int32_t n, int32_t k) {
    thread_local std::vector<float> sample;
    const int32_t S = std::min(kSampleMax, std::max(256, n / 8));
    sample.clear();
    for (int32_t i = 0; i < S; ++i) {
        const float x = scores[int64_t(i) * n / S];
        if (!std::isnan(x)) sample.push_back(x);
    }
    // Expected rank of the k-th best in the sample, plus a margin of ~3 standard deviations.
    const double kk = double(k) * double(S) / double(n);
    const int64_t r = int64_t(kk + 3.0 * std::sqrt(kk) + 8.0);
    if (r >= int64_t(sample.size())) return std::numeric_limits<float>::quiet_NaN();
    std::nth_element(sample.begin(), sample.begin() + r, sample.end(), std::greater<float>());
    return sample[size_t(r)];
}
}  // namespace

int32_t topk_rows(const float* scores, const int32_t* ids, int32_t n, int32_t k, int32_t* out_ids) {
    KVRT_CHECK(n >= 0 && k >= 0, KVRT_ERR_INVALID_ARGUMENT, "topk_rows: negative n or k");
    if (n == 0 || k == 0) return 0;
    KVRT_CHECK(scores && out_ids, KVRT_ERR_INVALID_ARGUMENT, "topk_rows: null scores or out_ids");
    auto id = [&](int32_t i) { return ids ? ids[i] : i; };
    if (n <= k) {
        for (int32_t i = 0; i < n; ++i) out_ids[i] = id(i);
        if (ids && !std::is_sorted(out_ids, out_ids + n)) std::sort(out_ids, out_ids + n);
        return n;
    }
    // Candidates, ascending: every entry when n is small, else the entries scoring >= a
    // sampled threshold tau (one branch-free pass). Exact either way: when at least k
    // entries score >= tau, every entry outside (NaN or below tau) ranks after all of them.
    thread_local std::vector<int32_t> cand;
    thread_local std::vector<uint64_t> keys, work;
    int32_t m = n;
    bool filtered = false;
    if (n >= kFilterMinN && int64_t(k) * 2 <= n) {
        const float tau = sample_threshold(scores, n, k);
        if (!std::isnan(tau)) {
            cand.resize(size_t(n));
            int32_t c = 0;
            int32_t* out = cand.data();
            for (int32_t i = 0; i < n; ++i) {
                out[c] = i;
                c += scores[i] >= tau ? 1 : 0;
            }
            if (c >= k) {
                m = c;
                filtered = true;
            }
        }
    }
    // Rank keys: one integer per candidate in rank order, so that selection compares integers only.
    keys.resize(size_t(m));
    for (int32_t j = 0; j < m; ++j) {
        const int32_t i = filtered ? cand[j] : j;
        keys[j] = rank_key(scores[i], id(i));
    }
    // The k-th smallest key ...
    work.assign(keys.begin(), keys.end());
    std::nth_element(work.begin(), work.begin() + (k - 1), work.end());
    const uint64_t pivot = work[size_t(k) - 1];
    // ... then the k candidates at or below it, in ascending entry order (ascending ids when
    // ids are ascending, as the decoder's candidate rows are).
    int32_t got = 0;
    for (int32_t j = 0; j < m && got < k; ++j)
        if (keys[j] <= pivot) out_ids[got++] = int32_t(uint32_t(keys[j]) ^ 0x80000000u);
    if (ids && !std::is_sorted(out_ids, out_ids + got)) std::sort(out_ids, out_ids + got);
    return got;
}

int32_t block_max_candidates(const float* scores, int32_t n_visible, int32_t block, int32_t max_blocks,
                             int32_t* out_blocks) {
    KVRT_CHECK(n_visible >= 0 && block > 0 && max_blocks >= 1, KVRT_ERR_INVALID_ARGUMENT,
               "block_max_candidates: bad n_visible, block or max_blocks");
    if (n_visible == 0) return 0;
    KVRT_CHECK(scores && out_blocks, KVRT_ERR_INVALID_ARGUMENT, "block_max_candidates: null pointer");
    const int32_t n_blocks = int32_t((int64_t(n_visible) + block - 1) / block);
    const int32_t newest = n_blocks - 1;
    if (n_blocks <= max_blocks) {
        for (int32_t b = 0; b < n_blocks; ++b) out_blocks[b] = b;
        return n_blocks;
    }
    // Block maxima over the older blocks (all full); the newest block is always kept.
    // A block's maximum ignores NaN unless nothing else is in it (then NaN: ranks last).
    thread_local std::vector<float> bmax;
    bmax.resize(size_t(newest));
    constexpr float kNegInf = -std::numeric_limits<float>::infinity();
    for (int32_t b = 0; b < newest; ++b) {
        const float* s = scores + int64_t(b) * block;
        float m = kNegInf;
        bool any_nan = false;
        for (int32_t i = 0; i < block; ++i) {
            const float x = s[i];
            any_nan |= x != x;
            m = x > m ? x : m;
        }
        bmax[b] = (any_nan && std::isinf(m)) ? std::numeric_limits<float>::quiet_NaN() : m;
    }
    int32_t got = topk_rows(bmax.data(), nullptr, newest, max_blocks - 1, out_blocks);
    out_blocks[got++] = newest;  // ascending: newest is the largest id
    return got;
}

int32_t expand_blocks(const int32_t* blocks, int32_t n_blocks, int32_t block, int32_t n_visible, int32_t* out_rows) {
    KVRT_CHECK(n_blocks >= 0 && block > 0 && n_visible >= 0, KVRT_ERR_INVALID_ARGUMENT, "expand_blocks: bad sizes");
    if (n_blocks == 0) return 0;
    KVRT_CHECK(blocks && out_rows, KVRT_ERR_INVALID_ARGUMENT, "expand_blocks: null pointer");
    int32_t n = 0;
    for (int32_t i = 0; i < n_blocks; ++i) {
        KVRT_CHECK(blocks[i] >= 0, KVRT_ERR_INVALID_ARGUMENT, "expand_blocks: negative block id");
        int64_t a = int64_t(blocks[i]) * block, b = std::min<int64_t>(a + block, n_visible);
        for (int64_t p = a; p < b; ++p) out_rows[n++] = static_cast<int32_t>(p);
    }
    return n;
}

}  // namespace kvrt
