// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Attention kernels: cpu:: against ref:: on random shapes and edges, on every ISA path,
// and bit-for-bit determinism (chunked prefill, decode == prefill row, batch order, threads).
#include "kernel_fixtures.hpp"
#include "runtime_test_support.hpp"
#include "kernels/attention.hpp"
#include "kernels/indexer.hpp"
#include "util/error.hpp"

#include <doctest/doctest.h>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <string>

using namespace kvrt;
using kvrt::test::TestKV;
using kvrt::test::KvTypes;

namespace {

struct Shape {
    int32_t h, hkv, d;
};

AttnParams params(const Shape& s, int32_t window = 0, int32_t floor = 0) {
    AttnParams p;
    p.n_heads = s.h;
    p.head_dim = s.d;
    p.scale = 1.0f / std::sqrt(float(s.d));
    p.window = window;
    p.window_floor = floor;
    return p;
}

// cpu prefill of the whole [q_pos0, q_pos0 + n_q) in chunks of `chunk` tokens.
void prefill_chunked(const TestKV& t, const AttnParams& p, const std::vector<float>& q, int32_t n_q, int32_t q_pos0,
                     int32_t chunk, std::vector<float>& out, std::vector<float>& lse) {
    const size_t row = size_t(p.n_heads) * p.head_dim;
    out.assign(size_t(n_q) * row, 0.0f);
    lse.assign(size_t(n_q) * p.n_heads, 0.0f);
    for (int32_t a = 0; a < n_q; a += chunk) {
        int32_t n = std::min(chunk, n_q - a);
        PagedKV view = t.prefix(q_pos0 + a + n);  // the runtime has written rows up to the chunk's end
        cpu::attention_prefill(view, p, q.data() + a * row, n, q_pos0 + a, out.data() + a * row,
                               lse.data() + size_t(a) * p.n_heads);
    }
}

// Prefill of the n_q queries ending at the last of t's tokens, then decode of the last query:
// [the prefill rows][the decode row], after checking that the decode row is the last prefill row
// bit for bit.
std::vector<float> prefill_then_decode(const TestKV& t, const AttnParams& p, const std::vector<float>& q,
                                       int32_t n_q, int32_t n_tok) {
    const size_t row = size_t(p.n_heads) * p.head_dim;
    std::vector<float> o(q.size() + row);
    cpu::attention_prefill(t.kv, p, q.data(), n_q, n_tok - n_q, o.data());
    DecodeSeq d{&t.kv, q.data() + (n_q - 1) * row, o.data() + q.size(), nullptr, n_tok - 1};
    cpu::attention_decode(&d, 1, p);
    CHECK(std::memcmp(o.data() + q.size(), o.data() + (n_q - 1) * row, row * sizeof(float)) == 0);
    return o;
}

}  // namespace

TEST_CASE("kernels.attention.prefill_matches_ref") {
    const Shape shapes[] = {{9, 3, 64}, {4, 1, 128}, {2, 2, 256}, {2, 1, 512}, {3, 3, 40}, {2, 1, 33}};
    // The quantised types (int8 per-32 scales, fp8 per-head scales) and K/V of different types.
    const KvTypes dts[] = {DType::F32, DType::BF16, DType::F16, DType::I8, DType::FP8_E4M3, {DType::I8, DType::F16},
                           {DType::F16, DType::FP8_E4M3}};
    // Each case's reference is computed once and every ISA path is compared with it (the
    // reference's double loops are most of this test's time, ~10x more under the sanitizers).
    uint32_t seed = 1;
    for (const Shape& s : shapes)
        for (KvTypes dt : dts) {
            if (!kv_head_dim_ok(dt.k, s.d) || !kv_head_dim_ok(dt.v, s.d)) continue;  // int8: d % 32
            for (int32_t n_tok : {1, 45, 530}) {
                // keep the suite fast: one shape crosses a chunk (512) boundary per dtype
                if (n_tok > 100 && !(s.d == 64 || (s.d == 128 && dt.k == DType::BF16))) continue;
                for (int32_t window : {0, 16, 1000}) {
                    for (int32_t bt : {16, 7}) {
                        if (bt == 7 && n_tok > 100) continue;
                        CAPTURE(s.h);
                        CAPTURE(s.d);
                        CAPTURE(test::kv_types_name(dt));
                        CAPTURE(n_tok);
                        CAPTURE(window);
                        CAPTURE(bt);
                        TestKV t(n_tok, s.hkv, s.d, dt, bt, seed++);
                        AttnParams p = params(s, window, window ? 3 : 0);
                        const int32_t n_q = std::min(n_tok, 37), q0 = n_tok - n_q;
                        if (window) t.drop_before(attn_first_key(p, q0));  // never read
                        auto q = test::random_vec(size_t(n_q) * s.h * s.d, seed++);
                        std::vector<float> o_ref(q.size()), l_ref(size_t(n_q) * s.h);
                        ref::attention_prefill(t.kv, p, q.data(), n_q, q0, o_ref.data(), l_ref.data());
                        for (Isa isa : test::available_isas()) {
                            test::IsaScope scope(isa);
                            CAPTURE(std::string(isa_name(isa)));
                            std::vector<float> o_cpu(q.size()), l_cpu(l_ref.size());
                            cpu::attention_prefill(t.kv, p, q.data(), n_q, q0, o_cpu.data(), l_cpu.data());
                            const float tol = test::attn_tolerance(isa, dt);
                            CHECK(test::max_abs_diff(o_ref, o_cpu) < tol);
                            CHECK(test::max_abs_diff(l_ref, l_cpu) < tol);
                        }
                    }
                }
            }
        }
}

TEST_CASE("kernels.attention.bf16_dot_path_only_changes_bf16_kv") {
    // The avx512bf16 path (isa.hpp) multiplies bf16 KV in bf16 dot products where the CPU takes
    // them (cpu::attention_bf16_dot; the unit tests force it on); f32 and f16 KV keep the f32
    // arithmetic of the avx512 path, bit for bit. Prefill and decode alike.
    if (isa_detected() < Isa::Avx512Bf16) {
        std::printf("KVRT_TEST_NOT_RUN: no AVX512_BF16 on this CPU\n");  // ctest reports it as not run
        return;
    }
    REQUIRE(cpu::attention_bf16_dot());
    const Shape s{9, 3, 64};
    uint32_t seed = 600;
    for (DType dt : {DType::F32, DType::F16, DType::BF16}) {
        CAPTURE(std::string(dtype_name(dt)));
        const int32_t n_tok = 300, n_q = 40, q0 = n_tok - n_q;
        TestKV t(n_tok, s.hkv, s.d, dt, 16, seed++);
        AttnParams p = params(s);
        auto q = test::random_vec(size_t(n_q) * s.h * s.d, seed++);
        auto run = [&](Isa isa) {
            test::IsaScope scope(isa);
            std::vector<float> o(q.size() + size_t(s.h) * s.d);
            cpu::attention_prefill(t.kv, p, q.data(), n_q, q0, o.data());
            DecodeSeq d{&t.kv, q.data() + (n_q - 1) * size_t(s.h) * s.d, o.data() + q.size(), nullptr, n_tok - 1};
            cpu::attention_decode(&d, 1, p);
            return o;
        };
        const auto o512 = run(Isa::Avx512), obf = run(Isa::Avx512Bf16);
        if (dt == DType::BF16) {
            CHECK_FALSE(test::bit_equal(o512, obf));
            CHECK(test::max_abs_diff(o512, obf) < test::attn_tolerance(Isa::Avx512Bf16, dt));
        } else {
            CHECK(test::bit_equal(o512, obf));
        }
    }
}

TEST_CASE("kernels.attention.bf16_dot_path_off_equals_avx512_bitwise") {
    // Where the CPU does not take bf16 dot products (Intel: cpu::attention_bf16_dot), the
    // avx512bf16 path multiplies bf16 KV in f32 products: the bits of the avx512 path, in prefill
    // and decode (dense and window), and the CED indexer over bf16 keys the same. Turning it off
    // changes bf16 KV only where it was on.
    if (isa_detected() < Isa::Avx512Bf16) {
        std::printf("KVRT_TEST_NOT_RUN: no AVX512_BF16 on this CPU\n");  // ctest reports it as not run
        return;
    }
    const Shape s{14, 2, 64};
    uint32_t seed = 650;
    for (DType dt : {DType::BF16, DType::F16}) {
        CAPTURE(std::string(dtype_name(dt)));
        const int32_t n_tok = 600, n_q = 24;
        TestKV t(n_tok, s.hkv, s.d, dt, 16, seed++);
        auto q = test::random_vec(size_t(n_q) * s.h * s.d, seed++);
        for (int32_t window : {0, 70}) {
            const AttnParams p = params(s, window);
            auto run = [&](Isa isa, int dot) {
                test::IsaScope scope(isa);
                test::Bf16DotScope mode(dot);
                return prefill_then_decode(t, p, q, n_q, n_tok);  // (decode == the prefill row, whichever arithmetic)
            };
            const auto o512 = run(Isa::Avx512, 1), off = run(Isa::Avx512Bf16, 0), on = run(Isa::Avx512Bf16, 1);
            CHECK(test::bit_equal(o512, off));
            if (dt == DType::BF16) CHECK_FALSE(test::bit_equal(off, on));
            else CHECK(test::bit_equal(off, on));
        }
    }
    // The indexer's scores over bf16 keys: off = the avx512 path's.
    const int32_t n_keys = 300, heads = 4, dim = 64;
    TestKV keys(n_keys, 1, dim, DType::BF16, 16, seed++);
    auto iq = test::random_vec(size_t(heads) * dim, seed++);
    auto w = test::random_vec(size_t(heads), seed++);
    auto score = [&](Isa isa, int dot) {
        test::IsaScope scope(isa);
        test::Bf16DotScope mode(dot);
        std::vector<float> out(n_keys);
        cpu::indexer_scores(keys.kv, IndexerQuery{iq.data(), w.data(), heads}, n_keys, out.data());
        return out;
    };
    const auto i512 = score(Isa::Avx512, 1), ioff = score(Isa::Avx512Bf16, 0), ion = score(Isa::Avx512Bf16, 1);
    CHECK(test::bit_equal(i512, ioff));
    CHECK_FALSE(test::bit_equal(ioff, ion));
}

TEST_CASE("kernels.attention.scale_gathers_or_loads_give_the_same_bits") {
    // The AVX-512 paths read quantised heads' scales with gathers or with one load per key
    // (cpu::attention_gather_scales, chosen per CPU): the same scales, so the same bits, in prefill
    // and decode, dense and windowed, on every ISA path (the others ignore the choice).
    const Shape s{14, 2, 64};
    uint32_t seed = 910;
    for (Isa isa : test::available_isas()) {
        CAPTURE(isa_name(isa));
        for (KvTypes dt : {KvTypes(DType::I8), KvTypes(DType::FP8_E4M3), KvTypes(DType::I8, DType::F16),
                           KvTypes(DType::F16, DType::I8)}) {
            CAPTURE(test::kv_types_name(dt));
            const int32_t n_tok = 700, n_q = 20;
            TestKV t(n_tok, s.hkv, s.d, dt, 16, seed++);
            auto q = test::random_vec(size_t(n_q) * s.h * s.d, seed++);
            for (int32_t window : {0, 100}) {
                const AttnParams p = params(s, window);
                auto run = [&](int gather) {
                    test::IsaScope scope(isa);
                    test::GatherScalesScope mode(gather);
                    REQUIRE(cpu::attention_gather_scales() == (gather != 0));
                    return prefill_then_decode(t, p, q, n_q, n_tok);
                };
                const auto on = run(1), off = run(0);
                CHECK(test::bit_equal(on, off));
                bool finite = true;
                for (float x : on) finite = finite && std::isfinite(x);
                CHECK(finite);
            }
        }
    }
}

TEST_CASE("kernels.attention.decode_matches_ref_and_prefill_bitwise") {
    // {3, 1, 33}: an odd width (the tails of every path: f32 element tails, bf16 pair padding).
    const Shape shapes[] = {{9, 3, 64}, {8, 2, 128}, {4, 4, 64}, {2, 1, 512}, {3, 1, 33}};
    uint32_t seed = 100;
    for (const Shape& s : shapes)
        for (KvTypes dt : {KvTypes(DType::F32), KvTypes(DType::BF16), KvTypes(DType::F16), KvTypes(DType::I8),
                           KvTypes(DType::FP8_E4M3), KvTypes(DType::I8, DType::F16)}) {
            if (!kv_head_dim_ok(dt.k, s.d) || !kv_head_dim_ok(dt.v, s.d)) continue;
            CAPTURE(s.h);
            CAPTURE(s.d);
            CAPTURE(test::kv_types_name(dt));
            const int32_t n_tok = s.d >= 256 ? 300 : 600;  // crosses a chunk (512) boundary
            TestKV t(n_tok, s.hkv, s.d, dt, 16, seed++);
            for (int32_t window : {0, 100}) {
                AttnParams p = params(s, window);
                // The prefill rows of the last 24 positions, one shot.
                const int32_t n_q = 24, q0 = n_tok - n_q;
                auto q = test::random_vec(size_t(n_q) * s.h * s.d, seed++);
                // Decode of each of those positions, batched in a shuffled order; the reference
                // once per case, every ISA path against it.
                std::vector<DecodeSeq> seqs(n_q);
                std::vector<PagedKV> views(n_q);
                std::vector<float> o_ref(q.size()), l_ref(size_t(n_q) * s.h);
                for (int32_t k = 0; k < n_q; ++k) {
                    const int32_t i = (k * 17) % n_q;
                    views[k] = t.prefix(q0 + i + 1);
                    const size_t off = size_t(i) * s.h * s.d;
                    seqs[k] = DecodeSeq{&views[k], q.data() + off, o_ref.data() + off, l_ref.data() + size_t(i) * s.h, q0 + i};
                }
                ref::attention_decode(seqs.data(), n_q, p);
                for (Isa isa : test::available_isas()) {
                    test::IsaScope scope(isa);
                    CAPTURE(std::string(isa_name(isa)));
                    std::vector<float> o_pre(q.size()), l_pre(l_ref.size()), o_dec(q.size()), l_dec(l_ref.size());
                    cpu::attention_prefill(t.kv, p, q.data(), n_q, q0, o_pre.data(), l_pre.data());
                    for (auto& sq : seqs) {
                        const size_t off = size_t(sq.q - q.data());
                        sq.out = o_dec.data() + off;
                        sq.lse = l_dec.data() + off / s.d;
                    }
                    cpu::attention_decode(seqs.data(), n_q, p);
                    CHECK(test::bit_equal(o_pre, o_dec));
                    CHECK(test::bit_equal(l_pre, l_dec));
                    CHECK(test::max_abs_diff(o_ref, o_dec) < test::attn_tolerance(isa, dt));
                    CHECK(test::max_abs_diff(l_ref, l_dec) < test::attn_tolerance(isa, dt));
                }
            }
        }
}

TEST_CASE("kernels.attention.decode_direct_tiles_equal_prefill_on_model_shapes") {
    // Decode dots each key row with the GQA group's queries straight from the cache (direct tiles:
    // no transpose, int8/fp8 dequantised in registers), prefill scores transposed tiles with the
    // same lane chains and tree: the rows must agree bit for bit. The real models' groups
    // (SmolLM2 9/3, Qwen2.5-0.5B 14/2, Gemma 3 270M 4/1 at d 256, 6/1, 5/1 and 10/1: direct tiles
    // in blocks of 4 rows, 4 + 3, 4 + 2, 4 + 1, 4 + 4 + 2; int8 tiles and fp8 K's direct tiles on
    // AVX-512 in blocks of up to 8, one block of 7, 6 or 5 rows and 8 + 2),
    // K and V of different types, 16- and 7-position blocks (rows across block ends), windows.
    const Shape shapes[] = {{9, 3, 64}, {14, 2, 64}, {4, 1, 256}, {6, 1, 32}, {5, 1, 64}, {10, 1, 64}};
    const KvTypes dts[] = {DType::F16, DType::I8, DType::FP8_E4M3, DType::BF16, DType::F32, {DType::I8, DType::F16},
                           {DType::F16, DType::I8}, {DType::FP8_E4M3, DType::I8}};
    uint32_t seed = 900;
    for (const Shape& s : shapes)
        for (KvTypes dt : dts)
            for (int32_t bt : {16, 7}) {
                CAPTURE(s.h);
                CAPTURE(s.d);
                CAPTURE(test::kv_types_name(dt));
                CAPTURE(bt);
                const int32_t n_tok = s.d >= 256 ? 200 : 560;  // d 64: crosses a chunk (512)
                TestKV t(n_tok, s.hkv, s.d, dt, bt, seed++);
                for (int32_t window : {0, 50}) {
                    const AttnParams p = params(s, window);
                    const int32_t n_q = 6, q0 = n_tok - n_q;
                    const size_t row = size_t(s.h) * s.d;
                    auto q = test::random_vec(size_t(n_q) * row, seed++);
                    std::vector<PagedKV> views(n_q);
                    std::vector<DecodeSeq> seqs(n_q);
                    std::vector<float> o_ref(q.size()), l_ref(size_t(n_q) * s.h);
                    for (int32_t i = 0; i < n_q; ++i) {
                        views[i] = t.prefix(q0 + i + 1);
                        seqs[i] = DecodeSeq{&views[i], q.data() + i * row, o_ref.data() + i * row,
                                            l_ref.data() + size_t(i) * s.h, q0 + i};
                    }
                    ref::attention_decode(seqs.data(), n_q, p);  // once per case, every ISA path against it
                    for (Isa isa : test::available_isas()) {
                        test::IsaScope scope(isa);
                        CAPTURE(std::string(isa_name(isa)));
                        std::vector<float> o_pre(q.size()), l_pre(l_ref.size());
                        cpu::attention_prefill(t.kv, p, q.data(), n_q, q0, o_pre.data(), l_pre.data());
                        std::vector<float> o_dec(q.size(), -1.0f), l_dec(l_ref.size());
                        for (int32_t i = 0; i < n_q; ++i) {
                            seqs[i].out = o_dec.data() + i * row;
                            seqs[i].lse = l_dec.data() + size_t(i) * s.h;
                        }
                        cpu::attention_decode(seqs.data(), n_q, p);
                        CHECK(test::bit_equal(o_pre, o_dec));
                        CHECK(test::bit_equal(l_pre, l_dec));
                        CHECK(test::max_abs_diff(o_ref, o_dec) < test::attn_tolerance(isa, dt));
                        CHECK(test::max_abs_diff(l_ref, l_dec) < test::attn_tolerance(isa, dt));
                    }
                }
            }
}

// The cases of the team-mode tests: every ISA path, GQA 9/3 of 64 and 4/1 of 128, f16 / f32 /
// int8-K KV over n_tok positions; fn(shape, kv) for each (seed advanced per case).
template <class Fn>
void for_each_team_case(int32_t n_tok, uint32_t& seed, Fn&& fn) {
    const Shape shapes[] = {{9, 3, 64}, {4, 1, 128}};
    for (Isa isa : test::available_isas()) {
        test::IsaScope scope(isa);
        for (const Shape& s : shapes)
            for (KvTypes dt : {KvTypes(DType::F16), KvTypes(DType::F32), KvTypes(DType::I8, DType::F16)}) {
                CAPTURE(std::string(isa_name(isa)));
                CAPTURE(s.d);
                CAPTURE(test::kv_types_name(dt));
                const TestKV t(n_tok, s.hkv, s.d, dt, 16, seed++);
                fn(s, t);
            }
    }
}

TEST_CASE("kernels.attention.decode_team_mode_equals_decode_bitwise") {
    // attention_decode_team: every thread of a region makes the call, each gets every output in
    // its own buffer; bit-identical to attention_decode (and so to the prefill row), with 1, 2
    // and 3 threads in the region (meeting at an OpenMP barrier or at a TeamBarrier) and outside
    // any region, for sequences of 1 to 3 chunks, and for one sequence of one chunk alone (its
    // heads shared out among the threads: item_heads).
    uint32_t seed = 700;
    for_each_team_case(1100, seed, [&](const Shape& s, const TestKV& t) {
        for (int32_t window : {0, 700})
        for (int32_t n : {1, 4}) {
            CAPTURE(n);
            const AttnParams p = params(s, window);
            const int32_t positions[] = {5, 511, 512, 1099};  // 1, 1, 2 and 3 chunks
            const size_t row = size_t(s.h) * s.d;
            auto q = test::random_vec(size_t(n) * row, seed++);
            std::vector<PagedKV> views(n);
            std::vector<DecodeSeq> seqs(n);
            std::vector<float> want(size_t(n) * row);
            for (int32_t i = 0; i < n; ++i) {
                views[i] = t.prefix(positions[i] + 1);
                seqs[i] = DecodeSeq{&views[i], q.data() + i * row, want.data() + i * row, nullptr, positions[i]};
            }
            cpu::attention_decode(seqs.data(), n, p);
            std::vector<float> part(cpu::attention_decode_part_floats(seqs.data(), n, p));
            REQUIRE(!part.empty());
            // Outside a region: the calling thread does everything.
            std::vector<float> alone(want.size(), -1.0f);
            cpu::attention_decode_team(seqs.data(), n, p, part.data(), alone.data());
            CHECK(test::bit_equal(want, alone));
            for (int nt : {1, 2, 3})
                for (bool own_barrier : {false, true}) {  // an OpenMP barrier, or a TeamBarrier
                    CAPTURE(nt);
                    CAPTURE(own_barrier);
                    std::vector<std::vector<float>> outs(size_t(nt), std::vector<float>(want.size(), -1.0f));
                    TeamBarrier bar;
                    CHECK(test::run_team(nt, [&](int tid) {
                              cpu::attention_decode_team(seqs.data(), n, p, part.data(), outs[size_t(tid)].data(),
                                                         own_barrier ? &bar : nullptr);
                          }) == 0);
                    for (const auto& o : outs) CHECK(test::bit_equal(want, o));
                }
        }
    });
    // Bad arguments are refused before any work (on every thread alike).
    std::vector<float> buf(64);
    TestKV t(8, 1, 64, KvTypes(DType::F16), 16, 1);
    PagedKV v = t.prefix(8);
    auto q = test::random_vec(64, 2);
    DecodeSeq sq{&v, q.data(), nullptr, nullptr, 7};
    CHECK_THROWS_AS(cpu::attention_decode_team(&sq, 1, params({1, 1, 64}), nullptr, buf.data()), Error);
    CHECK_THROWS_AS(cpu::attention_decode_team(&sq, 1, params({1, 1, 64}), buf.data(), nullptr), Error);
}

TEST_CASE("kernels.attention.prefill_team_mode_equals_prefill_bitwise") {
    // attention_prefill_team: every thread of a region makes the call; the items come from a
    // shared counter and the split plan's partials from thread 0's buffer. Bit-identical to
    // attention_prefill with 1, 2 and 3 threads and outside any region, for a prompt from the
    // start (whole items) and a few queries after a long prefix (items split into key chunks).
    uint32_t seed = 900;
    for_each_team_case(1500, seed, [&](const Shape& s, const TestKV& t) {
        for (int32_t window : {0, 700})
            for (auto [n_q, q0] : {std::pair<int32_t, int32_t>{200, 0}, std::pair<int32_t, int32_t>{7, 1493}}) {
                CAPTURE(window);
                CAPTURE(n_q);
                const AttnParams p = params(s, window);
                const size_t row = size_t(s.h) * s.d;
                auto q = test::random_vec(size_t(n_q) * row, seed++);
                std::vector<float> want(size_t(n_q) * row);
                cpu::attention_prefill(t.kv, p, q.data(), n_q, q0, want.data());
                TeamBarrier bar;
                std::atomic<int> next{0};
                float* slot = nullptr;
                const cpu::PrefillTeam team{&bar, &next, &slot};
                std::vector<float> got(want.size(), -1.0f);
                cpu::attention_prefill_team(t.kv, p, q.data(), n_q, q0, got.data(), team);  // outside a region
                CHECK(test::bit_equal(want, got));
                for (int nt : {1, 2, 3}) {
                    CAPTURE(nt);
                    std::fill(got.begin(), got.end(), -1.0f);
                    next = 0;
                    CHECK(test::run_team(nt, [&](int) {
                              cpu::attention_prefill_team(t.kv, p, q.data(), n_q, q0, got.data(), team);
                          }) == 0);
                    CHECK(test::bit_equal(want, got));
                }
            }
    });
    // Bad arguments are refused before any work (on every thread alike).
    std::vector<float> buf(64);
    TestKV t(8, 1, 64, KvTypes(DType::F16), 16, 1);
    auto q = test::random_vec(64, 2);
    TeamBarrier bar;
    std::atomic<int> next{0};
    float* slot = nullptr;
    CHECK_THROWS_AS(cpu::attention_prefill_team(t.kv, params({1, 1, 64}), q.data(), 1, 7, buf.data(), cpu::PrefillTeam{}), Error);
    CHECK_THROWS_AS(cpu::attention_prefill_team(t.kv, params({1, 1, 64}), nullptr, 1, 7, buf.data(), cpu::PrefillTeam{&bar, &next, &slot}), Error);
    CHECK_THROWS_AS(cpu::attention_prefill_team(t.kv, params({1, 1, 64}), q.data(), 1, 8, buf.data(), cpu::PrefillTeam{&bar, &next, &slot}), Error);
    cpu::attention_prefill_team(t.kv, params({1, 1, 64}), q.data(), 1, 7, buf.data(), cpu::PrefillTeam{&bar, &next, &slot});
}

TEST_CASE("kernels.attention.prefill_chunking_is_bit_exact") {
    const Shape shapes[] = {{9, 3, 64}, {4, 2, 128}};
    uint32_t seed = 200;
    for (Isa isa : test::available_isas()) {
        test::IsaScope scope(isa);
        for (const Shape& s : shapes)
            for (DType dt : {DType::F32, DType::BF16, DType::I8, DType::FP8_E4M3}) {
                for (int32_t window : {0, 50}) {
                    CAPTURE(std::string(isa_name(isa)));
                    CAPTURE(s.d);
                    CAPTURE(window);
                    const int32_t n_tok = 600;
                    TestKV t(n_tok, s.hkv, s.d, dt, 16, seed++);
                    AttnParams p = params(s, window);
                    auto q = test::random_vec(size_t(n_tok) * s.h * s.d, seed++);
                    std::vector<float> o_all, l_all, o_1, l_1, o_7, l_7;
                    prefill_chunked(t, p, q, n_tok, 0, n_tok, o_all, l_all);
                    prefill_chunked(t, p, q, n_tok, 0, 7, o_7, l_7);
                    CHECK(test::bit_equal(o_all, o_7));
                    CHECK(test::bit_equal(l_all, l_7));
                    // One token at a time: 600 calls per case; the sanitized builds (~10x slower) run
                    // the same code through the chunks of 7 above, the Release run checks this too.
                    if (s.d == 64 && !kvrt::test::kSanitized) {
                        prefill_chunked(t, p, q, n_tok, 0, 1, o_1, l_1);
                        CHECK(test::bit_equal(o_all, o_1));
                        CHECK(test::bit_equal(l_all, l_1));
                    }
                }
            }
    }
}

TEST_CASE("kernels.attention.few_queries_split_along_keys_is_bit_exact") {
    // 11 queries x 3 KV heads are 3 work items: prefill splits them along key chunks and folds
    // the chunk partials afterwards; 200 queries are enough items not to split. The last 11
    // rows must agree bit for bit, with 1 and 2 threads.
    const Shape s{9, 3, 64};
    const size_t row = size_t(s.h) * s.d;
    for (Isa isa : test::available_isas()) {
        test::IsaScope scope(isa);
        for (DType dt : {DType::F16, DType::F32, DType::BF16, DType::I8, DType::FP8_E4M3}) {
            CAPTURE(std::string(isa_name(isa)));
            CAPTURE(std::string(dtype_name(dt)));
            const int32_t n_tok = 1300, n_many = 200, n_few = 11;
            TestKV t(n_tok, s.hkv, s.d, dt, 16, 400 + uint32_t(dt));
            AttnParams p = params(s);
            auto q = test::random_vec(size_t(n_many) * row, 401);
            std::vector<float> o_many(q.size()), l_many(size_t(n_many) * s.h);
            cpu::attention_prefill(t.kv, p, q.data(), n_many, n_tok - n_many, o_many.data(), l_many.data());
            const size_t skip = size_t(n_many - n_few);
            for (int threads : {1, 2}) {
                int saved = omp_get_max_threads();
                omp_set_num_threads(threads);
                std::vector<float> o_few(size_t(n_few) * row), l_few(size_t(n_few) * s.h);
                cpu::attention_prefill(t.kv, p, q.data() + skip * row, n_few, n_tok - n_few, o_few.data(), l_few.data());
                omp_set_num_threads(saved);
                CHECK(std::memcmp(o_few.data(), o_many.data() + skip * row, o_few.size() * sizeof(float)) == 0);
                CHECK(std::memcmp(l_few.data(), l_many.data() + skip * s.h, l_few.size() * sizeof(float)) == 0);
            }
        }
    }
}

TEST_CASE("kernels.attention.threads_and_batch_do_not_change_bits") {
    const Shape s{9, 3, 64};
    TestKV a(700, s.hkv, s.d, DType::BF16, 16, 301), b(90, s.hkv, s.d, DType::BF16, 32, 302),
        c(1, s.hkv, s.d, DType::BF16, 16, 303);
    AttnParams p = params(s);
    const size_t row = size_t(s.h) * s.d;
    auto q = test::random_vec(3 * row, 304);
    auto run = [&](std::vector<int> order, int threads) {
        std::vector<float> out(3 * row), lse(3 * s.h);
        const TestKV* kvs[3] = {&a, &b, &c};
        std::vector<DecodeSeq> seqs;
        for (int i : order)
            seqs.push_back(DecodeSeq{&kvs[i]->kv, q.data() + i * row, out.data() + i * row, lse.data() + i * s.h,
                                     kvs[i]->kv.n_tokens - 1});
        int saved = omp_get_max_threads();
        omp_set_num_threads(threads);
        cpu::attention_decode(seqs.data(), int32_t(seqs.size()), p);
        omp_set_num_threads(saved);
        return out;
    };
    auto base = run({0, 1, 2}, 2);
    CHECK(test::bit_equal(base, run({2, 0, 1}, 2)));
    CHECK(test::bit_equal(base, run({1, 2, 0}, 1)));
    // Alone in its batch: the same bits for its rows.
    auto alone = run({0}, 1);
    CHECK(std::memcmp(alone.data(), base.data(), row * sizeof(float)) == 0);
    // Prefill with 1 and 2 threads.
    auto qp = test::random_vec(64 * row, 305);
    std::vector<float> o1(qp.size()), o2(qp.size());
    omp_set_num_threads(1);
    cpu::attention_prefill(a.kv, p, qp.data(), 64, 700 - 64, o1.data());
    omp_set_num_threads(2);
    cpu::attention_prefill(a.kv, p, qp.data(), 64, 700 - 64, o2.data());
    CHECK(test::bit_equal(o1, o2));
}

TEST_CASE("kernels.attention.edges") {
    const Shape s{9, 3, 64};
    for (Isa isa : test::available_isas()) {
        test::IsaScope scope(isa);
        CAPTURE(std::string(isa_name(isa)));
        // One key.
        TestKV one(1, s.hkv, s.d, DType::F32, 16, 401);
        AttnParams p = params(s);
        auto q = test::random_vec(size_t(s.h) * s.d, 402);
        std::vector<float> o(q.size()), r(q.size());
        cpu::attention_prefill(one.kv, p, q.data(), 1, 0, o.data());
        ref::attention_prefill(one.kv, p, q.data(), 1, 0, r.data());
        CHECK(test::max_abs_diff(o, r) < 1e-6f);
        // With one key the output is that key's value row, exactly.
        for (int32_t h = 0; h < s.h; ++h)
            for (int32_t c = 0; c < s.d; ++c) {
                float v;
                std::memcpy(&v, one.kv_v(0) + (size_t(h / 3) * s.d + c) * 4, 4);
                CHECK(o[size_t(h) * s.d + c] == v);
            }
        // Window floor past the query: no keys, output 0, lse -inf; with a sink: lse = sink.
        TestKV t(40, s.hkv, s.d, DType::F32, 16, 403);
        AttnParams pf = params(s, 0, 39);
        std::vector<float> lse(s.h);
        DecodeSeq d{&t.kv, q.data(), o.data(), lse.data(), 20};
        cpu::attention_decode(&d, 1, pf);
        CHECK(std::all_of(o.begin(), o.end(), [](float x) { return x == 0.0f; }));
        CHECK(std::isinf(lse[0]));
        // Sinks agree with ref.
        auto sinks = test::random_vec(s.h, 404, -2.0f, 2.0f);
        AttnParams ps = params(s, 8);
        ps.sinks = sinks.data();
        std::vector<float> l2(s.h);
        DecodeSeq d2{&t.kv, q.data(), r.data(), l2.data(), 39};
        ref::attention_decode(&d2, 1, ps);
        d2.out = o.data();
        d2.lse = lse.data();
        cpu::attention_decode(&d2, 1, ps);
        CHECK(test::max_abs_diff(o, r) < 2e-5f);
        CHECK(test::max_abs_diff(lse, l2) < 2e-5f);
    }
}

TEST_CASE("kernels.attention.bad_input_throws") {
    const Shape s{9, 3, 64};
    TestKV t(40, s.hkv, s.d, DType::F32, 16, 501);
    AttnParams p = params(s);
    auto q = test::random_vec(size_t(s.h) * s.d * 4, 502);
    std::vector<float> o(q.size());
    CHECK_THROWS_AS(cpu::attention_prefill(t.kv, p, q.data(), 4, 38, o.data()), Error);  // past n_tokens
    AttnParams bad = p;
    bad.head_dim = 32;
    CHECK_THROWS_AS(cpu::attention_prefill(t.kv, bad, q.data(), 1, 0, o.data()), Error);
    bad = p;
    bad.n_heads = 10;
    CHECK_THROWS_AS(cpu::attention_prefill(t.kv, bad, q.data(), 1, 0, o.data()), Error);
    CHECK_THROWS_AS(cpu::attention_prefill(t.kv, p, nullptr, 1, 0, o.data()), Error);
    t.drop_before(32);
    CHECK_THROWS_AS(cpu::attention_prefill(t.kv, p, q.data(), 1, 35, o.data()), Error);  // needs a dropped block
    CHECK_THROWS_AS(ref::attention_prefill(t.kv, p, q.data(), 1, 35, o.data()), Error);
    DecodeSeq d{&t.kv, q.data(), o.data(), nullptr, 39};
    CHECK_THROWS_AS(cpu::attention_decode(&d, 1, p), Error);
    AttnParams pw = params(s, 8);
    CHECK_NOTHROW(cpu::attention_decode(&d, 1, pw));  // the window never reaches the dropped block
    d.pos = 40;
    CHECK_THROWS_AS(cpu::attention_decode(&d, 1, pw), Error);
    // merge_attention: -inf partials.
    std::vector<float> oa = {1, 2}, ob = {3, 4};
    float la = -INFINITY, lb = 0.5f;
    merge_attention(oa.data(), &la, ob.data(), &lb, 1, 2);
    CHECK(oa[0] == 3.0f);
    CHECK(la == 0.5f);
}
