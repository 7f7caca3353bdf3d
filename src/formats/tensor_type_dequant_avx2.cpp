// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// AVX2 dequantisation (every dequantisable type), bit-identical to the scalar reference
// (tensor_type_dequant.cpp): the same f32 operations per element (a multiply
// followed by an add is exact before the add, so FMA contraction cannot change it),
// bf16 by integer round-to-nearest-even. Compiled with a target attribute;
// called only when the CPU has AVX2, FMA and F16C (dequant_isa_available).
#include "formats/tensor_type_dequant.hpp"
#include "util/dtype.hpp"

#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12 false positive inside immintrin.h
#include <immintrin.h>

#include <cstring>

#define KVRT_AVX2 __attribute__((target("avx2,fma,f16c")))

namespace kvrt::detail {
namespace {

inline float h2f(const uint8_t* p) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return dequant_f16(h);
}

KVRT_AVX2 inline __m128i bf16_of(__m256 v) {
    const __m256i u = _mm256_castps_si256(v);
    const __m256i hi = _mm256_srli_epi32(u, 16);
    const __m256i lsb = _mm256_and_si256(hi, _mm256_set1_epi32(1));
    const __m256i rounded =
        _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff))), 16);
    const __m256i quiet = _mm256_or_si256(hi, _mm256_set1_epi32(0x40));
    // |u| > inf as signed compare: both sides are non-negative int32.
    const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)),
                                           _mm256_set1_epi32(0x7f800000));
    const __m256i r = _mm256_blendv_epi8(rounded, quiet, nan);
    // 8 x u32 (each <= 0xffff) -> 8 x u16: pack within lanes, then gather qwords 0 and 2.
    const __m256i packed = _mm256_packus_epi32(r, _mm256_setzero_si256());
    return _mm256_castsi256_si128(_mm256_permute4x64_epi64(packed, 0x08));
}

struct OutF32 {
    float* p;
    KVRT_AVX2 void put(uint64_t i, __m256 v) const { _mm256_storeu_ps(p + i, v); }
    void put1(uint64_t i, float v) const { p[i] = v; }
};
struct OutBf16 {
    uint16_t* p;
    KVRT_AVX2 void put(uint64_t i, __m256 v) const { _mm_storeu_si128(reinterpret_cast<__m128i*>(p + i), bf16_of(v)); }
    void put1(uint64_t i, float v) const { p[i] = f32_to_bf16(v); }
};

KVRT_AVX2 inline __m256i u8x8(const uint8_t* p) {
    return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
}
KVRT_AVX2 inline __m256i i8x8(const uint8_t* p) {
    return _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
}

// The 32 quant values of a 4/5-bit block as 4 x 8 int32: q[0] = elements 0-7, ...,
// q[2] = elements 16-23 (high nibbles of bytes 0-7), q[3] = 24-31.
KVRT_AVX2 inline void nibbles(const uint8_t* qs, __m256i q[4]) {
    const __m256i mask = _mm256_set1_epi32(0x0F);
    const __m256i b0 = u8x8(qs), b1 = u8x8(qs + 8);
    q[0] = _mm256_and_si256(b0, mask);
    q[1] = _mm256_and_si256(b1, mask);
    q[2] = _mm256_srli_epi32(b0, 4);
    q[3] = _mm256_srli_epi32(b1, 4);
}

KVRT_AVX2 inline void add_fifth_bits(uint32_t qh, __m256i q[4]) {
    const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i h = _mm256_set1_epi32(static_cast<int>(qh));
    for (int g = 0; g < 4; ++g) {
        const __m256i bit = _mm256_and_si256(_mm256_srlv_epi32(h, _mm256_add_epi32(idx, _mm256_set1_epi32(8 * g))),
                                             _mm256_set1_epi32(1));
        q[g] = _mm256_or_si256(q[g], _mm256_slli_epi32(bit, 4));
    }
}

template <class Out>
KVRT_AVX2 inline void put_scaled(Out out, uint64_t base, const __m256i q[4], __m256 d) {
    for (int g = 0; g < 4; ++g) out.put(base + 8 * g, _mm256_mul_ps(_mm256_cvtepi32_ps(q[g]), d));
}
template <class Out>
KVRT_AVX2 inline void put_scaled_min(Out out, uint64_t base, const __m256i q[4], __m256 d, __m256 m) {
    for (int g = 0; g < 4; ++g) out.put(base + 8 * g, _mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(q[g]), d), m));
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
KVRT_AVX2 void q4_k(const uint8_t* src, Out out, uint64_t n) {
    const __m256i mask = _mm256_set1_epi32(0x0F);
    for (uint64_t b = 0; b < n / kQK_K; ++b) {
        const uint8_t* p = src + b * sizeof(BlockQ4_K);
        const float d = h2f(p + offsetof(BlockQ4_K, d));
        const float dmin = h2f(p + offsetof(BlockQ4_K, dmin));
        const uint8_t* scales = p + offsetof(BlockQ4_K, scales);
        const uint8_t* q = p + offsetof(BlockQ4_K, qs);
        for (int k = 0; k < 4; ++k) {
            uint8_t sc, m;
            scale_min_k4(2 * k, scales, &sc, &m);
            const __m256 d1 = _mm256_set1_ps(d * static_cast<float>(sc));
            const __m256 m1 = _mm256_set1_ps(dmin * static_cast<float>(m));
            scale_min_k4(2 * k + 1, scales, &sc, &m);
            const __m256 d2 = _mm256_set1_ps(d * static_cast<float>(sc));
            const __m256 m2 = _mm256_set1_ps(dmin * static_cast<float>(m));
            const uint64_t base = b * kQK_K + 64 * k;
            for (int g = 0; g < 4; ++g) {
                const __m256i bytes = u8x8(q + 32 * k + 8 * g);
                const __m256i lo = _mm256_and_si256(bytes, mask);
                const __m256i hi = _mm256_srli_epi32(bytes, 4);
                out.put(base + 8 * g, _mm256_sub_ps(_mm256_mul_ps(d1, _mm256_cvtepi32_ps(lo)), m1));
                out.put(base + 32 + 8 * g, _mm256_sub_ps(_mm256_mul_ps(d2, _mm256_cvtepi32_ps(hi)), m2));
            }
        }
    }
}

template <class Out>
KVRT_AVX2 void q6_k(const uint8_t* src, Out out, uint64_t n) {
    const __m256i m4 = _mm256_set1_epi32(0x0F), m2 = _mm256_set1_epi32(3), k32 = _mm256_set1_epi32(32);
    for (uint64_t b = 0; b < n / kQK_K; ++b) {
        const uint8_t* p = src + b * sizeof(BlockQ6_K);
        const float d = h2f(p + offsetof(BlockQ6_K, d));
        const uint8_t* ql = p + offsetof(BlockQ6_K, ql);
        const uint8_t* qh = p + offsetof(BlockQ6_K, qh);
        const int8_t* sc = reinterpret_cast<const int8_t*>(p + offsetof(BlockQ6_K, scales));
        for (int half = 0; half < 2; ++half) {
            for (int c = 0; c < 4; ++c) {  // l in [8c, 8c + 8): scale index is = c / 2
                const int l0 = 8 * c, is = c / 2;
                const __m256i a = u8x8(ql + l0), bb = u8x8(ql + 32 + l0), h = u8x8(qh + l0);
                const __m256i q1 = _mm256_sub_epi32(
                    _mm256_or_si256(_mm256_and_si256(a, m4), _mm256_slli_epi32(_mm256_and_si256(h, m2), 4)), k32);
                const __m256i q2 = _mm256_sub_epi32(
                    _mm256_or_si256(_mm256_and_si256(bb, m4),
                                    _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(h, 2), m2), 4)),
                    k32);
                const __m256i q3 = _mm256_sub_epi32(
                    _mm256_or_si256(_mm256_srli_epi32(a, 4),
                                    _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(h, 4), m2), 4)),
                    k32);
                const __m256i q4 = _mm256_sub_epi32(
                    _mm256_or_si256(_mm256_srli_epi32(bb, 4),
                                    _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(h, 6), m2), 4)),
                    k32);
                const uint64_t base = b * kQK_K + 128 * half + l0;
                out.put(base + 0, _mm256_mul_ps(_mm256_set1_ps(d * static_cast<float>(sc[is + 0])), _mm256_cvtepi32_ps(q1)));
                out.put(base + 32, _mm256_mul_ps(_mm256_set1_ps(d * static_cast<float>(sc[is + 2])), _mm256_cvtepi32_ps(q2)));
                out.put(base + 64, _mm256_mul_ps(_mm256_set1_ps(d * static_cast<float>(sc[is + 4])), _mm256_cvtepi32_ps(q3)));
                out.put(base + 96, _mm256_mul_ps(_mm256_set1_ps(d * static_cast<float>(sc[is + 6])), _mm256_cvtepi32_ps(q4)));
            }
            ql += 64;
            qh += 32;
            sc += 8;
        }
    }
}

template <class Out>
KVRT_AVX2 void run(TensorType t, const uint8_t* src, Out out, uint64_t n) {
    switch (t) {
        case TensorType::F32: {
            uint64_t i = 0;
            for (; i + 8 <= n; i += 8) out.put(i, _mm256_loadu_ps(reinterpret_cast<const float*>(src) + i));
            for (; i < n; ++i) {
                float v;
                std::memcpy(&v, src + 4 * i, 4);
                out.put1(i, v);
            }
            return;
        }
        case TensorType::F16: {
            uint64_t i = 0;
            for (; i + 8 <= n; i += 8)
                out.put(i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * i))));
            for (; i < n; ++i) out.put1(i, h2f(src + 2 * i));
            return;
        }
        case TensorType::BF16: {
            uint64_t i = 0;
            for (; i + 8 <= n; i += 8) {
                const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * i)));
                out.put(i, _mm256_castsi256_ps(_mm256_slli_epi32(w, 16)));
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
                __m256i q[4];
                nibbles(p + offsetof(BlockQ4_0, qs), q);
                for (auto& x : q) x = _mm256_sub_epi32(x, _mm256_set1_epi32(8));
                put_scaled(out, b * 32, q, _mm256_set1_ps(h2f(p)));
            }
            return;
        case TensorType::Q4_1:
            for (uint64_t b = 0; b < n / 32; ++b) {
                const uint8_t* p = src + b * sizeof(BlockQ4_1);
                __m256i q[4];
                nibbles(p + offsetof(BlockQ4_1, qs), q);
                put_scaled_min(out, b * 32, q, _mm256_set1_ps(h2f(p + offsetof(BlockQ4_1, d))),
                               _mm256_set1_ps(h2f(p + offsetof(BlockQ4_1, m))));
            }
            return;
        case TensorType::Q5_0:
            for (uint64_t b = 0; b < n / 32; ++b) {
                const uint8_t* p = src + b * sizeof(BlockQ5_0);
                uint32_t qh;
                std::memcpy(&qh, p + offsetof(BlockQ5_0, qh), 4);
                __m256i q[4];
                nibbles(p + offsetof(BlockQ5_0, qs), q);
                add_fifth_bits(qh, q);
                for (auto& x : q) x = _mm256_sub_epi32(x, _mm256_set1_epi32(16));
                put_scaled(out, b * 32, q, _mm256_set1_ps(h2f(p)));
            }
            return;
        case TensorType::Q5_1:
            for (uint64_t b = 0; b < n / 32; ++b) {
                const uint8_t* p = src + b * sizeof(BlockQ5_1);
                uint32_t qh;
                std::memcpy(&qh, p + offsetof(BlockQ5_1, qh), 4);
                __m256i q[4];
                nibbles(p + offsetof(BlockQ5_1, qs), q);
                add_fifth_bits(qh, q);
                put_scaled_min(out, b * 32, q, _mm256_set1_ps(h2f(p + offsetof(BlockQ5_1, d))),
                               _mm256_set1_ps(h2f(p + offsetof(BlockQ5_1, m))));
            }
            return;
        case TensorType::Q8_0:
        case TensorType::Q8_1: {
            const size_t bytes = t == TensorType::Q8_0 ? sizeof(BlockQ8_0) : sizeof(BlockQ8_1);
            const size_t qs = t == TensorType::Q8_0 ? offsetof(BlockQ8_0, qs) : offsetof(BlockQ8_1, qs);
            for (uint64_t b = 0; b < n / 32; ++b) {
                const uint8_t* p = src + b * bytes;
                const __m256i q[4] = {i8x8(p + qs), i8x8(p + qs + 8), i8x8(p + qs + 16), i8x8(p + qs + 24)};
                put_scaled(out, b * 32, q, _mm256_set1_ps(h2f(p)));
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

bool dequantize_f32_avx2(TensorType t, const void* src, float* dst, uint64_t n) {
    if (!vectorised(t)) return false;
    run(t, static_cast<const uint8_t*>(src), OutF32{dst}, n);
    return true;
}

bool dequantize_bf16_avx2(TensorType t, const void* src, uint16_t* dst, uint64_t n) {
    if (!vectorised(t)) return false;
    if (t == TensorType::BF16) {
        std::memcpy(dst, src, n * 2);
        return true;
    }
    run(t, static_cast<const uint8_t*>(src), OutBf16{dst}, n);
    return true;
}

}  // namespace kvrt::detail
