// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// AVX2 twins of quantize_row_scalar and quantize_row16_scalar (activation_quant.hpp):
// the same bytes. One block loop for both code widths; only the clamp, the scale and
// the packing of the codes differ.
#include "kernels/cpu/activation_quant.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

#include <cmath>

namespace kvrt::kernels {

#include "kernels/cpu/activation_residual_core.inl"

namespace {

// residual_block_portable on 4 ymm (the same bytes): the largest magnitude takes max(|r|, a), which
// keeps a where |r| is NaN, as the portable comparison does; the codes round half to even
// (vcvtps2dq under the default MXCSR) and are clamped, packed and summed as the 8-bit quantiser's.
inline ResidualBlock residual_block_avx2(const float* x, float d, const int8_t* q, int8_t* r8) {
    const __m256 sign = _mm256_set1_ps(-0.0f), nd = _mm256_set1_ps(-d);
    __m256 r[4];
    __m256 a = _mm256_setzero_ps();
    for (int i = 0; i < 4; i++) {
        const __m256 qf = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(q + 8 * i))));
        r[i] = _mm256_fmadd_ps(nd, qf, _mm256_loadu_ps(x + 8 * i));
        a = _mm256_max_ps(_mm256_andnot_ps(sign, r[i]), a);
    }
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
    const BlockScale sc = block_scale(_mm_cvtss_f32(m4));
    if (!(sc.d > 0.0f) || !std::isfinite(sc.d)) return ResidualBlock{0.0f, 0, 0};
    const __m256 vid = _mm256_set1_ps(sc.id);
    const __m256i lo = _mm256_set1_epi32(-128), hi = _mm256_set1_epi32(127);
    __m256i c[4];
    for (int i = 0; i < 4; i++) c[i] = _mm256_max_epi32(_mm256_min_epi32(_mm256_cvtps_epi32(_mm256_mul_ps(r[i], vid)), hi), lo);
    const __m256i p = _mm256_permutevar8x32_epi32(
        _mm256_packs_epi16(_mm256_packs_epi32(c[0], c[1]), _mm256_packs_epi32(c[2], c[3])),
        _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(r8), p);
    auto hsum = [](__m256i v) {
        __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
        s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4e));
        s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xb1));
        return _mm_cvtsi128_si32(s4);
    };
    const __m256i lo16 = _mm256_add_epi32(c[0], c[1]);
    return ResidualBlock{sc.d, hsum(_mm256_add_epi32(lo16, _mm256_add_epi32(c[2], c[3]))), hsum(lo16)};
}

}  // namespace

int32_t quantize_row_residual_avx2(const float* x, int64_t nb, const int8_t* qs, const float* d, float* s, int8_t* rq,
                                   float* rd, int32_t* rsum, int32_t* rsum_lo, int32_t* rlist) {
    return residual_row_core(x, nb, qs, d, s, rq, rd, rsum, rsum_lo, rlist, residual_block_avx2);
}

namespace {

template <class Q>
inline void quantize_row_avx2_t(const float* x, int64_t nb, Q* qs, float* d, int32_t* sum, float* s) {
    constexpr bool kWide = sizeof(Q) == 2;
    const __m256 sign = _mm256_set1_ps(-0.0f);
    // Out of range and NaN convert to INT_MIN, clamped to lo (as the scalar paths).
    const __m256i lo = _mm256_set1_epi32(kWide ? -32767 : -128), hi = _mm256_set1_epi32(kWide ? 32767 : 127);
    const __m256i perm = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    for (int64_t b = 0; b < nb; b++) {
        __m256 v[4];
        __m256 a = _mm256_setzero_ps();
        for (int i = 0; i < 4; i++) {
            v[i] = _mm256_loadu_ps(x + b * 32 + 8 * i);
            a = _mm256_max_ps(a, _mm256_andnot_ps(sign, v[i]));
        }
        __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
        m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
        m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
        const float amax = _mm_cvtss_f32(m4);
        const auto [db, id] = kWide ? block_scale16(amax) : block_scale(amax);
        const __m256 vid = _mm256_set1_ps(id);
        __m256i q[4];
        __m256i acc = _mm256_setzero_si256();
        for (int i = 0; i < 4; i++) {
            q[i] = _mm256_cvtps_epi32(_mm256_mul_ps(v[i], vid));
            q[i] = _mm256_max_epi32(_mm256_min_epi32(q[i], hi), lo);
            acc = _mm256_add_epi32(acc, q[i]);
        }
        const __m256i p01 = _mm256_packs_epi32(q[0], q[1]);
        const __m256i p23 = _mm256_packs_epi32(q[2], q[3]);
        if constexpr (kWide) {
            // packs works per 128-bit lane: [q0 lo4, q1 lo4 | q0 hi4, q1 hi4] -> reorder the qwords
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(qs + b * 32), _mm256_permute4x64_epi64(p01, 0xD8));
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(qs + b * 32 + 16), _mm256_permute4x64_epi64(p23, 0xD8));
        } else {
            const __m256i p = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(p01, p23), perm);
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(qs + b * 32), p);
        }
        __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(acc), _mm256_extracti128_si256(acc, 1));
        s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4e));
        s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xb1));
        const int32_t total = _mm_cvtsi128_si32(s4);
        store_block_stats(b, db, total, d, sum, s);
    }
}

}  // namespace

void quantize_row_avx2(const float* x, int64_t nb, int8_t* qs, float* d, int32_t* sum, float* s) {
    quantize_row_avx2_t(x, nb, qs, d, sum, s);
}

void quantize_row16_avx2(const float* x, int64_t nb, int16_t* qs, float* d, int32_t* sum, float* s) {
    quantize_row_avx2_t(x, nb, qs, d, sum, s);
}

}  // namespace kvrt::kernels

#pragma GCC pop_options

#else  // not x86: never selected; keeps the link whole.

namespace kvrt::kernels {
int32_t quantize_row_residual_avx2(const float* x, int64_t nb, const int8_t* qs, const float* d, float* s, int8_t* rq,
                                   float* rd, int32_t* rsum, int32_t* rsum_lo, int32_t* rlist) {
    return quantize_row_residual(x, nb, qs, d, s, rq, rd, rsum, rsum_lo, rlist);
}
void quantize_row_avx2(const float* x, int64_t nb, int8_t* qs, float* d, int32_t* sum, float* s) {
    quantize_row_scalar(x, nb, qs, d, sum, s);
}
void quantize_row16_avx2(const float* x, int64_t nb, int16_t* qs, float* d, int32_t* sum, float* s) {
    quantize_row16_scalar(x, nb, qs, d, sum, s);
}
}  // namespace kvrt::kernels

#endif
