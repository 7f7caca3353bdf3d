// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Kernels that open their own OpenMP parallel region catch what their threads throw and rethrow
// it after the region (RegionError, util/region_error.hpp): an exception may not leave an
// OpenMP region (the runtime calls std::terminate), so a scratch allocation refused on a worker
// thread would end the whole process inside the library. Here the worker threads' allocations
// are refused through this binary's aligned_alloc (the kernels' per-thread scratch and the
// weight matmul's quantised rows come from it) while the flag is set: each call must throw
// std::bad_alloc to its caller, and the next call, memory granted again, must give the result of
// a call that never failed.
//
// Worker threads keep their scratch for their life, so each refused call runs on a new std::thread:
// OpenMP gives it a team of new worker threads, whose scratch is empty and must be allocated
// inside the region. Each case also checks that allocations were refused, so it cannot pass
// without going through the path.
#include "kernel_fixtures.hpp"
#include "runtime_test_support.hpp"
#include "kernels/attention.hpp"
#include "kernels/indexer.hpp"
#include "kernels/rope.hpp"
#include "kernels/weight_matmul.hpp"
#include "formats/tensor_type.hpp"
#include "formats/tensor_type_quantize.hpp"

#include <doctest/doctest.h>
#include <malloc.h>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <new>
#include <thread>
#include <vector>

namespace {
std::atomic<bool> g_refuse_workers{false};
std::atomic<int> g_refused{0};
constexpr int kThreads = 4;
}  // namespace

// The kvrt code linked into this binary calls this aligned_alloc (glibc's memalign does the work).
extern "C" void* aligned_alloc(size_t alignment, size_t size) {
    if (g_refuse_workers.load(std::memory_order_relaxed) && omp_in_parallel() && omp_get_thread_num() > 0) {
        g_refused.fetch_add(1, std::memory_order_relaxed);
        return nullptr;
    }
    return memalign(alignment, size);
}

using namespace kvrt;
using kvrt::test::KvTypes;
using kvrt::test::TestKV;

namespace {

// Sets the OpenMP thread count for the scope (the kernels' own regions use the default).
struct Threads {
    int saved;
    explicit Threads(int n) : saved(omp_get_max_threads()) { omp_set_num_threads(n); }
    ~Threads() { omp_set_num_threads(saved); }
};

// Runs fn on a new thread (a new OpenMP team of kThreads) with the workers' allocations refused;
// returns whether it threw std::bad_alloc.
template <class Fn>
bool refused(Fn&& fn) {
    g_refused.store(0);
    bool threw = false;
    std::thread th([&] {
        omp_set_num_threads(kThreads);
        g_refuse_workers.store(true);
        try {
            fn();
        } catch (const std::bad_alloc&) {
            threw = true;
        }
        g_refuse_workers.store(false);
    });
    th.join();
    return threw;
}

}  // namespace

TEST_CASE("kernels: a worker thread's refused scratch comes back as std::bad_alloc, not a dead process") {
    SUBCASE("attention_decode (its own region over the chunk items)") {
        const Threads threads(kThreads);
        const int32_t H = 32, Hkv = 8, d = 128, n_tok = 8 * 512;  // eight chunks: every thread has items
        TestKV t(n_tok, Hkv, d, KvTypes(DType::F16), 16, 71);
        AttnParams p;
        p.n_heads = H;
        p.head_dim = d;
        p.scale = 1.0f / std::sqrt(float(d));
        const std::vector<float> q = test::random_vec(size_t(H) * d, 72);
        const PagedKV view = t.prefix(n_tok);
        std::vector<float> out(size_t(H) * d, -1.0f);
        DecodeSeq s{&view, q.data(), out.data(), nullptr, n_tok - 1};
        CHECK(refused([&] { cpu::attention_decode(&s, 1, p); }));
        CHECK(g_refused.load() > 0);
        cpu::attention_decode(&s, 1, p);  // memory granted again
        std::vector<float> want(out.size());
        DecodeSeq s1{&view, q.data(), want.data(), nullptr, n_tok - 1};
        {
            const Threads one(1);
            cpu::attention_decode(&s1, 1, p);
        }
        CHECK(test::bit_equal(want, out));
    }
    SUBCASE("attention_prefill (its own region over the row blocks)") {
        const Threads threads(kThreads);
        const int32_t H = 32, Hkv = 8, d = 128, n_tok = 600;
        TestKV t(n_tok, Hkv, d, KvTypes(DType::F16), 16, 73);
        AttnParams p;
        p.n_heads = H;
        p.head_dim = d;
        p.scale = 1.0f / std::sqrt(float(d));
        const std::vector<float> q = test::random_vec(size_t(n_tok) * H * d, 74);
        const PagedKV view = t.prefix(n_tok);
        std::vector<float> out(q.size(), -1.0f);
        CHECK(refused([&] { cpu::attention_prefill(view, p, q.data(), n_tok, 0, out.data()); }));
        CHECK(g_refused.load() > 0);
        cpu::attention_prefill(view, p, q.data(), n_tok, 0, out.data());
        std::vector<float> want(q.size());
        {
            const Threads one(1);
            cpu::attention_prefill(view, p, q.data(), n_tok, 0, want.data());
        }
        CHECK(test::bit_equal(want, out));
    }
    SUBCASE("attention_sparse (its own region over the selected rows' chunks)") {
        const Threads threads(kThreads);
        const int32_t H = 16, d = 512, n_bank = 4096, n_q = 4;
        TestKV bank(n_bank, 1, d, KvTypes(DType::F16), 16, 77, true);  // one vector as key and value
        AttnParams p;
        p.n_heads = H;
        p.head_dim = d;
        p.scale = 1.0f / std::sqrt(float(d));
        const std::vector<float> q = test::random_vec(size_t(n_q) * H * d, 78);
        std::vector<int32_t> rows(n_bank);
        for (int32_t i = 0; i < n_bank; ++i) rows[size_t(i)] = i;
        auto run = [&](std::vector<float>& out, std::vector<float>& lse) {
            std::vector<SparseQuery> qs(n_q);
            for (int32_t i = 0; i < n_q; ++i)
                qs[size_t(i)] = SparseQuery{q.data() + size_t(i) * H * d, rows.data(), n_bank, out.data() + size_t(i) * H * d,
                                            lse.data() + size_t(i) * H};
            cpu::attention_sparse(bank.kv, p, qs.data(), n_q);
        };
        std::vector<float> out(q.size()), lse(size_t(n_q) * H), want(q.size()), want_lse(lse.size());
        CHECK(refused([&] { run(out, lse); }));
        CHECK(g_refused.load() > 0);
        run(out, lse);
        {
            const Threads one(1);
            run(want, want_lse);
        }
        CHECK(test::bit_equal(want, out));
        CHECK(test::bit_equal(want_lse, lse));
    }
    SUBCASE("indexer_scores and indexer_scores_batch (their own regions over key tiles)") {
        const Threads threads(kThreads);
        const int32_t Hi = 8, d = 1024, n_keys = 8192;
        TestKV keys(n_keys, 1, d, KvTypes(DType::F16), 16, 79);
        const std::vector<float> q = test::random_vec(size_t(2) * Hi * d, 80), w = test::random_vec(size_t(2) * Hi, 81);
        const IndexerQuery iq[2] = {{q.data(), w.data(), Hi}, {q.data() + size_t(Hi) * d, w.data() + Hi, Hi}};
        const int32_t nv[2] = {n_keys, n_keys - 100};
        std::vector<float> one(n_keys), batch(size_t(2) * n_keys), want_one(one.size()), want_batch(batch.size());
        CHECK(refused([&] { cpu::indexer_scores(keys.kv, iq[0], n_keys, one.data()); }));
        CHECK(g_refused.load() > 0);
        CHECK(refused([&] { cpu::indexer_scores_batch(keys.kv, iq, nv, 2, batch.data(), n_keys); }));
        CHECK(g_refused.load() > 0);
        cpu::indexer_scores(keys.kv, iq[0], n_keys, one.data());
        cpu::indexer_scores_batch(keys.kv, iq, nv, 2, batch.data(), n_keys);
        {
            const Threads single(1);
            cpu::indexer_scores(keys.kv, iq[0], n_keys, want_one.data());
            cpu::indexer_scores_batch(keys.kv, iq, nv, 2, want_batch.data(), n_keys);
        }
        CHECK(test::bit_equal(want_one, one));
        for (int i = 0; i < 2; ++i)
            CHECK(std::equal(batch.begin() + i * n_keys, batch.begin() + i * n_keys + nv[i], want_batch.begin() + i * n_keys));
    }
    SUBCASE("matmul (each thread quantises a few rows into its own scratch)") {
        const Threads threads(kThreads);
        const int64_t rows = 4096, cols = 1024, M = 8;  // M <= 16: the private quantisation
        const std::vector<float> wf = test::random_vec(size_t(rows * cols), 75);
        std::vector<uint8_t> raw(size_t(rows * cols / 32) * 34);  // Q8_0: 34 bytes per 32 weights
        quantize(TensorType::Q8_0, wf.data(), raw.data(), uint64_t(rows * cols));
        const PackedWeight w(TensorType::Q8_0, raw.data(), rows, cols);
        const std::vector<float> x = test::random_vec(size_t(M * cols), 76);
        std::vector<float> y(size_t(M * rows), -1.0f), want(y.size());
        CHECK(refused([&] { matmul(w, x.data(), M, cols, y.data(), rows, kThreads); }));
        CHECK(g_refused.load() > 0);
        matmul(w, x.data(), M, cols, y.data(), rows, kThreads);
        matmul(w, x.data(), M, cols, want.data(), rows, 1);
        CHECK(test::bit_equal(want, y));
    }
}
