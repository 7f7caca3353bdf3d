// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// The oneDNN path of sparse K = V attention (kernels/onednn/sparse_attention.hpp): against the
// ref twin, bit-identical whatever else shares the call, however the queries are batched,
// with 1 or 2 threads and from inside another parallel region; the run-time choice.
#include "kernel_fixtures.hpp"
#include "kernels/attention.hpp"
#include "kernels/onednn/sparse_attention.hpp"
#include "util/error.hpp"

#include <doctest/doctest.h>

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <string>

using namespace kvrt;
using kvrt::test::TestKV;

namespace {
using test::pick_rows;

struct ModeScope {
    onednn::Mode prev;
    explicit ModeScope(onednn::Mode m) : prev(onednn::onednn_set_mode(m)) {}
    ~ModeScope() { onednn::onednn_set_mode(prev); }
};

struct ThreadsScope {
    int prev;
    explicit ThreadsScope(int n) : prev(omp_get_max_threads()) { omp_set_num_threads(n); }
    ~ThreadsScope() { omp_set_num_threads(prev); }
};

bool avx2_here() { return isa_detected() >= Isa::Avx2; }
}  // namespace

TEST_CASE("onednn.sparse.matches_ref") {
    if (!avx2_here()) {
        // No AVX2: the path must never be chosen, even when asked for.
        ModeScope on(onednn::Mode::On);
        TestKV bank(64, 1, 128, DType::BF16, 64, 1, true);
        AttnParams p;
        p.n_heads = 16;
        p.head_dim = 128;
        CHECK_FALSE(onednn::sparse_attention_use_onednn(bank.kv, p));
        return;
    }
    test::IsaScope scope(Isa::Avx2);
    struct Shape {
        int32_t H, D;
    };
    for (Shape s : {Shape{16, 128}, Shape{8, 512}, Shape{9, 64}}) {
        for (DType dt : {DType::F32, DType::BF16, DType::F16, DType::FP4}) {
            CAPTURE(s.H);
            CAPTURE(s.D);
            CAPTURE(std::string(dtype_name(dt)));
            const int32_t n_bank = 1500;
            TestKV bank(n_bank, 1, s.D, dt, 64, 1700 + s.D, /*kv_shared=*/true);
            AttnParams p;
            p.n_heads = s.H;
            p.head_dim = s.D;
            p.scale = 1.0f / std::sqrt(float(s.D));
            auto sinks = test::random_vec(size_t(s.H), 1701, -1.0f, 1.0f);
            p.sinks = sinks.data();
            REQUIRE(onednn::sparse_attention_supported(bank.kv, p));
            // 0 rows, one row (a GEMM of one column), a tile and one more, chunks of 512 and a tail.
            for (int32_t n_sel : {0, 1, 45, 128, 129, 600, 1100}) {
                CAPTURE(n_sel);
                auto rows = pick_rows(n_bank, n_sel, 1702 + uint32_t(n_sel));
                auto q = test::random_vec(size_t(s.H) * s.D, 1703 + uint32_t(n_sel));
                std::vector<float> o_ref(q.size()), o_dnn(q.size()), l_ref(size_t(s.H)), l_dnn(size_t(s.H));
                SparseQuery sq{q.data(), rows.data(), int32_t(rows.size()), o_ref.data(), l_ref.data()};
                ref::attention_sparse(bank.kv, p, &sq, 1);
                sq.out = o_dnn.data();
                sq.lse = l_dnn.data();
                onednn::attention_sparse(bank.kv, p, &sq, 1);
                CHECK(test::max_abs_diff(o_ref, o_dnn) < 2e-5f);
                CHECK(test::max_abs_diff(l_ref, l_dnn) < 2e-5f);
                if (n_sel == 0) {
                    CHECK(std::all_of(o_dnn.begin(), o_dnn.end(), [](float x) { return x == 0.0f; }));
                    CHECK(test::bit_equal(l_dnn, sinks));
                }
                // Through cpu::attention_sparse with the mode forced on: the same bits.
                {
                    ModeScope on(onednn::Mode::On);
                    CHECK(onednn::sparse_attention_use_onednn(bank.kv, p));
                    std::vector<float> o2(q.size()), l2(size_t(s.H));
                    SparseQuery s2{q.data(), rows.data(), int32_t(rows.size()), o2.data(), l2.data()};
                    cpu::attention_sparse(bank.kv, p, &s2, 1);
                    CHECK(test::bit_equal(o2, o_dnn));
                    CHECK(test::bit_equal(l2, l_dnn));
                }
                // And the hand-written kernel on the same shapes (auto may route them to oneDNN,
                // so the other tests of cpu::attention_sparse may not reach it here).
                {
                    ModeScope off(onednn::Mode::Off);
                    std::vector<float> o3(q.size()), l3(size_t(s.H));
                    SparseQuery s3{q.data(), rows.data(), int32_t(rows.size()), o3.data(), l3.data()};
                    cpu::attention_sparse(bank.kv, p, &s3, 1);
                    CHECK(test::max_abs_diff(o_ref, o3) < 2e-5f);
                    CHECK(test::max_abs_diff(l_ref, l3) < 2e-5f);
                }
            }
        }
    }
}

TEST_CASE("onednn.sparse.bit_identical_across_batching_and_threads") {
    if (!avx2_here()) {
        CHECK(isa_detected() < Isa::Avx2);  // nothing to run: the path needs AVX2 (previous test checks the choice)
        return;
    }
    test::IsaScope scope(Isa::Avx2);
    const int32_t H = 16, D = 256, n_bank = 4000, nq = 5;
    TestKV bank(n_bank, 1, D, DType::BF16, 64, 1801, true);
    AttnParams p;
    p.n_heads = H;
    p.head_dim = D;
    p.scale = 1.0f / 16.0f;
    auto sinks = test::random_vec(size_t(H), 1802, -1.0f, 1.0f);
    p.sinks = sinks.data();
    const size_t qn = size_t(H) * D;
    auto q = test::random_vec(qn * nq, 1803);
    std::vector<std::vector<int32_t>> rows;
    for (int32_t n : {1100, 7, 600, 1, 2048}) rows.push_back(pick_rows(n_bank, n, 1804 + uint32_t(n)));
    auto run = [&](int32_t first, int32_t count, std::vector<float>& out, std::vector<float>& lse) {
        std::vector<SparseQuery> qs;
        for (int32_t i = first; i < first + count; ++i)
            qs.push_back(SparseQuery{q.data() + qn * size_t(i), rows[size_t(i)].data(), int32_t(rows[size_t(i)].size()),
                                     out.data() + qn * size_t(i), lse.data() + size_t(H) * i});
        onednn::attention_sparse(bank.kv, p, qs.data(), count);
    };
    // All five queries in one call on one thread: the reference bits.
    std::vector<float> out1(qn * nq), lse1(size_t(H) * nq);
    {
        ThreadsScope t(1);
        run(0, nq, out1, lse1);
    }
    // Each query alone, on 2 threads.
    std::vector<float> out2(out1.size(), NAN), lse2(lse1.size(), NAN);
    {
        ThreadsScope t(2);
        for (int32_t i = 0; i < nq; ++i) run(i, 1, out2, lse2);
    }
    CHECK(test::bit_equal(out1, out2));
    CHECK(test::bit_equal(lse1, lse2));
    // Chunks of 2, 2, 1 queries on 2 threads.
    std::vector<float> out3(out1.size(), NAN), lse3(lse1.size(), NAN);
    {
        ThreadsScope t(2);
        run(0, 2, out3, lse3);
        run(2, 2, out3, lse3);
        run(4, 1, out3, lse3);
    }
    CHECK(test::bit_equal(out1, out3));
    CHECK(test::bit_equal(lse1, lse3));
    // From inside another parallel region (each thread one query at a time).
    std::vector<float> out4(out1.size(), NAN), lse4(lse1.size(), NAN);
    {
        ThreadsScope t(2);
#pragma omp parallel for schedule(dynamic, 1)
        for (int32_t i = 0; i < nq; ++i) run(i, 1, out4, lse4);
    }
    CHECK(test::bit_equal(out1, out4));
    CHECK(test::bit_equal(lse1, lse4));
    // The hand-written kernel (mode off) keeps its own bits across batching and threads too.
    {
        ModeScope off(onednn::Mode::Off);
        std::vector<float> h1(out1.size()), hl1(lse1.size()), h2(out1.size(), NAN), hl2(lse1.size(), NAN);
        auto run_cpu = [&](int32_t first, int32_t count, std::vector<float>& out, std::vector<float>& lse) {
            std::vector<SparseQuery> qs;
            for (int32_t i = first; i < first + count; ++i)
                qs.push_back(SparseQuery{q.data() + qn * size_t(i), rows[size_t(i)].data(),
                                         int32_t(rows[size_t(i)].size()), out.data() + qn * size_t(i),
                                         lse.data() + size_t(H) * i});
            cpu::attention_sparse(bank.kv, p, qs.data(), count);
        };
        {
            ThreadsScope t(1);
            run_cpu(0, nq, h1, hl1);
        }
        {
            ThreadsScope t(2);
            for (int32_t i = 0; i < nq; ++i) run_cpu(i, 1, h2, hl2);
        }
        CHECK(test::bit_equal(h1, h2));
        CHECK(test::bit_equal(hl1, hl2));
        CHECK(test::max_abs_diff(h1, out1) < 2e-5f);
    }
    // Against the ref twin as well.
    for (int32_t i = 0; i < nq; ++i) {
        std::vector<float> o(qn), l(static_cast<size_t>(H));
        SparseQuery sq{q.data() + qn * size_t(i), rows[size_t(i)].data(), int32_t(rows[size_t(i)].size()), o.data(),
                       l.data()};
        ref::attention_sparse(bank.kv, p, &sq, 1);
        CHECK(test::max_abs_diff(o, std::vector<float>(out1.begin() + qn * size_t(i), out1.begin() + qn * size_t(i + 1))) <
              2e-5f);
    }
}

TEST_CASE("onednn.sparse.choice") {
    TestKV bf(64, 1, 128, DType::BF16, 64, 1901, true);
    TestKV i8(64, 1, 128, DType::I8, 64, 1902, true);
    AttnParams p;
    p.n_heads = 16;
    p.head_dim = 128;
    p.scale = 0.1f;
    {
        ModeScope off(onednn::Mode::Off);
        CHECK_FALSE(onednn::sparse_attention_use_onednn(bf.kv, p));
    }
    {
        // Quantised banks have no oneDNN path: mode on falls back to the hand kernel.
        ModeScope on(onednn::Mode::On);
        CHECK_FALSE(onednn::sparse_attention_use_onednn(i8.kv, p));
        test::IsaScope scalar(Isa::Scalar);
        CHECK_FALSE(onednn::sparse_attention_use_onednn(bf.kv, p));
    }
    CHECK(std::string(onednn::onednn_mode_name(onednn::Mode::Auto)) == "auto");
    // Auto: the model's shape and the ISA level decide (measured ahead on AVX2 and on AMX Xeons).
    {
        ModeScope autom(onednn::Mode::Auto);
        AttnParams small = p;
        small.n_heads = 2;
        small.head_dim = 128;
        for (Isa isa : test::available_isas()) {
            test::IsaScope s(isa);
            const bool measured_ahead = isa == Isa::Avx2 || isa == Isa::AvxVnni || isa == Isa::Amx;
            CAPTURE(std::string(isa_name(isa)));
            CHECK(onednn::sparse_attention_use_onednn(bf.kv, p) == measured_ahead);  // 16 x 128
            CHECK_FALSE(onednn::sparse_attention_use_onednn(bf.kv, small));      // 2 x 128
        }
    }
    // A quantised bank with the mode on computes as with it off (the hand kernel both times).
    auto q = test::random_vec(size_t(16) * 128, 1903);
    auto rows = pick_rows(64, 40, 1904);
    std::vector<float> oa(q.size()), ob(q.size()), la(16), lb(16);
    SparseQuery a{q.data(), rows.data(), 40, oa.data(), la.data()}, b{q.data(), rows.data(), 40, ob.data(), lb.data()};
    {
        ModeScope on(onednn::Mode::On);
        cpu::attention_sparse(i8.kv, p, &a, 1);
    }
    {
        ModeScope off(onednn::Mode::Off);
        cpu::attention_sparse(i8.kv, p, &b, 1);
    }
    CHECK(test::bit_equal(oa, ob));
    CHECK(test::bit_equal(la, lb));
}
