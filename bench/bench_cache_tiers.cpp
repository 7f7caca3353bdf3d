// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// The prefix cache's tiers (issue 13), JSON lines (bench_json.hpp), everything in one run so
// that every ratio is a same-run ratio:
//
//   ttft_<tier>_<model>  time to first token (prefill's last logits) of request B = demo
//                        document + "\n\n" + question B, vs the cold prefill of B (a fresh
//                        context, empty cache), for <tier> =
//                          ram         B again in the context of the cold run (it reuses the
//                                      document's blocks as B after A does)
//                          ram_with_tiers  the same in the writer's context, which has both
//                                      tiers configured (goal: unchanged from ram)
//                          disk        a fresh context whose only prefix source is a disk tier
//                                      holding the document (written by A + kvrt_cache_persist),
//                                      the tier files' page cache dropped before every rep
//                                      (fdatasync + posix_fadvise(DONTNEED), checked with
//                                      mincore: "resident_pages" is what was still cached)
//                          disk_warm   the same with the files in the page cache
//                          redis       a fresh context whose only prefix source is the Redis tier
//                        Goals: disk <= 0.05x cold, redis <= 0.10x cold. The reps interleave
//                        the variants (cold, ram, ram_with_tiers, disk, disk_warm, redis per
//                        rep); medians of wall time (tier loads wait on I/O: no CPU clock), with
//                        the 1-minute load average of the machine in each line.
//   disk_get_<bytes>     the disk tier's get (open, read, verify the envelope, touch mtime) of
//                        N block sets of <bytes> with a dropped page cache, blocks/s (GB/s in
//                        the line), vs a plain open + read() + close of the same files into a
//                        buffer, same drop ("plain_read_cold"); disk_get_warm_<bytes> the same
//                        with the files cached; disk_put_<bytes> the tier's put (temp file,
//                        write, rename) vs a plain open + write() + close of the same bytes.
//   redis_get_<bytes>    the Redis tier's get of N block sets (distinct keys) vs a plain hiredis
//                        GET loop over N distinct keys of the same size in this program
//                        ("hiredis_get"); redis_put_<bytes> the tier's put vs a plain SET loop;
//                        redis_put_batch_<bytes> the tier's pipelined put_many (what persist
//                        and eviction use) vs a plain pipelined SET loop. Each line also
//                        carries redis-benchmark's figure for the size (-c 1 -P 1, its single
//                        key rewritten in place: it never allocates fresh server memory, so
//                        it is an upper bound, not the like-for-like baseline).
//
//   bench_cache_tiers [--quick] [--reps N] [--n N] [--model smollm2|qwen|both] [--no-ttft]
// (--no-ttft: the throughput lines only, at the two models' f16 block-set sizes.)
// Throughput: two rounds of every pair in opposite orders, the best time of each side.
//
// Redis: $KVRT_BENCH_REDIS_URL, else a private redis-server this program starts on a free port
// (and kills at exit); without redis-server the Redis lines are skipped (stated on stderr).
// Models: SmolLM2-135M and Qwen2.5-Coder-0.5B from ~/.cache/kvrt/models (or $KVRT_MODEL_DIR).
// The directory tier lives in $KVRT_BENCH_DIR or /tmp (a fresh mkdtemp, removed at exit).
#include "baselines.hpp"
#include "bench_json.hpp"
#include "cache/block_tier.hpp"
#include "cache/disk_tier.hpp"
#include "cache/redis_tier.hpp"
#include "cache/tier_envelope.hpp"
#include "kvrt/kvrt.h"

#if __has_include(<hiredis/hiredis.h>)
#include <hiredis/hiredis.h>
#define KVRT_BENCH_HIREDIS 1
#endif

#include <algorithm>
#include <arpa/inet.h>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <netinet/in.h>
#include <random>
#include <spawn.h>
#include <sstream>
#include <string>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

extern char** environ;

using kvrt::bench::emit;
using kvrt::bench::emit_vs;
using kvrt::bench::now_seconds;
namespace kc = kvrt::cache;

namespace {

// ---------------------------------------------------------------------------------- Redis server

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
    kc::RedisTierOptions o;
    o.url = url;
    o.timeout_ms = 500;
    auto t = kc::make_redis_tier(o);
    t->contains(kc::TierKey{});
    auto s = t->stats();
    return s.errors == 0 && s.timeouts == 0;
}

pid_t g_server = -1;
std::string g_dir;
void at_exit() {
    if (g_server > 0) {
        kill(g_server, SIGKILL);
        waitpid(g_server, nullptr, 0);
        g_server = -1;
    }
    if (!g_dir.empty()) {
        std::string cmd = "rm -rf '" + g_dir + "'";
        if (std::system(cmd.c_str()) != 0) std::fprintf(stderr, "bench_cache_tiers: could not remove %s\n", g_dir.c_str());
    }
}

// The URL of a Redis to use, or "" (with a message) when there is none.
std::string redis_url(std::string* host, int* port) {
    *host = "127.0.0.1";
    if (const char* u = std::getenv("KVRT_BENCH_REDIS_URL"); u && *u) {
        std::string e;
        int db = 0;
        kc::parse_redis_url(u, host, port, &db, &e);
        return reachable(u) ? u : "";
    }
    *port = free_port();
    std::string ps = std::to_string(*port);
    std::vector<std::string> args = {"redis-server", "--port", ps, "--bind", "127.0.0.1", "--save", "",
                                     "--appendonly", "no", "--daemonize", "no", "--logfile", "/dev/null"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (posix_spawnp(&g_server, "redis-server", nullptr, nullptr, argv.data(), environ) != 0) {
        g_server = -1;
        return "";
    }
    std::string url = "redis://127.0.0.1:" + ps;
    for (int i = 0; i < 100; ++i) {
        if (reachable(url)) return url;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return "";
}

// ------------------------------------------------------------------------------------ page cache

// Writes back and drops the page cache of every regular file in dir; returns the pages still
// resident afterwards (mincore), so the line can say whether the drop worked.
uint64_t drop_page_cache(const std::string& dir) {
    uint64_t resident = 0;
    DIR* d = opendir(dir.c_str());
    if (!d) return 0;
    const long page = sysconf(_SC_PAGESIZE);
    while (dirent* e = readdir(d)) {
        if (e->d_name[0] == '.') continue;
        const std::string p = dir + "/" + e->d_name;
        int fd = open(p.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) continue;
        struct stat st {};
        if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
            fdatasync(fd);
            posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
            void* m = mmap(nullptr, size_t(st.st_size), PROT_READ, MAP_SHARED, fd, 0);
            if (m != MAP_FAILED) {
                std::vector<unsigned char> v((size_t(st.st_size) + page - 1) / page);
                if (mincore(m, size_t(st.st_size), v.data()) == 0)
                    for (unsigned char c : v) resident += c & 1;
                munmap(m, size_t(st.st_size));
            }
        }
        close(fd);
    }
    closedir(d);
    return resident;
}

std::string make_dir(const std::string& leaf) {
    std::string p = g_dir + "/" + leaf;
    mkdir(p.c_str(), 0755);
    return p;
}

// ------------------------------------------------------------------------------------ TTFT

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

struct TierSetup {
    std::string dir;        // "" = no disk tier
    std::string redis;      // "" = no Redis tier
    std::string key_prefix; // Redis keys
};

kvrt_context* make_ctx(kvrt_model* m, const TierSetup& ts) {
    kvrt_context_config c;
    kvrt_context_config_init(&c, sizeof c);
    c.n_ctx = 4096;
    c.cache_bytes = 512ull << 20;
    kvrt_tier_config t[2];
    size_t n = 0;
    if (!ts.dir.empty()) {
        kvrt_tier_config_init(&t[n], sizeof t[n]);
        t[n].kind = KVRT_TIER_DISK;
        t[n].location = ts.dir.c_str();
        ++n;
    }
    if (!ts.redis.empty()) {
        kvrt_tier_config_init(&t[n], sizeof t[n]);
        t[n].kind = KVRT_TIER_REDIS;
        t[n].location = ts.redis.c_str();
        t[n].key_prefix = ts.key_prefix.c_str();
        t[n].timeout_ms = 2000;
        ++n;
    }
    c.tiers = n ? t : nullptr;
    c.n_tiers = n;
    kvrt_context* ctx = nullptr;
    if (kvrt_context_create(&ctx, m, &c) != KVRT_OK) {
        std::fprintf(stderr, "bench_cache_tiers: context: %s\n", kvrt_last_error());
        return nullptr;
    }
    return ctx;
}

// Wall time of one prefill; *st filled. Negative on failure.
double timed_prefill(kvrt_context* ctx, const std::vector<int32_t>& toks, kvrt_request_stats* st) {
    kvrt_request_stats_init(st, sizeof *st);
    double t0 = now_seconds();
    kvrt_status s = kvrt_context_prefill(st, ctx, 0, toks.data(), toks.size());
    double t = now_seconds() - t0;
    if (s != KVRT_OK) {
        std::fprintf(stderr, "bench_cache_tiers: prefill: %s\n", kvrt_last_error());
        return -1;
    }
    return t;
}

double loadavg() {
    double l[1] = {0};
    return getloadavg(l, 1) == 1 ? l[0] : -1;
}

double median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

struct Ttft {
    std::vector<double> t;
    uint64_t reused = 0, from_ram = 0, from_disk = 0, from_remote = 0;
    void add(double s, const kvrt_request_stats& st) {
        t.push_back(s);
        reused = st.reused_from_cache;
        from_ram = st.reused_from_ram;
        from_disk = st.reused_from_disk;
        from_remote = st.reused_from_remote;
    }
};

// Block-set bytes of the model's cache (the unit the tiers move), or 0.
uint64_t bench_ttft(const std::string& tag, const std::string& file, const std::string& url, int reps) {
    const std::string path = model_dir() + "/" + file;
    kvrt_model* m = nullptr;
    if (kvrt_model_load(&m, path.c_str(), nullptr) != KVRT_OK) {
        std::fprintf(stderr, "bench_cache_tiers: %s not loaded (%s): skipped\n", path.c_str(), kvrt_last_error());
        return 0;
    }
    const std::string doc = read_document();
    const std::vector<int32_t> a = tokenize(m, doc + "\n\nSummarise the risks.");
    const std::vector<int32_t> b = tokenize(m, doc + "\n\nList the deadlines.");
    std::random_device rd;
    const TierSetup none{};
    const TierSetup disk{make_dir("ttft_" + tag), "", ""};
    const TierSetup redis{"", url, "kvrt-bench:" + std::to_string(getpid()) + ":" + std::to_string(rd()) + ":"};
    uint64_t block_set_bytes = 0;

    // The writer: request A through both tiers, then persist (the document's blocks in both).
    kvrt_context* ram_with_tiers = nullptr;
    {
        TierSetup both = disk;
        both.redis = redis.redis;
        both.key_prefix = redis.key_prefix;
        kvrt_context* w = make_ctx(m, both);
        if (!w) return 0;
        kvrt_request_stats st;
        timed_prefill(w, a, &st);
        kvrt_cache* cache = nullptr;
        kvrt_context_get_cache(&cache, w);
        uint64_t n = 0;
        kvrt_cache_persist(&n, cache);
        kvrt_cache_stats cs;
        kvrt_cache_stats_init(&cs, sizeof cs);
        kvrt_cache_stats_get(&cs, cache);
        block_set_bytes = cs.block_set_bytes;
        std::fprintf(stderr, "bench_cache_tiers: %s: A = %zu tokens, B = %zu tokens, %llu block sets persisted\n",
                     tag.c_str(), a.size(), b.size(), static_cast<unsigned long long>(n));
        ram_with_tiers = w;
    }

    Ttft cold, ram, ram_tiers, dsk, dsk_warm, rds;
    uint64_t resident = 0;
    for (int r = 0; r < reps; ++r) {
        kvrt_request_stats st;
        if (kvrt_context* c = make_ctx(m, none)) {
            double s = timed_prefill(c, b, &st);  // cold B
            if (s >= 0) cold.add(s, st);
            // RAM: B again in the same context. It reuses the document's blocks exactly as B after
            // A does (the hit never covers B's last partial block), without a second cold prefill.
            kvrt_context_seq_release(c, 0);
            s = timed_prefill(c, b, &st);
            if (s >= 0) ram.add(s, st);
            kvrt_context_destroy(c);
        }
        if (ram_with_tiers) {  // the writer (both tiers configured): a RAM hit must not pay for them
            kvrt_context_seq_release(ram_with_tiers, 0);
            double s = timed_prefill(ram_with_tiers, b, &st);
            if (s >= 0) ram_tiers.add(s, st);
        }
        resident = std::max(resident, drop_page_cache(disk.dir));
        if (kvrt_context* c = make_ctx(m, disk)) {  // disk, page cache dropped
            double s = timed_prefill(c, b, &st);
            if (s >= 0) dsk.add(s, st);
            kvrt_context_destroy(c);
        }
        if (kvrt_context* c = make_ctx(m, disk)) {  // disk, files cached (the previous run read them)
            double s = timed_prefill(c, b, &st);
            if (s >= 0) dsk_warm.add(s, st);
            kvrt_context_destroy(c);
        }
        if (!url.empty())
            if (kvrt_context* c = make_ctx(m, redis)) {
                double s = timed_prefill(c, b, &st);
                if (s >= 0) rds.add(s, st);
                kvrt_context_destroy(c);
            }
    }
    const double tc = median(cold.t);
    auto line = [&](const char* what, const Ttft& x, const std::string& more) {
        if (x.t.empty() || tc <= 0) return;
        char extra[512];
        std::snprintf(extra, sizeof extra,
                      "\"model\":\"%s\",\"prompt_tokens\":%zu,\"reused\":%llu,\"from_ram\":%llu,\"from_disk\":%llu,"
                      "\"from_redis\":%llu,\"block_set_bytes\":%llu,\"reps\":%zu,\"min_s\":%.4f,\"loadavg\":%.1f%s",
                      tag.c_str(), b.size(), static_cast<unsigned long long>(x.reused),
                      static_cast<unsigned long long>(x.from_ram), static_cast<unsigned long long>(x.from_disk),
                      static_cast<unsigned long long>(x.from_remote), static_cast<unsigned long long>(block_set_bytes),
                      x.t.size(), *std::min_element(x.t.begin(), x.t.end()), loadavg(), more.c_str());
        emit_vs("cache_tiers", std::string("ttft_") + what + "_" + tag, median(x.t), "s", "cold_prefill", tc, extra);
    };
    line("ram", ram, "");
    line("ram_with_tiers", ram_tiers, ",\"tiers\":\"disk+redis configured\"");
    line("disk", dsk, ",\"page_cache\":\"dropped: fdatasync + posix_fadvise(DONTNEED)\",\"resident_pages\":" +
                          std::to_string(resident));
    line("disk_warm", dsk_warm, ",\"page_cache\":\"warm\"");
    line("redis", rds, "");
    kvrt_context_destroy(ram_with_tiers);
    kvrt_model_destroy(m);
    return block_set_bytes;
}

// ------------------------------------------------------------------------------------ throughput

std::vector<uint8_t> pattern(size_t bytes, uint32_t seed) {
    std::vector<uint8_t> p(bytes);
    std::mt19937 g(seed);
    for (size_t i = 0; i < bytes; i += 4) {
        uint32_t v = g();
        std::memcpy(p.data() + i, &v, std::min<size_t>(4, bytes - i));
    }
    return p;
}

kc::TierKey bench_key(int i, uint64_t salt) { return kc::TierKey{kc::Hash128{uint64_t(i) + 1, salt}, {5, 6}}; }

std::string gbps(size_t bytes, int n, double s) {
    char b[64];
    std::snprintf(b, sizeof b, "%.3f", n * double(bytes) / s / 1e9);
    return b;
}

void bench_disk(size_t bytes, int n) {
    const std::string tdir = make_dir("disk_" + std::to_string(bytes));
    const std::string pdir = make_dir("plain_" + std::to_string(bytes));
    auto tier = kc::make_disk_tier(kc::DiskTierOptions{tdir, 0});
    const std::vector<uint8_t> payload = pattern(bytes - kc::kTierEnvelopeOverhead, uint32_t(bytes));
    std::vector<std::vector<uint8_t>> framed(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) framed[i] = kc::tier_frame(bench_key(i, bytes), payload.data(), payload.size());

    // Writes: the tier's put vs a plain open + write + close of the same bytes. Two rounds in
    // opposite orders (the second writer of a round pays for the first one's dirty pages), the
    // best of each; every file is new in each round (the tier's removed, the plain ones unlinked).
    std::vector<std::string> files;
    for (int i = 0; i < n; ++i) files.push_back(pdir + "/" + kc::tier_key_hex(bench_key(i, bytes)) + ".kvb");
    auto tier_put = [&] {
        for (int i = 0; i < n; ++i) tier->remove(bench_key(i, bytes));
        sync();
        double t = now_seconds();
        for (int i = 0; i < n; ++i) tier->put(bench_key(i, bytes), framed[i].data(), framed[i].size());
        return now_seconds() - t;
    };
    auto plain_write = [&] {
        for (const std::string& f : files) unlink(f.c_str());
        sync();
        double t = now_seconds();
        for (int i = 0; i < n; ++i) {
            int fd = open(files[i].c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
            size_t off = 0;
            while (fd >= 0 && off < framed[i].size()) {
                ssize_t w = write(fd, framed[i].data() + off, framed[i].size() - off);
                if (w <= 0) break;
                off += size_t(w);
            }
            if (fd >= 0) close(fd);
        }
        return now_seconds() - t;
    };
    double put_s = tier_put(), write_s = plain_write();
    write_s = std::min(write_s, plain_write());
    put_s = std::min(put_s, tier_put());

    // Reads, both over the same tier files (the plain read reads the tier's own files).
    std::vector<std::string> tfiles;
    for (int i = 0; i < n; ++i) tfiles.push_back(tdir + "/" + kc::tier_key_hex(bench_key(i, bytes)) + ".kvb");
    std::vector<uint8_t> buf(bytes + 4096), out;
    auto plain_read = [&] {
        double t = now_seconds();
        size_t total = 0;
        for (const std::string& f : tfiles) {
            int fd = open(f.c_str(), O_RDONLY | O_CLOEXEC);
            if (fd < 0) continue;
            ssize_t r;
            while ((r = read(fd, buf.data(), buf.size())) > 0) total += size_t(r);
            close(fd);
        }
        t = now_seconds() - t;
        return total == size_t(n) * bytes ? t : -1.0;
    };
    auto tier_get = [&] {
        double t = now_seconds();
        int hits = 0;
        for (int i = 0; i < n; ++i) hits += tier->get(bench_key(i, bytes), &out) ? 1 : 0;
        t = now_seconds() - t;
        return hits == n ? t : -1.0;
    };
    // Two rounds in opposite orders, the best of each (a shared machine's noise is one-sided).
    uint64_t res = 0;
    double read_cold = 1e30, get_cold = 1e30, read_warm = 1e30, get_warm = 1e30;
    auto best = [](double* b, double t) { *b = t < 0 || *b < 0 ? -1.0 : std::min(*b, t); };
    for (int round = 0; round < 2; ++round)
        for (int k = 0; k < 2; ++k) {
            res = std::max(res, drop_page_cache(tdir));
            if ((k == 0) == (round == 0)) best(&read_cold, plain_read());
            else best(&get_cold, tier_get());
        }
    for (int round = 0; round < 2; ++round) {
        if (round == 0) best(&read_warm, plain_read()), best(&get_warm, tier_get());
        else best(&get_warm, tier_get()), best(&read_warm, plain_read());
    }
    const uint64_t res1 = res, res2 = res;
    if (read_cold < 0 || get_cold < 0 || read_warm < 0 || get_warm < 0) {
        std::fprintf(stderr, "bench_cache_tiers: disk %zu: a read missed (%s)\n", bytes, tier->last_error().c_str());
        return;
    }
    auto extra = [&](double s, const std::string& more) {
        return "\"bytes\":" + std::to_string(bytes) + ",\"n\":" + std::to_string(n) + ",\"GB_per_s\":" +
               gbps(bytes, n, s) + more;
    };
    const std::string resident = ",\"resident_pages_after_drop\":" + std::to_string(std::max(res1, res2));
    emit_vs("cache_tiers", "disk_get_" + std::to_string(bytes), n / get_cold, "blocks/s", "plain_read_cold",
            n / read_cold, extra(get_cold, ",\"baseline_GB_per_s\":" + gbps(bytes, n, read_cold) + resident));
    emit_vs("cache_tiers", "disk_get_warm_" + std::to_string(bytes), n / get_warm, "blocks/s", "plain_read_warm",
            n / read_warm, extra(get_warm, ",\"baseline_GB_per_s\":" + gbps(bytes, n, read_warm)));
    emit_vs("cache_tiers", "disk_put_" + std::to_string(bytes), n / put_s, "blocks/s", "plain_write", n / write_s,
            extra(put_s, ",\"baseline_GB_per_s\":" + gbps(bytes, n, write_s)));
}

// redis-benchmark's SET and GET requests/s for one client with -d bytes (0 when unavailable).
void redis_benchmark(const std::string& host, int port, size_t bytes, int n, double* set_rps, double* get_rps) {
    std::string cmd = "redis-benchmark -h " + host + " -p " + std::to_string(port) + " -t set,get -d " +
                      std::to_string(bytes) + " -n " + std::to_string(n) + " -c 1 -P 1 --csv 2>/dev/null";
    *set_rps = *get_rps = 0;
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) return;
    char line[512];
    while (std::fgets(line, sizeof line, p)) {
        double v = 0;
        if (std::sscanf(line, "\"SET\",\"%lf\"", &v) == 1) *set_rps = v;
        if (std::sscanf(line, "\"GET\",\"%lf\"", &v) == 1) *get_rps = v;
    }
    pclose(p);
}

#ifdef KVRT_BENCH_HIREDIS
// A plain hiredis client: SET / GET of n distinct keys, one round trip each or pipelined.
struct Plain {
    redisContext* c = nullptr;
    Plain(const std::string& host, int port) {
        timeval tv{5, 0};
        c = redisConnectWithTimeout(host.c_str(), port, tv);
        if (c && c->err) {
            redisFree(c);
            c = nullptr;
        }
    }
    ~Plain() {
        if (c) redisFree(c);
    }
    // Seconds for n SETs; -1 on any error. batch 1: one round trip per SET.
    double set(const std::vector<std::string>& keys, const std::vector<uint8_t>& v, int batch) {
        double t = now_seconds();
        for (size_t i = 0; i < keys.size(); i += size_t(batch)) {
            const size_t e = std::min(keys.size(), i + size_t(batch));
            for (size_t k = i; k < e; ++k)
                if (redisAppendCommand(c, "SET %b %b", keys[k].data(), keys[k].size(), v.data(), v.size()) != REDIS_OK)
                    return -1;
            for (size_t k = i; k < e; ++k) {
                void* r = nullptr;
                if (redisGetReply(c, &r) != REDIS_OK || !r) return -1;
                const bool ok = static_cast<redisReply*>(r)->type == REDIS_REPLY_STATUS;
                freeReplyObject(r);
                if (!ok) return -1;
            }
        }
        return now_seconds() - t;
    }
    double get(const std::vector<std::string>& keys, size_t bytes, std::vector<uint8_t>* out) {
        double t = now_seconds();
        for (const std::string& k : keys) {
            auto* r = static_cast<redisReply*>(redisCommand(c, "GET %b", k.data(), k.size()));
            if (!r) return -1;
            const bool ok = r->type == REDIS_REPLY_STRING && size_t(r->len) == bytes;
            if (ok) out->assign(r->str, r->str + r->len);
            freeReplyObject(r);
            if (!ok) return -1;
        }
        return now_seconds() - t;
    }
    void del(const std::vector<std::string>& keys) {
        for (const std::string& k : keys) freeReplyObject(redisCommand(c, "DEL %b", k.data(), k.size()));
    }
};
#endif

void bench_redis(const std::string& url, const std::string& host, int port, size_t bytes, int n, int batch) {
#ifndef KVRT_BENCH_HIREDIS
    std::fprintf(stderr, "bench_cache_tiers: no hiredis headers: the Redis throughput lines are skipped\n");
    (void)url, (void)host, (void)port, (void)bytes, (void)n, (void)batch;
#else
    kc::RedisTierOptions o;
    o.url = url;
    o.timeout_ms = 5000;
    std::random_device rd;
    o.key_prefix = "kvrt-bench:" + std::to_string(getpid()) + ":" + std::to_string(rd()) + ":";
    auto tier = kc::make_redis_tier(o);
    const std::vector<uint8_t> payload = pattern(bytes - kc::kTierEnvelopeOverhead, uint32_t(bytes) + 1);
    std::vector<std::vector<uint8_t>> framed(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) framed[i] = kc::tier_frame(bench_key(i, bytes), payload.data(), payload.size());
    Plain plain(host, port);
    if (!plain.c) {
        std::fprintf(stderr, "bench_cache_tiers: hiredis cannot connect to %s:%d\n", host.c_str(), port);
        return;
    }
    std::vector<std::string> pkeys;
    for (int i = 0; i < n; ++i) pkeys.push_back(o.key_prefix + "plain:" + std::to_string(i));
    std::vector<uint8_t> out;

    // One round trip per block: plain SET, the tier's put, plain GET, the tier's get; then
    // pipelined: plain SETs in batches vs the tier's put_many. Two rounds, the second in the
    // opposite order, the best of each (every SET writes a key that does not exist).
    double pset = 1e30, tput = 1e30, pget = 1e30, tget = 1e30, pset_b = 1e30, tput_b = 1e30;
    int hits = n;
    std::vector<kc::TierPut> puts;
    for (int i = 0; i < n; ++i) puts.push_back(kc::TierPut{bench_key(i, bytes), framed[i].data(), framed[i].size()});
    auto best = [](double* b, double t) { *b = t < 0 || *b < 0 ? -1.0 : std::min(*b, t); };
    auto tier_put = [&] {
        double t = now_seconds();
        for (int i = 0; i < n; ++i) tier->put(bench_key(i, bytes), framed[i].data(), framed[i].size());
        return now_seconds() - t;
    };
    auto tier_get = [&] {
        int h = 0;
        double t = now_seconds();
        for (int i = 0; i < n; ++i) h += tier->get(bench_key(i, bytes), &out) ? 1 : 0;
        t = now_seconds() - t;
        hits = std::min(hits, h);
        return t;
    };
    auto tier_put_many = [&] {
        double t = now_seconds();
        for (size_t i = 0; i < puts.size(); i += size_t(batch))
            tier->put_many(puts.data() + i, std::min(puts.size() - i, size_t(batch)));
        return now_seconds() - t;
    };
    auto clear = [&] {
        plain.del(pkeys);
        for (int i = 0; i < n; ++i) tier->remove(bench_key(i, bytes));
    };
    for (int round = 0; round < 2; ++round) {
        if (round == 0) best(&pset, plain.set(pkeys, framed[0], 1)), best(&tput, tier_put());
        else best(&tput, tier_put()), best(&pset, plain.set(pkeys, framed[0], 1));
        if (round == 0) best(&pget, plain.get(pkeys, bytes, &out)), best(&tget, tier_get());
        else best(&tget, tier_get()), best(&pget, plain.get(pkeys, bytes, &out));
        clear();
        if (round == 0) best(&pset_b, plain.set(pkeys, framed[0], batch)), best(&tput_b, tier_put_many());
        else best(&tput_b, tier_put_many()), best(&pset_b, plain.set(pkeys, framed[0], batch));
        clear();
    }
    const kc::TierStats s = tier->stats();
    if (hits != n || s.put_failures != 0 || pset < 0 || pget < 0 || pset_b < 0 || s.puts != uint64_t(4 * n)) {
        std::fprintf(stderr, "bench_cache_tiers: redis %zu: %d/%d hits, %llu puts, %llu put failures, plain %s (%s)\n",
                     bytes, hits, n, static_cast<unsigned long long>(s.puts),
                     static_cast<unsigned long long>(s.put_failures), pset < 0 || pget < 0 || pset_b < 0 ? "failed" : "ok",
                     tier->last_error().c_str());
        return;
    }
    double rb_set = 0, rb_get = 0;
    redis_benchmark(host, port, bytes, n, &rb_set, &rb_get);
    auto extra = [&](double s_, double base_s, double rb) {
        char b[256];
        std::snprintf(b, sizeof b, "\"bytes\":%zu,\"n\":%d,\"GB_per_s\":%s,\"baseline_GB_per_s\":%s,\"redis_benchmark_rps\":%.0f",
                      bytes, n, gbps(bytes, n, s_).c_str(), gbps(bytes, n, base_s).c_str(), rb);
        return std::string(b);
    };
    const std::string sz = std::to_string(bytes);
    emit_vs("cache_tiers", "redis_get_" + sz, n / tget, "blocks/s", "hiredis_get", n / pget, extra(tget, pget, rb_get));
    emit_vs("cache_tiers", "redis_put_" + sz, n / tput, "blocks/s", "hiredis_set", n / pset, extra(tput, pset, rb_set));
    emit_vs("cache_tiers", "redis_put_batch_" + sz, n / tput_b, "blocks/s", "hiredis_set_pipelined", n / pset_b,
            extra(tput_b, pset_b, rb_set) + ",\"batch\":" + std::to_string(batch));
#endif
}

}  // namespace

int main(int argc, char** argv) {
    kvrt::bench::use_passive_omp_wait(argv);  // idle OpenMP threads sleep: the machine is shared
    bool quick = false;
    int reps = 3, n = 300;
    bool ttft = true;
    std::string which = "both";
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--quick") quick = true;
        else if (a == "--reps" && i + 1 < argc) reps = std::max(1, std::atoi(argv[++i]));
        else if (a == "--n" && i + 1 < argc) n = std::max(1, std::atoi(argv[++i]));
        else if (a == "--model" && i + 1 < argc) which = argv[++i];
        else if (a == "--no-ttft") ttft = false;
        else {
            std::fprintf(stderr, "usage: bench_cache_tiers [--quick] [--reps N] [--n N] [--model smollm2|qwen|both] [--no-ttft]\n");
            return 2;
        }
    }
    if (quick) {
        reps = 1;
        n = std::min(n, 50);
    }
    const char* base = std::getenv("KVRT_BENCH_DIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/kvrt_bench_tiers_XXXXXX";
    if (!mkdtemp(tmpl.data())) {
        std::fprintf(stderr, "bench_cache_tiers: cannot create a directory under %s\n", base ? base : "/tmp");
        return 1;
    }
    g_dir = tmpl;
    std::atexit(at_exit);
    std::string host;
    int port = 0;
    std::string url;
    if (!kc::redis_tier_available()) std::fprintf(stderr, "bench_cache_tiers: built without Redis support: no Redis lines\n");
    else if ((url = redis_url(&host, &port)).empty())
        std::fprintf(stderr, "bench_cache_tiers: no Redis (set KVRT_BENCH_REDIS_URL or install redis-server): no Redis lines\n");

    struct M {
        const char* tag;
        const char* file;
        size_t fallback_bytes;  // f16 K/V block set at 16 tokens, when the model is missing
    };
    const M models[] = {{"smollm2_135m", "SmolLM2-135M-Instruct.Q4_1.gguf", 368640},
                        {"qwen2.5_0.5b", "qwen2.5-coder-0.5b-instruct-Q4_K_M.gguf", 196608}};
    std::vector<size_t> sizes;
    for (const M& m : models) {
        const bool is_qwen = std::strncmp(m.tag, "qwen", 4) == 0;
        if (which != "both" && (which == "qwen") != is_qwen) continue;
        uint64_t bs = ttft ? bench_ttft(m.tag, m.file, url, reps) : 0;
        // The tiers move framed payloads: u32 managers + per manager (u32, u64) + block bytes.
        sizes.push_back(size_t(bs ? bs : m.fallback_bytes) + 4 + 12 + kc::kTierEnvelopeOverhead);
    }
    for (size_t bytes : sizes) {
        bench_disk(bytes, n);
        if (!url.empty()) bench_redis(url, host, port, bytes, n, 16);
    }
    return 0;
}
