// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// The cached CED runtime against itself (bit-identical paths) and against the
// no-cache reference (CedReference), on the tiny preset.
#include "ced_test_util.hpp"
#include "runtime/ced_reference.hpp"
#include "model/arch/ced_memory.hpp"
#include "model/arch/ced_runtime.hpp"
#include "runtime/ced_runtime_access.hpp"
#include "util/error.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

using namespace kvrt;
using namespace kvrt::ced;

namespace {

CedRuntimeOptions opts(int32_t chunk = 256, bool ref = false) {
    CedRuntimeOptions o;
    o.block_tokens = 4;
    o.chunk = chunk;
    o.use_ref_kernels = ref;
    o.bank_budget_bytes = 8u << 20;
    o.window_budget_bytes = 8u << 20;
    return o;
}


// Close to the reference: the cached path uses f32 kernels, the reference double.
void check_close(const std::vector<float>& got, const std::vector<float>& want, double tol = 2e-3) {
    double d = test::logits_max_abs_diff(got, want);
    INFO("max abs logit difference " << d);
    CHECK(d < tol);
}

const test::CedModel& tiny() {
    static test::CedModel m = test::make_ced_model(preset("tiny"), 21);
    return m;
}

}  // namespace

TEST_CASE("ced runtime: exact prefill == token-by-token decode, bit for bit, any chunking") {
    const auto& m = tiny();
    std::vector<int32_t> toks = test::random_tokens(37, 256, 1);
    CedRuntime a(m.weights, opts(256)), b(m.weights, opts(5)), c(m.weights, opts(1));
    auto sa = a.create(), sb = b.create(), sc = c.create();
    std::vector<float> la = a.prefill(sa, toks.data(), 37, PrefillMode::Exact).logits;
    std::vector<float> lb = b.prefill(sb, toks.data(), 37, PrefillMode::Exact).logits;
    std::vector<float> lc = c.prefill(sc, toks.data(), 1, PrefillMode::Exact).logits;
    for (int64_t i = 1; i < 37; i++) lc = c.decode(sc, toks[i]);
    CHECK(la == lb);
    CHECK(la == lc);
    // And decoding on from there stays identical.
    for (int i = 0; i < 5; i++) {
        int32_t t = test::argmax(la);
        la = a.decode(sa, t);
        lc = c.decode(sc, t);
        CHECK(la == lc);
    }
}

TEST_CASE("ced runtime: exact and CED prefill match the reference, selections agree") {
    const auto& m = tiny();
    for (PrefillMode mode : {PrefillMode::Exact, PrefillMode::CedPrefill}) {
        for (bool refk : {true, false}) {
            std::vector<int32_t> toks = test::random_tokens(45, 256, 2);
            CedRuntime rt(m.weights, opts(16, refk));
            CedRuntimeAccess::record_selections(rt, true);
            CedReference ref(m.weights);
            auto s = rt.create();
            std::vector<float> got = rt.prefill(s, toks.data(), 45, mode).logits;
            std::vector<float> want = ref.prefill(toks.data(), 45, mode);
            INFO("mode " << int(mode) << " ref kernels " << refk);
            check_close(got, want, refk ? 1e-4 : 2e-3);
            for (int32_t l = 0; l < rt.config().n_layers; l++) CHECK(CedRuntimeAccess::last_selection(rt, l) == ref.selection(l));
            // Greedy decode continues to agree.
            for (int i = 0; i < 4; i++) {
                int32_t t = test::argmax(want);
                got = rt.decode(s, t);
                want = ref.decode(t);
                check_close(got, want, refk ? 1e-4 : 2e-3);
            }
        }
    }
}

TEST_CASE("ced runtime: visibility edges (lengths around r, W and the block size, fewer groups than k)") {
    const auto& m = tiny();
    const CedConfig& c = m.weights->cfg;
    std::vector<int32_t> toks = test::random_tokens(3 * c.window + 2, 256, 3);
    for (int64_t n : {1, 2, 3, 4, 5, 7, 8, 9, 11, 12, 13, 15, 16, 17, 23, 24, 25}) {
        for (PrefillMode mode : {PrefillMode::Exact, PrefillMode::CedPrefill}) {
            CedRuntime rt(m.weights, opts(3, true));
            CedRuntimeAccess::record_selections(rt, true);
            CedReference ref(m.weights);
            auto s = rt.create();
            INFO("n " << n << " mode " << int(mode));
            check_close(rt.prefill(s, toks.data(), n, mode).logits, ref.prefill(toks.data(), n, mode), 1e-4);
            for (int32_t l = 0; l < c.n_layers; l++) {
                CHECK(CedRuntimeAccess::last_selection(rt, l) == ref.selection(l));
                if (c.bank_of[l] >= 0 && l < c.decoder_source()) {
                    const int64_t vis = n / c.ratio_of_layer(l);
                    CHECK(int64_t(ref.selection(l).size()) == std::min<int64_t>(vis, c.top_k));
                }
            }
        }
    }
}

TEST_CASE("ced runtime: prefix hit resumed from a window checkpoint == cold, bit for bit") {
    const auto& m = tiny();
    for (PrefillMode mode : {PrefillMode::Exact, PrefillMode::CedPrefill}) {
        std::vector<int32_t> a = test::random_tokens(40, 256, 4);
        std::vector<int32_t> b(a.begin(), a.begin() + 33);
        for (int i = 0; i < 11; i++) b.push_back((i * 37 + 5) % 256);
        CedRuntime rt(m.weights, opts(7));
        auto sa = rt.create();
        rt.prefill(sa, a.data(), int64_t(a.size()), mode);
        rt.release(sa);
        auto sb = rt.create();
        PrefillResult hit = rt.prefill(sb, b.data(), int64_t(b.size()), mode, Resume::Checkpoint);
        INFO("mode " << int(mode));
        CHECK(hit.hit == 32);
        CHECK(hit.exact_resume);
        CHECK(hit.computed == int64_t(b.size()) - 32);
        CedRuntime cold(m.weights, opts(256));
        auto sc = cold.create();
        std::vector<float> want = cold.prefill(sc, b.data(), int64_t(b.size()), mode, Resume::Cold).logits;
        CHECK(hit.logits == want);
        for (int i = 0; i < 4; i++) {
            int32_t t = test::argmax(want);
            want = cold.decode(sc, t);
            CHECK(rt.decode(sb, t) == want);
        }
    }
}

TEST_CASE("ced runtime: CED-mode checkpoint for a short extension (N - W < hit) stays exact") {
    const auto& m = tiny();
    std::vector<int32_t> a = test::random_tokens(40, 256, 14);
    std::vector<int32_t> b(a.begin(), a.begin() + 36);
    b.push_back(9);
    b.push_back(10);  // N = 38: bank hit 36, but the decoder reruns [30, 38)
    for (Resume r : {Resume::Auto, Resume::Checkpoint}) {
        CedRuntime rt(m.weights, opts(5));
        auto sa = rt.create();
        rt.prefill(sa, a.data(), int64_t(a.size()), PrefillMode::CedPrefill);
        rt.release(sa);
        auto sb = rt.create();
        PrefillResult hit = rt.prefill(sb, b.data(), int64_t(b.size()), PrefillMode::CedPrefill, r);
        CHECK(hit.exact_resume);
        CHECK(hit.hit == 28);  // <= N - W = 30, in whole blocks
        CedRuntime cold(m.weights, opts(256));
        auto sc = cold.create();
        CHECK(hit.logits == cold.prefill(sc, b.data(), int64_t(b.size()), PrefillMode::CedPrefill).logits);
    }
}

TEST_CASE("ced runtime: bounded-replay hit matches the reference of bounded-replay semantics") {
    const auto& m = tiny();
    for (PrefillMode mode : {PrefillMode::Exact, PrefillMode::CedPrefill}) {
        std::vector<int32_t> a = test::random_tokens(44, 256, 5);
        std::vector<int32_t> b(a.begin(), a.begin() + 30);
        for (int i = 0; i < 9; i++) b.push_back((i * 91 + 3) % 256);
        CedRuntime rt(m.weights, opts(6, true));
        auto sa = rt.create();
        rt.prefill(sa, a.data(), int64_t(a.size()), mode);
        rt.release(sa);
        auto sb = rt.create();
        PrefillResult hit = rt.prefill(sb, b.data(), int64_t(b.size()), mode, Resume::BoundedReplay);
        INFO("mode " << int(mode));
        CHECK(hit.hit == 28);
        CHECK_FALSE(hit.exact_resume);
        CHECK(hit.replayed == rt.config().window);
        CedReference ref(m.weights);
        std::vector<float> want = ref.prefill(b.data(), int64_t(b.size()), mode, 28);
        check_close(hit.logits, want, 1e-4);
        // It differs from the cold result (the replay moved the logits) ...
        CedReference cold(m.weights);
        std::vector<float> c0 = cold.prefill(b.data(), int64_t(b.size()), mode);
        CHECK(test::logits_max_abs_diff(c0, want) > 0);
        // ... and decoding on agrees with the reference too.
        for (int i = 0; i < 3; i++) {
            int32_t t = test::argmax(want);
            want = ref.decode(t);
            check_close(rt.decode(sb, t), want, 1e-4);
        }
        // The replayed windows never serve as a checkpoint.
        auto s3 = rt.create();
        PrefillResult again = rt.prefill(s3, b.data(), int64_t(b.size()), mode, Resume::Checkpoint);
        CHECK(again.hit == 28);  // the checkpoint of the first (cold) run at 28
        CHECK(again.exact_resume);
    }
}

TEST_CASE("ced runtime: fork and truncate") {
    const auto& m = tiny();
    std::vector<int32_t> toks = test::random_tokens(30, 256, 6);
    CedRuntime rt(m.weights, opts(8));
    auto s = rt.create();
    rt.prefill(s, toks.data(), 30, PrefillMode::Exact);
    auto f = rt.fork(s);
    CHECK(rt.length(f) == 30);
    std::vector<float> l1 = rt.decode(s, 11);
    std::vector<float> l2 = rt.decode(f, 12);
    // Each equals a cold exact run of its own token sequence.
    for (int32_t last : {11, 12}) {
        std::vector<int32_t> t = toks;
        t.push_back(last);
        CedRuntime cold(m.weights, opts(256));
        auto c = cold.create();
        CHECK(cold.prefill(c, t.data(), 31, PrefillMode::Exact).logits == (last == 11 ? l1 : l2));
    }
    // Truncate to a group boundary, then extend with other tokens: == cold.
    rt.truncate(s, 28);
    CHECK(rt.length(s) == 28);
    std::vector<int32_t> tail = {7, 8, 9};
    std::vector<float> lt = rt.extend(s, tail.data(), 3);
    std::vector<int32_t> t2(toks.begin(), toks.begin() + 28);
    t2.insert(t2.end(), tail.begin(), tail.end());
    {
        CedRuntime cold(m.weights, opts(256));
        auto c = cold.create();
        CHECK(cold.prefill(c, t2.data(), 31, PrefillMode::Exact).logits == lt);
    }
    // Inside the open group (length 31: group [30, 32) open) is fine; cutting a closed group is not.
    rt.truncate(s, 30);
    CHECK_THROWS_AS(rt.truncate(s, 29), kvrt::Error);
    CHECK(rt.length(s) == 30);
    // The windows no longer hold what a query at 10 reads: refused, nothing changed.
    try {
        rt.truncate(s, 10);
        FAIL("truncate succeeded");
    } catch (const kvrt::Error& e) {
        CHECK(e.status() == KVRT_ERR_INVALID_STATE);
    }
    CHECK(rt.length(s) == 30);
    rt.truncate(s, 0);
    CHECK(rt.length(s) == 0);
    std::vector<float> again = rt.prefill(s, t2.data(), 31, PrefillMode::Exact, Resume::Cold).logits;
    CHECK(again == lt);
    rt.release(f);
    rt.release(s);
    CHECK_THROWS_AS(rt.release(s), kvrt::Error);
    CHECK(rt.bank_cache().stats().n_sequences == 0);
}

TEST_CASE("ced runtime: bad input leaves the sequence as it was") {
    const auto& m = tiny();
    CedRuntime rt(m.weights, opts());
    auto s = rt.create();
    std::vector<int32_t> bad = {1, 2, 999};
    CHECK_THROWS_AS(rt.prefill(s, bad.data(), 3, PrefillMode::Exact), kvrt::Error);
    CHECK(rt.length(s) == 0);
    std::vector<int32_t> ok = {1, 2, 3};
    rt.prefill(s, ok.data(), 3, PrefillMode::Exact);
    CHECK_THROWS_AS(rt.prefill(s, ok.data(), 3, PrefillMode::Exact), kvrt::Error);
    CHECK_THROWS_AS(rt.decode(s, -1), kvrt::Error);
    CHECK(rt.length(s) == 3);
    CHECK_THROWS_AS(rt.truncate(s, 4), kvrt::Error);
    CHECK_THROWS_AS(rt.decode(12345, 1), kvrt::Error);
    // A full bank cache: CACHE_FULL, and the sequence continues exactly afterwards.
    {
        CedRuntimeOptions small = opts();
        small.bank_budget_bytes = 6 * 1024;  // ~ 21 positions of banks
        small.chunk = 4;                      // fails after some chunks ran
        CedRuntime r2(m.weights, small);
        auto q = r2.create();
        std::vector<int32_t> p = test::random_tokens(13, 256, 10);
        r2.prefill(q, p.data(), 13, PrefillMode::Exact);
        std::vector<int32_t> more = test::random_tokens(64, 256, 11);
        try {
            r2.extend(q, more.data(), 64);
            FAIL("extend fit");
        } catch (const kvrt::Error& e) {
            CHECK(e.status() == KVRT_ERR_CACHE_FULL);
        }
        CHECK(r2.length(q) == 13);
        std::vector<float> got = r2.decode(q, 42);
        p.push_back(42);
        CedRuntime cold(m.weights, opts());
        auto c = cold.create();
        CHECK(cold.prefill(c, p.data(), 14, PrefillMode::Exact).logits == got);
    }
    CedRuntimeOptions o = opts();
    o.block_tokens = 3;  // not a multiple of the r = 2 bank
    CHECK_THROWS_AS(CedRuntime(m.weights, o), kvrt::Error);
}

TEST_CASE("ced memory: the caches account exactly the reported bytes per token") {
    for (const char* name : {"tiny", "base"}) {
        CedConfig c = preset(name);
        CedMemory mem = ced_memory(c, 4);
        cache::CacheConfig bc = CedRuntime::bank_layout(c, 16, DType::F32);
        cache::CacheConfig wc = CedRuntime::window_layout(c, 16, DType::F32);
        bc.budget_bytes = wc.budget_bytes = 64u << 20;
        cache::Cache banks(bc);
        cache::Cache wins(wc);
        const cache::CacheStats bs = banks.stats(), ws = wins.stats();
        CHECK(bs.bytes_per_token == mem.global_bytes_per_token);
        CHECK(bs.kinds[int(cache::LayerKind::BankSource)].bytes_per_token == mem.main_bytes_per_token);
        CHECK(bs.kinds[int(cache::LayerKind::IndexerKeys)].bytes_per_token == mem.indexer_bytes_per_token);
        CHECK(uint64_t(ws.bytes_per_token * c.window) == mem.window_bytes_per_sequence);
        // The dense reference through the same cache manager.
        cache::CacheConfig dense;
        dense.block_tokens = 16;
        dense.budget_bytes = 64u << 20;
        for (int32_t l = 0; l < mem.dense_layers; l++) {
            cache::LayerSpec s;
            s.kind = cache::LayerKind::Full;
            s.n_kv_heads = mem.dense_kv_heads;
            s.head_dim = mem.dense_head_dim;
            dense.layers.push_back(s);
        }
        CHECK(cache::Cache(dense).stats().bytes_per_token == mem.dense_bytes_per_token);
        CHECK(mem.global_bytes_per_token < mem.dense_bytes_per_token);
        CHECK(format_memory(c, mem).find("global KV") != std::string::npos);
    }
    // A prefilled sequence holds exactly n x bytes per token of banks (n a block multiple).
    const auto& m = tiny();
    CedRuntime rt(m.weights, opts());
    auto s = rt.create();
    std::vector<int32_t> toks = test::random_tokens(64, 256, 8);
    rt.prefill(s, toks.data(), 64, PrefillMode::Exact);
    const CedMemory mem = ced_memory(m.weights->cfg, 4);
    CHECK(double(rt.bank_cache().stats().bytes_in_use) == 64 * mem.global_bytes_per_token);
}

TEST_CASE("ced runtime: bf16 / f16 caches: exact prefill == decode bit for bit, close to f32, half the bytes") {
    const auto& m = tiny();
    std::vector<int32_t> toks = test::random_tokens(41, 256, 13);
    CedRuntime f(m.weights, opts(256));
    auto sf = f.create();
    std::vector<float> lf = f.prefill(sf, toks.data(), 41, PrefillMode::Exact).logits;
    for (DType dt : {DType::BF16, DType::F16}) {
        INFO("cache dtype " << dtype_name(dt));
        CedRuntimeOptions oa = opts(16), ob = opts(1);
        oa.cache_dtype = ob.cache_dtype = dt;
        CedRuntime a(m.weights, oa), b(m.weights, ob);
        auto sa = a.create(), sb = b.create();
        std::vector<float> la = a.prefill(sa, toks.data(), 41, PrefillMode::Exact).logits;
        std::vector<float> lb = b.prefill(sb, toks.data(), 1, PrefillMode::Exact).logits;
        for (int64_t i = 1; i < 41; i++) lb = b.decode(sb, toks[i]);
        CHECK(la == lb);
        // Rows rounded to 8 (bf16) or 11 (f16) significant bits move the logits a little.
        const double d = test::logits_max_abs_diff(la, lf);
        INFO("max abs logit difference to f32 caches " << d);
        CHECK(d > 0.0);
        CHECK(d < (dt == DType::BF16 ? 0.25 : 0.05));
        CHECK(a.bank_cache().stats().bytes_per_token * 2 == doctest::Approx(f.bank_cache().stats().bytes_per_token));
        CHECK(a.window_cache().stats().block_set_bytes * 2 <= f.window_cache().stats().block_set_bytes + 256);
    }
    CedRuntimeOptions bad = opts();
    bad.cache_dtype = static_cast<DType>(99);
    CHECK_THROWS_AS(CedRuntime(m.weights, bad), Error);
}
