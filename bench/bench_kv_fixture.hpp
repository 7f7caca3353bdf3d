// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// A paged KV cache for the attention benchmarks, laid out as the cache manager lays it out
// (src/cache/layout.hpp): blocks of `block_tokens` positions come from a memory::Arena (the
// cache's allocator, on 2 MiB pages by default) and hold `layers` layers each, every layer's
// K rows then V rows (one shared region when K = V); the benchmark reads the middle layer.
// The block table is shuffled, as a cache that has served other sequences hands blocks out.
// Only the read layer's rows are written (the others' bytes are never touched).
#pragma once

#include "baselines.hpp"
#include "bench_json.hpp"
#include "kernels/paged_kv.hpp"
#include "memory/arena.hpp"
#include "util/dtype.hpp"
#include "util/kv_quant.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <stdexcept>
#include <vector>

namespace kvrt::bench {

// Layers per block so that the arena stays near `budget` bytes (at least 1, at most the
// 30 of SmolLM2-135M).
inline int32_t bench_layers(size_t layer_bytes, size_t budget = size_t(1) << 30) {
    return static_cast<int32_t>(std::clamp<size_t>(budget / std::max<size_t>(layer_bytes, 1), 1, 30));
}

struct BenchKV {
    std::unique_ptr<memory::Arena> arena;
    std::vector<void*> mem;  // blocks in allocation order
    std::vector<const uint8_t*> ptrs;
    PagedKV kv;
    size_t payload_bytes = 0;  // K and V bytes of all rows (what a decode must read)

    BenchKV(int64_t n_tokens, int32_t n_kv_heads, int32_t head_dim, DType dt, int32_t block_tokens,
            bool kv_shared = false, uint32_t seed = 1, int32_t layers = 1, bool huge_pages = true) {
        kv.block_tokens = block_tokens;
        kv.n_kv_heads = n_kv_heads;
        kv.head_dim = head_dim;
        kv.dtype = dt;
        kv.row_bytes = size_t(n_kv_heads) * kv_head_bytes(dt, head_dim);  // quantised: scales included
        const size_t region = (kv.row_bytes * block_tokens + 63) & ~size_t(63);
        const size_t layer_bytes = (kv_shared ? 1 : 2) * region;
        const size_t block_bytes = layer_bytes * size_t(layers);
        kv.k_offset = layer_bytes * size_t(layers / 2);
        kv.v_offset = kv_shared ? kv.k_offset : kv.k_offset + region;
        kv.n_tokens = static_cast<int32_t>(n_tokens);
        kv.n_blocks = static_cast<int32_t>((n_tokens + block_tokens - 1) / block_tokens);
        payload_bytes = size_t(n_tokens) * kv.row_bytes * (kv_shared ? 1 : 2);
        arena = std::make_unique<memory::Arena>(uint64_t(block_bytes) * kv.n_blocks, false, huge_pages);
        mem.resize(kv.n_blocks);
        for (auto& m : mem) {
            m = arena->allocate(block_bytes);
            if (!m) throw std::bad_alloc();
        }
        // Fill the read layer with small random values in the row's dtype (fast generator).
        uint32_t x = seed * 2654435761u + 1;
        for (void* m : mem) {
            uint8_t* b = static_cast<uint8_t*>(m) + kv.k_offset;
            if (dtype_quantized(dt)) {  // random elements, every scale ~1/127 (a valid row)
                for (size_t i = 0; i < layer_bytes; ++i) {
                    x = x * 1664525u + 1013904223u;
                    b[i] = uint8_t(x >> 24) & (dt == DType::FP8_E4M3 ? 0xf7u : 0xffu);  // fp8: no NaN code
                }
                // f16 1/127, or (4-bit indexer keys: e8m0) 2^-7.
                const uint16_t sc = dt == DType::FP4_E8 ? uint16_t(120) : f32_to_f16(1.0f / 127.0f);
                const size_t hb = kv_head_bytes(dt, head_dim), sb = kv_scale_bytes(dt);
                const int32_t ng = head_dim / kv_scale_group(dt, head_dim);
                for (int which = 0; which < (kv_shared ? 1 : 2); ++which)
                    for (int32_t r = 0; r < block_tokens; ++r)
                        for (int32_t h = 0; h < n_kv_heads; ++h)
                            for (int32_t g = 0; g < ng; ++g)
                                std::memcpy(b + size_t(which) * region + size_t(r) * kv.row_bytes + size_t(h) * hb +
                                                kv_elem_bytes(dt, head_dim) + sb * size_t(g),
                                            &sc, sb);
            } else if (dt == DType::F32) {
                float* f = reinterpret_cast<float*>(b);
                for (size_t i = 0; i < layer_bytes / 4; ++i) {
                    x = x * 1664525u + 1013904223u;
                    f[i] = float(int32_t(x >> 8) - (1 << 23)) * (1.0f / (1 << 23));
                }
            } else {
                uint16_t* h = reinterpret_cast<uint16_t*>(b);
                for (size_t i = 0; i < layer_bytes / 2; ++i) {
                    x = x * 1664525u + 1013904223u;
                    float v = float(int32_t(x >> 8) - (1 << 23)) * (1.0f / (1 << 23));
                    h[i] = dt == DType::BF16 ? f32_to_bf16(v) : f32_to_f16(v);
                }
            }
        }
        std::vector<int32_t> order(kv.n_blocks);
        std::iota(order.begin(), order.end(), 0);
        std::mt19937 rng(seed);
        std::shuffle(order.begin(), order.end(), rng);
        ptrs.resize(kv.n_blocks);
        for (int32_t b = 0; b < kv.n_blocks; ++b) ptrs[b] = static_cast<const uint8_t*>(mem[order[b]]);
        kv.blocks = ptrs.data();
    }
    BenchKV(const BenchKV&) = delete;
    BenchKV& operator=(const BenchKV&) = delete;
    ~BenchKV() {
        for (void* m : mem) arena->release(m);
    }
};

// Best-of timing: runs fn until min_seconds have passed (at least min_iters times); returns
// the fastest single run in seconds, each run timed by run_seconds() (baselines.hpp) with the
// current OpenMP thread count.
template <class Fn>
double time_best(Fn&& fn, double min_seconds, int min_iters = 3) {
    double best = 1e30, start = now_seconds();
    const int threads = omp_get_max_threads();
    for (int i = 0; i < min_iters || now_seconds() - start < min_seconds; ++i) {
        best = std::min(best, run_seconds(threads, fn));
        if (i > 10000) break;
    }
    return best;
}

}  // namespace kvrt::bench
