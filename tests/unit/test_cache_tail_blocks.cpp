// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Tail blocks (Cache::publish_tail_locked): a released sequence's partly filled last block is kept
// for sub-block hits on its computed rows, is never a whole-block hit, and stays out of lower tiers
// and prefix files.

#include <doctest/doctest.h>

#include "cache/cache.hpp"
#include "cache/disk_tier.hpp"
#include "cache_test_util.hpp"

#include <filesystem>

using namespace kvrt;
using namespace kvrt::cache;
using kvrt::test::dense_config;
using kvrt::test::iota_tokens;

namespace {
// n tokens appended, the first `computed` of them marked computed; the K row of layer 0 at
// position p starts with the byte p + 1.
SeqId filled(Cache& c, const std::vector<int32_t>& t, int64_t computed) {
    SeqId s = c.create_sequence();
    c.append(s, t.data(), int64_t(t.size()));
    for (int64_t p = 0; p < int64_t(t.size()); p++) *c.k_row_mut(s, 0, p) = uint8_t(p + 1);
    c.mark_computed(s, computed);
    return s;
}
}  // namespace

TEST_CASE("cache tail blocks: a released sequence's last block serves sub-block hits on its computed rows") {
    Cache c(dense_config(2, 2, 8, 8, 1 << 20));  // blocks of 8 positions, 512 bytes each
    const uint64_t block = c.stats().block_set_bytes;
    const auto t = iota_tokens(21);
    // 21 positions appended, 20 computed: blocks 0-1 whole, block 2 holds computed rows 16-19.
    const SeqId a = filled(c, t, 20);
    CHECK(c.lookup_prefix({}, t.data(), 21, true) == 16);  // a live sequence's tail is not shared
    c.release(a);
    CHECK(c.stats().bytes_cached == 3 * block);  // the whole blocks and the tail
    c.check_invariants();

    CHECK(c.lookup_prefix({}, t.data(), 21, /*sub_block=*/false) == 16);  // never a whole-block hit
    CHECK(c.lookup_prefix({}, t.data(), 21, true) == 20);                  // its computed rows only
    CHECK(c.lookup_prefix({}, t.data(), 19, true) == 18);                  // never the last token
    std::vector<int32_t> u = t;
    u[18] = 777;
    CHECK(c.lookup_prefix({}, u.data(), 21, true) == 18);  // to the first changed token
    SeqKeys salted;
    salted.salt = "other";
    CHECK(c.lookup_prefix(salted, t.data(), 21, true) == 0);

    const SeqId b = c.create_sequence();
    CHECK(c.match_prefix(b, u.data(), 21, true) == 18);
    CHECK(*c.row(b, 0, 17, false) == 18);  // a's rows
    c.append(b, u.data() + 18, 3);         // copies the tail block before writing
    *c.k_row_mut(b, 0, 18) = 99;
    c.mark_computed(b, 21);
    CHECK(c.lookup_prefix({}, t.data(), 21, true) == 20);  // a's tail is intact
    c.check_invariants();
    c.release(b);
    c.check_invariants();
    // b's tail (positions 16-20, tokens u) is a second child of block 1.
    CHECK(c.lookup_prefix({}, u.data(), 21, true) == 20);
    const SeqId d = c.create_sequence();
    CHECK(c.match_prefix(d, u.data(), 21, true) == 20);
    CHECK(*c.row(d, 0, 18, false) == 99);
    c.release(d);
    c.check_invariants();
}

TEST_CASE("cache tail blocks: shared, redundant and CED-layout tails are not published, and eviction forgets them") {
    SUBCASE("a forked tail is published when its last holder releases it") {
        Cache c(dense_config(1, 1, 8, 8, 1 << 20));
        const uint64_t block = c.stats().block_set_bytes;
        const auto t = iota_tokens(12);
        const SeqId a = filled(c, t, 12);
        const SeqId f = c.fork(a);
        c.release(a);
        CHECK(c.stats().bytes_cached == 0);  // block 0 and the tail are still f's
        CHECK(c.lookup_prefix({}, t.data(), 12, true) == 8);
        c.release(f);
        CHECK(c.stats().bytes_cached == 2 * block);
        CHECK(c.lookup_prefix({}, t.data(), 12, true) == 11);
        c.check_invariants();
    }
    SUBCASE("a tail whose rows a cached block already starts with is not kept twice") {
        Cache c(dense_config(1, 1, 8, 8, 1 << 20));
        const uint64_t block = c.stats().block_set_bytes;
        const auto t = iota_tokens(16);
        c.release(filled(c, t, 16));
        CHECK(c.stats().bytes_cached == 2 * block);
        const std::vector<int32_t> shorter(t.begin(), t.begin() + 13);
        c.release(filled(c, shorter, 13));  // its tail: tokens 8-12, the start of the cached block 1
        CHECK(c.stats().bytes_cached == 2 * block);
        c.check_invariants();
    }
    SUBCASE("layouts with bank or indexer managers keep whole blocks only") {
        CacheConfig cfg;
        cfg.block_tokens = 8;
        cfg.budget_bytes = 1 << 20;
        LayerSpec w;
        w.kind = LayerKind::Window;
        w.n_kv_heads = 1;
        w.head_dim = 8;
        w.dtype = DType::F16;
        w.window = 64;
        LayerSpec bank = w;
        bank.kind = LayerKind::BankSource;
        bank.window = 0;
        bank.ratio = 2;
        cfg.layers = {w, bank};
        Cache c(cfg);
        const auto t = iota_tokens(12);
        SeqId s = c.create_sequence();
        c.append(s, t.data(), 12);
        c.mark_computed(s, 12);
        c.release(s);
        CHECK(c.stats().bytes_cached == c.stats().block_set_bytes);  // block 0 only
        CHECK(c.lookup_prefix({}, t.data(), 12, true) == 8);
    }
    SUBCASE("an evicted tail leaves no record behind") {
        Cache c(dense_config(1, 1, 8, 8, 4 * 256));  // room for 4 blocks of 256 bytes
        REQUIRE(c.stats().block_set_bytes == 256);
        const auto t = iota_tokens(12);
        c.release(filled(c, t, 12));  // block 0 and the tail: cached, the tail first in the LRU queue
        const auto other = iota_tokens(24, 500);
        const SeqId o = filled(c, other, 24);  // 3 blocks: evicts the tail
        CHECK(c.stats().evictions == 1);
        CHECK(c.lookup_prefix({}, t.data(), 12, true) == 8);
        c.check_invariants();
        c.release(o);
        c.check_invariants();
    }
}

TEST_CASE("cache tail blocks: lower tiers and prefix files carry whole blocks only") {
    namespace fs = std::filesystem;
    const std::string dir = kvrt::test::fresh_temp_dir("kvrt_tail_", "tier");
    const auto t = iota_tokens(21);
    {
        Cache c(dense_config(1, 2, 8, 8, 1 << 20));
        c.add_tier(make_disk_tier(DiskTierOptions{dir, 0}));
        c.release(filled(c, t, 21));
        CHECK(c.lookup_prefix({}, t.data(), 21, true) == 20);
        CHECK(c.persist() == 2);  // blocks 0 and 1, not the tail
        CHECK(c.save_prefixes(dir + "/prefixes.kvrt", 1, 2) == 2);
    }
    Cache d(dense_config(1, 2, 8, 8, 1 << 20));
    CHECK(d.load_prefixes(dir + "/prefixes.kvrt", 1, 2) == 2);
    CHECK(d.lookup_prefix({}, t.data(), 21, true) == 16);
    d.check_invariants();
    fs::remove_all(dir);
}
