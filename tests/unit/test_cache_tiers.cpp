// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// The prefix cache's lower tiers: the tier envelope, the disk tier (LRU budget,
// corruption, two processes on one directory, writers killed with SIGKILL) and
// the cache's integration (evicted block sets reach the tier; a fresh cache
// loads them back bit for bit; corrupt entries are counted misses).
#include <doctest/doctest.h>

#include "cache/cache.hpp"
#include "cache/disk_tier.hpp"
#include "cache/tier_envelope.hpp"
#include "cache_test_util.hpp"
#include "util/error.hpp"

#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace kvrt;
using namespace kvrt::cache;
using kvrt::test::iota_tokens;
namespace fs = std::filesystem;

namespace {

std::string temp_dir(const char* name) { return kvrt::test::fresh_temp_dir("kvrt_tiers_", name); }

TierKey key_of(uint64_t i) { return TierKey{Hash128{i * 0x9e3779b97f4a7c15ull + 1, i}, Hash128{7, 9}}; }

std::vector<uint8_t> payload_of(uint64_t i, size_t n) {
    std::vector<uint8_t> v(n);
    std::mt19937_64 g(i);
    for (auto& b : v) b = uint8_t(g());
    return v;
}

std::vector<uint8_t> framed_of(uint64_t i, size_t n) {
    auto p = payload_of(i, n);
    return tier_frame(key_of(i), p.data(), p.size());
}

std::vector<fs::path> entries(const std::string& dir) {
    std::vector<fs::path> v;
    for (const auto& e : fs::directory_iterator(dir))
        if (e.path().extension() == ".kvb") v.push_back(e.path());
    return v;
}

void flip_byte(const fs::path& p, size_t at) {
    std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(at));
    char c = 0;
    f.get(c);
    f.seekp(static_cast<std::streamoff>(at));
    f.put(char(c ^ 0x40));
}

// Fills every row of [from, to) with a value of (layer, pos, salt) and marks them computed.
void compute(Cache& c, SeqId s, int64_t from, int64_t to, float salt) {
    for (int32_t l = 0; l < c.n_layers(); l++) {
        const LayerGeometry& g = c.geometry(l);
        std::vector<uint16_t> row(g.row_bytes / 2);
        for (int64_t p = from; p < to; p++) {
            for (size_t i = 0; i < row.size(); i++) row[i] = uint16_t(l * 977 + p * 31 + i + int(salt));
            std::memcpy(c.k_row_mut(s, l, p), row.data(), g.row_bytes);
            for (auto& x : row) x ^= 0x5555;
            std::memcpy(c.v_row_mut(s, l, p), row.data(), g.row_bytes);
        }
    }
    c.mark_computed(s, to);
}

std::vector<uint8_t> read_all(Cache& c, SeqId s, int64_t n) {
    std::vector<uint8_t> out;
    for (int32_t l = 0; l < c.n_layers(); l++) {
        const LayerGeometry& g = c.geometry(l);
        std::vector<uint8_t> k(g.row_bytes * size_t(n)), v(k.size());
        c.read_rows(s, l, 0, n, k.data(), v.data());
        out.insert(out.end(), k.begin(), k.end());
        out.insert(out.end(), v.begin(), v.end());
    }
    return out;
}

}  // namespace

TEST_CASE("tier envelope: round trip, and every kind of mismatch is rejected") {
    auto p = payload_of(3, 1000);
    auto f = tier_frame(key_of(3), p.data(), p.size());
    const uint8_t* got = nullptr;
    size_t n = 0;
    std::string why;
    REQUIRE(tier_unframe(key_of(3), f.data(), f.size(), &got, &n, &why));
    CHECK(n == p.size());
    CHECK(std::memcmp(got, p.data(), n) == 0);
    CHECK_FALSE(tier_unframe(key_of(4), f.data(), f.size(), &got, &n, &why));  // another block
    TierKey other_layout = key_of(3);
    other_layout.layout.lo ^= 1;
    CHECK_FALSE(tier_unframe(other_layout, f.data(), f.size(), &got, &n, &why));
    CHECK(why.find("layout") != std::string::npos);
    CHECK_FALSE(tier_unframe(key_of(3), f.data(), f.size() - 1, &got, &n, &why));  // truncated
    for (size_t at : {size_t(0), size_t(9), size_t(20), size_t(60), f.size() / 2, f.size() - 3}) {
        auto g = f;
        g[at] ^= 0x01;
        CHECK_FALSE(tier_unframe(key_of(3), g.data(), g.size(), &got, &n, &why));
    }
    auto v = f;
    v[8] = uint8_t(kTierEnvelopeVersion + 1);  // another format version
    CHECK_FALSE(tier_unframe(key_of(3), v.data(), v.size(), &got, &n, &why));
    CHECK(why.find("version") != std::string::npos);
    CHECK(tier_key_hex(key_of(3)).size() == 64);
}

TEST_CASE("disk tier: put, get, contains, remove, and corrupt or foreign files read as counted misses") {
    const std::string dir = temp_dir("basic");
    auto t = make_disk_tier(DiskTierOptions{dir, 0});
    std::vector<uint8_t> out;
    CHECK_FALSE(t->get(key_of(1), &out));
    CHECK(t->stats().misses == 1);
    auto f1 = framed_of(1, 5000);
    t->put(key_of(1), f1.data(), f1.size());
    CHECK(t->contains(key_of(1)));
    REQUIRE(t->get(key_of(1), &out));
    CHECK(out == f1);
    CHECK(t->stats().hits == 1);
    CHECK(t->stats().puts == 1);
    t->remove(key_of(1));
    CHECK_FALSE(t->contains(key_of(1)));

    // A flipped byte: a miss, counted corrupt, the file removed.
    t->put(key_of(2), framed_of(2, 5000).data(), framed_of(2, 5000).size());
    REQUIRE(entries(dir).size() == 1);
    flip_byte(entries(dir)[0], 3000);
    CHECK_FALSE(t->get(key_of(2), &out));
    CHECK(t->stats().corrupt == 1);
    CHECK(entries(dir).empty());
    // A file of another key stored under this key's name (foreign content): corrupt.
    auto f3 = framed_of(3, 800);
    t->put(key_of(3), f3.data(), f3.size());
    fs::rename(entries(dir)[0], fs::path(dir) / (tier_key_hex(key_of(4)) + ".kvb"));
    CHECK_FALSE(t->get(key_of(4), &out));
    CHECK(t->stats().corrupt == 2);
    // A truncated file (a torn write): corrupt.
    t->put(key_of(5), framed_of(5, 4000).data(), framed_of(5, 4000).size());
    fs::resize_file(entries(dir)[0], 1000);
    CHECK_FALSE(t->get(key_of(5), &out));
    CHECK(t->stats().corrupt == 3);
    // An unusable directory is an error at creation.
    CHECK_THROWS_AS(make_disk_tier(DiskTierOptions{"/proc/kvrt_no_such_dir/x", 0}), kvrt::Error);
    CHECK_THROWS_AS(make_disk_tier(DiskTierOptions{"", 0}), kvrt::Error);
    fs::remove_all(dir);
}

TEST_CASE("disk tier: the byte budget removes the least recently used entries") {
    const std::string dir = temp_dir("budget");
    const size_t sz = 10000;
    const uint64_t one = framed_of(0, sz).size();
    auto t = make_disk_tier(DiskTierOptions{dir, one * 4});
    std::vector<uint8_t> out;
    for (uint64_t i = 0; i < 4; i++) {
        auto f = framed_of(i, sz);
        t->put(key_of(i), f.data(), f.size());
        std::this_thread::sleep_for(std::chrono::milliseconds(20));  // distinct mtimes
    }
    REQUIRE(t->get(key_of(0), &out));  // entry 0 is now the most recently used
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    for (uint64_t i = 4; i < 6; i++) {
        auto f = framed_of(i, sz);
        t->put(key_of(i), f.data(), f.size());
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    uint64_t total = 0;
    for (const auto& e : entries(dir)) total += fs::file_size(e);
    CHECK(total <= one * 4);
    CHECK(t->contains(key_of(0)));      // used recently: kept
    CHECK_FALSE(t->contains(key_of(1)));  // least recently used: gone
    CHECK(t->contains(key_of(5)));
    CHECK(t->stats().evictions >= 2);
    fs::remove_all(dir);
}

TEST_CASE("disk tier: two processes on one directory see whole entries or misses") {
    const std::string dir = temp_dir("two");
    fs::create_directories(dir);
    auto work = [&](int who) {
        auto t = make_disk_tier(DiskTierOptions{dir, 0});
        std::vector<uint8_t> out;
        int bad = 0;
        for (int round = 0; round < 3; round++)
            for (uint64_t i = 0; i < 60; i++) {
                const uint64_t k = (i * 7 + uint64_t(who) * 13 + uint64_t(round)) % 60;
                auto f = framed_of(k, 3000 + k * 50);
                if ((i + uint64_t(who)) % 2) t->put(key_of(k), f.data(), f.size());
                if (t->get(key_of(k), &out) && out != f) bad++;
                if (i % 17 == 0) t->remove(key_of((k + 5) % 60));
            }
        return bad + int(t->stats().corrupt);
    };
    pid_t kids[2];
    for (int w = 0; w < 2; w++) {
        kids[w] = ::fork();
        REQUIRE(kids[w] >= 0);
        if (kids[w] == 0) ::_exit(work(w) == 0 ? 0 : 1);
    }
    for (pid_t k : kids) {
        int status = 0;
        REQUIRE(::waitpid(k, &status, 0) == k);
        CHECK(WIFEXITED(status));
        CHECK(WEXITSTATUS(status) == 0);
    }
    fs::remove_all(dir);
}

TEST_CASE("disk tier: a writer killed with SIGKILL in a loop never leaves a readable torn entry") {
    const std::string dir = temp_dir("kill");
    fs::create_directories(dir);
    std::mt19937 rng(42);
    for (int round = 0; round < 20; round++) {
        pid_t kid = ::fork();
        REQUIRE(kid >= 0);
        if (kid == 0) {
            auto t = make_disk_tier(DiskTierOptions{dir, 0});
            for (uint64_t i = 0;; i++) {
                auto f = framed_of(i % 40, 200000 + (i % 40) * 1000);
                t->put(key_of(i % 40), f.data(), f.size());
            }
        }
        std::this_thread::sleep_for(std::chrono::microseconds(2000 + rng() % 20000));
        ::kill(kid, SIGKILL);
        int status = 0;
        ::waitpid(kid, &status, 0);
    }
    // Simulate torn writes too: a truncated entry under a valid name.
    auto f = framed_of(41, 50000);
    {
        std::ofstream o(fs::path(dir) / (tier_key_hex(key_of(41)) + ".kvb"), std::ios::binary);
        o.write(reinterpret_cast<const char*>(f.data()), std::streamsize(f.size() / 2));
    }
    auto t = make_disk_tier(DiskTierOptions{dir, 0});  // removes the dead writers' temporary files
    for (const auto& e : fs::directory_iterator(dir))
        CHECK(e.path().filename().string().rfind(".tmp.", 0) != 0);
    std::vector<uint8_t> out;
    int hits = 0;
    for (uint64_t k = 0; k < 42; k++) {
        if (t->get(key_of(k), &out)) {
            CHECK(out == framed_of(k, k == 41 ? 50000 : 200000 + k * 1000));
            hits++;
        }
    }
    CHECK(hits > 0);
    CHECK(t->stats().corrupt >= 1);  // the torn entry: counted and removed
    CHECK_FALSE(t->contains(key_of(41)));
    fs::remove_all(dir);
}

TEST_CASE("cache tiers: evicted block sets reach the disk tier and a fresh cache loads them back bit for bit") {
    const std::string dir = temp_dir("cache");
    CacheConfig cfg = kvrt::test::dense_config(2, 2, 8, 4, 0);
    cfg.budget_bytes = 1;
    const size_t set_bytes = resolve_layout(cfg).managers[0].block_bytes;
    cfg.budget_bytes = set_bytes * 12;  // 12 blocks of 4 positions
    const auto doc = iota_tokens(33, 100);  // 8 full blocks + 1 token
    std::vector<uint8_t> rows;
    {
        Cache c(cfg);
        c.add_tier(make_disk_tier(DiskTierOptions{dir, 0}));
        SeqId a = c.create_sequence();
        c.append(a, doc.data(), int64_t(doc.size()));
        compute(c, a, 0, int64_t(doc.size()), 0);
        rows = read_all(c, a, 32);
        c.release(a);
        // Another prompt fills the budget: the document's blocks are evicted into the tier.
        SeqId b = c.create_sequence();
        auto other = iota_tokens(44, 5000);
        c.append(b, other.data(), int64_t(other.size()));
        compute(c, b, 0, int64_t(other.size()), 1);
        CHECK(c.stats().evictions > 0);
        CHECK(c.tier_reports().at(0).puts > 0);
        c.release(b);
        CHECK(c.persist() > 0);  // the rest (b's blocks, and any document block still in RAM)
    }
    {
        Cache c(cfg);
        c.add_tier(make_disk_tier(DiskTierOptions{dir, 0}));
        CHECK(c.lookup_prefix({}, doc.data(), int64_t(doc.size())) == 0);  // RAM is empty
        TierFetch f = c.fetch_from_tiers({}, doc.data(), int64_t(doc.size()));
        CHECK(f.ram_blocks == 0);
        CHECK(f.loaded_from.size() == 8);
        SeqId s = c.create_sequence();
        CHECK(c.match_prefix(s, doc.data(), int64_t(doc.size())) == 32);
        CHECK(read_all(c, s, 32) == rows);
        CHECK(c.tier_reports().at(0).loaded_blocks == 8);
        c.check_invariants();
        // Another salt never sees them.
        SeqKeys salted;
        salted.salt = "tenant B";
        CHECK(c.fetch_from_tiers(salted, doc.data(), int64_t(doc.size())).loaded_from.empty());
    }
    {
        // A flipped byte in one entry: that block and the ones after it are computed, never garbage.
        std::vector<fs::path> es = entries(dir);
        REQUIRE(!es.empty());
        for (const auto& e : es) flip_byte(e, fs::file_size(e) / 2);
        Cache c(cfg);
        c.add_tier(make_disk_tier(DiskTierOptions{dir, 0}));
        TierFetch f = c.fetch_from_tiers({}, doc.data(), int64_t(doc.size()));
        CHECK(f.loaded_from.empty());
        CHECK(c.tier_reports().at(0).corrupt >= 1);
        SeqId s = c.create_sequence();
        CHECK(c.match_prefix(s, doc.data(), int64_t(doc.size())) == 0);
    }
    {
        // Another layout (block size) never matches the entries.
        CacheConfig other = kvrt::test::dense_config(2, 2, 8, 4, set_bytes * 12, DType::F32);
        Cache c(other);
        c.add_tier(make_disk_tier(DiskTierOptions{dir, 0}));
        CHECK(c.fetch_from_tiers({}, doc.data(), int64_t(doc.size())).loaded_from.empty());
    }
    fs::remove_all(dir);
}
