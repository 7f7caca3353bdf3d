// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// The AVX2 decode of one 4-bit group (util/kv_quant.hpp): 16 code bytes -> 32 f32, each twice
// its e2m1 value (an integer, looked up by pshufb) times hs = half the group's scale: exact, the
// value kv_load gives. Include inside a namespace of a translation unit compiled for AVX2 (after
// <immintrin.h>): cpu/fp4_core.inl (the hand kernels) and onednn/sparse_attention.cpp (its gather).

// Elements 0..15 (e0) and 16..31 (e1) of the group as int8 (twice the e2m1 values).
inline void fp4_codes32_i8(const uint8_t* p, __m128i& e0, __m128i& e1) {
    const __m128i lut = _mm_setr_epi8(0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12);
    const __m128i m4 = _mm_set1_epi8(15);
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i lo = _mm_shuffle_epi8(lut, _mm_and_si128(b, m4));                     // even elements
    const __m128i hi = _mm_shuffle_epi8(lut, _mm_and_si128(_mm_srli_epi16(b, 4), m4));  // odd elements
    e0 = _mm_unpacklo_epi8(lo, hi);
    e1 = _mm_unpackhi_epi8(lo, hi);
}

inline void fp4_decode32_avx2(const uint8_t* p, float hs, float* out) {
    __m128i e0, e1;
    fp4_codes32_i8(p, e0, e1);
    const __m256 s = _mm256_set1_ps(hs);
    _mm256_storeu_ps(out, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(e0)), s));
    _mm256_storeu_ps(out + 8, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(e0, 8))), s));
    _mm256_storeu_ps(out + 16, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(e1)), s));
    _mm256_storeu_ps(out + 24, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(e1, 8))), s));
}
