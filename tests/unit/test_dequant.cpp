// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Dequantisation: hand-built blocks decoded from the ggml layout description,
// every vector path bit-for-bit against the scalar reference, the real model's
// embedding and a Q4_1 weight against an independent decode in this file.
#include <doctest/doctest.h>

#include "model/gguf/gguf.hpp"
#include "formats/tensor_type_dequant.hpp"
#include "test_support.hpp"
#include "util/dtype.hpp"
#include "util/error.hpp"

#include <cmath>
#include <filesystem>
#include <cstring>
#include <random>
#include <vector>

using kvrt::DequantIsa;
using kvrt::TensorType;

namespace {

const DequantIsa kIsas[] = {DequantIsa::Scalar, DequantIsa::Avx2, DequantIsa::Avx512};

uint32_t bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

// Compares every available path against the reference, f32 and bf16, bit for bit.
void check_paths(TensorType t, const std::vector<uint8_t>& src, uint64_t n) {
    std::vector<float> ref(n), got(n);
    std::vector<uint16_t> ref16(n), got16(n);
    kvrt::ref::dequantize_f32(t, src.data(), ref.data(), n);
    kvrt::ref::dequantize_bf16(t, src.data(), ref16.data(), n);
    if (t == TensorType::BF16)  // bf16 -> bf16 is the identity, signalling NaNs included
        REQUIRE(std::memcmp(ref16.data(), src.data(), n * 2) == 0);
    else {
        uint64_t mismatched = 0;
        for (uint64_t i = 0; i < n; ++i) mismatched += ref16[i] != kvrt::f32_to_bf16(ref[i]);
        REQUIRE(mismatched == 0);
    }
    for (DequantIsa isa : kIsas) {
        if (!kvrt::dequant_isa_available(isa)) {
            MESSAGE("CPU lacks " << kvrt::dequant_isa_name(isa) << ": path not tested here");
            continue;
        }
        CAPTURE(kvrt::dequant_isa_name(isa));
        CAPTURE(kvrt::tensor_type_name(t));
        std::fill(got.begin(), got.end(), -777.0f);
        std::fill(got16.begin(), got16.end(), uint16_t(0xdead));
        kvrt::dequantize_f32(t, src.data(), got.data(), n, isa);
        kvrt::dequantize_bf16(t, src.data(), got16.data(), n, isa);
        uint64_t bad = 0, first = n;
        for (uint64_t i = 0; i < n; ++i)
            if (bits(got[i]) != bits(ref[i]) || got16[i] != ref16[i]) {
                bad++;
                if (first == n) first = i;
            }
        CAPTURE(first);
        CHECK(bad == 0);
    }
}

// A random finite half in roughly [2^-14 .. 2^3] (normal), or a subnormal one now and then.
uint16_t random_scale(std::mt19937& rng) {
    std::uniform_int_distribution<int> coin(0, 15);
    uint16_t sign = coin(rng) < 4 ? 0x8000 : 0;
    if (coin(rng) == 0) return static_cast<uint16_t>(sign | (1 + rng() % 0x3ff));  // subnormal
    uint16_t exp = static_cast<uint16_t>(1 + rng() % 17);                          // 2^-14 .. 2^2
    return static_cast<uint16_t>(sign | (exp << 10) | (rng() % 0x400));
}

// Random blocks of a quantised type with finite scales at the fields ggml gives them.
std::vector<uint8_t> random_blocks(TensorType t, uint64_t n_blocks, std::mt19937& rng) {
    const auto& tr = kvrt::tensor_type_traits(t);
    std::vector<uint8_t> v(n_blocks * tr.block_bytes);
    for (auto& b : v) b = static_cast<uint8_t>(rng());
    for (uint64_t b = 0; b < n_blocks; ++b) {
        uint8_t* p = v.data() + b * tr.block_bytes;
        auto set_half = [&](size_t off) {
            uint16_t h = random_scale(rng);
            std::memcpy(p + off, &h, 2);
        };
        switch (t) {
            case TensorType::Q4_0: case TensorType::Q5_0: case TensorType::Q8_0: set_half(0); break;
            case TensorType::Q4_1: case TensorType::Q5_1: case TensorType::Q8_1: set_half(0); set_half(2); break;
            case TensorType::Q4_K: case TensorType::Q5_K: set_half(0); set_half(2); break;
            case TensorType::Q6_K: set_half(offsetof(kvrt::BlockQ6_K, d)); break;
            default: break;
        }
    }
    return v;
}

}  // namespace

TEST_CASE("dequant: hand-built Q4_0 / Q4_1 / Q8_0 / Q5_0 / Q5_1 blocks") {
    // d = 0.5 (f16 0x3800), m = -1 (0xbc00); byte j holds element j (low) and j + 16 (high).
    std::vector<uint8_t> q41(20);
    uint16_t d = 0x3800, m = 0xbc00;
    std::memcpy(&q41[0], &d, 2);
    std::memcpy(&q41[2], &m, 2);
    for (int j = 0; j < 16; ++j) q41[4 + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
    float y[32];
    kvrt::ref::dequantize_f32(TensorType::Q4_1, q41.data(), y, 32);
    for (int j = 0; j < 16; ++j) {
        CHECK(y[j] == j * 0.5f - 1.0f);
        CHECK(y[j + 16] == (15 - j) * 0.5f - 1.0f);
    }
    check_paths(TensorType::Q4_1, q41, 32);

    // Q4_0: (nibble - 8) * d with d = 2 (0x4000).
    std::vector<uint8_t> q40(18);
    d = 0x4000;
    std::memcpy(&q40[0], &d, 2);
    for (int j = 0; j < 16; ++j) q40[2 + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
    kvrt::ref::dequantize_f32(TensorType::Q4_0, q40.data(), y, 32);
    for (int j = 0; j < 16; ++j) {
        CHECK(y[j] == (j - 8) * 2.0f);
        CHECK(y[j + 16] == (15 - j - 8) * 2.0f);
    }

    // Q8_0: qs[j] * d with d = -0.25 (0xb400).
    std::vector<uint8_t> q80(34);
    d = 0xb400;
    std::memcpy(&q80[0], &d, 2);
    for (int j = 0; j < 32; ++j) q80[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(j * 8 - 128));
    kvrt::ref::dequantize_f32(TensorType::Q8_0, q80.data(), y, 32);
    for (int j = 0; j < 32; ++j) CHECK(y[j] == (j * 8 - 128) * -0.25f);

    // Q5_0: 5-bit q = nibble | bit j of qh << 4, value (q - 16) * d. qh = 0xA5A5F00F.
    std::vector<uint8_t> q50(22);
    d = 0x3c00;  // 1.0
    std::memcpy(&q50[0], &d, 2);
    const uint32_t qh = 0xA5A5F00Fu;
    std::memcpy(&q50[2], &qh, 4);
    for (int j = 0; j < 16; ++j) q50[6 + j] = static_cast<uint8_t>((j * 7 % 16) | ((j * 3 % 16) << 4));
    kvrt::ref::dequantize_f32(TensorType::Q5_0, q50.data(), y, 32);
    for (int j = 0; j < 16; ++j) {
        CHECK(y[j] == float(int((j * 7 % 16) | (((qh >> j) & 1) << 4)) - 16));
        CHECK(y[j + 16] == float(int((j * 3 % 16) | (((qh >> (j + 16)) & 1) << 4)) - 16));
    }
    check_paths(TensorType::Q5_0, q50, 32);

    // Q5_1: q * d + m, same bits, d = 1, m = 0.5 (0x3800).
    std::vector<uint8_t> q51(24);
    uint16_t half = 0x3c00, mh = 0x3800;
    std::memcpy(&q51[0], &half, 2);
    std::memcpy(&q51[2], &mh, 2);
    std::memcpy(&q51[4], &qh, 4);
    for (int j = 0; j < 16; ++j) q51[8 + j] = q50[6 + j];
    kvrt::ref::dequantize_f32(TensorType::Q5_1, q51.data(), y, 32);
    for (int j = 0; j < 16; ++j) {
        CHECK(y[j] == float((j * 7 % 16) | (((qh >> j) & 1) << 4)) + 0.5f);
        CHECK(y[j + 16] == float((j * 3 % 16) | (((qh >> (j + 16)) & 1) << 4)) + 0.5f);
    }
}

TEST_CASE("dequant: Q4_K, Q5_K and Q6_K against encoders written from the layout") {
    std::mt19937 rng(7);
    // Q4_K: 8 sub-blocks of 32; scale s[i] and min m[i] are 6 bits. Sub-blocks 2k and 2k+1
    // share qs[32k .. 32k+31] (low nibbles, then high). Packing (ggml get_scale_min_k4):
    // i < 4: scales[i] low 6 bits = s[i], scales[i+4] low 6 bits = m[i];
    // i >= 4: scales[i+4] = (s[i] & 15) | (m[i] & 15) << 4, s[i] >> 4 in scales[i-4] bits 6-7,
    //         m[i] >> 4 in scales[i] bits 6-7.
    uint8_t s[8], mn[8], q[256];
    for (int i = 0; i < 8; ++i) {
        s[i] = rng() % 64;
        mn[i] = rng() % 64;
    }
    for (int i = 0; i < 256; ++i) q[i] = rng() % 16;
    kvrt::BlockQ4_K b{};
    b.d = 0x3400;     // 0.25
    b.dmin = 0x2c00;  // 0.0625
    for (int i = 0; i < 4; ++i) {
        b.scales[i] = s[i];
        b.scales[i + 4] = mn[i];
    }
    for (int i = 4; i < 8; ++i) {
        b.scales[i + 4] = static_cast<uint8_t>((s[i] & 15) | ((mn[i] & 15) << 4));
        b.scales[i - 4] |= static_cast<uint8_t>((s[i] >> 4) << 6);
        b.scales[i] |= static_cast<uint8_t>((mn[i] >> 4) << 6);
    }
    for (int k = 0; k < 4; ++k)
        for (int l = 0; l < 32; ++l) b.qs[32 * k + l] = static_cast<uint8_t>(q[64 * k + l] | (q[64 * k + 32 + l] << 4));
    std::vector<uint8_t> raw(sizeof b);
    std::memcpy(raw.data(), &b, sizeof b);
    float y[256];
    kvrt::ref::dequantize_f32(TensorType::Q4_K, raw.data(), y, 256);
    for (int i = 0; i < 256; ++i) {
        CAPTURE(i);
        const int sb = i / 32;
        CHECK(y[i] == (0.25f * float(s[sb])) * float(q[i]) - 0.0625f * float(mn[sb]));
    }
    check_paths(TensorType::Q4_K, raw, 256);

    // Q5_K: Q4_K's scales and low nibbles, plus a fifth bit per element in qh[32]: element
    // 64k + l (l < 32) has it at bit 2k of qh[l], element 64k + 32 + l at bit 2k + 1.
    uint8_t q5[256];
    for (int i = 0; i < 256; ++i) q5[i] = rng() % 32;
    kvrt::BlockQ5_K b5{};
    b5.d = b.d;
    b5.dmin = b.dmin;
    std::memcpy(b5.scales, b.scales, 12);
    for (int k = 0; k < 4; ++k)
        for (int l = 0; l < 32; ++l) {
            b5.qs[32 * k + l] = static_cast<uint8_t>((q5[64 * k + l] & 15) | ((q5[64 * k + 32 + l] & 15) << 4));
            b5.qh[l] |= static_cast<uint8_t>((q5[64 * k + l] >> 4) << (2 * k));
            b5.qh[l] |= static_cast<uint8_t>((q5[64 * k + 32 + l] >> 4) << (2 * k + 1));
        }
    std::vector<uint8_t> raw5(sizeof b5);
    std::memcpy(raw5.data(), &b5, sizeof b5);
    kvrt::ref::dequantize_f32(TensorType::Q5_K, raw5.data(), y, 256);
    for (int i = 0; i < 256; ++i) {
        CAPTURE(i);
        const int sb = i / 32;
        CHECK(y[i] == (0.25f * float(s[sb])) * float(q5[i]) - 0.0625f * float(mn[sb]));
    }
    check_paths(TensorType::Q5_K, raw5, 256);

    // Q6_K: q in [0, 64), value d * scale[g] * (q - 32) with 16 groups of 16. In each half h
    // of 128: element 128h + 32c + l (c = 0..3, l = 0..31) has its low 4 bits in
    // ql[64h + 32(c & 1) + l] (low nibble for c < 2, high for c >= 2), its high 2 bits in
    // qh[32h + l] bits 2c..2c+1, and its scale in scales[8h + 2c + l / 16].
    uint8_t q6[256];
    int8_t sc6[16];
    for (int i = 0; i < 256; ++i) q6[i] = rng() % 64;
    for (int g = 0; g < 16; ++g) sc6[g] = static_cast<int8_t>(static_cast<int>(rng() % 256) - 128);
    kvrt::BlockQ6_K b6{};
    b6.d = 0x3000;  // 0.125
    std::memcpy(b6.scales, sc6, 16);
    for (int h = 0; h < 2; ++h)
        for (int c = 0; c < 4; ++c)
            for (int l = 0; l < 32; ++l) {
                const uint8_t v = q6[128 * h + 32 * c + l];
                uint8_t& lo = b6.ql[64 * h + 32 * (c & 1) + l];
                lo = static_cast<uint8_t>(lo | (c < 2 ? (v & 15) : (v & 15) << 4));
                b6.qh[32 * h + l] = static_cast<uint8_t>(b6.qh[32 * h + l] | ((v >> 4) << (2 * c)));
            }
    std::vector<uint8_t> raw6(sizeof b6);
    std::memcpy(raw6.data(), &b6, sizeof b6);
    kvrt::ref::dequantize_f32(TensorType::Q6_K, raw6.data(), y, 256);
    for (int h = 0; h < 2; ++h)
        for (int c = 0; c < 4; ++c)
            for (int l = 0; l < 32; ++l) {
                const int i = 128 * h + 32 * c + l;
                CAPTURE(i);
                CHECK(y[i] == 0.125f * float(sc6[8 * h + 2 * c + l / 16]) * float(int(q6[i]) - 32));
            }
    check_paths(TensorType::Q6_K, raw6, 256);
}

TEST_CASE("dequant: every path equals the reference on random blocks of every quantised type") {
    std::mt19937 rng(1234);
    for (TensorType t : {TensorType::Q4_0, TensorType::Q4_1, TensorType::Q5_0, TensorType::Q5_1, TensorType::Q8_0,
                         TensorType::Q8_1, TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K}) {
        const auto& tr = kvrt::tensor_type_traits(t);
        for (uint64_t blocks : {1u, 3u, 37u}) {
            auto src = random_blocks(t, blocks, rng);
            check_paths(t, src, blocks * tr.block_elems);
        }
    }
}

TEST_CASE("dequant: f16, bf16 and f32 inputs on every bit pattern / odd lengths") {
    // All 65536 halves (NaNs, infinities, subnormals included), as F16 and as BF16.
    std::vector<uint8_t> all(65536 * 2);
    for (uint32_t i = 0; i < 65536; ++i) {
        uint16_t h = static_cast<uint16_t>(i);
        std::memcpy(&all[2 * i], &h, 2);
    }
    check_paths(TensorType::F16, all, 65536);
    check_paths(TensorType::BF16, all, 65536);
    float y[4];
    const uint16_t halves[4] = {0x3c00, 0x0001, 0xc000, 0x7bff};  // 1, 2^-24, -2, 65504
    kvrt::ref::dequantize_f32(TensorType::F16, halves, y, 4);
    CHECK(y[0] == 1.0f);
    CHECK(y[1] == std::ldexp(1.0f, -24));
    CHECK(y[2] == -2.0f);
    CHECK(y[3] == 65504.0f);
    // A signalling NaN half becomes a quiet f32 NaN with the same payload (as F16C does).
    const uint16_t snan = 0x7c01;
    kvrt::ref::dequantize_f32(TensorType::F16, &snan, y, 1);
    CHECK(bits(y[0]) == 0x7fc02000u);

    // F32 -> bf16 rounding: random bit patterns (NaNs included) and odd lengths for the tails.
    std::mt19937 rng(99);
    for (uint64_t n : {1u, 7u, 8u, 15u, 17u, 33u, 1001u}) {
        std::vector<uint8_t> f(n * 4);
        for (auto& b : f) b = static_cast<uint8_t>(rng());
        check_paths(TensorType::F32, f, n);
        std::vector<uint8_t> h(n * 2);
        for (auto& b : h) b = static_cast<uint8_t>(rng());
        check_paths(TensorType::F16, h, n);
    }
    // Ties go to even: 1 + 2^-8 -> 1.0 (0x3f80); 1 + 3 * 2^-8 -> 1 + 2^-6 (0x3f82).
    const float ties[2] = {1.0f + std::ldexp(1.0f, -8), 1.0f + 3 * std::ldexp(1.0f, -8)};
    uint16_t out[2];
    for (DequantIsa isa : kIsas) {
        if (!kvrt::dequant_isa_available(isa)) continue;
        kvrt::dequantize_bf16(TensorType::F32, ties, out, 2, isa);
        CHECK(out[0] == 0x3f80);
        CHECK(out[1] == 0x3f82);
    }
}

TEST_CASE("dequant: errors name the type, the count and the rows") {
    float y[256];
    uint8_t z[256] = {};
    try {
        kvrt::dequantize_f32(TensorType::Q2_K, z, y, 256);
        FAIL("expected an error");
    } catch (const kvrt::Error& e) {
        CHECK(e.status() == KVRT_ERR_UNSUPPORTED);
        CHECK(std::string(e.what()).find("q2_K") != std::string::npos);
    }
    try {
        kvrt::dequantize_f32(TensorType::Q4_1, z, y, 33);
        FAIL("expected an error");
    } catch (const kvrt::Error& e) {
        CHECK(e.status() == KVRT_ERR_INVALID_ARGUMENT);
        CHECK(std::string(e.what()).find("33") != std::string::npos);
    }
    CHECK(kvrt::dequant_supported(TensorType::Q4_1));
    CHECK_FALSE(kvrt::dequant_supported(TensorType::IQ2_XS));
    CHECK(kvrt::dequant_isa_available(DequantIsa::Scalar));
    CHECK(kvrt::dequant_isa_available(kvrt::dequant_best_isa()));
}

TEST_CASE("dequant: the real model's Q8_0 embedding and a Q4_1 weight, decoded by hand here") {
    std::string path = kvrt::test::model_path();
    REQUIRE_MESSAGE(std::filesystem::exists(path), "model missing: " << path);
    kvrt::GgufFile f = kvrt::GgufFile::open(path);

    auto half_at = [](const uint8_t* p) {
        uint16_t h;
        std::memcpy(&h, p, 2);
        return kvrt::f16_to_f32(h);
    };

    // token_embd.weight rows 0 and the last: Q8_0 blocks of 34 bytes = f16 d + 32 int8.
    const kvrt::GgufTensor& emb = f.require_tensor("token_embd.weight");
    REQUIRE(emb.type == TensorType::Q8_0);
    const uint64_t n = emb.row_elems();
    for (uint64_t row : {uint64_t(0), uint64_t(1), emb.n_rows() - 1}) {
        CAPTURE(row);
        std::vector<float> got(n);
        kvrt::dequantize_rows_f32(emb, row, 1, got.data());
        const uint8_t* r = f.base() + f.data_offset() + emb.offset + row * (n / 32) * 34;
        double sumsq = 0;
        for (uint64_t i = 0; i < n; ++i) {
            const uint8_t* blk = r + (i / 32) * 34;
            const float want = float(static_cast<int8_t>(blk[2 + i % 32])) * half_at(blk);
            REQUIRE(bits(got[i]) == bits(want));
            sumsq += double(want) * want;
        }
        CHECK(sumsq > 0);  // a trained embedding row is not all zeros
    }

    // blk.0.attn_q.weight rows 0..2 (Q4_1, 20-byte blocks: d, m, 16 nibble bytes).
    const kvrt::GgufTensor& wq = f.require_tensor("blk.0.attn_q.weight");
    REQUIRE(wq.type == TensorType::Q4_1);
    std::vector<float> got(3 * wq.row_elems());
    kvrt::dequantize_rows_f32(wq, 0, 3, got.data());
    const uint8_t* base = f.base() + f.data_offset() + wq.offset;
    for (uint64_t i = 0; i < got.size(); ++i) {
        const uint8_t* blk = base + (i / 32) * 20;
        const int j = static_cast<int>(i % 32);
        const int q = j < 16 ? (blk[4 + j] & 15) : (blk[4 + j - 16] >> 4);
        const float want = float(q) * half_at(blk) + half_at(blk + 2);
        REQUIRE(bits(got[i]) == bits(want));
    }

    // Whole weights through every path, f32 and bf16.
    for (const char* name : {"blk.0.ffn_down.weight", "blk.29.attn_k.weight", "output_norm.weight"}) {
        const kvrt::GgufTensor& t = f.require_tensor(name);
        std::vector<uint8_t> raw(t.data, t.data + t.n_bytes);
        check_paths(t.type, raw, t.n_elements);
    }
    std::vector<uint8_t> embed_rows(emb.data, emb.data + 64 * emb.row_bytes);
    check_paths(emb.type, embed_rows, 64 * n);

    std::vector<float> tmp(n);
    try {
        kvrt::dequantize_rows_f32(emb, emb.n_rows(), 1, tmp.data());
        FAIL("expected an error");
    } catch (const kvrt::Error& e) {
        CHECK(e.status() == KVRT_ERR_OUT_OF_RANGE);
        CHECK(std::string(e.what()).find("token_embd.weight") != std::string::npos);
    }
}
