// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// AVX-512 dequantisation (every dequantisable type), bit-identical to the scalar reference
// (tensor_type_dequant.cpp): the same f32 operations per element (a multiply
// followed by an add is exact before the add, so FMA contraction cannot change it),
// bf16 by integer round-to-nearest-even (not VCVTNEPS2BF16, which flushes
// denormals). Compiled with a target attribute; called only when the CPU has
// AVX-512F/BW/VL (dequant_isa_available).
#include "formats/tensor_type_dequant.hpp"
#include "util/dtype.hpp"

// GCC 12 warns about _mm512_undefined_* inside its own intrinsic headers when they are
// inlined into target-attributed functions (a known false positive).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cstring>

#define KVRT_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")))

namespace kvrt::detail {
namespace {

inline float h2f(const uint8_t* p) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return dequant_f16(h);
}

KVRT_AVX512 inline __m256i bf16_of(__m512 v) {
    const __m512i u = _mm512_castps_si512(v);
    const __m512i hi = _mm512_srli_epi32(u, 16);
    const __m512i lsb = _mm512_and_si512(hi, _mm512_set1_epi32(1));
    const __m512i rounded = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff))), 16);
    const __m512i quiet = _mm512_or_si512(hi, _mm512_set1_epi32(0x40));
    const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
                                                  _mm512_set1_epi32(0x7f800000));
    return _mm512_cvtepi32_epi16(_mm512_mask_blend_epi32(nan, rounded, quiet));
}

struct OutF32 {
    float* p;
    KVRT_AVX512 void put(uint64_t i, __m512 v) const { _mm512_storeu_ps(p + i, v); }
    void put1(uint64_t i, float v) const { p[i] = v; }
};
struct OutBf16 {
    uint16_t* p;
    KVRT_AVX512 void put(uint64_t i, __m512 v) const { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p + i), bf16_of(v)); }
    void put1(uint64_t i, float v) const { p[i] = f32_to_bf16(v); }
};

// Low and high nibbles of 16 bytes as 16 int32 each.
KVRT_AVX512 inline void nibbles(const uint8_t* qs, __m512i* lo, __m512i* hi) {
    const __m512i b = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs)));
    *lo = _mm512_and_si512(b, _mm512_set1_epi32(0x0F));
    *hi = _mm512_srli_epi32(b, 4);
}

// Fifth bits of Q5 blocks: bit j of qh, shifted to bit 4, for elements base .. base+15.
KVRT_AVX512 inline __m512i fifth_bits(uint32_t qh, int base) {
    const __m512i idx = _mm512_add_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                         _mm512_set1_epi32(base));
    const __m512i bit = _mm512_and_si512(_mm512_srlv_epi32(_mm512_set1_epi32(static_cast<int>(qh)), idx), _mm512_set1_epi32(1));
    return _mm512_slli_epi32(bit, 4);
}

KVRT_AVX512 inline __m512i u8x16(const uint8_t* x) {
    return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x)));
}

// 6-bit scale and min j of a Q4_K block (ggml's get_scale_min_k4).
inline void scale_min_k4(int j, const uint8_t* q, uint8_t* d, uint8_t* m) {
    if (j < 4) {
        *d = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *d = static_cast<uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        *m = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j - 0] >> 6) << 4));
    }
}

template <class Out>
KVRT_AVX512 void q4_k(const uint8_t* src, Out out, uint64_t n) {
    for (uint64_t b = 0; b < n / kQK_K; ++b) {
        const uint8_t* p = src + b * sizeof(BlockQ4_K);
        const float d = h2f(p + offsetof(BlockQ4_K, d));
        const float dmin = h2f(p + offsetof(BlockQ4_K, dmin));
        const uint8_t* scales = p + offsetof(BlockQ4_K, scales);
        const uint8_t* q = p + offsetof(BlockQ4_K, qs);
        for (int k = 0; k < 4; ++k) {
            uint8_t sc, m;
            scale_min_k4(2 * k, scales, &sc, &m);
            const __m512 d1 = _mm512_set1_ps(d * static_cast<float>(sc));
            const __m512 m1 = _mm512_set1_ps(dmin * static_cast<float>(m));
            scale_min_k4(2 * k + 1, scales, &sc, &m);
            const __m512 d2 = _mm512_set1_ps(d * static_cast<float>(sc));
            const __m512 m2 = _mm512_set1_ps(dmin * static_cast<float>(m));
            const uint64_t base = b * kQK_K + 64 * k;
            for (int h = 0; h < 2; ++h) {
                __m512i lo, hi;
                nibbles(q + 32 * k + 16 * h, &lo, &hi);
                out.put(base + 16 * h, _mm512_sub_ps(_mm512_mul_ps(d1, _mm512_cvtepi32_ps(lo)), m1));
                out.put(base + 32 + 16 * h, _mm512_sub_ps(_mm512_mul_ps(d2, _mm512_cvtepi32_ps(hi)), m2));
            }
        }
    }
}

template <class Out>
KVRT_AVX512 void q6_k(const uint8_t* src, Out out, uint64_t n) {
    const __m512i m4 = _mm512_set1_epi32(0x0F), m2 = _mm512_set1_epi32(3), k32 = _mm512_set1_epi32(32);
    for (uint64_t b = 0; b < n / kQK_K; ++b) {
        const uint8_t* p = src + b * sizeof(BlockQ6_K);
        const float d = h2f(p + offsetof(BlockQ6_K, d));
        const uint8_t* ql = p + offsetof(BlockQ6_K, ql);
        const uint8_t* qh = p + offsetof(BlockQ6_K, qh);
        const int8_t* sc = reinterpret_cast<const int8_t*>(p + offsetof(BlockQ6_K, scales));
        for (int half = 0; half < 2; ++half) {
            for (int c = 0; c < 2; ++c) {  // l in [16c, 16c + 16): scale index is = c
                const int l0 = 16 * c;
                const __m512i a = u8x16(ql + l0), bb = u8x16(ql + 32 + l0), h = u8x16(qh + l0);
                const __m512i q1 = _mm512_sub_epi32(
                    _mm512_or_si512(_mm512_and_si512(a, m4), _mm512_slli_epi32(_mm512_and_si512(h, m2), 4)), k32);
                const __m512i q2 = _mm512_sub_epi32(
                    _mm512_or_si512(_mm512_and_si512(bb, m4),
                                    _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(h, 2), m2), 4)),
                    k32);
                const __m512i q3 = _mm512_sub_epi32(
                    _mm512_or_si512(_mm512_srli_epi32(a, 4),
                                    _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(h, 4), m2), 4)),
                    k32);
                const __m512i q4 = _mm512_sub_epi32(
                    _mm512_or_si512(_mm512_srli_epi32(bb, 4),
                                    _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(h, 6), m2), 4)),
                    k32);
                const uint64_t base = b * kQK_K + 128 * half + l0;
                out.put(base + 0, _mm512_mul_ps(_mm512_set1_ps(d * static_cast<float>(sc[c + 0])), _mm512_cvtepi32_ps(q1)));
                out.put(base + 32, _mm512_mul_ps(_mm512_set1_ps(d * static_cast<float>(sc[c + 2])), _mm512_cvtepi32_ps(q2)));
                out.put(base + 64, _mm512_mul_ps(_mm512_set1_ps(d * static_cast<float>(sc[c + 4])), _mm512_cvtepi32_ps(q3)));
                out.put(base + 96, _mm512_mul_ps(_mm512_set1_ps(d * static_cast<float>(sc[c + 6])), _mm512_cvtepi32_ps(q4)));
            }
            ql += 64;
            qh += 32;
            sc += 8;
        }
    }
}

template <class Out>
KVRT_AVX512 void run(TensorType t, const uint8_t* src, Out out, uint64_t n) {
    switch (t) {
        case TensorType::F32: {
            uint64_t i = 0;
            for (; i + 16 <= n; i += 16) out.put(i, _mm512_loadu_ps(reinterpret_cast<const float*>(src) + i));
            for (; i < n; ++i) {
                float v;
                std::memcpy(&v, src + 4 * i, 4);
                out.put1(i, v);
            }
            return;
        }
        case TensorType::F16: {
            uint64_t i = 0;
            for (; i + 16 <= n; i += 16)
                out.put(i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 2 * i))));
            for (; i < n; ++i) out.put1(i, h2f(src + 2 * i));
            return;
        }
        case TensorType::BF16: {
            uint64_t i = 0;
            for (; i + 16 <= n; i += 16) {
                const __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 2 * i)));
                out.put(i, _mm512_castsi512_ps(_mm512_slli_epi32(w, 16)));
            }
            for (; i < n; ++i) {
                uint16_t h;
                std::memcpy(&h, src + 2 * i, 2);
                out.put1(i, bf16_to_f32(h));
            }
            return;
        }
        case TensorType::Q4_0:
            for (uint64_t b = 0; b < n / 32; ++b) {
                const uint8_t* p = src + b * sizeof(BlockQ4_0);
                const __m512 d = _mm512_set1_ps(h2f(p));
                __m512i lo, hi;
                nibbles(p + offsetof(BlockQ4_0, qs), &lo, &hi);
                const __m512i eight = _mm512_set1_epi32(8);
                out.put(b * 32, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(lo, eight)), d));
                out.put(b * 32 + 16, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(hi, eight)), d));
            }
            return;
        case TensorType::Q4_1:
            for (uint64_t b = 0; b < n / 32; ++b) {
                const uint8_t* p = src + b * sizeof(BlockQ4_1);
                const __m512 d = _mm512_set1_ps(h2f(p + offsetof(BlockQ4_1, d)));
                const __m512 m = _mm512_set1_ps(h2f(p + offsetof(BlockQ4_1, m)));
                __m512i lo, hi;
                nibbles(p + offsetof(BlockQ4_1, qs), &lo, &hi);
                out.put(b * 32, _mm512_add_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(lo), d), m));
                out.put(b * 32 + 16, _mm512_add_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(hi), d), m));
            }
            return;
        case TensorType::Q5_0:
            for (uint64_t b = 0; b < n / 32; ++b) {
                const uint8_t* p = src + b * sizeof(BlockQ5_0);
                const __m512 d = _mm512_set1_ps(h2f(p));
                uint32_t qh;
                std::memcpy(&qh, p + offsetof(BlockQ5_0, qh), 4);
                __m512i lo, hi;
                nibbles(p + offsetof(BlockQ5_0, qs), &lo, &hi);
                const __m512i sixteen = _mm512_set1_epi32(16);
                lo = _mm512_sub_epi32(_mm512_or_si512(lo, fifth_bits(qh, 0)), sixteen);
                hi = _mm512_sub_epi32(_mm512_or_si512(hi, fifth_bits(qh, 16)), sixteen);
                out.put(b * 32, _mm512_mul_ps(_mm512_cvtepi32_ps(lo), d));
                out.put(b * 32 + 16, _mm512_mul_ps(_mm512_cvtepi32_ps(hi), d));
            }
            return;
        case TensorType::Q5_1:
            for (uint64_t b = 0; b < n / 32; ++b) {
                const uint8_t* p = src + b * sizeof(BlockQ5_1);
                const __m512 d = _mm512_set1_ps(h2f(p + offsetof(BlockQ5_1, d)));
                const __m512 m = _mm512_set1_ps(h2f(p + offsetof(BlockQ5_1, m)));
                uint32_t qh;
                std::memcpy(&qh, p + offsetof(BlockQ5_1, qh), 4);
                __m512i lo, hi;
                nibbles(p + offsetof(BlockQ5_1, qs), &lo, &hi);
                lo = _mm512_or_si512(lo, fifth_bits(qh, 0));
                hi = _mm512_or_si512(hi, fifth_bits(qh, 16));
                out.put(b * 32, _mm512_add_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(lo), d), m));
                out.put(b * 32 + 16, _mm512_add_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(hi), d), m));
            }
            return;
        case TensorType::Q8_0:
        case TensorType::Q8_1: {
            const size_t bytes = t == TensorType::Q8_0 ? sizeof(BlockQ8_0) : sizeof(BlockQ8_1);
            const size_t qs = t == TensorType::Q8_0 ? offsetof(BlockQ8_0, qs) : offsetof(BlockQ8_1, qs);
            for (uint64_t b = 0; b < n / 32; ++b) {
                const uint8_t* p = src + b * bytes;
                const __m512 d = _mm512_set1_ps(h2f(p));
                const __m512i q0 = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + qs)));
                const __m512i q1 = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + qs + 16)));
                out.put(b * 32, _mm512_mul_ps(_mm512_cvtepi32_ps(q0), d));
                out.put(b * 32 + 16, _mm512_mul_ps(_mm512_cvtepi32_ps(q1), d));
            }
            return;
        }
        case TensorType::Q4_K:
            q4_k(src, out, n);
            return;
        case TensorType::Q6_K:
            q6_k(src, out, n);
            return;
        default:
            return;
    }
}

bool vectorised(TensorType t) {
    switch (t) {
        case TensorType::F32: case TensorType::F16: case TensorType::BF16: case TensorType::Q4_0:
        case TensorType::Q4_1: case TensorType::Q5_0: case TensorType::Q5_1: case TensorType::Q8_0:
        case TensorType::Q8_1: case TensorType::Q4_K: case TensorType::Q6_K:
            return true;
        default:
            return false;
    }
}

}  // namespace

bool dequantize_f32_avx512(TensorType t, const void* src, float* dst, uint64_t n) {
    if (!vectorised(t)) return false;
    run(t, static_cast<const uint8_t*>(src), OutF32{dst}, n);
    return true;
}

bool dequantize_bf16_avx512(TensorType t, const void* src, uint16_t* dst, uint64_t n) {
    if (!vectorised(t)) return false;
    if (t == TensorType::BF16) {
        std::memcpy(dst, src, n * 2);
        return true;
    }
    run(t, static_cast<const uint8_t*>(src), OutBf16{dst}, n);
    return true;
}

}  // namespace kvrt::detail
