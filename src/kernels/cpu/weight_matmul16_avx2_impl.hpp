// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// AVX2 weight-matmul kernels for 16-bit activation codes (ActBits::Q16,
// weight_matmul.hpp): the integer dot products of weight_matmul_avx2_impl.hpp with
// vpmaddwd (int16 x int16 -> pairwise int32) instead of vpmaddubsw + vpmaddwd; with
// AVX-VNNI, vpdpwssd (the same products, added in one instruction).
// Included by weight_matmul16_avx2.cpp and weight_matmul16_avxvnni.cpp: the including
// file sets the target, KVRT_AVX2_VNNI (0/1), KVRT_AVX2_16_ENTRY (this kernel's name)
// and KVRT_AVX2_ENTRY (the 8-bit kernel of the same ISA, for float weights).
//
// A 32-byte load of the packed layout (weight_matmul_layout.hpp) holds, for 8 rows of
// the panel, one 4-element group each (dword r = elements 4j..4j+3 of row r). Its
// bytes are widened in-lane: vpunpcklbw against zero gives rows {0,1 | 4,5} as int16,
// vpunpckhbw rows {2,3 | 6,7}; vpmaddwd against the group's 4 activation codes
// broadcast as one qword gives two int32 per row (elements 0+1 and 2+3), summed over
// the block in two accumulators A (lo rows) and B (hi rows). vphaddd(A, B) then puts
// the rows back in order: [r0 r1 r2 r3 | r4 r5 r6 r7]. All integer sums are exact
// (|code| <= 32767: a block's dot is below 2^31 for every type; Q6_K's group products
// too, which is why they are converted and added one at a time), and the float
// operations per output element are those of the scalar path (weight_matmul16 in
// weight_matmul_scalar.cpp), so both give the same bits.

namespace kvrt::kernels {

namespace {

#include "kernels/cpu/weight_matmul_avx2_common.hpp"

// The 4 codes of elements e..e+3 of an activation row, in every qword.
inline __m256i bcast4(const int16_t* p) {
    int64_t v;
    std::memcpy(&v, p, 8);
    return _mm256_set1_epi64x(v);
}

// Unsigned weight bytes w (8 rows x 4 elements) -> int16 rows {0,1|4,5} (lo) and {2,3|6,7} (hi).
inline void widen(__m256i w, __m256i& lo, __m256i& hi) {
    const __m256i z = _mm256_setzero_si256();
    lo = _mm256_unpacklo_epi8(w, z);
    hi = _mm256_unpackhi_epi8(w, z);
}

// A += w_lo . x, B += w_hi . x (pairwise int32).
inline void mac(__m256i& A, __m256i& B, __m256i wlo, __m256i whi, __m256i x) {
#if KVRT_AVX2_VNNI
    A = _mm256_dpwssd_avx_epi32(A, wlo, x);
    B = _mm256_dpwssd_avx_epi32(B, whi, x);
#else
    A = _mm256_add_epi32(A, _mm256_madd_epi16(wlo, x));
    B = _mm256_add_epi32(B, _mm256_madd_epi16(whi, x));
#endif
}

// Integer dots of chunks [c0, c1) of one 32-element block (4-bit chunk layout) for
// half h of the panel and MR activation rows: I[r] = the 8 rows' exact sums.
template <TensorType T, int MR>
inline void dot_chunks(const uint8_t* qs, const uint8_t* hx, int h, int c0, int c1, const int16_t* const (&x)[MR],
                       __m256i (&I)[MR]) {
    __m256i A[MR], B[MR];
    #pragma GCC unroll 8
    for (int r = 0; r < MR; r++) A[r] = B[r] = _mm256_setzero_si256();
    for (int c = c0; c < c1; c++) {
        __m256i wl, wh, wl0, wl1, wh0, wh1;
        codes<T>(qs, hx, c, h, wl, wh);
        widen(wl, wl0, wl1);
        widen(wh, wh0, wh1);
        #pragma GCC unroll 8
        for (int r = 0; r < MR; r++) {
            mac(A[r], B[r], wl0, wl1, bcast4(x[r] + 8 * c));
            mac(A[r], B[r], wh0, wh1, bcast4(x[r] + 8 * c + 4));
        }
    }
    #pragma GCC unroll 8
    for (int r = 0; r < MR; r++) I[r] = _mm256_hadd_epi32(A[r], B[r]);
}

inline __m256 load_f16x8(const uint8_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }

template <bool Q41, int MR>
void tile_q4(const Tile& t, const QuantizedRows& a) {
    constexpr size_t qoff = Q41 ? 64 : 32;
    const int64_t nb = a.blocks;
    __m256 acc[MR][2];
    #pragma GCC unroll 8
    for (int r = 0; r < MR; r++) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t* pb = t.panel + b * t.stride;
        if (t.prefetch) prefetch_step(t.pf, pb, t.stride);
        const int16_t* x[MR];
        #pragma GCC unroll 8
        for (int r = 0; r < MR; r++) x[r] = a.row_q16(t.m0 + r) + b * 32;
        #pragma GCC unroll 2
        for (int h = 0; h < 2; h++) {
            __m256i I[MR];
            dot_chunks<TensorType::Q4_0, MR>(pb + qoff, nullptr, h, 0, 4, x, I);
            const __m256 dw = load_f16x8(pb + 16 * h);
            #pragma GCC unroll 8
            for (int r = 0; r < MR; r++) {
                const int64_t ab = (t.m0 + r) * nb + b;
                if (!Q41) I[r] = _mm256_add_epi32(I[r], _mm256_set1_epi32(-8 * a.sum[ab]));
                const __m256 da = _mm256_set1_ps(a.d[ab]);
                acc[r][h] = _mm256_fmadd_ps(_mm256_mul_ps(dw, da), _mm256_cvtepi32_ps(I[r]), acc[r][h]);
                if (Q41) acc[r][h] = _mm256_fmadd_ps(load_f16x8(pb + 32 + 16 * h), _mm256_set1_ps(a.s[ab]), acc[r][h]);
            }
        }
    }
    store_tile<MR>(t, acc);
}

template <int MR>
void tile_q8(const Tile& t, const QuantizedRows& a) {
    const int64_t nb = a.blocks;
    __m256 acc[MR][2];
    #pragma GCC unroll 8
    for (int r = 0; r < MR; r++) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t* pb = t.panel + b * t.stride;
        if (t.prefetch) prefetch_step(t.pf, pb, t.stride);
        const int16_t* x[MR];
        #pragma GCC unroll 8
        for (int r = 0; r < MR; r++) x[r] = a.row_q16(t.m0 + r) + b * 32;
        #pragma GCC unroll 2
        for (int h = 0; h < 2; h++) {
            // stored q + 128 (unsigned) x signed codes, minus 128 * sum(codes)
            __m256i A[MR], B[MR];
            #pragma GCC unroll 8
            for (int r = 0; r < MR; r++) A[r] = B[r] = _mm256_setzero_si256();
            for (int g = 0; g < 8; g++) {
                __m256i w0, w1;
                widen(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(pb + 32 + g * 64 + 32 * h)), w0, w1);
                #pragma GCC unroll 8
                for (int r = 0; r < MR; r++) mac(A[r], B[r], w0, w1, bcast4(x[r] + 4 * g));
            }
            const __m256 dw = load_f16x8(pb + 16 * h);
            #pragma GCC unroll 8
            for (int r = 0; r < MR; r++) {
                const int64_t ab = (t.m0 + r) * nb + b;
                const __m256i I =
                    _mm256_add_epi32(_mm256_hadd_epi32(A[r], B[r]), _mm256_set1_epi32(-128 * a.sum[ab]));
                const __m256 da = _mm256_set1_ps(a.d[ab]);
                acc[r][h] = _mm256_fmadd_ps(_mm256_mul_ps(dw, da), _mm256_cvtepi32_ps(I), acc[r][h]);
            }
        }
    }
    store_tile<MR>(t, acc);
}

// 8 bytes (one per row of a panel half) -> 8 floats (exact small integers).
inline __m256 bytes_to_ps(const uint8_t* p, bool is_signed) {
    const __m128i v = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
    return _mm256_cvtepi32_ps(is_signed ? _mm256_cvtepi8_epi32(v) : _mm256_cvtepu8_epi32(v));
}

// Q5_0 and the K-quants: per step (a Q5_0 block or a 256-element super-block), per
// 32-element sub-block, the float operations of the scalar path.
template <TensorType T, int MR>
void tile_new(const Tile& t, const QuantizedRows& a) {
    constexpr SubBlockLayout kL = sub_block_layout(T);
    constexpr int kSubs = kL.subs;
    constexpr size_t qoff = kL.qs, hoff = kL.hx, hstep = kL.hstep;
    const int64_t nb = a.blocks;
    const size_t pf_chunk = ((t.stride + kSubs - 1) / kSubs + 63) & ~size_t{63};
    __m256 acc[MR][2];
    #pragma GCC unroll 8
    for (int r = 0; r < MR; r++) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
    for (int64_t st = 0; st < nb / kSubs; st++) {
        const uint8_t* pb = t.panel + st * t.stride;
        for (int s = 0; s < kSubs; s++) {
            const int64_t b = st * kSubs + s;
            if (t.prefetch) prefetch_step(t.pf, pb + s * pf_chunk, pf_chunk);
            const uint8_t* qs = pb + qoff + s * 256;
            const uint8_t* hx = pb + hoff + s * hstep;
            const int16_t* x[MR];
            #pragma GCC unroll 8
            for (int r = 0; r < MR; r++) x[r] = a.row_q16(t.m0 + r) + b * 32;
            #pragma GCC unroll 2
            for (int h = 0; h < 2; h++) {
                const __m256 dw = load_f16x8(pb + 16 * h);
                if constexpr (T == TensorType::Q6_K) {
                    __m256i ilo[MR], ihi[MR];
                    dot_chunks<T, MR>(qs, hx, h, 0, 2, x, ilo);
                    dot_chunks<T, MR>(qs, hx, h, 2, 4, x, ihi);
                    const __m128i v0 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(pb + kQ6Sc + (2 * s) * 16 + 8 * h));
                    const __m128i v1 =
                        _mm_loadl_epi64(reinterpret_cast<const __m128i*>(pb + kQ6Sc + (2 * s + 1) * 16 + 8 * h));
                    const __m256i sc0 = _mm256_cvtepi8_epi32(v0), sc1 = _mm256_cvtepi8_epi32(v1);
                    #pragma GCC unroll 8
                    for (int r = 0; r < MR; r++) {
                        const int64_t ab = (t.m0 + r) * nb + b;
                        const __m256 dd = _mm256_mul_ps(dw, _mm256_set1_ps(a.d[ab]));
                        const __m256i olo = _mm256_set1_epi32(-32 * a.sum_lo[ab]);
                        const __m256i ohi = _mm256_set1_epi32(-32 * (a.sum[ab] - a.sum_lo[ab]));
                        const __m256i Ilo = _mm256_mullo_epi32(sc0, _mm256_add_epi32(ilo[r], olo));
                        const __m256i Ihi = _mm256_mullo_epi32(sc1, _mm256_add_epi32(ihi[r], ohi));
                        acc[r][h] = _mm256_fmadd_ps(dd, _mm256_cvtepi32_ps(Ilo), acc[r][h]);
                        acc[r][h] = _mm256_fmadd_ps(dd, _mm256_cvtepi32_ps(Ihi), acc[r][h]);
                    }
                } else {
                    __m256i I[MR];
                    dot_chunks<T, MR>(qs, hx, h, 0, 4, x, I);
                    if constexpr (T == TensorType::Q5_0) {
                        #pragma GCC unroll 8
                        for (int r = 0; r < MR; r++) {
                            const int64_t ab = (t.m0 + r) * nb + b;
                            const __m256i Io = _mm256_add_epi32(I[r], _mm256_set1_epi32(-16 * a.sum[ab]));
                            acc[r][h] = _mm256_fmadd_ps(_mm256_mul_ps(dw, _mm256_set1_ps(a.d[ab])),
                                                        _mm256_cvtepi32_ps(Io), acc[r][h]);
                        }
                    } else {  // Q4_K, Q5_K
                        const __m256 ds = _mm256_mul_ps(dw, bytes_to_ps(pb + kKSc + s * 16 + 8 * h, false));
                        const __m256 dm =
                            _mm256_mul_ps(load_f16x8(pb + kKDmin + 16 * h), bytes_to_ps(pb + kKMin + s * 16 + 8 * h, false));
                        #pragma GCC unroll 8
                        for (int r = 0; r < MR; r++) {
                            const int64_t ab = (t.m0 + r) * nb + b;
                            acc[r][h] = _mm256_fmadd_ps(_mm256_mul_ps(ds, _mm256_set1_ps(a.d[ab])),
                                                        _mm256_cvtepi32_ps(I[r]), acc[r][h]);
                            acc[r][h] = _mm256_fnmadd_ps(dm, _mm256_set1_ps(a.s[ab]), acc[r][h]);
                        }
                    }
                }
            }
        }
    }
    store_tile<MR>(t, acc);
}

template <int MR>
void run_tile(const MatmulArgs& args, const Tile& t) {
    switch (args.w->type()) {
        case TensorType::Q4_1: tile_q4<true, MR>(t, *args.a); break;
        case TensorType::Q4_0: tile_q4<false, MR>(t, *args.a); break;
        case TensorType::Q8_0: tile_q8<MR>(t, *args.a); break;
        case TensorType::Q5_0: tile_new<TensorType::Q5_0, MR>(t, *args.a); break;
        case TensorType::Q4_K: tile_new<TensorType::Q4_K, MR>(t, *args.a); break;
        case TensorType::Q5_K: tile_new<TensorType::Q5_K, MR>(t, *args.a); break;
        case TensorType::Q6_K: tile_new<TensorType::Q6_K, MR>(t, *args.a); break;
        default: break;
    }
}

}  // namespace

void KVRT_AVX2_16_ENTRY(const MatmulArgs& args, int64_t p0, int64_t p1) {
    const PackedWeight& w = *args.w;
    if (!is_quantized_weight(w.type())) {  // float weights: no activation codes
        KVRT_AVX2_ENTRY(args, p0, p1);
        return;
    }
    for_each_tile<run_tile<1>, run_tile<2>>(args, p0, p1);
}

}  // namespace kvrt::kernels
