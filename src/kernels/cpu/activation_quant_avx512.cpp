// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// AVX-512 twins of quantize_row_scalar and quantize_row16_scalar (activation_quant.hpp): same bytes.
#include "kernels/cpu/activation_quant.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#pragma GCC push_options
// GCC 12 warns falsely inside its own AVX-512 headers (_mm512_undefined_*).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,fma,f16c")

namespace kvrt::kernels {

namespace {

// Both code widths (as the scalar path): 8-bit codes in [-128, 127], 16-bit in [-32767, 32767];
// out of range and NaN convert to INT_MIN, clamped to the low end.
template <class Q>
inline void quantize_row_avx512_t(const float* x, int64_t nb, Q* qs, float* d, int32_t* sum, float* s) {
    constexpr bool kWide = sizeof(Q) == 2;
    const __m512 sign = _mm512_set1_ps(-0.0f);
    const __m512i lo = _mm512_set1_epi32(kWide ? -32767 : -128), hi = _mm512_set1_epi32(kWide ? 32767 : 127);
    for (int64_t b = 0; b < nb; b++) {
        const __m512 x0 = _mm512_loadu_ps(x + b * 32);
        const __m512 x1 = _mm512_loadu_ps(x + b * 32 + 16);
        const __m512 a = _mm512_max_ps(_mm512_andnot_ps(sign, x0), _mm512_andnot_ps(sign, x1));
        const float amax = _mm512_reduce_max_ps(a);
        const auto [db, id] = kWide ? block_scale16(amax) : block_scale(amax);
        const __m512 vid = _mm512_set1_ps(id);
        __m512i i0 = _mm512_cvtps_epi32(_mm512_mul_ps(x0, vid));  // round half to even (MXCSR default)
        __m512i i1 = _mm512_cvtps_epi32(_mm512_mul_ps(x1, vid));
        i0 = _mm512_max_epi32(_mm512_min_epi32(i0, hi), lo);
        i1 = _mm512_max_epi32(_mm512_min_epi32(i1, hi), lo);
        if constexpr (kWide) {
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(qs + b * 32), _mm512_cvtepi32_epi16(i0));
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(qs + b * 32 + 16), _mm512_cvtepi32_epi16(i1));
        } else {
            _mm_storeu_si128(reinterpret_cast<__m128i*>(qs + b * 32), _mm512_cvtepi32_epi8(i0));
            _mm_storeu_si128(reinterpret_cast<__m128i*>(qs + b * 32 + 16), _mm512_cvtepi32_epi8(i1));
        }
        const int32_t total = _mm512_reduce_add_epi32(_mm512_add_epi32(i0, i1));
        store_block_stats(b, db, total, d, sum, s);
    }
}

}  // namespace

void quantize_row_avx512(const float* x, int64_t nb, int8_t* qs, float* d, int32_t* sum, float* s) {
    quantize_row_avx512_t(x, nb, qs, d, sum, s);
}

void quantize_row16_avx512(const float* x, int64_t nb, int16_t* qs, float* d, int32_t* sum, float* s) {
    quantize_row_avx512_t(x, nb, qs, d, sum, s);
}

}  // namespace kvrt::kernels

#pragma GCC pop_options

#else  // not x86: never selected; keeps the link whole.

namespace kvrt::kernels {
void quantize_row_avx512(const float* x, int64_t nb, int8_t* qs, float* d, int32_t* sum, float* s) {
    quantize_row_scalar(x, nb, qs, d, sum, s);
}
void quantize_row16_avx512(const float* x, int64_t nb, int16_t* qs, float* d, int32_t* sum, float* s) {
    quantize_row16_scalar(x, nb, qs, d, sum, s);
}
}  // namespace kvrt::kernels

#endif
