// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// AVX2 + FMA + F16C vector operations for the attention core (attention_core.inl).
// Include only from attention_avx2.cpp, inside its ISA namespace, after the standard headers.

struct Ops {
    static constexpr int W = 8;
    static constexpr int kGroup = 1;  // softmax bookkeeping row by row (see simd_avx512.hpp)
    static constexpr bool kBf16Dot = false;  // no bf16 dot products (see simd_avx512.hpp)
    using V = __m256;
    static V zero() { return _mm256_setzero_ps(); }
    static V load(const float* p) { return _mm256_loadu_ps(p); }
    // v, kept in a register: an operand used by several FMAs is loaded once instead of being
    // folded into each of them as a memory operand (Zen 3 has two 256-bit load ports: an
    // FMA per load caps the inner loops below the FMA rate).
    static V in_reg(V v) {
        asm("" : "+x"(v));
        return v;
    }
    static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
    static V set1(float x) { return _mm256_set1_ps(x); }
    static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
    static V fma_if(bool on, V a, V b, V c) { return on ? _mm256_fmadd_ps(a, b, c) : c; }
    static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
    static V add(V a, V b) { return _mm256_add_ps(a, b); }
    static V sub(V a, V b) { return _mm256_sub_ps(a, b); }
    static V max(V a, V b) { return _mm256_max_ps(a, b); }
    static float fmas(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
    static float hsum(V v) {
        __m128 b = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
        __m128 c = _mm_add_ps(b, _mm_movehl_ps(b, b));
        __m128 d = _mm_add_ss(c, _mm_shuffle_ps(c, c, 1));
        return _mm_cvtss_f32(d);
    }
    // Lane k = the sum of the 8 floats b[8k .. 8k + 7] by the balanced tree over adjacent
    // elements: ((0+1)+(2+3))+((4+5)+(6+7)) (attention_core.inl, KeyTile::lanes).
    static V sum_lanes(const float* b) {
        const V h01 = _mm256_hadd_ps(load(b), load(b + 8)), h23 = _mm256_hadd_ps(load(b + 16), load(b + 24));
        const V h45 = _mm256_hadd_ps(load(b + 32), load(b + 40)), h67 = _mm256_hadd_ps(load(b + 48), load(b + 56));
        // g0: lanes 0..3 = keys 0..3 over elements 0..3, lanes 4..7 = keys 0..3 over 4..7; g1: keys 4..7.
        const V g0 = _mm256_hadd_ps(h01, h23), g1 = _mm256_hadd_ps(h45, h67);
        return _mm256_add_ps(_mm256_permute2f128_ps(g0, g1, 0x20), _mm256_permute2f128_ps(g0, g1, 0x31));
    }
    static float hmax(V v) {
        __m128 b = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
        __m128 c = _mm_max_ps(b, _mm_movehl_ps(b, b));
        __m128 d = _mm_max_ss(c, _mm_shuffle_ps(c, c, 1));
        return _mm_cvtss_f32(d);
    }
    static V exp2(V x) {
        x = _mm256_max_ps(x, _mm256_set1_ps(-125.0f));  // no denormals (see simd_avx512.hpp)
        V xi = _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        V f = _mm256_sub_ps(x, xi);
        V p = _mm256_set1_ps(1.5403530393381609e-4f);
        p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.3333558146428443e-3f));
        p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(9.6181291076284772e-3f));
        p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(5.5504108664821580e-2f));
        p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(2.4022650695910071e-1f));
        p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(6.9314718055994531e-1f));
        p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.0f));
        __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(xi), _mm256_set1_epi32(127)), 23);
        return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
    }
    static float exp2s(float x) { return _mm256_cvtss_f32(exp2(_mm256_set1_ps(x))); }
    static V keep_range(V v, int lane0, int a, int b, float fill) {
        __m256i idx = _mm256_add_epi32(_mm256_set1_epi32(lane0), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
        __m256i lo = _mm256_cmpgt_epi32(_mm256_set1_epi32(a), idx);  // idx < a
        __m256i hi = _mm256_cmpgt_epi32(idx, _mm256_set1_epi32(b));  // idx > b
        __m256 out = _mm256_castsi256_ps(_mm256_or_si256(lo, hi));
        return _mm256_blendv_ps(v, _mm256_set1_ps(fill), out);
    }
    static void cvt_row(const uint8_t* src, DType t, int n, float* dst) {
        int i = 0;
        if (t == DType::F32) {
            const float* s = reinterpret_cast<const float*>(src);
            for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, _mm256_loadu_ps(s + i));
            for (; i < n; ++i) dst[i] = s[i];
        } else if (t == DType::BF16) {
            const uint16_t* s = reinterpret_cast<const uint16_t*>(src);
            for (; i + 8 <= n; i += 8) {
                __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i)));
                _mm256_storeu_ps(dst + i, _mm256_castsi256_ps(_mm256_slli_epi32(w, 16)));
            }
            for (; i < n; ++i) dst[i] = bf16_to_f32(s[i]);
        } else {
            const uint16_t* s = reinterpret_cast<const uint16_t*>(src);
            for (; i + 8 <= n; i += 8)
                _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i))));
            for (; i < n; ++i) dst[i] = f16_to_f32(s[i]);
        }
    }
    static V load_bf16(const uint16_t* p) {  // 8 bf16 -> f32 (exact: a shift)
        __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
        return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
    }
    static V load_f16(const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
    static float h2f(uint16_t h) { return _cvtsh_ss(h); }  // one f16 -> f32 (F16C, exact)
    static constexpr bool kRowWords = false;  // (row_words: AVX-512 only)
    // (lane_pairs, sum_lane_pairs: AVX-512 only. Level 1 in registers here, _mm256_hadd_ps of two
    // keys, made 9/3 heads of 64 6-8% slower in cache, AMD EPYC Zen 4 with KVRT_ISA=avx2.)
    static constexpr bool kLanePairs = false;
    // 8 words of two f16 each: lo = their low halves, hi = their high halves, in f32 (exact).
    static void f16_pairs(const uint32_t* p, V& lo, V& hi) {
        const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
        const __m256i l = _mm256_and_si256(x, _mm256_set1_epi32(0xFFFF)), h = _mm256_srli_epi32(x, 16);
        // packus per 128-bit lane: (l0-3, h0-3, l4-7, h4-7) -> (l0-7, h0-7)
        const __m256i pk = _mm256_permute4x64_epi64(_mm256_packus_epi32(l, h), 0xD8);
        lo = _mm256_cvtph_ps(_mm256_castsi256_si128(pk));
        hi = _mm256_cvtph_ps(_mm256_extracti128_si256(pk, 1));
    }
    // 8 int8 -> f32 (exact). 8 fp8 e4m3 -> f32 value / 256 (exact; util/kv_quant.hpp).
    static V load_i8(const uint8_t* p) {
        return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
    }
    // (The byte sign-extended to 16 bits and shifted up 7 puts sign, exponent and mantissa where
    // f16 has them; bit 14 then holds a copy of the sign and is cleared.)
    static V load_fp8(const uint8_t* p) {
        const __m128i x = _mm_cvtepi8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
        return _mm256_cvtph_ps(_mm_and_si128(_mm_slli_epi16(x, 7), _mm_set1_epi16(int16_t(0xBFFF))));
    }
    // In-register 8 x 8 transpose of 32-bit lanes: r[i] lane j <- r[j] lane i.
    static void transpose8x8(__m256 (&r)[8]) {
        __m256 t[8];
        for (int i = 0; i < 8; i += 2) {
            t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
            t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
        }
        for (int i = 0; i < 8; i += 4) {
            r[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
            r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
            r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
            r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
        }
        for (int k = 0; k < 4; ++k) {
            t[k] = _mm256_permute2f128_ps(r[k], r[4 + k], 0x20);
            t[4 + k] = _mm256_permute2f128_ps(r[k], r[4 + k], 0x31);
        }
        for (int i = 0; i < 8; ++i) r[i] = t[i];
    }
    static void transpose(const float* const* rows, int c, float* out, int ld) {
        __m256 r[8];
        for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(rows[i] + c);
        transpose8x8(r);
        for (int i = 0; i < 8; ++i) _mm256_storeu_ps(out + size_t(i) * ld, r[i]);
    }
    // Integer Q.K over int8 keys (see simd_avx512.hpp).
    using VI = __m256i;
#if defined(KVRT_ISA_I8_DOT)
    // AVX-VNNI (vpdpbusd on ymm) multiplies unsigned by signed bytes: the tile stores k + 128
    // (k xor 0x80) and each accumulator starts at -128 x the sum of the query's codes it meets.
    static constexpr bool kI8Unsigned = true;
    struct KI {
        __m256i k;
    };
    static KI i8_prep(const uint32_t* p) { return KI{_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))}; }
    static VI i8_dot(VI acc, const KI& k, const uint32_t* w, int) {
        return _mm256_dpbusd_avx_epi32(acc, k.k, _mm256_set1_epi32(static_cast<int>(w[0])));
    }
    static VI i8_init(int32_t code_sum) { return _mm256_set1_epi32(-128 * code_sum); }
#else
    // The key's bytes (0, 2) and (1, 3) of each word sign-extended to int16 pairs, two vpmaddwd
    // with the query's pairs.
    static constexpr bool kI8Unsigned = false;
    struct KI {
        __m256i lo, hi;
    };
    static KI i8_prep(const uint32_t* p) {
        const __m256i k = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
        return KI{_mm256_srai_epi16(_mm256_slli_epi16(k, 8), 8), _mm256_srai_epi16(k, 8)};
    }
    static VI i8_dot(VI acc, const KI& k, const uint32_t* w, int nw) {
        acc = _mm256_add_epi32(acc, _mm256_madd_epi16(k.lo, _mm256_set1_epi32(static_cast<int>(w[nw]))));
        return _mm256_add_epi32(acc, _mm256_madd_epi16(k.hi, _mm256_set1_epi32(static_cast<int>(w[2 * nw]))));
    }
    static VI i8_init(int32_t) { return _mm256_setzero_si256(); }
#endif
    static V i8_cvt(VI x) { return _mm256_cvtepi32_ps(x); }
    // Integer P.V over int8 V (see simd_avx512.hpp): 16 dims per step; lo holds dims 0..3 and
    // 8..11 as (a[c], b[c]) int16 pairs, hi dims 4..7 and 12..15.
    static constexpr int kPvI8Dims = 16;
    static VI vi_zero() { return _mm256_setzero_si256(); }
    static VI vi_add(VI a, VI b) { return _mm256_add_epi32(a, b); }
    static void pv_i8_pairs(const uint8_t* a, const uint8_t* b, VI& lo, VI& hi) {
        const __m256i x = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a)));
        const __m256i y = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b)));
        lo = _mm256_unpacklo_epi16(x, y);
        hi = _mm256_unpackhi_epi16(x, y);
    }
#if defined(KVRT_ISA_I8_DOT)
    static VI pv_i8_dot(VI acc, VI pairs, uint32_t w) {
        return _mm256_dpwssd_avx_epi32(acc, pairs, _mm256_set1_epi32(static_cast<int>(w)));
    }
#else
    static VI pv_i8_dot(VI acc, VI pairs, uint32_t w) {
        return _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, _mm256_set1_epi32(static_cast<int>(w))));
    }
#endif
    static void pv_i8_cvt(VI lo, VI hi, V& f0, V& f1) {
        f0 = _mm256_cvtepi32_ps(_mm256_permute2x128_si256(lo, hi, 0x20));
        f1 = _mm256_cvtepi32_ps(_mm256_permute2x128_si256(lo, hi, 0x31));
    }
    static bool pv_i8_codes(V x, float f, int16_t* out) {
        const __m256i c = _mm256_cvtps_epi32(_mm256_mul_ps(x, _mm256_set1_ps(f)));
        const __m256i s = _mm256_permute4x64_epi64(_mm256_packs_epi32(c, c), 0x08);  // saturated, in order
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm256_castsi256_si128(s));
        return _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(c, _mm256_set1_epi32(INT32_MIN)))) != 0;
    }
#if defined(KVRT_ISA_I8_DOT)
    // P.V with 8-bit weight codes (attention_core.inl, pv_rows_u8; pv_u8_quads.inl): a group's 4
    // quads, each multiplied by the broadcast codes of 4 keys.
    static constexpr bool kPvU8 = true;
#include "kernels/cpu/pv_u8_quads.inl"
    using VU = __m256i;
    static constexpr int kPvU8Vecs = 4;
    static VU vu_zero() { return _mm256_setzero_si256(); }
    static VU vu_load(const __m256i* p) { return _mm256_loadu_si256(p); }
    static void pv_u8_store(const __m256i* q, __m256i* out) {
        for (int k = 0; k < 4; ++k) _mm256_storeu_si256(out + k, q[k]);
    }
    // W weight codes as bytes at out (see simd_avx512.hpp).
    static bool pv_u8_codes(V x, float f, uint8_t* out) {
        const __m256i c = _mm256_cvtps_epi32(_mm256_mul_ps(x, _mm256_set1_ps(f)));
        const __m256i lo = _mm256_shuffle_epi8(c, _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                                                    0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1));
        const __m256i b = _mm256_permutevar8x32_epi32(lo, _mm256_setr_epi32(0, 4, 1, 1, 1, 1, 1, 1));
        _mm_storel_epi64(reinterpret_cast<__m128i*>(out), _mm256_castsi256_si128(b));
        return _mm256_movemask_ps(_mm256_castsi256_ps(c)) != 0;
    }
    static VU pv_u8_dot(VU acc, VU quads, uint32_t w) {
        return _mm256_dpbusd_avx_epi32(acc, _mm256_set1_epi32(static_cast<int>(w)), quads);
    }
    // A group's 4 accumulators (lane L of acc[k]: dims 16 L + 4 k ..) -> f[0 .. 3] (dims 0..7, ..,
    // 24..31) as f32.
    static void pv_u8_cvt(const VU* acc, V* f) {
        f[0] = _mm256_cvtepi32_ps(_mm256_permute2x128_si256(acc[0], acc[1], 0x20));
        f[1] = _mm256_cvtepi32_ps(_mm256_permute2x128_si256(acc[2], acc[3], 0x20));
        f[2] = _mm256_cvtepi32_ps(_mm256_permute2x128_si256(acc[0], acc[1], 0x31));
        f[3] = _mm256_cvtepi32_ps(_mm256_permute2x128_si256(acc[2], acc[3], 0x31));
    }
#else
    static constexpr bool kPvU8 = false;
#endif
    static V abs(V x) { return _mm256_and_ps(x, _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF))); }
    static V mul_nz(V p, V s) { return _mm256_and_ps(_mm256_mul_ps(p, s), _mm256_cmp_ps(p, _mm256_setzero_ps(), _CMP_NEQ_UQ)); }
    static void i8_transpose(const uint8_t* const* rows, int c, uint32_t* out, int ld) {
        __m256 r[8];
        for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(reinterpret_cast<const float*>(rows[i] + 4 * c));
        transpose8x8(r);
        for (int i = 0; i < 8; ++i) {
            __m256i x = _mm256_castps_si256(r[i]);
            if constexpr (kI8Unsigned) x = _mm256_xor_si256(x, _mm256_set1_epi32(int(0x80808080u)));
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + size_t(i) * ld), x);
        }
    }
    // 8 rows of 16-bit elements (BF16 or F16) x 16 columns from column c, converted (see the
    // AVX-512 twin): out[i * ld + j] = f32(rows[j][c + i]).
    static void transpose_pairs(const uint16_t* const* rows, int c, DType t, float* out, int ld) {
        __m256 r[8];
        for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(reinterpret_cast<const float*>(rows[i] + c));
        transpose8x8(r);
        // f16: the low (or high) halves of the 8 pairs gathered into 128 bits for vcvtph2ps.
        const __m256i pick = _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, -1, -1, -1, -1, -1, -1, -1, -1, 0, 1, 4, 5, 8,
                                              9, 12, 13, -1, -1, -1, -1, -1, -1, -1, -1);
        for (int i = 0; i < 8; ++i) {
            const __m256i w = _mm256_castps_si256(r[i]);
            V lo, hi;
            if (t == DType::BF16) {
                lo = _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
                hi = _mm256_castsi256_ps(_mm256_and_si256(w, _mm256_set1_epi32(int(0xFFFF0000u))));
            } else {
                const __m256i a = _mm256_permute4x64_epi64(_mm256_shuffle_epi8(w, pick), 0x08);
                const __m256i b = _mm256_permute4x64_epi64(_mm256_shuffle_epi8(_mm256_srli_epi32(w, 16), pick), 0x08);
                lo = _mm256_cvtph_ps(_mm256_castsi256_si128(a));
                hi = _mm256_cvtph_ps(_mm256_castsi256_si128(b));
            }
            _mm256_storeu_ps(out + size_t(2 * i) * ld, lo);
            _mm256_storeu_ps(out + size_t(2 * i + 1) * ld, hi);
        }
    }
};
