// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// The Redis tier against the BlockTier contract directly: keys, round trips,
// the client-side budget, tenant isolation of keys, and every fault (down at
// start, bad URL, hung server, killed mid-run and restarted, out of memory).
#include <doctest/doctest.h>

#include "cache/block_hash.hpp"
#include "cache/redis_tier.hpp"
#include "redis_test_harness.hpp"

#include <atomic>
#include <cctype>
#include <thread>

using namespace kvrt::cache;
using kvrt::test::PrivateRedis;
using kvrt::test::redis_tier_at;
using kvrt::test::tier_payload;
using kvrt::test::SilentServer;
using kvrt::test::unique_key_prefix;

namespace {

TierKey key_n(uint64_t n, uint64_t layout = 0x1234) {
    TierKey k;
    k.block = Hash128{0x9e3779b97f4a7c15ull * (n + 1), n};
    k.layout = Hash128{layout, ~layout};
    return k;
}


}  // namespace

TEST_CASE("redis tier: URLs parse, and malformed ones are refused with a message") {
    std::string host, err;
    int port = 0, db = -1;
    REQUIRE(parse_redis_url("redis://127.0.0.1:6390/3", &host, &port, &db, &err));
    CHECK(host == "127.0.0.1");
    CHECK(port == 6390);
    CHECK(db == 3);
    REQUIRE(parse_redis_url("redis://cachehost", &host, &port, &db, &err));
    CHECK(host == "cachehost");
    CHECK(port == 6379);
    CHECK(db == 0);
    REQUIRE(parse_redis_url("localhost:7000", &host, &port, &db, &err));
    CHECK(port == 7000);
    for (const char* bad : {"http://h:1", "redis://:6379", "redis://h:0", "redis://h:65536", "redis://h:x",
                            "redis://h:1/-1", "redis://h:1/a", "redis://u:p@h:1", ""}) {
        CAPTURE(bad);
        err.clear();
        CHECK_FALSE(parse_redis_url(bad, &host, &port, &db, &err));
        CHECK(err.find("redis URL") != std::string::npos);
    }
}

TEST_CASE("redis tier: keys are prefix + hex(layout) + ':' + hex(block), hi word first") {
    TierKey k;
    k.layout = Hash128{0x0f0e0d0c0b0a0908ull, 0x0102030405060708ull};
    k.block = Hash128{0x1111111111111111ull, 0xfedcba9876543210ull};
    std::string s = redis_tier_key("kvrt:", k);
    CHECK(s == std::string("kvrt:") + "01020304050607080f0e0d0c0b0a0908" + ":" + "fedcba98765432101111111111111111");
    // A different block or layout gives a different key; the same gives the same.
    CHECK(redis_tier_key("kvrt:", key_n(1)) != redis_tier_key("kvrt:", key_n(2)));
    CHECK(redis_tier_key("kvrt:", key_n(1, 1)) != redis_tier_key("kvrt:", key_n(1, 2)));
    CHECK(redis_tier_key("p:", key_n(7)) == redis_tier_key("p:", key_n(7)));
}

TEST_CASE("redis tier: tenants' blocks of the same tokens have different keys") {
    SeqKeys a, b;
    a.fingerprint_lo = b.fingerprint_lo = 42;
    a.salt = "tenant-S";
    b.salt = "tenant-T";
    std::vector<int32_t> toks(16);
    for (int i = 0; i < 16; ++i) toks[i] = 100 + i;
    TierKey ka{hash_block(hash_root(), hash_extra_keys(a), toks.data(), toks.size()), Hash128{1, 2}};
    TierKey kb{hash_block(hash_root(), hash_extra_keys(b), toks.data(), toks.size()), Hash128{1, 2}};
    CHECK_FALSE(ka == kb);
    CHECK(redis_tier_key("kvrt:", ka) != redis_tier_key("kvrt:", kb));
}

TEST_CASE("redis tier: put, get, contains and remove round-trip binary payloads") {
    KVRT_REDIS_OR_NOT_RUN(url);
    auto t = redis_tier_at(url, unique_key_prefix("roundtrip"));
    CHECK(std::string(t->kind()) == "redis");
    std::vector<uint8_t> out;
    CHECK_FALSE(t->get(key_n(1), &out));  // absent
    CHECK_FALSE(t->contains(key_n(1)));
    const std::vector<size_t> sizes = {1, 100, 65536, 737280, 2u << 20};
    for (size_t i = 0; i < sizes.size(); ++i) {
        auto p = tier_payload(sizes[i], static_cast<uint8_t>(i));
        t->put(key_n(i), p.data(), p.size());
    }
    uint64_t total = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
        CAPTURE(sizes[i]);
        CHECK(t->contains(key_n(i)));
        out.clear();
        REQUIRE(t->get(key_n(i), &out));
        CHECK(out == tier_payload(sizes[i], static_cast<uint8_t>(i)));
        total += sizes[i];
    }
    // Replacing a key replaces its value and its accounted bytes.
    auto p2 = tier_payload(300, 99);
    t->put(key_n(0), p2.data(), p2.size());
    REQUIRE(t->get(key_n(0), &out));
    CHECK(out == p2);
    TierStats s = t->stats();
    CHECK(s.puts == sizes.size() + 1);
    CHECK(s.put_failures == 0);
    CHECK(s.hits == sizes.size() + 1);
    CHECK(s.misses == 1);
    CHECK(s.errors == 0);
    CHECK(s.timeouts == 0);
    CHECK(s.bytes_stored == total - sizes[0] + 300);
    for (size_t i = 0; i < sizes.size(); ++i) t->remove(key_n(i));
    CHECK_FALSE(t->contains(key_n(3)));
    CHECK_FALSE(t->get(key_n(3), &out));
    CHECK(t->stats().bytes_stored == 0);
    CHECK(t->last_error().empty());
}

TEST_CASE("redis tier: a block written under salt S is never returned for salt T") {
    KVRT_REDIS_OR_NOT_RUN(url);
    const std::string prefix = unique_key_prefix("tenants");
    auto t = redis_tier_at(url, prefix);
    SeqKeys s_keys, t_keys;
    s_keys.salt = "S";
    t_keys.salt = "T";
    std::vector<int32_t> toks(32);
    for (int i = 0; i < 32; ++i) toks[i] = 7 * i + 3;
    Hash128 layout{0xabc, 0xdef};
    Hash128 hs = hash_root(), ht = hash_root();
    std::vector<TierKey> ks, kt;
    for (int b = 0; b < 2; ++b) {
        hs = hash_block(hs, hash_extra_keys(s_keys), toks.data() + 16 * b, 16);
        ht = hash_block(ht, hash_extra_keys(t_keys), toks.data() + 16 * b, 16);
        ks.push_back({hs, layout});
        kt.push_back({ht, layout});
    }
    for (int b = 0; b < 2; ++b) {
        auto p = tier_payload(4096, static_cast<uint8_t>(b));
        t->put(ks[b], p.data(), p.size());
    }
    std::vector<uint8_t> out;
    for (int b = 0; b < 2; ++b) {
        CHECK(t->get(ks[b], &out));
        CHECK_FALSE(t->contains(kt[b]));
        CHECK_FALSE(t->get(kt[b], &out));
    }
    for (auto& k : ks) t->remove(k);
}

TEST_CASE("redis tier: the client-side budget evicts this process's least recently used keys") {
    KVRT_REDIS_OR_NOT_RUN(url);
    const size_t n = 10000;
    auto t = redis_tier_at(url, unique_key_prefix("budget"), 3 * n);
    std::vector<uint8_t> out;
    for (int i = 0; i < 3; ++i) {
        auto p = tier_payload(n, static_cast<uint8_t>(i));
        t->put(key_n(i), p.data(), p.size());
    }
    REQUIRE(t->get(key_n(0), &out));  // key 0 is now the most recently used
    for (int i = 3; i < 5; ++i) {
        auto p = tier_payload(n, static_cast<uint8_t>(i));
        t->put(key_n(i), p.data(), p.size());
    }
    TierStats s = t->stats();
    CHECK(s.puts == 5);
    CHECK(s.evictions == 2);
    CHECK(s.bytes_stored == 3 * n);
    CHECK(t->get(key_n(0), &out));
    CHECK_FALSE(t->contains(key_n(1)));  // removed from the server, not only forgotten
    CHECK_FALSE(t->contains(key_n(2)));
    CHECK(t->contains(key_n(3)));
    CHECK(t->contains(key_n(4)));
    // A payload larger than the whole budget is dropped and counted.
    auto big = tier_payload(3 * n + 1, 9);
    t->put(key_n(9), big.data(), big.size());
    CHECK(t->stats().put_failures == 1);
    CHECK(redis_tier_counters(*t).over_budget == 1);
    CHECK_FALSE(t->contains(key_n(9)));
    CHECK(t->last_error().find("exceeds the tier budget") != std::string::npos);
    for (int i = 0; i < 5; ++i) t->remove(key_n(i));
}

TEST_CASE("redis tier: concurrent puts and gets from four threads all land") {
    KVRT_REDIS_OR_NOT_RUN(url);
    auto t = redis_tier_at(url, unique_key_prefix("concurrent"));
    std::atomic<int> bad{0};
    std::vector<std::thread> th;
    for (int w = 0; w < 4; ++w) {
        th.emplace_back([&, w] {
            std::vector<uint8_t> out;
            for (int i = 0; i < 40; ++i) {
                TierKey k = key_n(1000 * w + i);
                auto p = tier_payload(2048 + i, static_cast<uint8_t>(w + i));
                t->put(k, p.data(), p.size());
                if (!t->get(k, &out) || out != p) bad++;
            }
        });
    }
    for (auto& x : th) x.join();
    CHECK(bad.load() == 0);
    TierStats s = t->stats();
    CHECK(s.puts == 160);
    CHECK(s.hits == 160);
    CHECK(s.errors == 0);
    CHECK(redis_tier_counters(*t).connects <= 4);
    for (int w = 0; w < 4; ++w)
        for (int i = 0; i < 40; ++i) t->remove(key_n(1000 * w + i));
}

TEST_CASE("redis tier fault: down at start, every call misses, is counted and then backs off") {
    if (!redis_tier_available()) {
        REQUIRE_FALSE(kvrt::test::redis_required());
        std::printf("KVRT_TEST_NOT_RUN: kvrt was built without Redis support\n");
        return;
    }
    const int port = kvrt::test::free_tcp_port();  // nothing listens there
    auto t = redis_tier_at("redis://127.0.0.1:" + std::to_string(port), "kvrt:", 0, 200);
    std::vector<uint8_t> out;
    auto p = tier_payload(64, 1);
    t->put(key_n(1), p.data(), p.size());
    CHECK_FALSE(t->get(key_n(1), &out));
    CHECK_FALSE(t->contains(key_n(1)));
    t->remove(key_n(1));
    TierStats s = t->stats();
    CHECK(s.puts == 0);
    CHECK(s.put_failures == 1);
    CHECK(s.gets == 1);
    CHECK(s.hits == 0);
    CHECK(s.errors + s.timeouts == 4);
    CHECK(t->last_error().find(std::to_string(port)) != std::string::npos);
    // The first two failures open a back-off window: later calls skip the server.
    CHECK(redis_tier_counters(*t).skipped >= 2);
    CHECK(redis_tier_counters(*t).connects == 0);
}

TEST_CASE("redis tier fault: a malformed URL gives a tier that misses and says why") {
    auto t = redis_tier_at("redis://cache:notaport", "kvrt:");
    std::vector<uint8_t> out;
    CHECK_FALSE(t->get(key_n(1), &out));
    auto p = tier_payload(8, 1);
    t->put(key_n(1), p.data(), p.size());
    TierStats s = t->stats();
    CHECK(s.errors == 2);
    CHECK(s.put_failures == 1);
    if (redis_tier_available()) CHECK(t->last_error().find("notaport") != std::string::npos);
    else CHECK(t->last_error().find("without Redis") != std::string::npos);
}

TEST_CASE("redis tier fault: a server that never answers costs a counted timeout, not a hang") {
    if (!redis_tier_available()) {
        REQUIRE_FALSE(kvrt::test::redis_required());
        std::printf("KVRT_TEST_NOT_RUN: kvrt was built without Redis support\n");
        return;
    }
    SilentServer silent;
    auto t = redis_tier_at(silent.url(), "kvrt:", 0, 100);
    std::vector<uint8_t> out;
    CHECK_FALSE(t->get(key_n(1), &out));
    TierStats s = t->stats();
    CHECK(s.timeouts == 1);
    CHECK(s.hits == 0);
    CHECK(t->last_error().find("timeout") != std::string::npos);
    auto p = tier_payload(64, 1);
    t->put(key_n(1), p.data(), p.size());  // second failure: times out as well, opens the back-off
    s = t->stats();
    CHECK(s.timeouts == 2);
    CHECK(s.put_failures == 1);
    CHECK_FALSE(t->contains(key_n(1)));  // skipped at once
    CHECK(redis_tier_counters(*t).skipped == 1);
}

TEST_CASE("redis tier fault: a server killed mid-run gives counted misses, and a restart is used again") {
    PrivateRedis server;
    KVRT_PRIVATE_REDIS_OR_NOT_RUN(server);
    auto t = redis_tier_at(server.url(), "kvrt:", 0, 500);
    std::vector<uint8_t> out;
    auto p = tier_payload(50000, 3);
    t->put(key_n(1), p.data(), p.size());
    REQUIRE(t->get(key_n(1), &out));
    CHECK(out == p);

    server.kill();
    // The pooled connection is dead: the next calls fail (no SIGPIPE kills the test).
    out.clear();
    CHECK_FALSE(t->get(key_n(1), &out));
    t->put(key_n(2), p.data(), p.size());
    t->put(key_n(3), p.data(), p.size());
    TierStats s = t->stats();
    CHECK(s.hits == 1);
    CHECK(s.put_failures == 2);
    CHECK(s.errors + s.timeouts >= 3);
    CHECK(!t->last_error().empty());

    REQUIRE(server.restart());
    redis_tier_reset_backoff(*t);  // no waiting out the back-off in a test
    CHECK_FALSE(t->get(key_n(1), &out));  // a fresh server: a plain miss
    t->put(key_n(4), p.data(), p.size());
    REQUIRE(t->get(key_n(4), &out));
    CHECK(out == p);
    s = t->stats();
    CHECK(s.puts == 2);
    CHECK(s.misses == 1);
}

TEST_CASE("redis tier fault: out of memory under noeviction drops puts with a counted error") {
    PrivateRedis server({"--maxmemory", "2mb", "--maxmemory-policy", "noeviction"});
    KVRT_PRIVATE_REDIS_OR_NOT_RUN(server);
    auto t = redis_tier_at(server.url(), "kvrt:");
    auto p = tier_payload(100000, 5);
    int stored = 0;
    for (int i = 0; i < 60; ++i) {
        t->put(key_n(i), p.data(), p.size());
        if (t->stats().put_failures == 0) stored = i + 1;
    }
    TierStats s = t->stats();
    CHECK(stored > 0);
    CHECK(s.put_failures > 0);
    CHECK(s.puts + s.put_failures == 60);
    CHECK(redis_tier_counters(*t).error_replies == s.put_failures);
    CHECK(t->last_error().find("OOM") != std::string::npos);
    // What was stored before the server filled up still reads back.
    std::vector<uint8_t> out;
    REQUIRE(t->get(key_n(0), &out));
    CHECK(out == p);
    CHECK_FALSE(t->get(key_n(59), &out));
    // An error reply is not a connection fault: no back-off.
    CHECK(redis_tier_counters(*t).skipped == 0);
}
