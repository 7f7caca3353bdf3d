// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

#include <doctest/doctest.h>

#include "cache/cache.hpp"
#include "cache_test_util.hpp"
#include "util/error.hpp"

#include <cstring>

using namespace kvrt;
using namespace kvrt::cache;
using kvrt::test::dense_config;
using kvrt::test::iota_tokens;
using kvrt::test::status_of;

TEST_CASE("cache layout: bytes per token equal the formula and blocks have no padding") {
    // 30 layers x 3 KV heads x 64 x f16: 2 * 30 * 3 * 64 * 2 = 23040 bytes per token.
    Cache c(dense_config(30, 3, 64, 16, 64 << 20));
    CacheStats st = c.stats();
    CHECK(st.bytes_per_token == doctest::Approx(2.0 * 30 * 3 * 64 * 2));
    CHECK(st.kinds[int(LayerKind::Full)].bytes_per_token == doctest::Approx(23040));
    REQUIRE(st.managers.size() == 1);
    CHECK(st.managers[0].block_bytes == size_t(23040) * 16);
    CHECK(st.managers[0].padding_bytes == 0);
    CHECK(st.bytes_free == st.budget_bytes);
}

TEST_CASE("cache layout: CED-style mix of window, banks and indexer keys") {
    CacheConfig cfg;
    cfg.block_tokens = 16;
    cfg.budget_bytes = 16 << 20;
    auto add = [&](LayerKind k, int heads, int dim, int w, int r, int src) {
        LayerSpec s;
        s.kind = k;
        s.n_kv_heads = heads;
        s.head_dim = dim;
        s.dtype = DType::BF16;
        s.window = w;
        s.ratio = r;
        s.source = src;
        cfg.layers.push_back(s);
        return int(cfg.layers.size() - 1);
    };
    for (int i = 0; i < 4; i++) add(LayerKind::Window, 1, 64, 32, 1, -1);
    int src2 = add(LayerKind::BankSource, 1, 64, 0, 2, -1);
    int idx2 = add(LayerKind::IndexerKeys, 1, 32, 0, 0, src2);
    int src1 = add(LayerKind::BankSource, 1, 64, 0, 1, -1);
    int reader = add(LayerKind::BankReader, 0, 0, 0, 0, src1);
    Cache c(cfg);
    CacheStats st = c.stats();
    CHECK(st.kinds[int(LayerKind::Window)].bytes_per_token == doctest::Approx(4 * 2 * 64 * 2));
    // bank r = 2: one 64-wide bf16 row per 2 positions, K = V stored once.
    CHECK(st.kinds[int(LayerKind::BankSource)].bytes_per_token == doctest::Approx(64 * 2 / 2.0 + 64 * 2));
    CHECK(st.kinds[int(LayerKind::IndexerKeys)].bytes_per_token == doctest::Approx(32 * 2 / 2.0));
    CHECK(st.kinds[int(LayerKind::BankReader)].bytes_per_token == 0);
    CHECK(st.managers.size() == 4);  // window 32, bank r2, indexer r2, bank r1

    SeqId s = c.create_sequence();
    auto toks = iota_tokens(40);
    c.append(s, toks.data(), 40);
    // bank r = 2 rows: 20 groups; 8 rows per block.
    PagedKV v = c.paged_view(s, src2);
    CHECK(v.block_tokens == 8);
    CHECK(v.n_tokens == 20);
    CHECK(v.k_offset == v.v_offset);
    CHECK(c.k_row_mut(s, src2, 39) == c.v_row_mut(s, src2, 39));
    CHECK(c.k_row_mut(s, src2, 39) == c.row_mut(s, src2, 19, false));
    CHECK(c.k_row_mut(s, idx2, 5) != nullptr);
    // The reader sees the source's rows and cannot write.
    PagedKV rv = c.paged_view(s, reader);
    PagedKV sv = c.paged_view(s, src1);
    CHECK(rv.blocks == sv.blocks);
    CHECK(status_of([&] { c.k_row_mut(s, reader, 0); }) == KVRT_ERR_INVALID_ARGUMENT);
    c.check_invariants();
    // Window 32: after another append from 40, blocks wholly before 40-32+1 = 9 go: none (block 0 = [0,16)).
    c.mark_computed(s, 40);
    c.append(s, toks.data(), 20);  // length 60; queries from 40 read [9, 60)
    PagedKV wv = c.paged_view(s, 0);
    CHECK(wv.blocks[0] != nullptr);
    c.mark_computed(s, 60);
    c.append(s, toks.data(), 1);  // queries at 60 read [29, 61): block 0 dropped
    wv = c.paged_view(s, 0);
    CHECK(wv.blocks[0] == nullptr);
    CHECK(wv.blocks[1] != nullptr);
    CHECK(status_of([&] { c.k_row_mut(s, 0, 3); }) == KVRT_ERR_OUT_OF_RANGE);
    // Bytes per kind of this sequence: 61 positions = 4 blocks; the window dropped one.
    SeqInfo info = c.seq_info(s);
    CHECK(info.bytes_by_kind[int(LayerKind::Window)] == 3 * st.managers[0].block_bytes);
    CHECK(info.bytes_by_kind[int(LayerKind::BankSource)] == 4 * (st.managers[1].block_bytes + st.managers[3].block_bytes));
    CHECK(info.bytes_by_kind[int(LayerKind::IndexerKeys)] == 4 * st.managers[2].block_bytes);
    CHECK(info.bytes == info.bytes_by_kind[1] + info.bytes_by_kind[2] + info.bytes_by_kind[4]);
    c.check_invariants();
}

TEST_CASE("cache layout: invalid layouts are rejected with a message") {
    auto cfg = dense_config(2, 2, 8, 16, 1 << 20);
    cfg.layers[1].n_kv_heads = 0;
    CHECK(status_of([&] { Cache c(cfg); }) == KVRT_ERR_INVALID_ARGUMENT);
    cfg = dense_config(2, 2, 8, 16, 1 << 20);
    cfg.layers[0].kind = LayerKind::Window;
    cfg.layers[0].window = 0;
    CHECK(status_of([&] { Cache c(cfg); }) == KVRT_ERR_INVALID_ARGUMENT);
    cfg = dense_config(2, 2, 8, 16, 1 << 20);
    cfg.layers[0].kind = LayerKind::BankSource;
    cfg.layers[0].ratio = 0;
    CHECK(status_of([&] { Cache c(cfg); }) == KVRT_ERR_INVALID_ARGUMENT);
    cfg.layers[0].ratio = 3;  // 16 % 3 != 0
    CHECK(status_of([&] { Cache c(cfg); }) == KVRT_ERR_INVALID_ARGUMENT);
    cfg = dense_config(2, 1 << 30, 1 << 30, 16, 1 << 20);
    CHECK(status_of([&] { Cache c(cfg); }) == KVRT_ERR_OVERFLOW);
    cfg = dense_config(2, 2, 8, 0, 1 << 20);
    CHECK(status_of([&] { Cache c(cfg); }) == KVRT_ERR_INVALID_ARGUMENT);
    cfg = dense_config(2, 2, 8, 16, 0);
    CHECK(status_of([&] { Cache c(cfg); }) == KVRT_ERR_INVALID_ARGUMENT);
    cfg = dense_config(2, 2, 8, 16, 1 << 20);
    cfg.layers[1].kind = LayerKind::BankReader;
    cfg.layers[1].source = 0;  // layer 0 is full, not a bank
    CHECK(status_of([&] { Cache c(cfg); }) == KVRT_ERR_INVALID_ARGUMENT);
}

TEST_CASE("cache prefix: hits are whole blocks, never the last token, and need mark_computed") {
    Cache c(dense_config(2, 2, 8, 4, 1 << 20));
    auto t = iota_tokens(12);
    SeqId a = c.create_sequence();
    c.append(a, t.data(), 12);
    // Not computed yet: nothing is shareable.
    CHECK(c.lookup_prefix({}, t.data(), 12) == 0);
    c.mark_computed(a, 12);
    CHECK(c.lookup_prefix({}, t.data(), 12) == 8);  // never covers the last token
    CHECK(c.lookup_prefix({}, t.data(), 13) == 12);
    CHECK(c.lookup_prefix({}, t.data(), 7) == 4);
    std::vector<int32_t> u = t;
    u[5] = 999;
    CHECK(c.lookup_prefix({}, u.data(), 12) == 4);
    SeqKeys salted;
    salted.salt = "tenant-b";
    CHECK(c.lookup_prefix(salted, t.data(), 12) == 0);
    SeqKeys other_model;
    other_model.fingerprint_lo = 42;
    CHECK(c.lookup_prefix(other_model, t.data(), 12) == 0);

    SeqId b = c.create_sequence();
    CHECK(c.match_prefix(b, t.data(), 12) == 8);
    SeqInfo bi = c.seq_info(b);
    CHECK(bi.length == 8);
    CHECK(bi.computed == 8);
    // The shared blocks are the same memory.
    CHECK(c.paged_view(a, 0).blocks[1] == c.paged_view(b, 0).blocks[1]);
    CHECK(status_of([&] { c.k_row_mut(b, 0, 5); }) == KVRT_ERR_INVALID_STATE);
    CHECK(status_of([&] { c.match_prefix(b, t.data(), 12); }) == KVRT_ERR_INVALID_STATE);
    c.append(b, t.data() + 8, 4);
    CHECK(c.k_row_mut(b, 0, 9) != nullptr);
    CacheStats st = c.stats();
    CHECK(st.queried_tokens == 12);
    CHECK(st.hit_tokens == 8);
    c.check_invariants();
    // Released: blocks stay cached and hit again.
    c.release(a);
    c.release(b);
    st = c.stats();
    CHECK(st.bytes_in_use == 0);
    CHECK(st.bytes_cached > 0);
    CHECK(c.lookup_prefix({}, t.data(), 13) == 12);
    CHECK(status_of([&] { c.release(a); }) == KVRT_ERR_NOT_FOUND);
    CHECK(status_of([&] { c.release(12345); }) == KVRT_ERR_NOT_FOUND);
    c.check_invariants();
}

TEST_CASE("cache fork and truncate: copy-on-write keeps shared rows intact") {
    Cache c(dense_config(1, 1, 4, 4, 1 << 20, DType::F32));
    auto t = iota_tokens(6);
    SeqId a = c.create_sequence();
    c.append(a, t.data(), 6);
    for (int p = 0; p < 6; p++) {
        float* k = reinterpret_cast<float*>(c.k_row_mut(a, 0, p));
        for (int d = 0; d < 4; d++) k[d] = float(p * 10 + d);
    }
    CHECK(status_of([&] { c.fork(a); }) == KVRT_ERR_INVALID_STATE);  // positions not computed
    c.mark_computed(a, 6);
    SeqId b = c.fork(a);
    CHECK(c.paged_view(a, 0).blocks[1] == c.paged_view(b, 0).blocks[1]);
    // The shared partial last block is copied on append.
    c.append(b, t.data(), 1);
    const uint8_t* shared_a = c.paged_view(a, 0).blocks[1];
    const uint8_t* own_b = c.paged_view(b, 0).blocks[1];
    CHECK(shared_a != own_b);
    float* kb = reinterpret_cast<float*>(c.k_row_mut(b, 0, 5));
    CHECK(kb[0] == 50.0f);  // copied
    kb[0] = -1;
    CHECK(reinterpret_cast<const float*>(c.row(a, 0, 5, false))[0] == 50.0f);
    // Truncate into a full cached block, then append: copy-on-write again.
    c.truncate(a, 2);
    CHECK(c.seq_info(a).length == 2);
    CHECK(c.seq_info(a).computed == 2);
    const uint8_t* cached0 = c.paged_view(a, 0).blocks[0];
    c.append(a, t.data(), 1);
    CHECK(c.paged_view(a, 0).blocks[0] != cached0);
    CHECK(reinterpret_cast<const float*>(c.row(a, 0, 1, false))[1] == 11.0f);
    CHECK(status_of([&] { c.truncate(a, 4); }) == KVRT_ERR_OUT_OF_RANGE);
    c.check_invariants();
}

TEST_CASE("cache append: CACHE_FULL changes nothing, eviction frees cached blocks") {
    // Block = 4 positions x 1 layer x (K+V) x 8 floats = 256 bytes; budget = 4 blocks.
    Cache c(dense_config(1, 1, 8, 4, 1024, DType::F32));
    auto t = iota_tokens(32);
    SeqId a = c.create_sequence();
    c.append(a, t.data(), 12);
    CacheStats before = c.stats();
    CHECK(before.bytes_in_use == 768);
    CHECK(status_of([&] { c.append(a, t.data(), 8); }) == KVRT_ERR_CACHE_FULL);
    CacheStats after = c.stats();
    CHECK(after.bytes_in_use == before.bytes_in_use);
    CHECK(c.seq_info(a).length == 12);
    c.mark_computed(a, 12);
    c.release(a);
    CHECK(c.stats().bytes_cached == 768);
    SeqId b = c.create_sequence();
    std::vector<int32_t> u(16, 7);
    c.append(b, u.data(), 16);  // needs 4 blocks: 3 cached ones are evicted
    CacheStats st = c.stats();
    CHECK(st.evictions == 3);
    CHECK(st.bytes_in_use == 1024);
    CHECK(st.bytes_free == 0);
    CHECK(c.lookup_prefix({}, t.data(), 13) == 0);
    c.check_invariants();
}
