// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// The Redis tier of the prefix cache (issue 13 part 3), JSON lines (bench_json.hpp):
//   ttft_redis_<model>   time to first token (prefill's last logits) of request B =
//                        demo document + question B, in a fresh context whose cache
//                        has only the Redis tier holding the document (written by
//                        request A + kvrt_cache_persist), vs the cold prefill of B
//                        (goal ratio <= 0.10). Also the RAM hit (B after A in one
//                        context) vs cold, for reference.
//   redis_get_<bytes>    the tier's get of one block set (GET + copy), blocks/s and
//                        GB/s, vs `redis-benchmark -t set,get -d <bytes> -c 1 -P 1`
//                        GET requests/s of the same size in the same run (one
//                        client, no pipelining, like the tier's one caller).
//   redis_put_<bytes>    the tier's put (SET EX), same baseline's SET.
// Requests are plain text (document + "\n\n" + question), not the chat template.
// Redis: $KVRT_BENCH_REDIS_URL, else a private redis-server this program starts
// on a free port (and kills at exit). Models: SmolLM2-135M and Qwen2.5-0.5B from
// ~/.cache/kvrt/models (or $KVRT_MODEL_DIR); a missing one is reported and skipped.
//   bench_redis_tier [--quick] [--reps N]
#include "bench_json.hpp"
#include "cache/block_tier.hpp"
#include "cache/redis_tier.hpp"
#include "kvrt/kvrt.h"

#include <algorithm>
#include <arpa/inet.h>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <netinet/in.h>
#include <random>
#include <spawn.h>
#include <sstream>
#include <string>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

extern char** environ;

using kvrt::bench::emit;
using kvrt::bench::emit_vs;
using kvrt::bench::now_seconds;

namespace {

int free_port() {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return 6391;
    socklen_t len = sizeof a;
    getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    int port = ntohs(a.sin_port);
    close(fd);
    return port;
}

bool reachable(const std::string& url) {
    kvrt::cache::RedisTierOptions o;
    o.url = url;
    o.timeout_ms = 500;
    auto t = kvrt::cache::make_redis_tier(o);
    t->contains(kvrt::cache::TierKey{});
    auto s = t->stats();
    return s.errors == 0 && s.timeouts == 0;
}

pid_t g_server = -1;
void stop_server() {
    if (g_server > 0) {
        kill(g_server, SIGKILL);
        waitpid(g_server, nullptr, 0);
        g_server = -1;
    }
}

// Returns the URL of a Redis to use, or "" (with a message) when there is none.
std::string redis_url(int* port) {
    if (const char* u = std::getenv("KVRT_BENCH_REDIS_URL"); u && *u) {
        std::string h, e;
        int db = 0;
        kvrt::cache::parse_redis_url(u, &h, port, &db, &e);
        return reachable(u) ? u : "";
    }
    *port = free_port();
    std::string ps = std::to_string(*port);
    std::vector<std::string> args = {"redis-server", "--port", ps, "--bind", "127.0.0.1", "--save", "",
                                     "--appendonly", "no", "--daemonize", "no", "--logfile", "/dev/null"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (posix_spawnp(&g_server, "redis-server", nullptr, nullptr, argv.data(), environ) != 0) return "";
    std::atexit(stop_server);
    std::string url = "redis://127.0.0.1:" + ps;
    for (int i = 0; i < 100; ++i) {
        if (reachable(url)) return url;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return "";
}

std::string model_dir() {
    if (const char* d = std::getenv("KVRT_MODEL_DIR"); d && *d) return d;
    const char* h = std::getenv("HOME");
    return std::string(h ? h : "/root") + "/.cache/kvrt/models";
}

std::string read_document() {
    std::string here = __FILE__;
    std::string root = here.substr(0, here.rfind("/bench/"));
    std::ifstream f(root + "/tools/kvrt/demo_document.txt");
    std::stringstream ss;
    ss << f.rdbuf();
    std::string s = ss.str();
    while (!s.empty() && s.back() == '\n') s.pop_back();
    return s;
}

std::vector<int32_t> tokenize(kvrt_model* m, const std::string& text) {
    std::vector<int32_t> t(text.size() + 16);
    size_t n = 0;
    if (kvrt_model_tokenize(t.data(), t.size(), &n, m, text.data(), text.size(), 0) != KVRT_OK) return {};
    t.resize(n);
    return t;
}

kvrt_context* make_ctx(kvrt_model* m, const std::string& url, const std::string& prefix) {
    kvrt_context_config c;
    kvrt_context_config_init(&c, sizeof c);
    c.n_ctx = 4096;
    c.cache_bytes = 512ull << 20;
    kvrt_tier_config t;
    kvrt_tier_config_init(&t, sizeof t);
    if (!url.empty()) {
        t.kind = KVRT_TIER_REDIS;
        t.location = url.c_str();
        t.key_prefix = prefix.c_str();
        t.timeout_ms = 2000;
        c.tiers = &t;
        c.n_tiers = 1;
    }
    kvrt_context* ctx = nullptr;
    if (kvrt_context_create(&ctx, m, &c) != KVRT_OK) {
        std::fprintf(stderr, "bench_redis_tier: context: %s\n", kvrt_last_error());
        return nullptr;
    }
    return ctx;
}

// Wall time of one prefill; *st filled.
double timed_prefill(kvrt_context* ctx, const std::vector<int32_t>& toks, kvrt_request_stats* st) {
    kvrt_request_stats_init(st, sizeof *st);
    double t0 = now_seconds();
    kvrt_status s = kvrt_context_prefill(st, ctx, 0, toks.data(), toks.size());
    double t = now_seconds() - t0;
    if (s != KVRT_OK) std::fprintf(stderr, "bench_redis_tier: prefill: %s\n", kvrt_last_error());
    return t;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

void bench_ttft(const std::string& tag, const std::string& file, const std::string& url, int reps) {
    const std::string path = model_dir() + "/" + file;
    kvrt_model* m = nullptr;
    if (kvrt_model_load(&m, path.c_str(), nullptr) != KVRT_OK) {
        std::fprintf(stderr, "bench_redis_tier: %s not loaded (%s): skipped\n", path.c_str(), kvrt_last_error());
        return;
    }
    const std::string doc = read_document();
    const std::vector<int32_t> a = tokenize(m, doc + "\n\nSummarise the risks.");
    const std::vector<int32_t> b = tokenize(m, doc + "\n\nList the deadlines.");
    std::random_device rd;
    const std::string prefix = "kvrt-bench:" + std::to_string(getpid()) + ":" + std::to_string(rd()) + ":";

    std::vector<double> cold, redis, ram;
    uint64_t from_remote = 0, reused_ram = 0;
    for (int r = 0; r < reps; ++r) {
        kvrt_request_stats st;
        kvrt_context* c = make_ctx(m, "", "");
        if (!c) return;
        cold.push_back(timed_prefill(c, b, &st));
        kvrt_context_destroy(c);
    }
    {
        kvrt_context* w = make_ctx(m, url, prefix);
        if (!w) return;
        kvrt_request_stats st;
        timed_prefill(w, a, &st);
        kvrt_cache* cache = nullptr;
        kvrt_context_get_cache(&cache, w);
        uint64_t n = 0;
        kvrt_cache_persist(&n, cache);
        for (int r = 0; r < reps; ++r) {  // RAM hit: B in a released sequence after A
            kvrt_context_seq_release(w, 0);
            timed_prefill(w, a, &st);
            kvrt_context_seq_release(w, 0);
            ram.push_back(timed_prefill(w, b, &st));
            reused_ram = st.reused_from_ram;
        }
        kvrt_context_destroy(w);
    }
    uint64_t block_set_bytes = 0;
    for (int r = 0; r < reps; ++r) {
        kvrt_context* c = make_ctx(m, url, prefix);
        if (!c) return;
        kvrt_request_stats st;
        redis.push_back(timed_prefill(c, b, &st));
        from_remote = st.reused_from_remote;
        kvrt_cache* cache = nullptr;
        kvrt_context_get_cache(&cache, c);
        kvrt_cache_stats cs;
        kvrt_cache_stats_init(&cs, sizeof cs);
        kvrt_cache_stats_get(&cs, cache);
        block_set_bytes = cs.block_set_bytes;
        kvrt_context_destroy(c);
    }
    const double tc = median(cold), tr = median(redis), tm = median(ram);
    char extra[256];
    std::snprintf(extra, sizeof extra,
                  "\"model\":\"%s\",\"prompt_tokens\":%zu,\"reused_from_redis\":%llu,\"block_set_bytes\":%llu,\"reps\":%d",
                  tag.c_str(), b.size(), static_cast<unsigned long long>(from_remote),
                  static_cast<unsigned long long>(block_set_bytes), reps);
    emit_vs("redis_tier", "ttft_redis_" + tag, tr, "s", "cold_prefill", tc, extra);
    std::snprintf(extra, sizeof extra, "\"model\":\"%s\",\"prompt_tokens\":%zu,\"reused_from_ram\":%llu,\"reps\":%d",
                  tag.c_str(), b.size(), static_cast<unsigned long long>(reused_ram), reps);
    emit_vs("redis_tier", "ttft_ram_" + tag, tm, "s", "cold_prefill", tc, extra);
    kvrt_model_destroy(m);
}

// redis-benchmark's SET and GET requests/s for one client with -d bytes.
bool redis_benchmark(int port, size_t bytes, int n, double* set_rps, double* get_rps) {
    std::string cmd = "redis-benchmark -h 127.0.0.1 -p " + std::to_string(port) + " -t set,get -d " +
                      std::to_string(bytes) + " -n " + std::to_string(n) + " -c 1 -P 1 --csv 2>/dev/null";
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) return false;
    char line[512];
    *set_rps = *get_rps = 0;
    while (std::fgets(line, sizeof line, p)) {
        double v = 0;
        if (std::sscanf(line, "\"SET\",\"%lf\"", &v) == 1) *set_rps = v;
        if (std::sscanf(line, "\"GET\",\"%lf\"", &v) == 1) *get_rps = v;
    }
    pclose(p);
    return *set_rps > 0 && *get_rps > 0;
}

void bench_throughput(const std::string& url, int port, size_t bytes, int n) {
    kvrt::cache::RedisTierOptions o;
    o.url = url;
    o.timeout_ms = 2000;
    std::random_device rd;
    o.key_prefix = "kvrt-bench:" + std::to_string(getpid()) + ":" + std::to_string(rd()) + ":";
    auto t = kvrt::cache::make_redis_tier(o);
    std::vector<uint8_t> payload(bytes);
    for (size_t i = 0; i < bytes; ++i) payload[i] = static_cast<uint8_t>(i * 131 + 7);
    auto key = [](int i) { return kvrt::cache::TierKey{kvrt::cache::Hash128{uint64_t(i) + 1, 99}, {5, 6}}; };
    double t0 = now_seconds();
    for (int i = 0; i < n; ++i) t->put(key(i), payload.data(), payload.size());
    const double put_s = now_seconds() - t0;
    std::vector<uint8_t> out;
    int hits = 0;
    t0 = now_seconds();
    for (int i = 0; i < n; ++i) hits += t->get(key(i), &out) ? 1 : 0;
    const double get_s = now_seconds() - t0;
    for (int i = 0; i < n; ++i) t->remove(key(i));
    if (hits != n || t->stats().put_failures != 0) {
        std::fprintf(stderr, "bench_redis_tier: %d/%d hits, %llu put failures (%s)\n", hits, n,
                     static_cast<unsigned long long>(t->stats().put_failures), t->last_error().c_str());
        return;
    }
    double set_rps = 0, get_rps = 0;
    const bool have_rb = redis_benchmark(port, bytes, n, &set_rps, &get_rps);
    char extra[160];
    std::snprintf(extra, sizeof extra, "\"bytes\":%zu,\"n\":%d,\"GB_per_s\":%.3f", bytes, n, n * double(bytes) / get_s / 1e9);
    if (have_rb) emit_vs("redis_tier", "get_" + std::to_string(bytes), n / get_s, "blocks/s", "redis_benchmark_get_c1", get_rps, extra);
    else emit("redis_tier", "get_" + std::to_string(bytes), n / get_s, "blocks/s", extra);
    std::snprintf(extra, sizeof extra, "\"bytes\":%zu,\"n\":%d,\"GB_per_s\":%.3f", bytes, n, n * double(bytes) / put_s / 1e9);
    if (have_rb) emit_vs("redis_tier", "put_" + std::to_string(bytes), n / put_s, "blocks/s", "redis_benchmark_set_c1", set_rps, extra);
    else emit("redis_tier", "put_" + std::to_string(bytes), n / put_s, "blocks/s", extra);
}

}  // namespace

int main(int argc, char** argv) {
    bool quick = false;
    int reps = 3;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--quick") quick = true;
        else if (a == "--reps" && i + 1 < argc) reps = std::max(1, std::atoi(argv[++i]));
    }
    if (!kvrt::cache::redis_tier_available()) {
        std::fprintf(stderr, "bench_redis_tier: built without Redis support: skipped\n");
        return 0;
    }
    int port = 0;
    const std::string url = redis_url(&port);
    if (url.empty()) {
        std::fprintf(stderr, "bench_redis_tier: no Redis (set KVRT_BENCH_REDIS_URL or install redis-server): skipped\n");
        return 0;
    }
    if (quick) reps = 1;
    // Block sets of the two models at 16 tokens per block (f16 K/V): SmolLM2 30 layers x
    // 3 KV heads x 64, Qwen2.5-0.5B 24 layers x 2 KV heads x 64.
    for (size_t bytes : {size_t(368640), size_t(196608)}) bench_throughput(url, port, bytes, quick ? 200 : 1000);
    bench_ttft("smollm2_135m", "SmolLM2-135M-Instruct.Q4_1.gguf", url, reps);
    if (!quick) bench_ttft("qwen2.5_0.5b", "qwen2.5-coder-0.5b-instruct-Q4_K_M.gguf", url, reps);
    return 0;
}
