// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// CED contexts with 4-bit banks (bank rows and indexer keys in FP4) and quantised (int8 / fp8)
// window rows: the exactness contract of the other CED tests holds bit for bit (prefill in any
// chunking == token-by-token decode, a prefix-cache hit == a cold run), the caches account
// exactly what kvrt_ced_memory reports (890 B/token for the public V4.1 configuration with
// 4-bit banks), and a saved sequence is never loaded into a context of another bank type.
#include "cache/tier_envelope.hpp"
#include "ced_test_util.hpp"
#include "model/arch/ced_memory.hpp"
#include "model/arch/ced_runtime.hpp"
#include "model/model.hpp"
#include "runtime/context.hpp"
#include "util/error.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <unistd.h>

using namespace kvrt;
using namespace kvrt::ced;

namespace {

// The tiny preset with 32-wide indexer keys (the 4-bit scale group is 32 elements).
CedConfig tiny32() {
    CedConfig c = preset("tiny");
    c.idx_dim = 32;
    return c;
}

const test::CedModel& tiny_model() {
    static test::CedModel m = test::make_ced_model(tiny32(), 31);
    return m;
}

CedRuntimeOptions opts(int32_t chunk, DType window, std::optional<DType> bank) {
    CedRuntimeOptions o;
    o.block_tokens = 4;
    o.chunk = chunk;
    o.bank_budget_bytes = 8u << 20;
    o.window_budget_bytes = 8u << 20;
    o.cache_dtype = window;
    o.bank_dtype = bank;
    return o;
}


bool same(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

const std::shared_ptr<const Model>& ced_model() {
    static std::shared_ptr<const Model> m = [] {
        const std::string path = (std::filesystem::temp_directory_path() /
                                  ("kvrt_ced_fp4_" + std::to_string(::getpid()) + ".gguf")).string();
        GeneratorOptions o;
        o.cfg = tiny32();
        o.seed = 13;
        write_random_gguf(path, o);
        auto model = Model::load(path);
        std::filesystem::remove(path);
        return model;
    }();
    return m;
}

runtime::ContextParams params(uint32_t n_batch, bool prefix, std::optional<DType> bank, DType window = DType::F32) {
    runtime::ContextParams p;
    p.n_ctx = 512;
    p.n_seq_max = 2;
    p.n_batch = n_batch;
    p.block_tokens = 4;
    p.prefix_caching = prefix;
    p.kv_dtype = window;
    p.ced_bank_dtype = bank;
    return p;
}

}  // namespace

TEST_CASE("ced fp4: 4-bit banks and int8/fp8 windows: prefill in any chunking == decode, bit for bit") {
    const auto& m = tiny_model();
    const std::vector<int32_t> toks = test::random_tokens(41, 256, 17);
    CedRuntime f(m.weights, opts(256, DType::F32, std::nullopt));
    auto sf = f.create();
    const std::vector<float> lf = f.prefill(sf, toks.data(), 41, PrefillMode::Exact).logits;
    struct Case {
        DType window;
        std::optional<DType> bank;
    };
    for (Case c : {Case{DType::F32, DType::FP4}, Case{DType::F16, DType::FP4}, Case{DType::I8, std::nullopt},
                   Case{DType::FP8_E4M3, std::nullopt}, Case{DType::I8, DType::FP4}}) {
        const DType bank = CedRuntime::bank_dtype_for(c.window, c.bank);
        INFO("windows " << std::string(dtype_name(c.window)) << ", banks " << std::string(dtype_name(bank)));
        CedRuntime a(m.weights, opts(16, c.window, c.bank)), b(m.weights, opts(1, c.window, c.bank)),
            e(m.weights, opts(7, c.window, c.bank));
        auto sa = a.create(), sb = b.create(), se = e.create();
        const std::vector<float> la = a.prefill(sa, toks.data(), 41, PrefillMode::Exact).logits;
        std::vector<float> lb = b.prefill(sb, toks.data(), 1, PrefillMode::Exact).logits;
        for (int64_t i = 1; i < 41; i++) lb = b.decode(sb, toks[i]);
        CHECK(same(la, lb));
        CHECK(same(la, e.prefill(se, toks.data(), 41, PrefillMode::Exact).logits));
        // The rows are rounded: the logits move, a little.
        const double d = test::logits_max_abs_diff(la, lf);
        INFO("max abs logit difference to f32 caches " << d);
        CHECK(d > 0.0);
        CHECK(d < 1.0);
        // The caches hold exactly the reported bytes per token (scales included).
        const CedMemory mem = ced_memory(m.weights->cfg, bank, c.window);
        CHECK(a.bank_cache().stats().bytes_per_token == mem.global_bytes_per_token);
        CHECK(uint64_t(a.window_cache().stats().bytes_per_token * m.weights->cfg.window) ==
              mem.window_bytes_per_sequence);
    }
    // Types a CED cache cannot hold, and widths the 4-bit group does not divide.
    CHECK_THROWS_AS(CedRuntime(m.weights, opts(16, DType::FP4, std::nullopt)), Error);
    CHECK_THROWS_AS(CedRuntime(m.weights, opts(16, DType::F32, DType::I8)), Error);
    static test::CedModel narrow = test::make_ced_model(preset("tiny"), 3);  // 16-wide indexer keys
    try {
        CedRuntime bad(narrow.weights, opts(16, DType::F32, DType::FP4));
        FAIL("fp4 indexer keys of width 16 were accepted");
    } catch (const Error& e) {
        CHECK(e.status() == KVRT_ERR_INVALID_ARGUMENT);
        CHECK(std::string(e.what()).find("multiple of fp4-e8m0's scale group of 32") != std::string::npos);
    }
}

TEST_CASE("ced fp4: the public V4.1 configuration's global KV is 890 bytes per token with 4-bit banks") {
    // CED.md: 40 layers, D = 512, 128-wide indexer keys, sources 2, 8, 14 (r = 2) and 20 (r = 1).
    CedConfig c;
    c.n_layers = 40;
    c.n_embd = 4096;
    c.entry_dim = 512;
    c.idx_dim = 128;
    c.window = 128;
    c.source_layers = {2, 8, 14, 20};
    c.source_ratios = {2, 2, 2, 1};
    const CedMemory fp4 = ced_memory(c, DType::FP4, DType::F16);
    CHECK(fp4.global_bytes_per_token == 890.0);
    CHECK(fp4.sources[0].main_bytes_per_token == 144.0);  // 288 B / r
    CHECK(fp4.sources[0].indexer_bytes_per_token == 34.0);  // 68 B / r
    CHECK(fp4.sources[3].main_bytes_per_token == 288.0);
    CHECK(fp4.window_bytes_per_sequence == uint64_t(40) * 128 * 512 * 2);
    // The same through a cache of that layout (what a context allocates).
    cache::CacheConfig bc = CedRuntime::bank_layout(c, 16, DType::FP4);
    bc.budget_bytes = 64u << 20;
    CHECK(cache::Cache(bc).stats().bytes_per_token == 890.0);
    // f16 banks for comparison: (512 + 128) x 2 B x (3 / 2 + 1).
    CHECK(ced_memory(c, DType::F16, DType::F16).global_bytes_per_token == 3200.0);
    CHECK(format_memory(c, fp4).find("890.00") != std::string::npos);
}

TEST_CASE("ced fp4: context with 4-bit banks: chunked == decode, a prefix hit == cold, bit for bit") {
    const auto& m = ced_model();
    const std::vector<int32_t> toks = test::random_tokens(40, static_cast<int32_t>(m->config().n_vocab), 5);
    runtime::Context dec(m, params(512, false, DType::FP4));
    dec.prefill(0, toks.data(), 1);
    for (size_t i = 1; i < toks.size(); ++i) {
        const int32_t seq = 0;
        dec.decode(&seq, &toks[i], 1);
    }
    for (uint32_t chunk : {5u, 512u}) {
        runtime::Context ctx(m, params(chunk, false, DType::FP4));
        ctx.prefill(0, toks.data(), toks.size());
        CHECK_MESSAGE(same(ctx.logits(0), dec.logits(0)), "chunk " << chunk);
    }
    runtime::Context f16(m, params(512, false, DType::F16));
    f16.prefill(0, toks.data(), toks.size());
    CHECK_FALSE(same(f16.logits(0), dec.logits(0)));  // the bank type is in force

    // A prefix-cache hit (window checkpoint resume) == a cold run; int8 windows too.
    for (DType window : {DType::F32, DType::I8}) {
        INFO("windows " << std::string(dtype_name(window)));
        std::vector<int32_t> a = test::random_tokens(48, static_cast<int32_t>(m->config().n_vocab), 9);
        std::vector<int32_t> b = a;
        b[30] = (b[30] + 1) % static_cast<int32_t>(m->config().n_vocab);
        runtime::Context cold(m, params(512, false, DType::FP4, window));
        cold.prefill(0, b.data(), b.size());
        runtime::Context ctx(m, params(512, true, DType::FP4, window));
        runtime::RequestStats st;
        ctx.prefill(0, a.data(), a.size(), &st);
        ctx.prefill(1, b.data(), b.size(), &st);
        CHECK(st.reused_from_cache >= 24);
        CHECK(same(ctx.logits(1), cold.logits(0)));
        const int32_t s1 = 1, s0 = 0, next = 3;
        ctx.decode(&s1, &next, 1);
        cold.decode(&s0, &next, 1);
        CHECK(same(ctx.logits(1), cold.logits(0)));
    }
}

TEST_CASE("ced fp4: a saved sequence is refused by a context of another bank type, and reloads into its own") {
    const auto& m = ced_model();
    const std::vector<int32_t> toks = test::random_tokens(30, static_cast<int32_t>(m->config().n_vocab), 21);
    const std::string path = (std::filesystem::temp_directory_path() /
                              ("kvrt_ced_fp4_seq_" + std::to_string(::getpid()) + ".bin")).string();
    runtime::Context a(m, params(512, true, DType::FP4));
    a.prefill(0, toks.data(), toks.size());
    a.save_seq(0, path);
    runtime::Context other(m, params(512, true, DType::F16));
    try {
        other.load_seq(0, path);
        FAIL("a sequence with 4-bit banks loaded into f16 banks");
    } catch (const Error& e) {
        CHECK(e.status() == KVRT_ERR_MISMATCH);
        MESSAGE("refusal: " << std::string(e.what()));
    }
    runtime::Context same_type(m, params(512, true, DType::FP4));
    same_type.load_seq(0, path);
    const int32_t s0 = 0, next = 7;
    a.decode(&s0, &next, 1);
    same_type.decode(&s0, &next, 1);
    CHECK(same(a.logits(0), same_type.logits(0)));
    std::filesystem::remove(path);
}

TEST_CASE("ced fp4: the bank type is part of the tier key and of the state-file layout") {
    // Blocks of a bank cache written under one bank type are never found under another: the
    // tier key hashes every layer's type (bank rows and indexer keys alike).
    const CedConfig c = tiny32();
    auto hash = [&](DType t) {
        cache::CacheConfig b = CedRuntime::bank_layout(c, 4, t);
        b.budget_bytes = 1 << 20;
        return cache::tier_layout_hash(cache::resolve_layout(b));
    };
    const auto f16 = hash(DType::F16), bf16 = hash(DType::BF16), f32 = hash(DType::F32), fp4 = hash(DType::FP4);
    CHECK_FALSE(fp4 == f16);
    CHECK_FALSE(fp4 == bf16);
    CHECK_FALSE(fp4 == f32);
    CHECK(fp4 == hash(DType::FP4));
}
