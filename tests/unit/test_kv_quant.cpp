// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Quantised KV element types (util/kv_quant.hpp): the row format, the conversions, what the
// kernels read from it, and the layout's bytes and refusals.
#include "cache/layout.hpp"
#include "kernel_fixtures.hpp"
#include "kernels/attention.hpp"
#include "kernels/query_quant.hpp"
#include "util/error.hpp"
#include "util/kv_quant.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

using namespace kvrt;

TEST_CASE("kv_quant.fp8_e4m3_codes_round_trip") {
    // Every finite code decodes to a value that encodes back to the same code; the largest is 448.
    int finite = 0;
    for (int b = 0; b < 256; ++b) {
        if ((b & 0x7f) == 0x7f) continue;  // NaN
        const float v = fp8_e4m3_to_f32(uint8_t(b));
        CHECK(std::isfinite(v));
        CHECK(f32_to_fp8_e4m3(v) == uint8_t(b));
        ++finite;
    }
    CHECK(finite == 254);
    CHECK(fp8_e4m3_to_f32(0x7e) == 448.0f);
    CHECK(fp8_e4m3_to_f32(0x01) == std::ldexp(1.0f, -9));
    CHECK(f32_to_fp8_e4m3(1e6f) == 0x7e);   // saturates
    CHECK(f32_to_fp8_e4m3(-1e6f) == 0xfe);
    CHECK(f32_to_fp8_e4m3(0.0f) == 0x00);
    // Round to nearest even between 1 (0x38) and 1.125 (0x39): the midpoint goes to 1.
    CHECK(f32_to_fp8_e4m3(1.0625f) == 0x38);
    CHECK(f32_to_fp8_e4m3(1.0626f) == 0x39);
}

TEST_CASE("kv_quant.head_round_trip_error_bounds") {
    for (DType t : {DType::I8, DType::FP8_E4M3}) {
        for (int32_t d : {32, 64, 128, 256}) {
            CAPTURE(std::string(dtype_name(t)));
            CAPTURE(d);
            auto x = test::random_vec(size_t(d), 7 + uint32_t(d), -3.0f, 3.0f);
            x[5] = 40.0f;  // an outlier channel
            std::vector<uint8_t> head(kv_head_bytes(t, d));
            kv_store_head(head.data(), x.data(), t, d);
            const int32_t g = kv_scale_group(t, d);
            for (int32_t c = 0; c < d; ++c) {
                float amax = 0;
                for (int32_t i = c / g * g; i < c / g * g + g; ++i) amax = std::max(amax, std::fabs(x[size_t(i)]));
                const float y = kv_load(head.data(), t, d, c);
                // int8: half a step of amax / 127 (+ the f16 rounding of the scale: 2^-11 relative);
                // e4m3: 2^-4 relative, or half the smallest subnormal step (2^-10) of the scale.
                const float s = amax / (t == DType::I8 ? 127.0f : 448.0f);
                const float bound = t == DType::I8 ? 0.5f * s + amax * 1e-3f
                                                   : std::fabs(x[size_t(c)]) * 0.0625f + s * std::ldexp(1.0f, -10) + amax * 1e-3f;
                CHECK(std::fabs(y - x[size_t(c)]) <= bound);
            }
        }
    }
    // A zero group stores scale 0 and zeros.
    std::vector<float> z(64, 0.0f);
    std::vector<uint8_t> head(kv_head_bytes(DType::I8, 64), 0xff);
    kv_store_head(head.data(), z.data(), DType::I8, 64);
    for (int32_t c = 0; c < 64; ++c) CHECK(kv_load(head.data(), DType::I8, 64, c) == 0.0f);
}

TEST_CASE("kv_quant.one_key_output_is_the_dequantised_value") {
    // With one key the softmax weight is 1: every path returns the dequantised V row, exactly for
    // fp8 and within 3 roundings of f32 for int8 (P.V's weight code is 255 and its scale the
    // weight times f32(1 / 255): attention_core.inl, pv_rows_i8).
    for (Isa isa : test::available_isas()) {
        test::IsaScope scope(isa);
        for (DType t : {DType::I8, DType::FP8_E4M3}) {
            CAPTURE(std::string(isa_name(isa)));
            CAPTURE(std::string(dtype_name(t)));
            const int32_t h = 4, hkv = 2, d = 64;
            test::TestKV kv(1, hkv, d, t, 16, 11);
            AttnParams p;
            p.n_heads = h;
            p.head_dim = d;
            p.scale = 0.125f;
            auto q = test::random_vec(size_t(h) * d, 12);
            std::vector<float> o(q.size());
            cpu::attention_prefill(kv.kv, p, q.data(), 1, 0, o.data());
            for (int32_t i = 0; i < h; ++i)
                for (int32_t c = 0; c < d; ++c) {
                    const float v = kv_load(kv.kv_v(0) + size_t(i / 2) * kv_head_bytes(t, d), t, d, c);
                    if (t == DType::I8) CHECK(std::fabs(o[size_t(i) * d + c] - v) <= std::fabs(v) * 0x1p-22f);
                    else CHECK(o[size_t(i) * d + c] == v);
                }
        }
    }
}

TEST_CASE("kv_quant.int8_is_closer_to_f32_than_fp8") {
    // The same random rows stored as f32, int8 and fp8: attention over int8 stays within ~1e-2
    // of f32 (inputs in [-1, 1]), fp8 within ~5e-2, and int8 is the closer of the two.
    const int32_t h = 8, hkv = 2, d = 128, n = 300;
    AttnParams p;
    p.n_heads = h;
    p.head_dim = d;
    p.scale = 1.0f / std::sqrt(float(d));
    auto q = test::random_vec(size_t(h) * d, 21, -3.0f, 3.0f);
    auto run = [&](DType t) {
        test::TestKV kv(n, hkv, d, t, 16, 22);  // same seed: the same values before storage
        std::vector<float> o(q.size());
        DecodeSeq s{&kv.kv, q.data(), o.data(), nullptr, n - 1};
        cpu::attention_decode(&s, 1, p);
        return o;
    };
    const auto f = run(DType::F32), i8 = run(DType::I8), f8 = run(DType::FP8_E4M3);
    const float e8 = test::max_abs_diff(f, i8), ef = test::max_abs_diff(f, f8);
    CHECK(e8 > 0.0f);
    CHECK(e8 < 1e-2f);
    CHECK(ef < 5e-2f);
    CHECK(e8 < ef);
}

TEST_CASE("kv_quant.kernels_refuse_a_head_dim_the_grouping_does_not_divide") {
    test::TestKV kv(4, 1, 64, DType::I8, 16, 31);
    kv.kv.head_dim = 40;  // int8 groups are 32 wide
    kv.kv.row_bytes = 64;
    AttnParams p;
    p.n_heads = 1;
    p.head_dim = 40;
    p.scale = 0.1f;
    std::vector<float> q(40, 0.5f), o(40);
    CHECK_THROWS_AS(cpu::attention_prefill(kv.kv, p, q.data(), 1, 0, o.data()), Error);
    CHECK_THROWS_AS(ref::attention_prefill(kv.kv, p, q.data(), 1, 0, o.data()), Error);
}

TEST_CASE("kv_quant.layout_bytes_and_refusals") {
    using namespace kvrt::cache;
    auto layer = [](LayerKind k, DType t) {
        LayerSpec s;
        s.kind = k;
        s.n_kv_heads = 3;
        s.head_dim = 64;
        s.dtype = t;
        s.window = k == LayerKind::Window ? 32 : 0;
        return s;
    };
    CacheConfig cfg;
    cfg.block_tokens = 16;
    cfg.budget_bytes = 1 << 20;
    cfg.layers = {layer(LayerKind::Full, DType::I8), layer(LayerKind::Window, DType::FP8_E4M3),
                  layer(LayerKind::Full, DType::F16)};
    cfg.layers[2].v_dtype = DType::I8;  // K f16, V int8
    const ResolvedLayout l = resolve_layout(cfg);
    // int8: 3 heads x (64 + 2 scales x 2 bytes) = 204 bytes per row, K and V.
    CHECK(l.geometry[0].row_bytes == 204);
    CHECK(l.geometry[0].v_row_bytes == 204);
    CHECK(layer_bytes_per_token(l.geometry[0]) == 408.0);
    // fp8: 3 x (64 + 2) = 198.
    CHECK(l.geometry[1].row_bytes == 198);
    CHECK(layer_bytes_per_token(l.geometry[1]) == 396.0);
    // K f16 (384) + V int8 (204).
    CHECK(l.geometry[2].row_bytes == 384);
    CHECK(l.geometry[2].v_row_bytes == 204);
    CHECK(l.geometry[2].v_dtype == DType::I8);
    CHECK(layer_bytes_per_token(l.geometry[2]) == 588.0);
    // The block regions hold the rows exactly (plus 64-byte alignment padding).
    size_t rows = 0;
    for (const auto& g : l.geometry) rows += (g.row_bytes + g.v_row_bytes) * 16;
    size_t blocks = 0, pad = 0;
    for (const auto& m : l.managers) {
        blocks += m.block_bytes;
        pad += m.padding_bytes;
    }
    CHECK(blocks == rows + pad);
    CHECK(layout_dtype_signature(l) == "int8/int8;fp8/fp8;f16/int8;");

    // Refusals: int8 on a bank, a head_dim int8's group does not divide, a V type on K = V rows.
    CacheConfig bad = cfg;
    bad.layers = {layer(LayerKind::Full, DType::I8)};
    bad.layers[0].head_dim = 48;
    CHECK_THROWS_WITH_AS(resolve_layout(bad), doctest::Contains("not a multiple of int8's scale group"), Error);
    bad.layers = {layer(LayerKind::BankSource, DType::I8)};
    bad.layers[0].n_kv_heads = 1;
    CHECK_THROWS_WITH_AS(resolve_layout(bad), doctest::Contains("only held by full and window layers"), Error);
    bad.layers = {layer(LayerKind::Window, DType::F16)};
    bad.layers[0].shared_kv = true;
    bad.layers[0].v_dtype = DType::I8;
    CHECK_THROWS_WITH_AS(resolve_layout(bad), doctest::Contains("separate K and V rows"), Error);
    bad.layers = {layer(LayerKind::Full, static_cast<DType>(5))};
    CHECK_THROWS_AS(resolve_layout(bad), Error);
}

TEST_CASE("kv_quant.query_quantisation_for_int8_keys") {
    // Dense attention over int8 K quantises the query per group of 32 dims (query_quant.hpp):
    // codes in [-127, 127], the largest magnitude of a group at 127, each code within half a step.
    const int32_t d = 128;
    auto q = test::random_vec(d, 77, -3.0f, 3.0f);
    for (int32_t c = 64; c < 96; ++c) q[size_t(c)] = 0.0f;  // group 2: all zero
    std::vector<int8_t> qi(d);
    std::vector<float> sc(d / kQueryI8Group);
    quantize_query_i8(q.data(), d, qi.data(), sc.data());
    for (int32_t g = 0; g < d / kQueryI8Group; ++g) {
        CAPTURE(g);
        int max_code = 0;
        for (int32_t c = g * 32; c < g * 32 + 32; ++c) {
            CHECK(qi[size_t(c)] >= -127);
            CHECK(std::fabs(q[size_t(c)] - sc[size_t(g)] * qi[size_t(c)]) <= 0.5001f * sc[size_t(g)] + 1e-7f);
            max_code = std::max(max_code, std::abs(int(qi[size_t(c)])));
        }
        if (g == 2) {
            CHECK(sc[size_t(g)] == 0.0f);
            CHECK(max_code == 0);
        } else {
            CHECK(sc[size_t(g)] > 0.0f);
            CHECK(max_code == 127);
        }
    }
    // A group holding NaN or inf: scale NaN (its scores turn NaN, as f32 arithmetic would), codes 0.
    q[3] = std::numeric_limits<float>::quiet_NaN();
    q[40] = std::numeric_limits<float>::infinity();
    quantize_query_i8(q.data(), d, qi.data(), sc.data());
    CHECK(std::isnan(sc[0]));
    CHECK(std::isnan(sc[1]));
    CHECK(sc[3] > 0.0f);
    CHECK(qi[3] == 0);
}

TEST_CASE("kv_quant.int8_kv_gives_the_same_bits_with_and_without_vnni") {
    // Q.K over int8 K is an exact integer sum: vpdpbusd (the avx512 level where the CPU has
    // AVX512_VNNI, cpu::attention_avx512_i8_dot; avx512bf16, which always has it; avxvnni, on ymm)
    // and vpmaddwd (avx512 without VNNI, avx2) give the same integers, so the same attention bits. So is P.V over int8 V: vpdpbusd over quads of keys (VNNI, row
    // blocks of 4 or more), vpdpwssd over int16 pairs (VNNI, smaller blocks, or a block with a
    // negative code) and vpmaddwd + vpaddd. Shapes: GQA groups of 3, 7 and 8 (one decode block of
    // 7 or 8 rows on AVX-512, 4 + 3 / 4 + 4 on AVX2), d = 64 and 96 (3 scale groups), and a
    // negative V scale (the int16 pairs on every path for the tiles that hold it).
    const bool zmm = isa_detected() >= Isa::Avx512 && cpu_features().avx512vnni, ymm = cpu_features().avxvnni;
    if (!zmm && !ymm) {
        std::printf("KVRT_TEST_NOT_RUN: no VNNI path on this CPU\n");  // ctest reports it as not run
        return;
    }
    struct Shape {
        int32_t h, hkv, d;
        bool negative;
    };
    for (const Shape sh : {Shape{9, 3, 64, false}, Shape{14, 2, 64, false}, Shape{16, 2, 96, false},
                           Shape{14, 2, 64, true}}) {
        for (test::KvTypes kt : {test::KvTypes(DType::I8), test::KvTypes(DType::I8, DType::F16),
                                 test::KvTypes(DType::F16, DType::I8)}) {
            const int32_t h = sh.h, hkv = sh.hkv, d = sh.d, n_tok = 300, n_q = 40, q0 = n_tok - n_q;
            CAPTURE(test::kv_types_name(kt));
            CAPTURE(h);
            CAPTURE(d);
            CAPTURE(sh.negative);
            test::TestKV kv(n_tok, hkv, d, kt, 16, 78);
            if (sh.negative && kt.v == DType::I8) {  // key 270, head 1, group 0: scale negated
                uint8_t* row = const_cast<uint8_t*>(kv.kv_v(270)) + kv_head_bytes(DType::I8, d);
                row[d + 1] ^= 0x80u;
            }
            AttnParams p;
            p.n_heads = h;
            p.head_dim = d;
            p.scale = 0.125f;
            auto q = test::random_vec(size_t(n_q) * h * d, 79, -3.0f, 3.0f);
            // vnni_at_avx512: the avx512 level's choice (1 VNNI, 0 vpmaddwd; other levels ignore it)
            auto run = [&](Isa isa, int vnni_at_avx512) {
                test::IsaScope scope(isa);
                test::I8DotScope dot(vnni_at_avx512);
                std::vector<float> o(q.size() + size_t(h) * d);
                cpu::attention_prefill(kv.kv, p, q.data(), n_q, q0, o.data());
                DecodeSeq s{&kv.kv, q.data() + size_t(n_q - 1) * h * d, o.data() + q.size(), nullptr, n_tok - 1};
                cpu::attention_decode(&s, 1, p);
                return o;
            };
            // (the pairs compared: without and with VNNI at the same vector width; the avx512
            // level both ways, and with VNNI against the avx512bf16 level where the CPU has it)
            struct Path {
                Isa isa;
                int vnni_at_avx512;
            };
            std::vector<std::pair<Path, Path>> pairs;
            if (zmm) pairs.push_back({{Isa::Avx512, 0}, {Isa::Avx512, 1}});
            if (zmm && isa_detected() >= Isa::Avx512Bf16) pairs.push_back({{Isa::Avx512, 0}, {Isa::Avx512Bf16, 1}});
            if (ymm) pairs.push_back({{Isa::Avx2, 0}, {Isa::AvxVnni, 0}});
            for (const auto& [plain, vnni] : pairs) {
                CAPTURE(std::string(isa_name(vnni.isa)));
                const auto a = run(plain.isa, plain.vnni_at_avx512), b = run(vnni.isa, vnni.vnni_at_avx512);
                CHECK(test::bit_equal(a, b));
                // and the decode row equals the prefill's last row
                CHECK(std::equal(b.begin() + ptrdiff_t(q.size()) - h * d, b.begin() + ptrdiff_t(q.size()),
                                 b.begin() + ptrdiff_t(q.size())));
            }
        }
    }
}

TEST_CASE("kv_quant.int8_values_pv_codes_follow_sign_and_propagate_a_bad_scale") {
    // P.V over int8 V codes each tile's weights p_j * scale_j as 8-bit integers (attention_core.inl,
    // pv_rows_i8). A row whose V scale is negative (a state file may carry one: only non-finite
    // scales are refused) is read with its sign, as the reference reads it; a NaN scale makes the
    // rows that attend to that key NaN in its group's dims and leaves the others finite. (Same
    // bits with and without VNNI: kv_quant.int8_kv_gives_the_same_bits_with_and_without_vnni.)
    const int32_t h = 4, hkv = 2, d = 64, n_tok = 100, n_q = 30, q0 = n_tok - n_q;
    const int32_t group_bytes = kv_scale_group(DType::I8, d);
    auto set_scale = [&](test::TestKV& kv, int64_t pos, int32_t head, int32_t g, uint16_t f16) {
        uint8_t* row = const_cast<uint8_t*>(kv.kv_v(pos)) + size_t(head) * kv_head_bytes(DType::I8, d);
        std::memcpy(row + d + 2 * g, &f16, 2);
    };
    AttnParams p;
    p.n_heads = h;
    p.head_dim = d;
    p.scale = 0.125f;
    const auto q = test::random_vec(size_t(n_q) * h * d, 91);
    for (Isa isa : test::available_isas()) {
        test::IsaScope scope(isa);
        CAPTURE(std::string(isa_name(isa)));
        {  // negative scale on key 40, head 1, group 1: equal to the reference within tolerance
            test::TestKV kv(n_tok, hkv, d, test::KvTypes(DType::F16, DType::I8), 16, 90);
            uint16_t s;
            std::memcpy(&s, kv.kv_v(40) + kv_head_bytes(DType::I8, d) + d + 2, 2);
            set_scale(kv, 40, 1, 1, uint16_t(s | 0x8000u));
            std::vector<float> o(q.size()), o_ref(q.size());
            cpu::attention_prefill(kv.kv, p, q.data(), n_q, q0, o.data());
            ref::attention_prefill(kv.kv, p, q.data(), n_q, q0, o_ref.data());
            CHECK(test::max_abs_diff(o, o_ref) < test::attn_tolerance(isa, test::KvTypes(DType::F16, DType::I8)));
        }
        {  // NaN scale on key 40, head 1, group 1, window 16: rows at positions 45..55 see key 40,
           // rows at 56.. do not (though it sits in their tiles, read for the rows that do)
            test::TestKV kv(n_tok, hkv, d, test::KvTypes(DType::F16, DType::I8), 16, 90);
            set_scale(kv, 40, 1, 1, uint16_t(0x7E00u));
            AttnParams pw = p;
            pw.window = 16;
            const int32_t a0 = 45, na = n_tok - a0;
            const auto qa = test::random_vec(size_t(na) * h * d, 93);
            std::vector<float> o(qa.size());
            cpu::attention_prefill(kv.kv, pw, qa.data(), na, a0, o.data());
            for (int32_t t = 0; t < na; ++t)
                for (int32_t hh = 0; hh < h; ++hh)
                    for (int32_t c = 0; c < d; ++c) {
                        const float x = o[(size_t(t) * h + hh) * d + c];
                        const bool poisoned = a0 + t <= 40 + 15 && hh / (h / hkv) == 1 && c / group_bytes == 1;
                        CAPTURE(t);
                        CAPTURE(hh);
                        CAPTURE(c);
                        if (poisoned) CHECK(std::isnan(x));
                        else CHECK(std::isfinite(x));
                    }
        }
    }
}
