// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// The Redis tier end to end through the C API with SmolLM2: a document prefilled
// by one process is a hit for another with logits bit-identical to a cold run,
// block keys are the same in every process, tenants never see each other's
// blocks, and every fault (down, hung, killed mid-run, out of memory, a corrupted
// value) falls back to computing with a counted event and an unchanged result.
#include <doctest/doctest.h>

#include "cache/block_hash.hpp"
#include "cache/redis_tier.hpp"
#include "runtime/context.hpp"
#include "kvrt/kvrt.h"
#include "redis_test_harness.hpp"
#include "test_models.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

using kvrt::test::PrivateRedis;
using kvrt::test::SilentServer;
using kvrt::test::unique_key_prefix;

namespace {

constexpr uint32_t kBlockTokens = 16;
constexpr size_t kDocBlocks = 6;

#define KVRT_OK_OR_FAIL(call)                                                               \
    do {                                                                                    \
        kvrt_status st_ = (call);                                                           \
        REQUIRE_MESSAGE(st_ == KVRT_OK, #call << ": " << kvrt_status_string(st_) << ": "  \
                                              << kvrt_last_error());                        \
    } while (0)

kvrt_model* smollm() {
    static kvrt_model* m = [] {
        kvrt_model* p = nullptr;
        const std::string path = kvrt::test::model_path();
        kvrt_status st = kvrt_model_load(&p, path.c_str(), nullptr);
        REQUIRE_MESSAGE(st == KVRT_OK, "cannot load " << path << ": " << kvrt_last_error());
        return p;
    }();
    return m;
}

std::vector<int32_t> tokenize(const std::string& text) {
    std::vector<int32_t> t(text.size() + 16);
    size_t n = 0;
    KVRT_OK_OR_FAIL(kvrt_model_tokenize(t.data(), t.size(), &n, smollm(), text.data(), text.size(), 0));
    t.resize(n);
    return t;
}

// The first kDocBlocks blocks of the demo document's tokens.
const std::vector<int32_t>& document() {
    static std::vector<int32_t> d = [] {
        const char* src = std::getenv("KVRT_SOURCE_DIR");
        std::ifstream f(std::string(src ? src : KVRT_SOURCE_DIR) + "/tools/kvrt/demo_document.txt");
        REQUIRE(f.good());
        std::stringstream ss;
        ss << f.rdbuf();
        std::vector<int32_t> t = tokenize(ss.str());
        REQUIRE(t.size() >= kDocBlocks * kBlockTokens);
        t.resize(kDocBlocks * kBlockTokens);
        return t;
    }();
    return d;
}

// Request = document + a question of its own.
std::vector<int32_t> request(const char* question) {
    std::vector<int32_t> r = document();
    std::vector<int32_t> q = tokenize(std::string("\n\nQuestion: ") + question);
    r.insert(r.end(), q.begin(), q.end());
    return r;
}

struct Tier {
    std::string url;         // "" = no tier
    std::string key_prefix;  // "" = the default
    uint32_t timeout_ms = 500;
};

struct Ctx {
    kvrt_context* ctx = nullptr;
    kvrt_cache* cache = nullptr;
    explicit Ctx(const Tier& tier, const char* salt = nullptr) {
        kvrt_context_config c;
        KVRT_OK_OR_FAIL(kvrt_context_config_init(&c, sizeof c));
        c.n_ctx = 512;
        c.block_tokens = kBlockTokens;
        c.cache_bytes = 64ull << 20;
        c.cache_salt = salt;
        kvrt_tier_config t;
        KVRT_OK_OR_FAIL(kvrt_tier_config_init(&t, sizeof t));
        if (!tier.url.empty()) {
            t.kind = KVRT_TIER_REDIS;
            t.location = tier.url.c_str();
            t.timeout_ms = tier.timeout_ms;
            t.key_prefix = tier.key_prefix.empty() ? nullptr : tier.key_prefix.c_str();
            c.tiers = &t;
            c.n_tiers = 1;
        }
        KVRT_OK_OR_FAIL(kvrt_context_create(&ctx, smollm(), &c));
        KVRT_OK_OR_FAIL(kvrt_context_get_cache(&cache, ctx));
    }
    ~Ctx() { kvrt_context_destroy(ctx); }
    Ctx(const Ctx&) = delete;
    Ctx& operator=(const Ctx&) = delete;

    std::vector<float> prefill(const std::vector<int32_t>& toks, kvrt_request_stats* st = nullptr) {
        kvrt_request_stats local;
        kvrt_request_stats* s = st ? st : &local;
        KVRT_OK_OR_FAIL(kvrt_request_stats_init(s, sizeof *s));
        KVRT_OK_OR_FAIL(kvrt_context_prefill(s, ctx, 0, toks.data(), toks.size()));
        std::vector<float> l(200000);
        size_t n = 0;
        KVRT_OK_OR_FAIL(kvrt_context_get_logits(l.data(), l.size(), &n, ctx, 0));
        l.resize(n);
        return l;
    }
    uint64_t persist() {
        uint64_t n = 0;
        KVRT_OK_OR_FAIL(kvrt_cache_persist(&n, cache));
        return n;
    }
    kvrt_tier_stats tier_stats() {
        kvrt_tier_stats s;
        KVRT_OK_OR_FAIL(kvrt_tier_stats_init(&s, sizeof s));
        KVRT_OK_OR_FAIL(kvrt_cache_tier_stats_get(&s, cache, 0));
        CHECK(s.kind == KVRT_TIER_REDIS);
        return s;
    }
};

std::vector<float> cold_logits(const std::vector<int32_t>& toks, const char* salt = nullptr) {
    Ctx c(Tier{}, salt);
    return c.prefill(toks);
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// redis-cli (from redis-tools, installed with redis-server) for what the tier
// API cannot do: list keys and overwrite a byte of a stored value.
std::vector<std::string> redis_cli_lines(const std::string& args) {
    std::string cmd = "redis-cli " + args + " 2>/dev/null";
    std::vector<std::string> out;
    FILE* p = popen(cmd.c_str(), "r");
    REQUIRE(p != nullptr);
    char buf[512];
    while (std::fgets(buf, sizeof buf, p)) {
        std::string s(buf);
        while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
        if (!s.empty()) out.push_back(s);
    }
    CHECK(pclose(p) == 0);
    return out;
}

std::vector<std::string> keys_under(const std::string& url, const std::string& prefix) {
    auto v = redis_cli_lines("-u " + url + " --scan --pattern '" + prefix + "*'");
    std::sort(v.begin(), v.end());
    return v;
}

void delete_keys(const std::string& url, const std::vector<std::string>& keys) {
    for (const auto& k : keys) redis_cli_lines("-u " + url + " DEL '" + k + "'");
}

// The hex of the chained hash of block b of `toks` under SmolLM2 and `salt`,
// computed here from the model's fingerprint, independently of any cache.
// salt: the caller's cache_salt; the context appends its arithmetic suffix (the default act_bits').
std::string block_hash_hex(const std::vector<int32_t>& toks, size_t b, const std::string& salt = "") {
    kvrt_model_info info;
    KVRT_OK_OR_FAIL(kvrt_model_info_init(&info, sizeof info));
    KVRT_OK_OR_FAIL(kvrt_model_get_info(&info, smollm()));
    kvrt::cache::SeqKeys keys;
    std::memcpy(&keys.fingerprint_lo, info.fingerprint, 8);
    std::memcpy(&keys.fingerprint_hi, info.fingerprint + 8, 8);
    keys.salt = salt + kvrt::runtime::arithmetic_salt_suffix(0);
    const kvrt::cache::Hash128 extra = kvrt::cache::hash_extra_keys(keys);
    kvrt::cache::Hash128 h = kvrt::cache::hash_root();
    for (size_t i = 0; i <= b; ++i) h = kvrt::cache::hash_block(h, extra, toks.data() + i * kBlockTokens, kBlockTokens);
    std::string k = kvrt::cache::redis_tier_key("", kvrt::cache::TierKey{h, {}});
    return k.substr(k.find(':') + 1);
}

// Spawns this test binary running "redis tier e2e child" with role/prefix/out in
// its environment; returns its exit status.
int run_child(const std::string& role, const std::string& url, const std::string& prefix, const std::string& out) {
    std::vector<std::string> env_s = {"KVRT_REDIS_E2E_ROLE=" + role, "KVRT_REDIS_E2E_URL=" + url,
                                      "KVRT_REDIS_E2E_PREFIX=" + prefix, "KVRT_REDIS_E2E_OUT=" + out};
    for (char** e = environ; *e; ++e) {
        std::string s(*e);
        if (s.rfind("KVRT_REDIS_E2E_", 0) != 0) env_s.push_back(s);
    }
    std::vector<char*> envp;
    for (auto& s : env_s) envp.push_back(s.data());
    envp.push_back(nullptr);
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    REQUIRE(n > 0);
    exe[n] = 0;
    std::vector<std::string> args = {exe, "--test-case=redis tier e2e child", "--no-skip", "--no-version"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = -1;
    REQUIRE(posix_spawn(&pid, exe, nullptr, nullptr, argv.data(), envp.data()) == 0);
    int st = 0;
    REQUIRE(waitpid(pid, &st, 0) == pid);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

std::string temp_path(const char* tag) {
    return "/tmp/kvrt_redis_e2e_" + std::to_string(getpid()) + "_" + tag;
}

const char* kQuestionA = "What is the total budget?";
const char* kQuestionB = "Who leads the project, and when does it end?";

}  // namespace

// Run only by the cross-process test below (re-executed with --no-skip).
TEST_CASE("redis tier e2e child" * doctest::skip()) {
    const char* role = std::getenv("KVRT_REDIS_E2E_ROLE");
    REQUIRE(role != nullptr);
    Tier tier{std::getenv("KVRT_REDIS_E2E_URL"), std::getenv("KVRT_REDIS_E2E_PREFIX")};
    std::ofstream out(std::getenv("KVRT_REDIS_E2E_OUT"), std::ios::binary);
    Ctx c(tier);
    if (std::string(role) == "writer") {
        c.prefill(request(kQuestionA));
        uint64_t n = c.persist();
        kvrt_tier_stats s = c.tier_stats();
        out << n << " " << s.puts << " " << s.put_failures << "\n";
    } else {
        kvrt_request_stats st;
        std::vector<float> l = c.prefill(request(kQuestionB), &st);
        kvrt_tier_stats s = c.tier_stats();
        out << st.reused_from_cache << " " << st.reused_from_ram << " " << st.reused_from_remote << " "
            << st.computed_tokens << " " << s.hits << " " << s.corrupt << " " << l.size() << "\n";
        out.write(reinterpret_cast<const char*>(l.data()), static_cast<std::streamsize>(l.size() * sizeof(float)));
    }
    REQUIRE(out.good());
}

TEST_CASE("redis tier e2e: a document prefilled by one process is a hit for another, bit-identical to cold") {
    KVRT_REDIS_OR_NOT_RUN(url);
    const std::string prefix = unique_key_prefix("xproc");
    const std::string w_out = temp_path("writer"), r_out = temp_path("reader");

    REQUIRE(run_child("writer", url, prefix, w_out) == 0);
    uint64_t persisted = 0, puts = 0, put_failures = 9;
    {
        std::ifstream f(w_out);
        f >> persisted >> puts >> put_failures;
        REQUIRE(f.good());
    }
    const size_t blocks_a = request(kQuestionA).size() / kBlockTokens;
    CHECK(persisted == blocks_a);
    CHECK(puts == blocks_a);
    CHECK(put_failures == 0);

    // The keys the writer stored: one layout, and block 0's hash as computed here.
    std::vector<std::string> keys = keys_under(url, prefix);
    CHECK(keys.size() == blocks_a);
    std::set<std::string> layouts;
    std::set<std::string> blocks;
    for (const auto& k : keys) {
        std::string rest = k.substr(prefix.size());
        REQUIRE(rest.size() == 65);
        layouts.insert(rest.substr(0, 32));
        blocks.insert(rest.substr(33));
    }
    CHECK(layouts.size() == 1);
    for (size_t b = 0; b < kDocBlocks; ++b) CHECK(blocks.count(block_hash_hex(document(), b)) == 1);

    REQUIRE(run_child("reader", url, prefix, r_out) == 0);
    uint64_t from_cache = 0, from_ram = 9, from_remote = 0, computed = 0, hits = 0, corrupt = 9, n = 0;
    std::vector<float> reader_logits;
    {
        std::ifstream f(r_out, std::ios::binary);
        f >> from_cache >> from_ram >> from_remote >> computed >> hits >> corrupt >> n;
        f.get();
        reader_logits.resize(n);
        f.read(reinterpret_cast<char*>(reader_logits.data()), static_cast<std::streamsize>(n * sizeof(float)));
        REQUIRE(f.good());
    }
    std::remove(w_out.c_str());
    std::remove(r_out.c_str());
    const std::vector<int32_t> b = request(kQuestionB);
    CHECK(from_cache >= kDocBlocks * kBlockTokens);
    CHECK(from_ram == 0);
    CHECK(from_remote == from_cache);
    CHECK(computed == b.size() - from_cache);
    CHECK(hits >= kDocBlocks);
    CHECK(corrupt == 0);
    CHECK(same_bits(reader_logits, cold_logits(b)));
    delete_keys(url, keys_under(url, prefix));
}

TEST_CASE("redis tier e2e: a corrupted value under a kvrt key is counted corrupt, removed and computed instead") {
    KVRT_REDIS_OR_NOT_RUN(url);
    const std::string prefix = unique_key_prefix("corrupt");
    {
        Ctx w(Tier{url, prefix});
        w.prefill(request(kQuestionA));
        CHECK(w.persist() > 0);
    }
    std::vector<std::string> keys = keys_under(url, prefix);
    REQUIRE(keys.size() >= kDocBlocks);
    // One byte inside each stored block set's payload (past the envelope header).
    for (const auto& k : keys) redis_cli_lines("-u " + url + " SETRANGE '" + k + "' 4000 Z");
    const std::vector<int32_t> b = request(kQuestionB);
    Ctx r(Tier{url, prefix});
    kvrt_request_stats st;
    std::vector<float> l = r.prefill(b, &st);
    kvrt_tier_stats s = r.tier_stats();
    CHECK(s.corrupt >= 1);
    CHECK(s.loaded_blocks == 0);
    CHECK(st.reused_from_remote == 0);
    CHECK(st.computed_tokens == b.size());
    CHECK(same_bits(l, cold_logits(b)));
    // The corrupt entry of block 0 was removed from the server.
    for (const auto& k : keys_under(url, prefix)) CHECK(k.find(block_hash_hex(document(), 0)) == std::string::npos);
    delete_keys(url, keys_under(url, prefix));
}

TEST_CASE("redis tier e2e: a block of salt S is never returned for salt T") {
    KVRT_REDIS_OR_NOT_RUN(url);
    const std::string prefix = unique_key_prefix("salt");
    const std::vector<int32_t> a = request(kQuestionA);
    {
        Ctx s(Tier{url, prefix}, "tenant-S");
        s.prefill(a);
        CHECK(s.persist() == a.size() / kBlockTokens);
    }
    {
        Ctx t(Tier{url, prefix}, "tenant-T");
        kvrt_request_stats st;
        std::vector<float> l = t.prefill(a, &st);
        kvrt_tier_stats ts = t.tier_stats();
        CHECK(ts.gets >= 1);
        CHECK(ts.hits == 0);
        CHECK(ts.corrupt == 0);
        CHECK(st.reused_from_cache == 0);
        CHECK(same_bits(l, cold_logits(a, "tenant-T")));
    }
    {
        // The positive control: a fresh cache of tenant S hits the same prefix.
        Ctx s2(Tier{url, prefix}, "tenant-S");
        kvrt_request_stats st;
        std::vector<float> l = s2.prefill(a, &st);
        CHECK(st.reused_from_remote >= kDocBlocks * kBlockTokens);
        CHECK(same_bits(l, cold_logits(a, "tenant-S")));
    }
    delete_keys(url, keys_under(url, prefix));
}

TEST_CASE("redis tier e2e fault: Redis down at start, prefill computes and the misses are counted") {
    if (!kvrt::cache::redis_tier_available()) {
        REQUIRE_FALSE(kvrt::test::redis_required());
        std::printf("KVRT_TEST_NOT_RUN: kvrt was built without Redis support\n");
        return;
    }
    const int port = kvrt::test::free_tcp_port();
    Ctx c(Tier{"redis://127.0.0.1:" + std::to_string(port), ""});
    const std::vector<int32_t> a = request(kQuestionA);
    kvrt_request_stats st;
    std::vector<float> l = c.prefill(a, &st);
    CHECK(st.computed_tokens == a.size());
    c.persist();
    kvrt_tier_stats s = c.tier_stats();
    CHECK(s.errors + s.timeouts >= 1);
    CHECK(s.hits == 0);
    CHECK(s.puts == 0);
    CHECK(s.put_failures >= 1);
    CHECK(same_bits(l, cold_logits(a)));
}

TEST_CASE("redis tier e2e fault: a hung Redis costs counted timeouts, prefill computes") {
    if (!kvrt::cache::redis_tier_available()) {
        REQUIRE_FALSE(kvrt::test::redis_required());
        std::printf("KVRT_TEST_NOT_RUN: kvrt was built without Redis support\n");
        return;
    }
    SilentServer silent;
    Ctx c(Tier{silent.url(), "", 100});
    const std::vector<int32_t> a = request(kQuestionA);
    kvrt_request_stats st;
    std::vector<float> l = c.prefill(a, &st);
    CHECK(st.computed_tokens == a.size());
    kvrt_tier_stats s = c.tier_stats();
    CHECK(s.timeouts >= 1);
    CHECK(s.hits == 0);
    CHECK(same_bits(l, cold_logits(a)));
}

TEST_CASE("redis tier e2e fault: Redis killed mid-run, the next process computes and counts errors") {
    PrivateRedis server;
    KVRT_PRIVATE_REDIS_OR_NOT_RUN(server);
    const std::vector<int32_t> a = request(kQuestionA);
    const std::vector<int32_t> b = request(kQuestionB);
    Ctx w(Tier{server.url(), ""});
    w.prefill(a);
    CHECK(w.persist() == a.size() / kBlockTokens);
    CHECK(w.tier_stats().puts == a.size() / kBlockTokens);
    server.kill();
    Ctx r(Tier{server.url(), ""});
    kvrt_request_stats st;
    std::vector<float> l = r.prefill(b, &st);
    CHECK(st.reused_from_cache == 0);
    CHECK(st.computed_tokens == b.size());
    kvrt_tier_stats s = r.tier_stats();
    CHECK(s.errors + s.timeouts >= 1);
    CHECK(s.hits == 0);
    CHECK(same_bits(l, cold_logits(b)));
    // The writer's pooled connection is dead too: persisting again is a counted drop, not an error.
    std::vector<int32_t> longer = b;  // new full blocks beyond the document
    longer.insert(longer.end(), document().begin(), document().end());
    w.prefill(longer);
    w.persist();
    CHECK(w.tier_stats().put_failures >= 1);
}

TEST_CASE("redis tier e2e fault: a Redis out of memory drops the puts, counted, and later prefills compute") {
    PrivateRedis server({"--maxmemory", "1mb", "--maxmemory-policy", "noeviction"});
    KVRT_PRIVATE_REDIS_OR_NOT_RUN(server);
    const std::vector<int32_t> a = request(kQuestionA);
    Ctx w(Tier{server.url(), ""});
    std::vector<float> la = w.prefill(a);
    w.persist();
    kvrt_tier_stats s = w.tier_stats();
    CHECK(s.put_failures >= 1);
    CHECK(s.puts + s.put_failures == a.size() / kBlockTokens);
    // A fresh cache finds at most the blocks that fit; the rest is computed.
    Ctx r(Tier{server.url(), ""});
    kvrt_request_stats st;
    std::vector<float> l = r.prefill(a, &st);
    CHECK(st.reused_from_remote + st.computed_tokens == a.size());
    CHECK(st.reused_from_remote <= s.puts * kBlockTokens);
    CHECK(same_bits(l, cold_logits(a)));
    CHECK(same_bits(la, l));
}
