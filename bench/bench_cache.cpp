// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Cache manager throughput: append, fork, release, prefix lookup (blocks/s),
// and the manager's time for one decode step of 64 sequences x 32 layers.
// JSON lines (bench_json.hpp); every figure with a baseline measured in this run:
//   append        vs arena allocations of the same blocks alone (the allocation floor)
//   fork/release  vs create+release of an empty sequence (the fixed cost of a call pair)
//   lookup        vs XXH3-128 hashing of the same blocks alone (the hashing floor)
//   decode step   vs the time to read that step's K/V once at the machine's STREAM
//                 read bandwidth (a lower bound of decode attention's time), so
//                 ratio = an upper bound of the manager's share of a decode step.
#include "baselines.hpp"
#include "bench_json.hpp"
#include "cache/block_hash.hpp"
#include "cache/cache.hpp"
#include "memory/arena.hpp"

#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

using namespace kvrt;
using namespace kvrt::cache;
using kvrt::bench::emit;
using kvrt::bench::emit_vs;
using kvrt::bench::now_seconds;

namespace {

CacheConfig dense(int layers, int heads, int dim, int bt, uint64_t budget) {
    CacheConfig c;
    c.block_tokens = bt;
    c.budget_bytes = budget;
    for (int i = 0; i < layers; i++) {
        LayerSpec s;
        s.kind = LayerKind::Full;
        s.n_kv_heads = heads;
        s.head_dim = dim;
        s.dtype = DType::F16;
        c.layers.push_back(s);
    }
    return c;
}

// Runs fn repeatedly for about `seconds`; returns calls per second (best of 3).
template <class Fn>
double rate(Fn&& fn, double seconds = 0.15) {
    double best = 0;
    for (int r = 0; r < 3; r++) {
        int64_t n = 0;
        double t0 = now_seconds(), t;
        do {
            for (int i = 0; i < 64; i++) fn();
            n += 64;
            t = now_seconds();
        } while (t - t0 < seconds);
        best = std::max(best, double(n) / (t - t0));
    }
    return best;
}

}  // namespace

int main() {
    const std::string B = "cache";
    // SmolLM2-135M-like rows: 30 layers x 3 KV heads x 64, f16, 16 positions per block.
    const CacheConfig cfg = dense(30, 3, 64, 16, 1ull << 30);
    std::vector<int32_t> toks(4096);
    std::iota(toks.begin(), toks.end(), 1);

    // ---- append: one block (16 tokens) per call into fresh sequences.
    {
        Cache c(cfg);
        const size_t block_bytes = c.stats().block_set_bytes;
        memory::Arena arena(64ull << 20, false);
        // Same pattern as the appends below: 256 allocations, then all freed.
        std::vector<void*> held;
        held.reserve(256);
        double base = rate([&] {
            if (held.size() == 256) {
                for (void* p : held) arena.release(p);
                held.clear();
            }
            held.push_back(arena.allocate(block_bytes));
        });
        for (void* p : held) arena.release(p);
        SeqId s = c.create_sequence();
        int64_t len = 0;
        double r = rate([&] {
            if (len + 16 > 4096) {
                c.release(s);
                s = c.create_sequence();
                len = 0;
            }
            c.append(s, toks.data() + len, 16);
            len += 16;
        });
        emit_vs(B, "append_block_per_s", r, "calls/s", "arena_alloc_free_per_s", base,
                "\"block_bytes\":" + std::to_string(block_bytes));
        // Decode-style: one token per call (a new block every 16th call).
        c.release(s);
        s = c.create_sequence();
        len = 0;
        double r1 = rate([&] {
            if (len + 1 > 4096) {
                c.release(s);
                s = c.create_sequence();
                len = 0;
            }
            c.append(s, toks.data() + len, 1);
            len += 1;
        });
        emit_vs(B, "append_token_per_s", r1, "calls/s", "arena_alloc_free_per_s", base);
    }

    // ---- fork and release of a computed 1024-token (64-block) sequence.
    {
        Cache c(cfg);
        SeqId s = c.create_sequence();
        c.append(s, toks.data(), 1024);
        c.mark_computed(s, 1024);
        double base = rate([&] { c.release(c.create_sequence()); });
        double r = rate([&] { c.release(c.fork(s)); });
        emit_vs(B, "fork_release_64_blocks_per_s", r, "pairs/s", "create_release_empty_per_s", base);
        // Release of a sequence whose 64 blocks go to the LRU queue, then re-attach by prefix hit.
        double r2 = rate([&] {
            SeqId t = c.create_sequence();
            c.match_prefix(t, toks.data(), 1025);
            c.release(t);
        });
        emit_vs(B, "match_release_64_blocks_per_s", r2, "pairs/s", "create_release_empty_per_s", base);
    }

    // ---- prefix lookup: blocks looked up per second (goal >= 5 M/s).
    {
        Cache c(cfg);
        SeqId s = c.create_sequence();
        c.append(s, toks.data(), 4096);
        c.mark_computed(s, 4096);
        c.release(s);  // all 256 blocks cached, evictable
        const int64_t blocks = 4095 / 16;
        int64_t hit = c.lookup_prefix({}, toks.data(), 4096);
        if (hit != blocks * 16) std::fprintf(stderr, "bench_cache: unexpected hit %lld\n", (long long)hit);
        Hash128 extra = hash_extra_keys({});
        volatile uint64_t sink = 0;
        double hash_rate = rate([&] {
            Hash128 h = hash_root();
            for (int64_t b = 0; b < blocks; b++) h = hash_block(h, extra, toks.data() + b * 16, 16);
            sink = sink + h.lo;
        }) * double(blocks);
        double r = rate([&] { sink = sink + uint64_t(c.lookup_prefix({}, toks.data(), 4096)); }) * double(blocks);
        emit_vs(B, "lookup_blocks_per_s", r, "blocks/s", "xxh3_128_hash_blocks_per_s", hash_rate,
                "\"goal\":5e6,\"block_tokens\":16,\"prefix_blocks\":" + std::to_string(blocks));
    }

    // ---- one decode step of 64 sequences x 32 layers: append 1 token to each,
    // a paged view of every layer of each (what the kernels need), mark computed.
    {
        const int n_seq = 64, n_layers = 32, ctx = 512, steps = 256;
        CacheConfig dc = dense(n_layers, 4, 64, 16, 0);
        const double bytes_per_token = 2.0 * n_layers * 4 * 64 * 2;
        dc.budget_bytes = uint64_t(bytes_per_token * n_seq * (ctx + 64));
        Cache c(dc);
        std::vector<SeqId> seqs;
        for (int i = 0; i < n_seq; i++) {
            SeqId s = c.create_sequence();
            std::vector<int32_t> p(ctx - steps, i + 1);
            c.append(s, p.data(), int64_t(p.size()));
            c.mark_computed(s, int64_t(p.size()));
            seqs.push_back(s);
        }
        volatile size_t sink = 0;
        double best = 1e30;
        for (int step = 0; step < steps; step++) {
            double t0 = now_seconds();
            for (SeqId s : seqs) {
                int32_t tok = step;
                c.append(s, &tok, 1);
                for (int l = 0; l < n_layers; l++) sink = sink + size_t(c.paged_view(s, l).n_blocks);
                c.mark_computed(s, ctx - steps + step + 1);
            }
            best = std::min(best, now_seconds() - t0);
        }
        // Lower bound of decode attention for the same step: read every cached K/V byte once.
        double kv_bytes = bytes_per_token * n_seq * ctx;
        double bw = kvrt::bench::stream_read(1);
        double floor_s = kv_bytes / bw;
        emit_vs(B, "decode_step_manager_time", best * 1e6, "us", "kv_read_at_stream_bw_us", floor_s * 1e6,
                "\"sequences\":64,\"layers\":32,\"context\":512,\"kv_heads\":4,\"head_dim\":64,\"dtype\":\"f16\","
                "\"stream_read_bytes_per_s\":" + std::to_string(bw));
    }
    return 0;
}
