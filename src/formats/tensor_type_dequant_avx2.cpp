// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// AVX2 dequantisation: tensor_type_dequant_core.inl over 8 lanes, bit-identical to the scalar
// reference. Compiled for AVX2 + FMA + F16C; called only when the CPU has them
// (dequant_isa_available).
#include "formats/tensor_type_dequant.hpp"
#include "util/dtype.hpp"

#include <immintrin.h>

#include <cstddef>
#include <cstring>

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12 false positive inside immintrin.h

namespace kvrt::detail::dequant_avx2 {
namespace {

struct DOps {
    static constexpr int W = 8;
    using VI = __m256i;
    using VF = __m256;
    static VF load(const float* p) { return _mm256_loadu_ps(p); }
    static VF load_f16(const uint8_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
    static VF load_bf16(const uint8_t* p) {
        const VI w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
        return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
    }
    static VI u8(const uint8_t* p) { return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))); }
    static VI i8(const uint8_t* p) { return _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))); }
    static VI iota() { return _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7); }
    static VI set1i(int x) { return _mm256_set1_epi32(x); }
    static VI and_(VI a, VI b) { return _mm256_and_si256(a, b); }
    static VI or_(VI a, VI b) { return _mm256_or_si256(a, b); }
    static VI add_i(VI a, VI b) { return _mm256_add_epi32(a, b); }
    static VI sub_i(VI a, VI b) { return _mm256_sub_epi32(a, b); }
    static VI srlv(VI a, VI n) { return _mm256_srlv_epi32(a, n); }
    static VI srli2(VI a) { return _mm256_srli_epi32(a, 2); }
    static VI srli4(VI a) { return _mm256_srli_epi32(a, 4); }
    static VI srli6(VI a) { return _mm256_srli_epi32(a, 6); }
    static VI slli4(VI a) { return _mm256_slli_epi32(a, 4); }
    static VF cvt(VI a) { return _mm256_cvtepi32_ps(a); }
    static VF set1(float x) { return _mm256_set1_ps(x); }
    static VF mul(VF a, VF b) { return _mm256_mul_ps(a, b); }
    static VF add(VF a, VF b) { return _mm256_add_ps(a, b); }
    static VF sub(VF a, VF b) { return _mm256_sub_ps(a, b); }
    static void store(float* p, VF v) { _mm256_storeu_ps(p, v); }
    // bf16 by integer round-to-nearest-even, NaN kept quiet.
    static void store_bf16(uint16_t* p, VF v) {
        const VI u = _mm256_castps_si256(v);
        const VI hi = _mm256_srli_epi32(u, 16);
        const VI lsb = _mm256_and_si256(hi, _mm256_set1_epi32(1));
        const VI rounded = _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff))), 16);
        const VI quiet = _mm256_or_si256(hi, _mm256_set1_epi32(0x40));
        // |u| > inf as a signed compare: both sides are non-negative int32.
        const VI nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)), _mm256_set1_epi32(0x7f800000));
        const VI r = _mm256_blendv_epi8(rounded, quiet, nan);
        // 8 x u32 (each <= 0xffff) -> 8 x u16: pack within lanes, then gather qwords 0 and 2.
        const VI packed = _mm256_packus_epi32(r, _mm256_setzero_si256());
        _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_castsi256_si128(_mm256_permute4x64_epi64(packed, 0x08)));
    }
};

#include "formats/tensor_type_dequant_core.inl"

}  // namespace
}  // namespace kvrt::detail::dequant_avx2

#pragma GCC pop_options

namespace kvrt::detail {
bool dequantize_f32_avx2(TensorType t, const void* src, float* dst, uint64_t n) {
    return dequant_avx2::dequantize_f32(t, src, dst, n);
}
bool dequantize_bf16_avx2(TensorType t, const void* src, uint16_t* dst, uint64_t n) {
    return dequant_avx2::dequantize_bf16(t, src, dst, n);
}
}  // namespace kvrt::detail
