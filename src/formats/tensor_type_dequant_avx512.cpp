// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// AVX-512 dequantisation: tensor_type_dequant_core.inl over 16 lanes, bit-identical to the scalar
// reference. Compiled for AVX-512F/BW/VL; called only when the CPU has them (dequant_isa_available).
#include "formats/tensor_type_dequant.hpp"
#include "util/dtype.hpp"

#include <immintrin.h>

#include <cstddef>
#include <cstring>

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")
// GCC 12 warns about _mm512_undefined_* inside its own intrinsic headers when they are
// inlined into target code (a known false positive).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace kvrt::detail::dequant_avx512 {
namespace {

struct DOps {
    static constexpr int W = 16;
    using VI = __m512i;
    using VF = __m512;
    static VF load(const float* p) { return _mm512_loadu_ps(p); }
    static VF load_f16(const uint8_t* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
    static VF load_bf16(const uint8_t* p) {
        const VI w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
        return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
    }
    static VI u8(const uint8_t* p) { return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
    static VI i8(const uint8_t* p) { return _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
    static VI iota() { return _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15); }
    static VI set1i(int x) { return _mm512_set1_epi32(x); }
    static VI and_(VI a, VI b) { return _mm512_and_si512(a, b); }
    static VI or_(VI a, VI b) { return _mm512_or_si512(a, b); }
    static VI add_i(VI a, VI b) { return _mm512_add_epi32(a, b); }
    static VI sub_i(VI a, VI b) { return _mm512_sub_epi32(a, b); }
    static VI srlv(VI a, VI n) { return _mm512_srlv_epi32(a, n); }
    static VI srli2(VI a) { return _mm512_srli_epi32(a, 2); }
    static VI srli4(VI a) { return _mm512_srli_epi32(a, 4); }
    static VI srli6(VI a) { return _mm512_srli_epi32(a, 6); }
    static VI slli4(VI a) { return _mm512_slli_epi32(a, 4); }
    static VF cvt(VI a) { return _mm512_cvtepi32_ps(a); }
    static VF set1(float x) { return _mm512_set1_ps(x); }
    static VF mul(VF a, VF b) { return _mm512_mul_ps(a, b); }
    static VF add(VF a, VF b) { return _mm512_add_ps(a, b); }
    static VF sub(VF a, VF b) { return _mm512_sub_ps(a, b); }
    static void store(float* p, VF v) { _mm512_storeu_ps(p, v); }
    // bf16 by integer round-to-nearest-even, NaN kept quiet (not VCVTNEPS2BF16, which flushes
    // denormals).
    static void store_bf16(uint16_t* p, VF v) {
        const VI u = _mm512_castps_si512(v);
        const VI hi = _mm512_srli_epi32(u, 16);
        const VI lsb = _mm512_and_si512(hi, _mm512_set1_epi32(1));
        const VI rounded = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff))), 16);
        const VI quiet = _mm512_or_si512(hi, _mm512_set1_epi32(0x40));
        const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
                                                      _mm512_set1_epi32(0x7f800000));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtepi32_epi16(_mm512_mask_blend_epi32(nan, rounded, quiet)));
    }
};

#include "formats/tensor_type_dequant_core.inl"

}  // namespace
}  // namespace kvrt::detail::dequant_avx512

#pragma GCC pop_options

namespace kvrt::detail {
bool dequantize_f32_avx512(TensorType t, const void* src, float* dst, uint64_t n) {
    return dequant_avx512::dequantize_f32(t, src, dst, n);
}
bool dequantize_bf16_avx512(TensorType t, const void* src, uint16_t* dst, uint64_t n) {
    return dequant_avx512::dequantize_bf16(t, src, dst, n);
}
}  // namespace kvrt::detail
