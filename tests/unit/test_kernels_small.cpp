// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// RMSNorm, RoPE and softmax: cpu:: against ref::, RoPE inverse, edges; the CED
// indexer's batched kernel (bits against the per-query kernel) and the linear-time
// top-k / block-max selections against a full sort.
#include "kernel_fixtures.hpp"
#include "kernels/indexer.hpp"
#include "kernels/rms_norm.hpp"
#include "kernels/rope.hpp"
#include "kernels/softmax.hpp"
#include "util/error.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

using namespace kvrt;

TEST_CASE("kernels.small.rms_norm") {
    for (int32_t dim : {1, 7, 64, 576}) {
        auto x = test::random_vec(size_t(5) * dim, 1000 + dim, -3.0f, 3.0f);
        auto w = test::random_vec(dim, 1001);
        std::vector<float> a(x.size()), b(x.size());
        ref::rms_norm(x.data(), w.data(), 1e-5f, 5, dim, a.data());
        cpu::rms_norm(x.data(), w.data(), 1e-5f, 5, dim, b.data());
        CHECK(test::max_abs_diff(a, b) < 1e-5f);
        cpu::rms_norm(x.data(), nullptr, 1e-5f, 5, dim, b.data());
        ref::rms_norm(x.data(), nullptr, 1e-5f, 5, dim, a.data());
        CHECK(test::max_abs_diff(a, b) < 1e-5f);
        cpu::rms_norm(x.data(), w.data(), 1e-5f, 5, dim, x.data());  // in place
        ref::rms_norm(test::random_vec(size_t(5) * dim, 1000 + dim, -3.0f, 3.0f).data(), w.data(), 1e-5f, 5, dim,
                      a.data());
        CHECK(test::max_abs_diff(a, x) < 1e-5f);
    }
    CHECK_THROWS_AS(cpu::rms_norm(nullptr, nullptr, 1e-5f, 1, 4, nullptr), Error);
}

TEST_CASE("kernels.small.rope") {
    for (RopeMode mode : {RopeMode::Neox, RopeMode::Interleaved}) {
        for (int32_t R : {64, 16, 0}) {
            RopeParams p;
            p.n_heads = 3;
            p.head_dim = 64;
            p.rope_dims = R;
            p.theta = 100000.0f;
            p.mode = mode;
            const int32_t n = 6;
            int32_t pos[n] = {0, 1, 5, 100, 4095, 70000};
            auto x = test::random_vec(size_t(n) * 3 * 64, 1100 + R);
            auto a = x, b = x;
            ref::rope(a.data(), n, pos, p);
            cpu::rope(b.data(), n, pos, p);
            CHECK(test::max_abs_diff(a, b) < 2e-5f);
            // Only the tail rotates.
            for (int32_t t = 0; t < n; ++t)
                for (int32_t c = 0; c < 64 - R; ++c) CHECK(b[size_t(t) * 192 + c] == x[size_t(t) * 192 + c]);
            // Position 0 is the identity (within rounding of cos 0 = 1, sin 0 = 0: exact).
            for (int32_t c = 0; c < 192; ++c) CHECK(b[c] == x[c]);
            cpu::rope(b.data(), n, pos, p, /*inverse=*/true);
            CHECK(test::max_abs_diff(b, x) < 1e-5f);
            ref::rope(a.data(), n, pos, p, true);
            CHECK(test::max_abs_diff(a, x) < 1e-5f);
        }
    }
    // Neox and interleaved differ (the pairing matters).
    RopeParams p;
    p.n_heads = 1;
    p.head_dim = 8;
    p.rope_dims = 8;
    auto x = test::random_vec(8, 1200);
    auto a = x, b = x;
    int32_t pos = 3;
    p.mode = RopeMode::Neox;
    cpu::rope(a.data(), 1, &pos, p);
    p.mode = RopeMode::Interleaved;
    cpu::rope(b.data(), 1, &pos, p);
    CHECK(test::max_abs_diff(a, b) > 1e-3f);
    p.rope_dims = 7;
    CHECK_THROWS_AS(cpu::rope(a.data(), 1, &pos, p), Error);
}

TEST_CASE("kernels.small.rope_table: rope_table + rope_apply give rope()'s bits, heads split or not") {
    for (RopeMode mode : {RopeMode::Neox, RopeMode::Interleaved})
        for (int32_t R : {64, 16, 0})
            for (bool inverse : {false, true}) {
                RopeParams p;
                p.n_heads = 4;
                p.head_dim = 64;
                p.rope_dims = R;
                p.theta = 1000000.0f;
                p.freq_scale = 0.5f;
                p.mode = mode;
                const int32_t n = 5;
                int32_t pos[n] = {0, 7, 511, 4096, 131071};
                const auto x = test::random_vec(size_t(n) * 4 * 64, 1400 + R);
                auto a = x, b = x;
                cpu::rope(a.data(), n, pos, p, inverse);
                std::vector<float> cs(size_t(n) * std::max(R, 1));
                cpu::rope_table(pos, n, p, inverse, cs.data());
                // As the forward applies it: one token and a slice of the heads at a time.
                RopeParams half = p;
                half.n_heads = 2;
                for (int32_t t = 0; t < n; ++t)
                    for (int32_t h0 : {0, 2}) cpu::rope_apply(&b[(size_t(t) * 4 + h0) * 64], 1, &cs[size_t(t) * R], half);
                CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
            }
    RopeParams p;
    p.n_heads = 1;
    p.head_dim = 8;
    p.rope_dims = 7;
    float x[8] = {}, cs[8] = {};
    int32_t pos = 1;
    CHECK_THROWS_AS(cpu::rope_table(&pos, 1, p, false, cs), Error);
    CHECK_THROWS_AS(cpu::rope_apply(x, 1, cs, p), Error);
    p.rope_dims = 8;
    CHECK_THROWS_AS(cpu::rope_table(&pos, 1, p, false, nullptr), Error);
    CHECK_THROWS_AS(cpu::rope_apply(nullptr, 1, cs, p), Error);
}

TEST_CASE("kernels.small.softmax") {
    for (int32_t n : {1, 5, 100, 1000}) {
        auto x = test::random_vec(size_t(3) * n, 1300 + n, -20.0f, 20.0f);
        x[0] = -INFINITY;
        auto a = x, b = x;
        ref::softmax(a.data(), 3, n);
        cpu::softmax(b.data(), 3, n);
        CHECK(test::max_abs_diff(a, b) < 1e-6f);
        CHECK(b[0] == 0.0f);
    }
    std::vector<float> ninf(4, -INFINITY);
    cpu::softmax(ninf.data(), 1, 4);
    CHECK(ninf[2] == 0.0f);
}

// ---- CED indexer: the batched kernel and the linear-time selections ----------------------

namespace {
// Naive top-k: full sort by (score desc, NaN last, id asc), ids ascending.
std::vector<int32_t> naive_topk(const std::vector<float>& s, const std::vector<int32_t>* ids, int32_t k) {
    std::vector<int32_t> idx(s.size());
    for (size_t i = 0; i < s.size(); ++i) idx[i] = int32_t(i);
    auto id = [&](int32_t i) { return ids ? (*ids)[i] : i; };
    std::sort(idx.begin(), idx.end(), [&](int32_t a, int32_t b) {
        const bool na = std::isnan(s[a]), nb = std::isnan(s[b]);
        if (na != nb) return nb;
        if (!na && s[a] != s[b]) return s[a] > s[b];
        return id(a) < id(b);
    });
    std::vector<int32_t> out;
    for (int32_t i = 0; i < k && i < int32_t(idx.size()); ++i) out.push_back(id(idx[i]));
    std::sort(out.begin(), out.end());
    return out;
}
}  // namespace

TEST_CASE("kernels.indexer.batch_matches_per_query_bits_and_ref") {
    for (Isa isa : test::available_isas()) {
        test::IsaScope scope(isa);
        for (DType dt : {DType::F32, DType::BF16, DType::F16}) {
            for (int32_t Hi : {1, 3, 4, 5}) {
                CAPTURE(std::string(isa_name(isa)));
                CAPTURE(std::string(dtype_name(dt)));
                CAPTURE(Hi);
                const int32_t Di = Hi == 3 ? 24 : 64, n_keys = 300;
                test::TestKV keys(n_keys, 1, Di, dt, 16, 700 + Hi, true);
                const std::vector<int32_t> nv = {0, 1, 31, 32, 33, 100, 257, 300, 5};
                const int32_t nq = int32_t(nv.size());
                const size_t stride = 301;
                auto q = test::random_vec(size_t(nq) * Hi * Di, 701 + Hi);
                auto w = test::random_vec(size_t(nq) * Hi, 702 + Hi, -0.5f, 1.0f);
                // The ref twin is given the query the kernel computes with (rounded to bf16 where
                // test::indexer_rounds_q): what is left is f32 vs double accumulation (scores of
                // ~1-5 here), far below the error of a wrong key, lane, head or weight.
                const auto q_used = test::indexer_rounds_q(isa, dt) ? test::bf16_rounded(q) : q;
                std::vector<IndexerQuery> qs(nq), qs_used(nq);
                for (int32_t i = 0; i < nq; ++i) {
                    qs[i] = IndexerQuery{q.data() + size_t(i) * Hi * Di, w.data() + size_t(i) * Hi, Hi};
                    qs_used[i] = IndexerQuery{q_used.data() + size_t(i) * Hi * Di, w.data() + size_t(i) * Hi, Hi};
                }
                const float sentinel = -12345.0f;
                std::vector<float> got(size_t(nq) * stride, sentinel), want(size_t(nq) * stride, sentinel);
                cpu::indexer_scores_batch(keys.kv, qs.data(), nv.data(), nq, got.data(), stride);
                ref::indexer_scores_batch(keys.kv, qs_used.data(), nv.data(), nq, want.data(), stride);
                CHECK(test::max_abs_diff(got, want) < 1e-3f);
                for (int32_t i = 0; i < nq; ++i) {
                    CAPTURE(i);
                    std::vector<float> alone(std::max(nv[i], 1), 0.0f);
                    cpu::indexer_scores(keys.kv, qs[i], nv[i], alone.data());
                    // Bit for bit what the per-query kernel computes; nothing past n_visible written.
                    CHECK(std::memcmp(alone.data(), got.data() + size_t(i) * stride, size_t(nv[i]) * 4) == 0);
                    CHECK(got[size_t(i) * stride + nv[i]] == sentinel);
                }
            }
        }
    }
    test::TestKV keys(40, 1, 32, DType::F32, 16, 9, true);
    std::vector<float> q(32, 0.1f), w(1, 1.0f), out(64);
    IndexerQuery iq{q.data(), w.data(), 1};
    int32_t nv = 41;  // more keys than the view holds
    CHECK_THROWS_AS(cpu::indexer_scores_batch(keys.kv, &iq, &nv, 1, out.data(), 64), Error);
    nv = 40;
    CHECK_THROWS_AS(cpu::indexer_scores_batch(keys.kv, &iq, &nv, 1, out.data(), 20), Error);  // stride too small
    CHECK_THROWS_AS(cpu::indexer_scores_batch(keys.kv, &iq, nullptr, 1, out.data(), 64), Error);
    IndexerQuery bad{nullptr, w.data(), 1};
    CHECK_THROWS_AS(ref::indexer_scores_batch(keys.kv, &bad, &nv, 1, out.data(), 64), Error);
}

TEST_CASE("kernels.indexer.topk_threshold_path_matches_full_sort") {
    std::mt19937 rng(77);
    for (int32_t n : {1024, 2048, 5000, 60000}) {
        for (int32_t k : {1, 7, 512, 700}) {
            for (int variant = 0; variant < 4; ++variant) {
                CAPTURE(n);
                CAPTURE(k);
                CAPTURE(variant);
                std::vector<float> s(n);
                std::uniform_real_distribution<float> u(-1.0f, 1.0f);
                for (auto& x : s) x = u(rng);
                if (variant == 1)  // heavy ties: 16 distinct values
                    for (auto& x : s) x = std::floor(x * 8.0f);
                if (variant == 2)  // NaNs and infinities sprinkled in, an ascending ramp
                    for (int32_t i = 0; i < n; ++i) s[i] = i % 97 == 0 ? NAN : i % 89 == 0 ? INFINITY : float(i) * 1e-3f;
                if (variant == 3)  // almost all NaN: fewer than k numbers
                    for (int32_t i = 0; i < n; ++i) s[i] = i % 500 == 3 ? float(i % 7) : NAN;
                std::vector<int32_t> ids(n);
                for (int32_t i = 0; i < n; ++i) ids[i] = (i * 7919) % n;  // a permutation (n not a multiple of 7919)
                for (bool with_ids : {false, true}) {
                    std::vector<int32_t> out(std::min(n, k));
                    const int32_t m = topk_rows(s.data(), with_ids ? ids.data() : nullptr, n, k, out.data());
                    out.resize(m);
                    CHECK(out == naive_topk(s, with_ids ? &ids : nullptr, k));
                }
            }
        }
    }
}

TEST_CASE("kernels.indexer.block_max_candidates_large_matches_naive") {
    std::mt19937 rng(78);
    std::uniform_real_distribution<float> u(0.0f, 1.0f);
    for (int32_t n : {20001, 80000}) {
        std::vector<float> s(n);
        for (int32_t i = 0; i < n; ++i) s[i] = std::floor(u(rng) * 50.0f);  // ties between blocks
        for (int32_t i = 0; i < 16; ++i) s[i] = NAN;                       // two all-NaN blocks
        s[100] = NAN;                                                       // a NaN beside numbers
        const int32_t block = 8, max_blocks = 256;
        const int32_t nb = (n + block - 1) / block;
        std::vector<float> bmax(nb - 1);
        for (int32_t b = 0; b + 1 < nb; ++b) {
            float m = -INFINITY;
            bool nan = false;
            for (int32_t i = b * block; i < (b + 1) * block; ++i) {
                if (std::isnan(s[i])) nan = true;
                else m = std::max(m, s[i]);
            }
            bmax[b] = nan && std::isinf(m) ? NAN : m;
        }
        std::vector<int32_t> want = naive_topk(bmax, nullptr, max_blocks - 1);
        want.push_back(nb - 1);
        std::vector<int32_t> got(max_blocks);
        got.resize(block_max_candidates(s.data(), n, block, max_blocks, got.data()));
        CHECK(got == want);
    }
}
