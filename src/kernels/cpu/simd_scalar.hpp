// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Portable one-lane "vector" operations for the attention core (attention_core.inl):
// the fallback for CPUs without AVX2. Include from attention_scalar.cpp only.

struct Ops {
    static constexpr int W = 1;
    static constexpr int kGroup = 1;  // softmax bookkeeping row by row (see simd_avx512.hpp)
    static constexpr bool kBf16Dot = false;  // no bf16 dot products (see simd_avx512.hpp)
    using V = float;
    static V zero() { return 0.0f; }
    static V load(const float* p) { return *p; }
    static V in_reg(V v) { return v; }  // (see simd_avx2.hpp; not measured on this ISA)
    static void store(float* p, V v) { *p = v; }
    static V set1(float x) { return x; }
    static V fma(V a, V b, V c) { return a * b + c; }  // contraction is off in this file
    static V fma_if(bool on, V a, V b, V c) { return on ? a * b + c : c; }
    static V mul(V a, V b) { return a * b; }
    static V add(V a, V b) { return a + b; }
    static V sub(V a, V b) { return a - b; }
    static V max(V a, V b) { return a > b ? a : b; }
    static float fmas(float a, float b, float c) { return a * b + c; }
    static void transpose(const float* const* rows, int c, float* out, int) { out[0] = rows[0][c]; }
    static float cvt16(uint16_t h, DType t) { return t == DType::BF16 ? bf16_to_f32(h) : f16_to_f32(h); }
    static V load_bf16(const uint16_t* p) { return bf16_to_f32(*p); }
    static V load_f16(const uint16_t* p) { return f16_to_f32(*p); }
    static float h2f(uint16_t h) { return f16_to_f32(h); }
    static constexpr bool kRowWords = false;  // (row_words: AVX-512 only)
    static constexpr bool kLanePairs = false;  // (one lane: nothing to pair)
    static void f16_pairs(const uint32_t* p, V& lo, V& hi) {
        lo = f16_to_f32(uint16_t(*p & 0xFFFFu));
        hi = f16_to_f32(uint16_t(*p >> 16));
    }
    static V load_i8(const uint8_t* p) { return float(static_cast<int8_t>(*p)); }
    static V load_fp8(const uint8_t* p) { return f16_to_f32(fp8_e4m3_raw_f16(*p)); }  // value / 256
    // Integer Q.K over int8 keys (see simd_avx512.hpp): a word's 4 products, in int32.
    using VI = int32_t;
    static constexpr bool kI8Unsigned = false;
    using KI = uint32_t;
    static KI i8_prep(const uint32_t* p) { return *p; }
    static VI i8_dot(VI acc, KI k, const uint32_t* w, int) {
        for (int b = 0; b < 4; ++b)
            acc += int32_t(static_cast<int8_t>(k >> (8 * b))) * int32_t(static_cast<int8_t>(w[0] >> (8 * b)));
        return acc;
    }
    static VI i8_init(int32_t) { return 0; }
    static V i8_cvt(VI x) { return float(x); }
    // Integer P.V over int8 V (see simd_avx512.hpp): 2 dims per step; lo is the pair (a[0], b[0])
    // as two int16 in one word, hi the pair (a[1], b[1]).
    static constexpr int kPvI8Dims = 2;
    static VI vi_zero() { return 0; }
    static VI vi_add(VI a, VI b) { return a + b; }
    static uint32_t i16_pair(uint8_t a, uint8_t b) {
        return uint32_t(uint16_t(int16_t(static_cast<int8_t>(a)))) | uint32_t(uint16_t(int16_t(static_cast<int8_t>(b)))) << 16;
    }
    static void pv_i8_pairs(const uint8_t* a, const uint8_t* b, VI& lo, VI& hi) {
        lo = static_cast<VI>(i16_pair(a[0], b[0]));
        hi = static_cast<VI>(i16_pair(a[1], b[1]));
    }
    static VI pv_i8_dot(VI acc, VI pairs, uint32_t w) {
        const uint32_t p = static_cast<uint32_t>(pairs);
        return acc + int32_t(int16_t(p & 0xFFFFu)) * int32_t(int16_t(w & 0xFFFFu)) +
               int32_t(int16_t(p >> 16)) * int32_t(int16_t(w >> 16));
    }
    static void pv_i8_cvt(VI lo, VI hi, V& f0, V& f1) {
        f0 = float(lo);
        f1 = float(hi);
    }
    static constexpr bool kPvU8 = false;  // (pv_rows_u8: the VNNI paths only)
    static bool pv_i8_codes(V x, float f, int16_t* out) {
        const float y = x * f;
        if (!(std::fabs(y) < 2147483648.0f)) {  // inf, NaN or beyond int32 (cvtps2dq: 0x80000000)
            *out = int16_t(-32768);
            return true;
        }
        if (y >= 32767.0f || y <= -32768.0f) {  // saturated (and |y| < 2^22 below)
            *out = y > 0.0f ? int16_t(32767) : int16_t(-32768);
            return false;
        }
        // Nearest, ties to even (as cvtps2dq), by the 1.5 x 2^23 shift (query_quant.cpp).
        constexpr float kShift = 12582912.0f;
        *out = int16_t(int32_t((y + kShift) - kShift));
        return false;
    }
    static V abs(V x) { return std::fabs(x); }
    static V mul_nz(V p, V s) { return p != 0.0f ? p * s : 0.0f; }
    static void i8_transpose(const uint8_t* const* rows, int c, uint32_t* out, int) { std::memcpy(out, rows[0] + 4 * c, 4); }
    static void transpose_pairs(const uint16_t* const* rows, int c, DType t, float* out, int ld) {
        out[0] = cvt16(rows[0][c], t);
        out[ld] = cvt16(rows[0][c + 1], t);
    }
    static V sum_lanes(const float* b) { return b[0]; }  // one lane (attention_core.inl, KeyTile::lanes)
    static float hsum(V v) { return v; }
    static float hmax(V v) { return v; }
    static V exp2(V x) { return std::exp2(x); }
    static float exp2s(float x) { return std::exp2(x); }
    static V keep_range(V v, int lane0, int a, int b, float fill) { return (lane0 < a || lane0 > b) ? fill : v; }
    static void cvt_row(const uint8_t* src, DType t, int n, float* dst) {
        if (t == DType::F32) {
            std::memcpy(dst, src, size_t(n) * 4);
        } else {
            const uint16_t* s = reinterpret_cast<const uint16_t*>(src);
            for (int i = 0; i < n; ++i) dst[i] = t == DType::BF16 ? bf16_to_f32(s[i]) : f16_to_f32(s[i]);
        }
    }
};
