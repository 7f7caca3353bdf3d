// A paged KV cache for the attention benchmarks: blocks of `block_tokens` rows carved from
// one arena in a shuffled order (as a cache that has served other sequences would hand
// them out), K rows then V rows in each block (or one shared row when K = V).
#pragma once

#include "baselines.hpp"
#include "bench_json.hpp"
#include "kernels/paged_kv.hpp"
#include "util/dtype.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <sys/mman.h>
#include <vector>

namespace kvrt::bench {

struct BenchKV {
    uint8_t* arena = nullptr;
    std::vector<const uint8_t*> ptrs;
    PagedKV kv;
    size_t payload_bytes = 0;  // K and V bytes of all rows (what a decode must read)

    BenchKV(int64_t n_tokens, int32_t n_kv_heads, int32_t head_dim, DType dt, int32_t block_tokens,
            bool kv_shared = false, uint32_t seed = 1, bool huge_pages = true) {
        const size_t es = dtype_size(dt);
        kv.block_tokens = block_tokens;
        kv.n_kv_heads = n_kv_heads;
        kv.head_dim = head_dim;
        kv.dtype = dt;
        kv.row_bytes = size_t(n_kv_heads) * head_dim * es;
        kv.k_offset = 0;
        kv.v_offset = kv_shared ? 0 : kv.row_bytes * block_tokens;
        kv.n_tokens = static_cast<int32_t>(n_tokens);
        kv.n_blocks = static_cast<int32_t>((n_tokens + block_tokens - 1) / block_tokens);
        const size_t block_bytes = (kv_shared ? 1 : 2) * kv.row_bytes * block_tokens;
        payload_bytes = size_t(n_tokens) * kv.row_bytes * (kv_shared ? 1 : 2);
        const size_t total = (block_bytes * kv.n_blocks + 4095) & ~size_t(4095);
        // 2 MiB-aligned and MADV_HUGEPAGE, as the cache arena should be: scattered blocks over
        // 4 KiB pages cost a page walk per block (measured: ~2.5x less bandwidth).
        const size_t huge = size_t(2) << 20;
        const size_t total_h = (total + huge - 1) / huge * huge;
        arena = static_cast<uint8_t*>(std::aligned_alloc(huge, total_h));
        if (huge_pages) madvise(arena, total_h, MADV_HUGEPAGE);
        // Fill with small random values in the row's dtype (fast generator: this can be 1 GB).
        uint32_t x = seed * 2654435761u + 1;
        if (dt == DType::F32) {
            float* f = reinterpret_cast<float*>(arena);
            for (size_t i = 0; i < total / 4; ++i) {
                x = x * 1664525u + 1013904223u;
                f[i] = float(int32_t(x >> 8) - (1 << 23)) * (1.0f / (1 << 23));
            }
        } else {
            uint16_t* h = reinterpret_cast<uint16_t*>(arena);
            for (size_t i = 0; i < total / 2; ++i) {
                x = x * 1664525u + 1013904223u;
                float v = float(int32_t(x >> 8) - (1 << 23)) * (1.0f / (1 << 23));
                h[i] = dt == DType::BF16 ? f32_to_bf16(v) : f32_to_f16(v);
            }
        }
        std::vector<int32_t> order(kv.n_blocks);
        std::iota(order.begin(), order.end(), 0);
        std::mt19937 rng(seed);
        std::shuffle(order.begin(), order.end(), rng);
        ptrs.resize(kv.n_blocks);
        for (int32_t b = 0; b < kv.n_blocks; ++b) ptrs[b] = arena + size_t(order[b]) * block_bytes;
        kv.blocks = ptrs.data();
    }
    BenchKV(const BenchKV&) = delete;
    BenchKV& operator=(const BenchKV&) = delete;
    ~BenchKV() { std::free(arena); }
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
