// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Sub-block prefix hits (Cache::match_prefix / lookup_prefix with sub_block, block_children.hpp):
// a hit goes on into a cached child block up to the first token that differs.

#include <doctest/doctest.h>

#include "cache/block_children.hpp"
#include "cache/cache.hpp"
#include "cache_test_util.hpp"
#include "util/error.hpp"

#include <cstring>

using namespace kvrt;
using namespace kvrt::cache;
using kvrt::test::dense_config;
using kvrt::test::iota_tokens;
using kvrt::test::status_of;

namespace {
// A computed sequence of tokens whose K row of layer 0 at position p starts with the byte p + 1.
SeqId computed(Cache& c, const std::vector<int32_t>& t, const SeqKeys& keys = {}) {
    SeqId s = c.create_sequence(keys);
    c.append(s, t.data(), int64_t(t.size()));
    for (int64_t p = 0; p < int64_t(t.size()); p++) *c.k_row_mut(s, 0, p) = uint8_t(p + 1);
    c.mark_computed(s, int64_t(t.size()));
    return s;
}
}  // namespace

TEST_CASE("cache sub-block hits: up to the first changed token, the partial block copied on append") {
    Cache c(dense_config(2, 2, 8, 4, 1 << 20));  // blocks of 4 positions
    const auto t = iota_tokens(12);
    const SeqId a = computed(c, t);
    std::vector<int32_t> u = t;
    u[6] = 999;  // differs inside block 1 (positions 4..7)
    CHECK(c.lookup_prefix({}, u.data(), 12) == 4);                    // whole blocks
    CHECK(c.lookup_prefix({}, u.data(), 12, /*sub_block=*/true) == 6);  // to the changed token
    CHECK(c.lookup_prefix({}, t.data(), 12, true) == 11);             // never the last token
    CHECK(c.lookup_prefix({}, t.data(), 7, true) == 6);
    CHECK(c.lookup_prefix({}, t.data(), 1, true) == 0);
    SeqKeys salted;
    salted.salt = "tenant-b";
    CHECK(c.lookup_prefix(salted, u.data(), 12, true) == 0);  // another salt shares nothing

    const SeqId b = c.create_sequence();
    CHECK(c.match_prefix(b, u.data(), 12, true) == 6);
    SeqInfo bi = c.seq_info(b);
    CHECK(bi.length == 6);
    CHECK(bi.computed == 6);
    CHECK(bi.n_blocks == 2);
    // Block 1 is a's, shared and immutable until b appends.
    CHECK(c.paged_view(a, 0).blocks[1] == c.paged_view(b, 0).blocks[1]);
    CHECK(status_of([&] { c.k_row_mut(b, 0, 5); }) == KVRT_ERR_INVALID_STATE);
    c.check_invariants();
    c.append(b, u.data() + 6, 6);
    CHECK(c.paged_view(a, 0).blocks[1] != c.paged_view(b, 0).blocks[1]);  // copied
    CHECK(*c.row(b, 0, 4, false) == 5);  // the reused rows came with the copy
    CHECK(*c.row(b, 0, 5, false) == 6);
    *c.k_row_mut(b, 0, 6) = 77;
    CHECK(*c.row(a, 0, 6, false) == 7);  // a's cached block is untouched
    c.mark_computed(b, 12);
    CacheStats st = c.stats();
    CHECK(st.hit_tokens == 6);
    CHECK(st.queried_tokens == 12);
    c.check_invariants();
    // b's own block 1 (other tokens) is now a second child of block 0: the longer match wins.
    std::vector<int32_t> v = u;
    v[7] = 12345;
    CHECK(c.lookup_prefix({}, v.data(), 12, true) == 7);
    CHECK(c.lookup_prefix({}, t.data(), 12, true) == 11);
    c.release(a);
    c.release(b);
    c.check_invariants();
}

TEST_CASE("cache sub-block hits: the first block, and eviction forgets the records") {
    Cache c(dense_config(1, 1, 8, 8, 1 << 20));
    const auto t = iota_tokens(8);
    c.release(computed(c, t));  // one whole cached block, no whole block before it
    std::vector<int32_t> u = iota_tokens(10);
    u[3] = -5;
    CHECK(c.lookup_prefix({}, u.data(), 10) == 0);
    CHECK(c.lookup_prefix({}, u.data(), 10, true) == 3);
    CHECK(c.trim(0) > 0);  // evicts the block set
    CHECK(c.lookup_prefix({}, u.data(), 10, true) == 0);
    c.check_invariants();  // no record outlives its block
}

TEST_CASE("cache sub-block hits: a window layer needs the child block too") {
    CacheConfig cfg = dense_config(2, 1, 8, 4, 1 << 20);
    cfg.layers[1].kind = LayerKind::Window;
    cfg.layers[1].window = 6;
    Cache c(cfg);
    const auto t = iota_tokens(16);
    const SeqId a = computed(c, t);
    c.release(a);
    std::vector<int32_t> u = t;
    u[13] = 0;
    CHECK(c.lookup_prefix({}, u.data(), 16, true) == 13);
    const SeqId b = c.create_sequence();
    CHECK(c.match_prefix(b, u.data(), 16, true) == 13);
    // The window layer holds [13 - 6 + 1, 13) = positions 8..12: blocks 2 and 3; 0 and 1 are null.
    PagedKV w = c.paged_view(b, 1);
    REQUIRE(w.n_blocks == 4);
    CHECK(w.blocks[0] == nullptr);
    CHECK(w.blocks[1] == nullptr);
    CHECK(w.blocks[2] != nullptr);
    CHECK(w.blocks[3] != nullptr);
    c.append(b, u.data() + 13, 3);
    c.check_invariants();
}

TEST_CASE("BlockChildren: longest common prefix among usable children, add idempotent, remove") {
    BlockChildren bc;
    const Hash128 root = hash_root(), extra = hash_extra_keys({});
    const std::vector<std::vector<int32_t>> kids = {{1, 2, 3, 4}, {1, 2, 9, 9}, {1, 5, 0, 0}, {7, 7, 7, 7}};
    std::vector<Hash128> h;
    for (const auto& k : kids) {
        h.push_back(hash_block(root, extra, k.data(), k.size()));
        bc.add(root, extra, h.back(), k.data(), k.size());
    }
    bc.add(root, extra, h[0], kids[0].data(), 4);  // again: no change
    CHECK(bc.size() == 4);
    auto all = [](const Hash128&) { return true; };
    size_t c = 0;
    const std::vector<int32_t> q = {1, 2, 9, 1};
    CHECK(bc.longest(root, extra, q.data(), 3, &c, all) == h[1]);
    CHECK(c == 3);  // capped at n
    CHECK(bc.longest(root, extra, q.data(), 4, &c, all) == h[1]);
    CHECK(c == 3);
    // The best is unusable: the next best (2 tokens, {1, 2, 3, 4}).
    CHECK(bc.longest(root, extra, q.data(), 4, &c, [&](const Hash128& x) { return x != h[1]; }) == h[0]);
    CHECK(c == 2);
    const std::vector<int32_t> none = {8, 8};
    CHECK(bc.longest(root, extra, none.data(), 2, &c, all) == Hash128{});
    CHECK(c == 0);
    SeqKeys other;
    other.salt = "x";
    CHECK(bc.longest(root, hash_extra_keys(other), q.data(), 4, &c, all) == Hash128{});
    CHECK(c == 0);
    bc.remove(h[1]);
    bc.remove(h[1]);  // unknown now: no-op
    CHECK(bc.size() == 3);
    CHECK(bc.longest(root, extra, q.data(), 4, &c, all) == h[0]);
    CHECK(c == 2);
    for (const Hash128& x : h) bc.remove(x);
    CHECK(bc.size() == 0);
    CHECK(bc.longest(root, extra, q.data(), 4, &c, all) == Hash128{});
}
