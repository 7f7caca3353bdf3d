// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Thread safety: several std::threads drive their own sequences on ONE cache
// (shared prompts, so they hit each other's prefix blocks; a budget small
// enough to evict and to refuse), while another thread reads statistics.
// Run under ThreadSanitizer by scripts/test.sh (ctest -R concurrent).
#include <doctest/doctest.h>

#include "api/cache_handles.hpp"
#include "cache/cache.hpp"
#include "cache_test_util.hpp"
#include "kvrt/cache.h"
#include "util/error.hpp"

#include <atomic>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

using namespace kvrt;
using namespace kvrt::cache;

TEST_CASE("cache concurrent: threads drive their own sequences on one shared cache") {
    // 2 layers x 1 head x 4 floats, 8 positions per block: 2 x 2 x 8 x 16 = 512-byte blocks; 96 blocks.
    Cache cache(kvrt::test::dense_config(2, 1, 4, 8, 96 * 512, DType::F32));
    std::vector<int32_t> shared_prompt = kvrt::test::iota_tokens(64, 1000);
    constexpr int kThreads = 4;
    constexpr int kRounds = 150;
    std::atomic<int> stop{0}, errors{0}, full{0};
    std::atomic<int64_t> hit_total{0};

    auto worker = [&](int t) {
        std::mt19937 rng(1234 + t);
        try {
            for (int round = 0; round < kRounds; round++) {
                SeqId s = cache.create_sequence();
                int64_t n = 8 + int64_t(rng() % 56);
                int64_t hit = cache.match_prefix(s, shared_prompt.data(), n, /*sub_block=*/round % 2 == 1);
                hit_total += hit;
                std::vector<int32_t> rest(shared_prompt.begin() + hit, shared_prompt.begin() + n);
                if (rng() % 3 == 0 && !rest.empty()) rest.back() = 7 + t;  // private tail
                try {
                    cache.append(s, rest.data(), int64_t(rest.size()));
                } catch (const Error& e) {
                    if (e.status() != KVRT_ERR_CACHE_FULL) throw;
                    full++;
                    cache.release(s);
                    continue;
                }
                // Write the new rows (value = token id) and publish them.
                for (int64_t p = hit; p < n; p++)
                    for (int l = 0; l < 2; l++) {
                        float v = float(p + 1000);
                        std::memcpy(cache.k_row_mut(s, l, p), &v, 4);
                        std::memcpy(cache.v_row_mut(s, l, p), &v, 4);
                    }
                cache.mark_computed(s, n);
                // Every row reads back what a sequence with these tokens wrote.
                PagedKV view = cache.paged_view(s, 1);
                for (int64_t p = 0; p < n; p++) {
                    float v;
                    std::memcpy(&v, view.k_row(p), 4);
                    if (v != float(p + 1000)) errors++;
                }
                if (rng() % 2) {
                    SeqId f = cache.fork(s);
                    int32_t tok = 5;
                    try {
                        cache.append(f, &tok, 1);
                    } catch (const Error& e) {
                        if (e.status() != KVRT_ERR_CACHE_FULL) throw;
                        full++;
                    }
                    cache.release(f);
                }
                cache.truncate(s, int64_t(rng() % (n + 1)));
                cache.release(s);
            }
        } catch (const std::exception& e) {
            errors++;
        }
    };
    std::thread reader([&] {
        while (!stop.load()) {
            CacheStats st = cache.stats();
            if (st.bytes_in_use + st.bytes_cached + st.bytes_free != st.budget_bytes) errors++;
            (void)cache.lookup_prefix({}, shared_prompt.data(), 64, /*sub_block=*/true);
        }
    });
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; t++) threads.emplace_back(worker, t);
    for (auto& th : threads) th.join();
    stop = 1;
    reader.join();
    CHECK(errors.load() == 0);
    CHECK(hit_total.load() > 0);
    cache.check_invariants();
    CacheStats st = cache.stats();
    CHECK(st.bytes_in_use == 0);
    CHECK(st.n_sequences == 0);
}

TEST_CASE("cache concurrent: C handles are checked while another thread destroys them") {
    // Handles looked up while being destroyed: every call either works on a
    // live cache or returns KVRT_ERR_BAD_HANDLE, never touches freed memory.
    for (int round = 0; round < 20; round++) {
        kvrt_cache_layout* l = nullptr;
        kvrt_cache_layer_config c;
        kvrt_cache_layer_config_init(&c, sizeof c);
        c.n_kv_heads = 1;
        c.head_dim = 4;
        REQUIRE(kvrt_cache_layout_create(&l, 4) == KVRT_OK);
        REQUIRE(kvrt_cache_layout_add_layers(nullptr, l, &c, 1) == KVRT_OK);
        kvrt_cache* cache = nullptr;
        REQUIRE(kvrt_cache_create(&cache, l, nullptr) == KVRT_OK);
        kvrt_cache_layout_destroy(l);
        std::atomic<int> bad{0};
        std::thread user([&] {
            for (int i = 0; i < 200; i++) {
                uint64_t s = 0;
                kvrt_status st = kvrt_cache_seq_create(&s, cache, nullptr);
                if (st == KVRT_OK) {
                    int32_t tok[3] = {1, 2, 3};
                    st = kvrt_cache_seq_append(cache, s, tok, 3);
                    if (st != KVRT_OK && st != KVRT_ERR_BAD_HANDLE) bad++;
                } else if (st != KVRT_ERR_BAD_HANDLE) {
                    bad++;
                }
            }
        });
        std::this_thread::yield();
        kvrt_cache_destroy(cache);
        user.join();
        CHECK(bad.load() == 0);
        uint64_t s = 0;
        CHECK(kvrt_cache_seq_create(&s, cache, nullptr) == KVRT_ERR_BAD_HANDLE);
    }
}

TEST_CASE("cache concurrent: many threads on a small-budget cache never fail for arena address space") {
    // Each allocating thread gets its own mimalloc heap, which holds whole
    // segments of the cache's arena; with more threads than the reservation
    // has segments, allocation must fall back instead of failing while the
    // byte budget still has room.
    Cache cache(kvrt::test::dense_config(2, 1, 4, 8, 64 * 512, DType::F32));
    constexpr int kThreads = 12;
    std::atomic<int> oom{0}, ok{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; t++)
        threads.emplace_back([&, t] {
            try {
                SeqId s = cache.create_sequence();
                std::vector<int32_t> toks(16, 100 + t);  // two blocks per thread: 24 of 64 blocks
                cache.append(s, toks.data(), int64_t(toks.size()));
                cache.release(s);
                ok++;
            } catch (const Error& e) {
                if (e.status() == KVRT_ERR_OUT_OF_MEMORY) oom++;
            }
        });
    for (auto& th : threads) th.join();
    CHECK(oom.load() == 0);
    CHECK(ok.load() == kThreads);
    cache.check_invariants();
}
