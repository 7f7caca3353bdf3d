// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Sparse K=V global attention, the lse merge, indexer scoring, top-k and block-max
// candidates: cpu:: against ref:: on every ISA path, plus their edges.
#include "kernel_fixtures.hpp"
#include "kernels/attention.hpp"
#include "kernels/indexer.hpp"
#include "util/error.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <string>

using namespace kvrt;
using kvrt::test::TestKV;

namespace {
using test::pick_rows;

}  // namespace

TEST_CASE("kernels.sparse.matches_ref_and_merges") {
    for (Isa isa : test::available_isas()) {
        test::IsaScope scope(isa);
        for (DType dt : {DType::F32, DType::BF16, DType::F16}) {
            for (int32_t D : {512, 64}) {
                CAPTURE(std::string(isa_name(isa)));
                CAPTURE(std::string(dtype_name(dt)));
                CAPTURE(D);
                const int32_t H = D == 512 ? 8 : 9, n_bank = 1200;
                TestKV bank(n_bank, 1, D, dt, 64, 700 + D, /*kv_shared=*/true);
                AttnParams p;
                p.n_heads = H;
                p.head_dim = D;
                p.scale = 1.0f / std::sqrt(float(D));
                auto sinks = test::random_vec(H, 701, -1.0f, 1.0f);
                p.sinks = sinks.data();
                for (int32_t n_sel : {0, 1, 45, 600}) {
                    CAPTURE(n_sel);
                    auto rows = pick_rows(n_bank, n_sel, 702 + n_sel);
                    auto q = test::random_vec(size_t(H) * D, 703 + n_sel);
                    std::vector<float> o_ref(q.size()), o_cpu(q.size()), l_ref(H), l_cpu(H);
                    SparseQuery sq{q.data(), rows.data(), int32_t(rows.size()), o_ref.data(), l_ref.data()};
                    ref::attention_sparse(bank.kv, p, &sq, 1);
                    sq.out = o_cpu.data();
                    sq.lse = l_cpu.data();
                    cpu::attention_sparse(bank.kv, p, &sq, 1);
                    CHECK(test::max_abs_diff(o_ref, o_cpu) < test::attn_tolerance(isa, dt));
                    CHECK(test::max_abs_diff(l_ref, l_cpu) < test::attn_tolerance(isa, dt));
                    if (n_sel == 0) {
                        CHECK(std::all_of(o_cpu.begin(), o_cpu.end(), [](float x) { return x == 0.0f; }));
                        CHECK(test::bit_equal(l_cpu, sinks));
                    }
                    // Split the selection in two, merge the partials: equals the whole (sink in one half).
                    if (n_sel >= 2) {
                        const int32_t half = n_sel / 2;
                        std::vector<float> oa(q.size()), ob(q.size()), la(H), lb(H);
                        SparseQuery a{q.data(), rows.data(), half, oa.data(), la.data()};
                        SparseQuery b{q.data(), rows.data() + half, n_sel - half, ob.data(), lb.data()};
                        cpu::attention_sparse(bank.kv, p, &a, 1);
                        AttnParams nosink = p;
                        nosink.sinks = nullptr;
                        cpu::attention_sparse(bank.kv, nosink, &b, 1);
                        merge_attention(oa.data(), la.data(), ob.data(), lb.data(), H, D);
                        CHECK(test::max_abs_diff(oa, o_ref) < test::attn_tolerance(isa, dt, 5e-5f));
                        CHECK(test::max_abs_diff(la, l_ref) < test::attn_tolerance(isa, dt, 5e-5f));
                    }
                }
            }
        }
    }
}

TEST_CASE("kernels.sparse.batch_is_bit_exact_and_bad_rows_throw") {
    const int32_t D = 512, H = 4;
    TestKV bank(3000, 1, D, DType::BF16, 128, 801, true);
    AttnParams p;
    p.n_heads = H;
    p.head_dim = D;
    p.scale = 0.05f;
    auto q = test::random_vec(size_t(3) * H * D, 802);
    std::vector<std::vector<int32_t>> rows = {pick_rows(3000, 1100, 803), pick_rows(3000, 7, 804),
                                              pick_rows(3000, 600, 805)};
    std::vector<float> out(q.size()), lse(3 * H), out1(size_t(H) * D), lse1(H);
    std::vector<SparseQuery> qs;
    for (int i = 0; i < 3; ++i)
        qs.push_back({q.data() + size_t(i) * H * D, rows[i].data(), int32_t(rows[i].size()),
                      out.data() + size_t(i) * H * D, lse.data() + i * H});
    cpu::attention_sparse(bank.kv, p, qs.data(), 3);
    SparseQuery alone = qs[2];
    alone.out = out1.data();
    alone.lse = lse1.data();
    cpu::attention_sparse(bank.kv, p, &alone, 1);
    CHECK(std::memcmp(out1.data(), out.data() + size_t(2) * H * D, out1.size() * 4) == 0);
    int32_t bad = 3000;
    SparseQuery b{q.data(), &bad, 1, out1.data(), lse1.data()};
    CHECK_THROWS_AS(cpu::attention_sparse(bank.kv, p, &b, 1), Error);
    bad = -1;
    CHECK_THROWS_AS(cpu::attention_sparse(bank.kv, p, &b, 1), Error);
    b.lse = nullptr;
    bad = 1;
    CHECK_THROWS_AS(cpu::attention_sparse(bank.kv, p, &b, 1), Error);
}

TEST_CASE("kernels.indexer.scores_match_ref") {
    for (Isa isa : test::available_isas()) {
        test::IsaScope scope(isa);
        for (DType dt : {DType::F32, DType::BF16, DType::F16}) {
            for (int32_t n : {1, 31, 33, 700}) {
                CAPTURE(std::string(isa_name(isa)));
                CAPTURE(std::string(dtype_name(dt)));
                CAPTURE(n);
                const int32_t Hi = 32, Di = 128;
                TestKV keys(n, 1, Di, dt, 64, 900 + n, true);
                auto q = test::random_vec(size_t(Hi) * Di, 901);
                auto w = test::random_vec(Hi, 902, 0.0f, 1.0f);
                IndexerQuery iq{q.data(), w.data(), Hi};
                // The ref twin of the kernel's arithmetic: its query (rounded to bf16 where the
                // kernel rounds it, test::indexer_rounds_q), double accumulation. What is left
                // is f32 accumulation: 1e-3 on scores of ~10 (32 heads of 128, inputs in [-1, 1]),
                // which a wrong key, lane, head or weight (errors ~1-10) exceeds.
                const bool rounds = test::indexer_rounds_q(isa, dt);
                const auto q_used = rounds ? test::bf16_rounded(q) : q;
                const IndexerQuery iq_used{q_used.data(), w.data(), Hi};
                std::vector<float> s_ref(n), s_cpu(n);
                ref::indexer_scores(keys.kv, iq_used, n, s_ref.data());
                cpu::indexer_scores(keys.kv, iq, n, s_cpu.data());
                CHECK(test::max_abs_diff(s_ref, s_cpu) < 1e-3f);
                if (rounds) {
                    // Against the f32 query's ref: within the bound of rounding q to bf16.
                    std::vector<float> s_f32(n);
                    ref::indexer_scores(keys.kv, iq, n, s_f32.data());
                    for (int32_t i = 0; i < n; ++i)
                        CHECK(std::fabs(s_cpu[i] - s_f32[i]) <=
                              test::indexer_bf16_q_bound(keys.kv, q.data(), w.data(), Hi, i) + 1e-3f);
                }
                auto rows = pick_rows(n, 20, 903);
                std::vector<float> r_cpu(rows.size()), r_ref(rows.size());
                cpu::indexer_scores_rows(keys.kv, iq, rows.data(), int32_t(rows.size()), r_cpu.data());
                ref::indexer_scores_rows(keys.kv, iq_used, rows.data(), int32_t(rows.size()), r_ref.data());
                CHECK(test::max_abs_diff(r_ref, r_cpu) < 1e-3f);
                // A key's score does not depend on which other keys are scored with it.
                for (size_t i = 0; i < rows.size(); ++i) CHECK(r_cpu[i] == s_cpu[rows[i]]);
            }
        }
    }
}

TEST_CASE("kernels.indexer.topk_and_block_candidates") {
    std::vector<float> s = {0.5f, 2.0f, -1.0f, 2.0f, NAN, 3.0f, 0.0f};
    int32_t out[8];
    CHECK(topk_rows(s.data(), nullptr, 7, 3, out) == 3);
    CHECK(std::vector<int32_t>(out, out + 3) == std::vector<int32_t>{1, 3, 5});
    CHECK(topk_rows(s.data(), nullptr, 7, 2, out) == 2);  // tie 2.0 at ids 1 and 3: smaller id wins
    CHECK(std::vector<int32_t>(out, out + 2) == std::vector<int32_t>{1, 5});
    CHECK(topk_rows(s.data(), nullptr, 7, 7, out) == 7);  // k >= n: all of them, ascending
    CHECK(out[0] == 0);
    CHECK(out[6] == 6);
    CHECK(topk_rows(s.data(), nullptr, 7, 0, out) == 0);
    int32_t ids[3] = {40, 10, 30};
    CHECK(topk_rows(s.data(), ids, 3, 2, out) == 2);
    CHECK(std::vector<int32_t>(out, out + 2) == std::vector<int32_t>{10, 40});
    CHECK_THROWS_AS(topk_rows(s.data(), nullptr, 7, -1, out), Error);

    // Blocks of 8 over 50 positions: 7 blocks, the newest (6) always kept.
    std::vector<float> sc(50, 0.0f);
    sc[3] = 5.0f;   // block 0
    sc[20] = 9.0f;  // block 2
    sc[41] = 1.0f;  // block 5
    int32_t blocks[8];
    CHECK(block_max_candidates(sc.data(), 50, 8, 3, blocks) == 3);
    CHECK(std::vector<int32_t>(blocks, blocks + 3) == std::vector<int32_t>{0, 2, 6});
    CHECK(block_max_candidates(sc.data(), 50, 8, 1, blocks) == 1);
    CHECK(blocks[0] == 6);
    CHECK(block_max_candidates(sc.data(), 50, 8, 8, blocks) == 7);  // fewer blocks than the cap
    int32_t rows[64];
    int32_t two[2] = {2, 6};
    CHECK(expand_blocks(two, 2, 8, 50, rows) == 10);  // 16..23 and 48, 49
    CHECK(rows[0] == 16);
    CHECK(rows[9] == 49);
    CHECK_THROWS_AS(block_max_candidates(sc.data(), 50, 0, 3, blocks), Error);
}
