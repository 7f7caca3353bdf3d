// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// The Redis tier's pipelined put (BlockTier::put_many: every command of a batch sent before the
// first reply is read, what the cache's persist and eviction write-back use): the same contract
// as one put per payload — round trips, the client-side budget (victims deleted in the same
// pipeline), payloads over the budget dropped, and faults (down, out of memory part way through
// a batch) counted per payload, never raised.
#include <doctest/doctest.h>

#include "cache/block_hash.hpp"
#include "cache/redis_tier.hpp"
#include "redis_test_harness.hpp"

using namespace kvrt::cache;
using kvrt::test::PrivateRedis;
using kvrt::test::redis_tier_at;
using kvrt::test::tier_payload;
using kvrt::test::unique_key_prefix;

namespace {

TierKey key_n(uint64_t n) {
    TierKey k;
    k.block = Hash128{0x9e3779b97f4a7c15ull * (n + 1), n ^ 0x55};
    k.layout = Hash128{0x4321, 0x8765};
    return k;
}


struct Batch {
    std::vector<std::vector<uint8_t>> data;
    std::vector<TierPut> puts;
    void add(uint64_t k, size_t n, uint8_t seed) {
        data.push_back(tier_payload(n, seed));
        puts.push_back(TierPut{key_n(k), nullptr, 0});
    }
    // Pointers taken once every payload is in place (data may reallocate while adding).
    TierPut* ready() {
        for (size_t i = 0; i < puts.size(); ++i) {
            puts[i].framed = data[i].data();
            puts[i].n = data[i].size();
        }
        return puts.data();
    }
};

}  // namespace

TEST_CASE("redis tier batch: put_many stores every payload, in order, and each reads back") {
    KVRT_REDIS_OR_NOT_RUN(url);
    auto t = redis_tier_at(url, unique_key_prefix("batch"));
    Batch b;
    for (int i = 0; i < 12; ++i) b.add(uint64_t(i), 1000 + size_t(i) * 4097, uint8_t(i));
    b.add(3, 777, 99);  // the same key twice: the later payload wins, stored once in the accounting
    t->put_many(b.ready(), b.puts.size());
    TierStats s = t->stats();
    CHECK(s.puts == 13);
    CHECK(s.put_failures == 0);
    CHECK(s.errors == 0);
    uint64_t expect_bytes = 0;
    for (int i = 0; i < 12; ++i) expect_bytes += i == 3 ? 777 : 1000 + uint64_t(i) * 4097;
    CHECK(s.bytes_stored == expect_bytes);
    std::vector<uint8_t> out;
    for (int i = 0; i < 12; ++i) {
        CAPTURE(i);
        REQUIRE(t->get(key_n(uint64_t(i)), &out));
        CHECK(out == (i == 3 ? b.data[12] : b.data[size_t(i)]));
    }
    CHECK(redis_tier_counters(*t).connects == 1);  // one connection carried the whole batch
    t->put_many(nullptr, 0);                        // an empty batch does nothing
    CHECK(t->stats().puts == 13);
    for (int i = 0; i < 12; ++i) t->remove(key_n(uint64_t(i)));
}

TEST_CASE("redis tier batch: the budget holds across a batch, victims leave the server, an oversized payload is dropped") {
    KVRT_REDIS_OR_NOT_RUN(url);
    const size_t n = 10000;
    auto t = redis_tier_at(url, unique_key_prefix("batchbudget"), 3 * n);
    {
        Batch first;
        for (int i = 0; i < 2; ++i) first.add(uint64_t(i), n, uint8_t(i));
        t->put_many(first.ready(), first.puts.size());
    }
    // Three more of n bytes plus one larger than the whole budget: key 2 fits, keys 0 and 1 make
    // room for 3 and 4 (the batch's own pending bytes count), the big one is dropped and counted.
    Batch b;
    for (int i = 2; i < 5; ++i) b.add(uint64_t(i), n, uint8_t(i));
    b.add(9, 3 * n + 1, 9);
    t->put_many(b.ready(), b.puts.size());
    TierStats s = t->stats();
    CHECK(s.puts == 5);
    CHECK(s.put_failures == 1);
    CHECK(redis_tier_counters(*t).over_budget == 1);
    CHECK(s.evictions == 2);
    CHECK_FALSE(t->contains(key_n(0)));
    CHECK_FALSE(t->contains(key_n(1)));
    CHECK_FALSE(t->contains(key_n(9)));
    for (int i = 2; i < 5; ++i) CHECK(t->contains(key_n(uint64_t(i))));
    CHECK(s.bytes_stored == 3 * n);
    for (int i = 0; i < 10; ++i) t->remove(key_n(uint64_t(i)));
}

TEST_CASE("redis tier batch fault: Redis down, every payload of the batch is a counted dropped put") {
    if (!redis_tier_available()) {
        REQUIRE_FALSE(kvrt::test::redis_required());
        std::printf("KVRT_TEST_NOT_RUN: kvrt was built without Redis support\n");
        return;
    }
    const int port = kvrt::test::free_tcp_port();
    auto t = redis_tier_at("redis://127.0.0.1:" + std::to_string(port), "kvrt:", 0, 200);
    Batch b;
    for (int i = 0; i < 5; ++i) b.add(uint64_t(i), 100, uint8_t(i));
    t->put_many(b.ready(), b.puts.size());
    TierStats s = t->stats();
    CHECK(s.puts == 0);
    CHECK(s.put_failures == 5);
    CHECK(s.errors + s.timeouts == 1);  // one connection attempt for the batch
    CHECK(s.bytes_stored == 0);
    CHECK(t->last_error().find(std::to_string(port)) != std::string::npos);
}

TEST_CASE("redis tier batch fault: out of memory part way through a batch drops the rest, counted per payload") {
    PrivateRedis server({"--maxmemory", "2mb", "--maxmemory-policy", "noeviction"});
    KVRT_PRIVATE_REDIS_OR_NOT_RUN(server);
    auto t = redis_tier_at(server.url(), "kvrt:");
    Batch b;
    for (int i = 0; i < 40; ++i) b.add(uint64_t(i), 100000, uint8_t(i));
    t->put_many(b.ready(), b.puts.size());
    TierStats s = t->stats();
    CHECK(s.puts > 0);
    CHECK(s.put_failures > 0);
    CHECK(s.puts + s.put_failures == 40);
    CHECK(redis_tier_counters(*t).error_replies == s.put_failures);
    CHECK(t->last_error().find("OOM") != std::string::npos);
    CHECK(redis_tier_counters(*t).skipped == 0);  // error replies are not connection faults
    std::vector<uint8_t> out;
    REQUIRE(t->get(key_n(0), &out));  // stored before the server filled up
    CHECK(out == b.data[0]);
    CHECK_FALSE(t->get(key_n(39), &out));
    // The connection that carried the batch stayed in use: the gets above went through it.
    CHECK(redis_tier_counters(*t).connects == 1);
}
