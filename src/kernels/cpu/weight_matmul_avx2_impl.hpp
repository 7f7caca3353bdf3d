// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// The AVX2 weight-matmul kernels, compiled twice: by weight_matmul_avx2.cpp
// (plain AVX2: vpmaddubsw + vpmaddwd) and by weight_matmul_avxvnni.cpp (AVX2 +
// AVX-VNNI, e.g. Intel client CPUs without AVX-512: vpdpbusd on ymm). The
// including file sets the target, KVRT_AVX2_VNNI (0/1) and KVRT_AVX2_ENTRY
// (the function's name), and includes what this needs first.
//
// A panel of 16 output columns is two ymm halves. Without VNNI the 4-element
// integer dot products use vpmaddubsw + vpmaddwd (exact: 4-bit pair sums stay
// far below 2^15; 8-bit weights use the sign trick, exact unless a weight AND
// its activation are both -128, which neither ggml's quantiser nor ours
// produces). Float operations per output element are those of
// weight_matmul_kernels.hpp, so every path gives the same bits.
// No include guard: meant to be included once per translation unit.

namespace kvrt::kernels {

namespace {

#include "kernels/cpu/weight_matmul_avx2_common.hpp"

inline int32_t load_i32(const int8_t* p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return v;
}

#if !KVRT_AVX2_VNNI
// sum over 4-byte groups of u8 x s8 -> int32, exact when |pair sums| < 2^15.
inline __m256i dot4(__m256i u, __m256i s) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
}
#endif

// The rows a tile multiplies (R below): MR rows of the codes from row m0, whose sums the tile
// stores (the matmul itself), or, on plain AVX2, the residual codes of a group of the fused
// residual (ResidualRows, further down), whose sums it adds to those rows of Y.
struct MatmulRows {
    const QuantizedRows& a;
    int64_t m0;
    int64_t at(int r, int64_t b) const { return (m0 + r) * a.blocks + b; }
    const int8_t* x(int r, int64_t b) const { return a.row_qs(m0 + r) + b * 32; }
    float d(int r, int64_t b) const { return a.d[at(r, b)]; }
    int32_t sum(int r, int64_t b) const { return a.sum[at(r, b)]; }
    int32_t sum_lo(int r, int64_t b) const { return a.sum_lo[at(r, b)]; }
    float s(int r, int64_t b) const { return a.s[at(r, b)]; }
    template <int MR>
    bool all_zero(int64_t b) const { return all_zero_scales<MR>(a, m0, b); }
    template <int MR>
    void finish(const Tile& t, __m256 (&acc)[MR][2]) const { store_tile<MR>(t, acc); }
};

// Blocks [b0, b1) of the tile's rows.
template <bool Q41, int MR, class R>
void tile_q4(const Tile& t, const R& rows, int64_t b0, int64_t b1) {
    constexpr size_t qoff = Q41 ? 64 : 32;
    const __m256i lo = _mm256_set1_epi8(0x0F);
    __m256 acc[MR][2];
    #pragma GCC unroll 8
    for (int r = 0; r < MR; r++) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
    for (int64_t b = b0; b < b1; b++) {
        const uint8_t* pb = t.panel + b * t.stride;
        if (t.prefetch) prefetch_step(t.pf, pb, t.stride);
#if KVRT_AVX2_VNNI
        // Two vpdpbusd chains per accumulator (low and high nibbles) to hide their
        // latency; integer sums, so exact.
        __m256i ia[MR][2], ib[MR][2];
        #pragma GCC unroll 8
        for (int r = 0; r < MR; r++) {
            const __m256i init = Q41 ? _mm256_setzero_si256() : _mm256_set1_epi32(-8 * rows.sum(r, b));
            ia[r][0] = ia[r][1] = init;
            ib[r][0] = ib[r][1] = _mm256_setzero_si256();
        }
        #pragma GCC unroll 8
        for (int c = 0; c < 4; c++) {
            __m256i wl[2], wh[2];
            #pragma GCC unroll 8
            for (int h = 0; h < 2; h++) {
                const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(pb + qoff + c * 64 + 32 * h));
                wl[h] = _mm256_and_si256(w, lo);
                wh[h] = _mm256_and_si256(_mm256_srli_epi16(w, 4), lo);
            }
            #pragma GCC unroll 8
            for (int r = 0; r < MR; r++) {
                const int8_t* xb = rows.x(r, b) + 8 * c;
                const __m256i x0 = _mm256_set1_epi32(load_i32(xb));
                const __m256i x1 = _mm256_set1_epi32(load_i32(xb + 4));
                #pragma GCC unroll 8
                for (int h = 0; h < 2; h++) {
                    ia[r][h] = _mm256_dpbusd_avx_epi32(ia[r][h], wl[h], x0);
                    ib[r][h] = _mm256_dpbusd_avx_epi32(ib[r][h], wh[h], x1);
                }
            }
        }
        #pragma GCC unroll 8
        for (int r = 0; r < MR; r++)
            #pragma GCC unroll 8
            for (int h = 0; h < 2; h++) ia[r][h] = _mm256_add_epi32(ia[r][h], ib[r][h]);
#else
        // Pair sums of vpmaddubsw are at most 2 * 15 * 128 = 3840 in magnitude, so the
        // block's 8 of them add up exactly in int16 (<= 30720) before one vpmaddwd.
        __m256i s16[MR][2];
        #pragma GCC unroll 8
        for (int r = 0; r < MR; r++) s16[r][0] = s16[r][1] = _mm256_setzero_si256();
        #pragma GCC unroll 8
        for (int c = 0; c < 4; c++) {
            __m256i wl[2], wh[2];
            #pragma GCC unroll 8
            for (int h = 0; h < 2; h++) {
                const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(pb + qoff + c * 64 + 32 * h));
                wl[h] = _mm256_and_si256(w, lo);
                wh[h] = _mm256_and_si256(_mm256_srli_epi16(w, 4), lo);
            }
            #pragma GCC unroll 8
            for (int r = 0; r < MR; r++) {
                const int8_t* xb = rows.x(r, b) + 8 * c;
                const __m256i x0 = _mm256_set1_epi32(load_i32(xb));
                const __m256i x1 = _mm256_set1_epi32(load_i32(xb + 4));
                #pragma GCC unroll 8
                for (int h = 0; h < 2; h++) {
                    s16[r][h] = _mm256_add_epi16(s16[r][h], _mm256_maddubs_epi16(wl[h], x0));
                    s16[r][h] = _mm256_add_epi16(s16[r][h], _mm256_maddubs_epi16(wh[h], x1));
                }
            }
        }
        __m256i ia[MR][2];
        #pragma GCC unroll 8
        for (int r = 0; r < MR; r++) {
            const __m256i init = Q41 ? _mm256_setzero_si256() : _mm256_set1_epi32(-8 * rows.sum(r, b));
            #pragma GCC unroll 8
            for (int h = 0; h < 2; h++)
                ia[r][h] = _mm256_add_epi32(init, _mm256_madd_epi16(s16[r][h], _mm256_set1_epi16(1)));
        }
#endif
        __m256 dw[2], mw[2];
        #pragma GCC unroll 8
        for (int h = 0; h < 2; h++) {
            dw[h] = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(pb + 16 * h)));
            mw[h] = Q41 ? _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(pb + 32 + 16 * h)))
                        : _mm256_setzero_ps();
        }
        #pragma GCC unroll 8
        for (int r = 0; r < MR; r++) {
            const __m256 da = _mm256_set1_ps(rows.d(r, b));
            const __m256 sa = Q41 ? _mm256_set1_ps(rows.s(r, b)) : _mm256_setzero_ps();
            #pragma GCC unroll 8
            for (int h = 0; h < 2; h++) {
                acc[r][h] = _mm256_fmadd_ps(_mm256_mul_ps(dw[h], da), _mm256_cvtepi32_ps(ia[r][h]), acc[r][h]);
                if (Q41) acc[r][h] = _mm256_fmadd_ps(mw[h], sa, acc[r][h]);
            }
        }
    }
    rows.template finish<MR>(t, acc);
}

template <int MR, class R>
void tile_q8(const Tile& t, const R& rows, int64_t b0, int64_t b1) {
#if !KVRT_AVX2_VNNI
    const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
#endif
    __m256 acc[MR][2];
    #pragma GCC unroll 8
    for (int r = 0; r < MR; r++) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
    for (int64_t b = b0; b < b1; b++) {
        const uint8_t* pb = t.panel + b * t.stride;
        if (t.prefetch) prefetch_step(t.pf, pb, t.stride);
        __m256i ia[MR][2];
#if KVRT_AVX2_VNNI
        // stored q + 128 (unsigned) x signed activations, minus 128 * sum(activations)
        __m256i ib[MR][2];
        #pragma GCC unroll 8
        for (int r = 0; r < MR; r++) {
            ia[r][0] = ia[r][1] = _mm256_set1_epi32(-128 * rows.sum(r, b));
            ib[r][0] = ib[r][1] = _mm256_setzero_si256();
        }
        #pragma GCC unroll 8
        for (int g = 0; g < 8; g++) {
            __m256i w[2];
            #pragma GCC unroll 8
            for (int h = 0; h < 2; h++)
                w[h] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(pb + 32 + g * 64 + 32 * h));
            #pragma GCC unroll 8
            for (int r = 0; r < MR; r++) {
                const __m256i x = _mm256_set1_epi32(load_i32(rows.x(r, b) + 4 * g));
                #pragma GCC unroll 8
                for (int h = 0; h < 2; h++) {
                    if (g & 1) ib[r][h] = _mm256_dpbusd_avx_epi32(ib[r][h], w[h], x);
                    else ia[r][h] = _mm256_dpbusd_avx_epi32(ia[r][h], w[h], x);
                }
            }
        }
        #pragma GCC unroll 8
        for (int r = 0; r < MR; r++)
            #pragma GCC unroll 8
            for (int h = 0; h < 2; h++) ia[r][h] = _mm256_add_epi32(ia[r][h], ib[r][h]);
#else
        #pragma GCC unroll 8
        for (int r = 0; r < MR; r++) ia[r][0] = ia[r][1] = _mm256_setzero_si256();
        #pragma GCC unroll 8
        for (int g = 0; g < 8; g++) {
            __m256i ws[2], wa[2];
            #pragma GCC unroll 8
            for (int h = 0; h < 2; h++) {
                // stored q + 128 -> signed q; |q| as unsigned, its sign moved onto x
                ws[h] = _mm256_xor_si256(
                    _mm256_loadu_si256(reinterpret_cast<const __m256i*>(pb + 32 + g * 64 + 32 * h)), flip);
                wa[h] = _mm256_sign_epi8(ws[h], ws[h]);
            }
            #pragma GCC unroll 8
            for (int r = 0; r < MR; r++) {
                const __m256i x = _mm256_set1_epi32(load_i32(rows.x(r, b) + 4 * g));
                #pragma GCC unroll 8
                for (int h = 0; h < 2; h++)
                    ia[r][h] = _mm256_add_epi32(ia[r][h], dot4(wa[h], _mm256_sign_epi8(x, ws[h])));
            }
        }
#endif
        __m256 dw[2];
        #pragma GCC unroll 8
        for (int h = 0; h < 2; h++)
            dw[h] = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(pb + 16 * h)));
        #pragma GCC unroll 8
        for (int r = 0; r < MR; r++) {
            const __m256 da = _mm256_set1_ps(rows.d(r, b));
            #pragma GCC unroll 8
            for (int h = 0; h < 2; h++)
                acc[r][h] = _mm256_fmadd_ps(_mm256_mul_ps(dw[h], da), _mm256_cvtepi32_ps(ia[r][h]), acc[r][h]);
        }
    }
    rows.template finish<MR>(t, acc);
}

// 16 bytes (one per row of the panel) -> two ymm of 8 floats (exact small integers).
inline void bytes_to_ps(const uint8_t* p, bool is_signed, __m256 (&out)[2]) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    if (is_signed) {
        out[0] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(v));
        out[1] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(v, 8)));
    } else {
        out[0] = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(v));
        out[1] = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(v, 8)));
    }
}

// Q5_0 and the K-quants: per step (a Q5_0 block or a 256-element super-block),
// per 32-element sub-block, the integer dots over elements 0..15 (lo) and 16..31
// (hi) of the block, then the float operations of weight_matmul_kernels.hpp.
// Steps [st0, st1) of the tile's rows.
template <TensorType T, int MR, bool XC, class R>
void tile_new_codes(const Tile& t, const R& rows, int64_t st0, int64_t st1) {
    constexpr SubBlockLayout kL = sub_block_layout(T);
    constexpr int kSubs = kL.subs;
    constexpr size_t qoff = kL.qs, hoff = kL.hx, hstep = kL.hstep;
    const size_t pf_chunk = ((t.stride + kSubs - 1) / kSubs + 63) & ~size_t{63};
    // Two integer chains per output vector (elements 0..15 and 16..31): Q6_K needs both
    // sums; the others add them (exact), and use the second chain only to hide the
    // vpdpbusd latency of a single row (16 registers: two rows need them for data).
    constexpr bool kTwo = T == TensorType::Q6_K || (KVRT_AVX2_VNNI && MR == 1);
#if !KVRT_AVX2_VNNI
    // Steps of c whose vpmaddubsw pair sums add up in int16 before one vpmaddwd widens them:
    // codes below 32 (Q5_0, Q5_K: 5 bits; Q4_K: 4) make each pair sum at most 2 * 31 * 128 = 7,936
    // in magnitude, so two steps' four fit (31,744 < 32,767): one vpmaddwd per two steps instead
    // of per step. The int32 sums are the same integers, so the bits are too. Q6_K's 6-bit codes
    // allow one step. (Q4_K's would allow all four steps, as tile_q4 does; measured no faster
    // than two: `bench_weight_matmul --quick --kquant-only` under KVRT_ISA=avx2, Ice Lake-SP,
    // session 45, src/kernels/README.md.)
    constexpr int kSteps = T == TensorType::Q6_K ? 1 : 2;
    __m256i s16p[MR][2];
#endif
    __m256 acc[MR][2];
    #pragma GCC unroll 8
    for (int r = 0; r < MR; r++) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
    for (int64_t st = st0; st < st1; st++) {
        const uint8_t* pb = t.panel + st * t.stride;
        __m256 dw[2];
        #pragma GCC unroll 8
        for (int h = 0; h < 2; h++)
            dw[h] = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(pb + 16 * h)));
        for (int s = 0; s < kSubs; s++) {
            const int64_t b = st * kSubs + s;
            if (t.sparse && rows.template all_zero<MR>(b)) continue;
            if (t.prefetch) prefetch_step(t.pf, pb + s * pf_chunk, pf_chunk);
            const uint8_t* qs = pb + qoff + s * 256;
            const uint8_t* hx = pb + hoff + s * hstep;
            __m256i ilo[MR][2], ihi[MR][2];
            #pragma GCC unroll 8
            for (int r = 0; r < MR; r++) {
                // Q6_K: the -32 * sum(x) offsets of its two groups start the chains (exact: integer sums)
                __m256i init = _mm256_setzero_si256(), init_hi = _mm256_setzero_si256();
                if constexpr (T == TensorType::Q6_K) {
                    init = _mm256_set1_epi32(-32 * rows.sum_lo(r, b));
                    init_hi = _mm256_set1_epi32(-32 * (rows.sum(r, b) - rows.sum_lo(r, b)));
                }
                #pragma GCC unroll 8
                for (int h = 0; h < 2; h++) ilo[r][h] = init, ihi[r][h] = init_hi;
            }
            #pragma GCC unroll 8
            for (int c = 0; c < 4; c++) {
                __m256i wl[2], wh[2];
                #pragma GCC unroll 8
                for (int h = 0; h < 2; h++) {
                    if constexpr (XC) {  // unpacked once for the panel (expand_panel)
                        const uint8_t* q = t.xc + static_cast<size_t>(b) * kXcBlockBytes + (2 * c + h) * 64;
                        wl[h] = _mm256_load_si256(reinterpret_cast<const __m256i*>(q));
                        wh[h] = _mm256_load_si256(reinterpret_cast<const __m256i*>(q + 32));
                    } else {
                        codes<T>(qs, hx, c, h, wl[h], wh[h]);
                    }
                }
                #pragma GCC unroll 8
                for (int r = 0; r < MR; r++) {
                    const int8_t* xb = rows.x(r, b) + 8 * c;
                    const __m256i x0 = _mm256_set1_epi32(load_i32(xb));
                    const __m256i x1 = _mm256_set1_epi32(load_i32(xb + 4));
                    #pragma GCC unroll 8
                    for (int h = 0; h < 2; h++) {
                        __m256i& d = kTwo && c >= 2 ? ihi[r][h] : ilo[r][h];
#if KVRT_AVX2_VNNI
                        d = _mm256_dpbusd_avx_epi32(d, wl[h], x0);
                        d = _mm256_dpbusd_avx_epi32(d, wh[h], x1);
#else
                        // |pair sums| <= 2 * 63 * 128: two of them add up exactly in int16
                        const __m256i s16 =
                            _mm256_add_epi16(_mm256_maddubs_epi16(wl[h], x0), _mm256_maddubs_epi16(wh[h], x1));
                        if constexpr (kSteps > 1) {  // (see kSteps)
                            s16p[r][h] = c % kSteps == 0 ? s16 : _mm256_add_epi16(s16p[r][h], s16);
                            if (c % kSteps == kSteps - 1)
                                d = _mm256_add_epi32(d, _mm256_madd_epi16(s16p[r][h], _mm256_set1_epi16(1)));
                        } else {
                            d = _mm256_add_epi32(d, _mm256_madd_epi16(s16, _mm256_set1_epi16(1)));
                        }
#endif
                    }
                }
            }
            if constexpr (T == TensorType::Q5_0) {
                #pragma GCC unroll 8
                for (int r = 0; r < MR; r++) {
                    const __m256 da = _mm256_set1_ps(rows.d(r, b));
                    const __m256i off = _mm256_set1_epi32(-16 * rows.sum(r, b));
                    #pragma GCC unroll 8
                    for (int h = 0; h < 2; h++) {
                        const __m256i I = _mm256_add_epi32(kTwo ? _mm256_add_epi32(ilo[r][h], ihi[r][h]) : ilo[r][h], off);
                        acc[r][h] = _mm256_fmadd_ps(_mm256_mul_ps(dw[h], da), _mm256_cvtepi32_ps(I), acc[r][h]);
                    }
                }
            } else if constexpr (T == TensorType::Q6_K) {
                // I = sc_lo * Ilo + sc_hi * Ihi (the chains hold the offsets already).
                const __m128i v0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(pb + kQ6Sc + (2 * s) * 16));
                const __m128i v1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(pb + kQ6Sc + (2 * s + 1) * 16));
                const __m256i sc0[2] = {_mm256_cvtepi8_epi32(v0), _mm256_cvtepi8_epi32(_mm_srli_si128(v0, 8))};
                const __m256i sc1[2] = {_mm256_cvtepi8_epi32(v1), _mm256_cvtepi8_epi32(_mm_srli_si128(v1, 8))};
#if KVRT_AVX2_VNNI
                // In f32 on AVX-VNNI: every term and the sum are integers of at most 2^24
                // (weight_matmul_avx512.cpp, Q6_K), so exact, the int32 formula's bits without
                // vpmulld. The AVX2 path keeps vpmulld: the f32 form measured no faster there
                // (figures in src/kernels/README.md, "Weight matmul: Q5_0 and the K-quants").
                const __m256 sf0[2] = {_mm256_cvtepi32_ps(sc0[0]), _mm256_cvtepi32_ps(sc0[1])};
                const __m256 sf1[2] = {_mm256_cvtepi32_ps(sc1[0]), _mm256_cvtepi32_ps(sc1[1])};
#endif
                #pragma GCC unroll 8
                for (int r = 0; r < MR; r++) {
                    const __m256 da = _mm256_set1_ps(rows.d(r, b));
                    #pragma GCC unroll 8
                    for (int h = 0; h < 2; h++) {
#if KVRT_AVX2_VNNI
                        const __m256 I = _mm256_fmadd_ps(_mm256_cvtepi32_ps(ihi[r][h]), sf1[h],
                                                         _mm256_mul_ps(_mm256_cvtepi32_ps(ilo[r][h]), sf0[h]));
#else
                        const __m256 I = _mm256_cvtepi32_ps(
                            _mm256_add_epi32(_mm256_mullo_epi32(sc0[h], ilo[r][h]), _mm256_mullo_epi32(sc1[h], ihi[r][h])));
#endif
                        acc[r][h] = _mm256_fmadd_ps(_mm256_mul_ps(dw[h], da), I, acc[r][h]);
                    }
                }
            } else {  // Q4_K, Q5_K
                __m256 sc[2], mn[2], ds[2], dm[2];
                bytes_to_ps(pb + kKSc + s * 16, false, sc);
                bytes_to_ps(pb + kKMin + s * 16, false, mn);
                #pragma GCC unroll 8
                for (int h = 0; h < 2; h++) {
                    ds[h] = _mm256_mul_ps(dw[h], sc[h]);
                    dm[h] = _mm256_mul_ps(
                        _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(pb + kKDmin + 16 * h))), mn[h]);
                }
                #pragma GCC unroll 8
                for (int r = 0; r < MR; r++) {
                    const __m256 da = _mm256_set1_ps(rows.d(r, b));
                    const __m256 sa = _mm256_set1_ps(rows.s(r, b));
                    #pragma GCC unroll 8
                    for (int h = 0; h < 2; h++) {
                        const __m256i I = kTwo ? _mm256_add_epi32(ilo[r][h], ihi[r][h]) : ilo[r][h];
                        acc[r][h] = _mm256_fmadd_ps(_mm256_mul_ps(ds[h], da), _mm256_cvtepi32_ps(I), acc[r][h]);
                        acc[r][h] = _mm256_fnmadd_ps(dm[h], sa, acc[r][h]);
                    }
                }
            }
        }
    }
    rows.template finish<MR>(t, acc);
}

// The tile on the panel's expanded codes where it has them (t.xc), else unpacking its own.
template <TensorType T, int MR, class R>
void tile_new(const Tile& t, const R& rows, int64_t st0, int64_t st1) {
    if (t.xc) tile_new_codes<T, MR, true>(t, rows, st0, st1);
    else tile_new_codes<T, MR, false>(t, rows, st0, st1);
}

// Panel t's codes over the call's a.blocks sub-blocks, unpacked into xc (kXcBlockBytes each),
// prefetching the weight stream ahead as the first row tile would (t.prefetch).
template <TensorType T>
void expand_panel(const Tile& t, int64_t nb, uint8_t* xc) {
    constexpr SubBlockLayout kL = sub_block_layout(T);
    constexpr int kSubs = kL.subs;
    constexpr size_t qoff = kL.qs, hoff = kL.hx, hstep = kL.hstep;
    const size_t pf_chunk = ((t.stride + kSubs - 1) / kSubs + 63) & ~size_t{63};
    for (int64_t st = 0; st < nb / kSubs; st++) {
        const uint8_t* pb = t.panel + st * t.stride;
        for (int s = 0; s < kSubs; s++) {
            if (t.prefetch) prefetch_step(t.pf, pb + s * pf_chunk, pf_chunk);
            uint8_t* q = xc + static_cast<size_t>(st * kSubs + s) * kXcBlockBytes;
            #pragma GCC unroll 4
            for (int c = 0; c < 4; c++)
                #pragma GCC unroll 2
                for (int h = 0; h < 2; h++) {
                    __m256i wl, wh;
                    codes<T>(pb + qoff + s * 256, pb + hoff + s * hstep, c, h, wl, wh);
                    _mm256_store_si256(reinterpret_cast<__m256i*>(q + (2 * c + h) * 64), wl);
                    _mm256_store_si256(reinterpret_cast<__m256i*>(q + (2 * c + h) * 64 + 32), wh);
                }
        }
    }
}

template <TensorType T>
inline __m256 load_w(const uint8_t* p) {
    if constexpr (T == TensorType::F32) {
        return _mm256_loadu_ps(reinterpret_cast<const float*>(p));
    } else if constexpr (T == TensorType::F16) {
        return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    } else {
        const __m256i u = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
        return _mm256_castsi256_ps(_mm256_slli_epi32(u, 16));
    }
}

template <TensorType T, int MR>
void tile_f(const Tile& t, const float* X, int64_t ldx, int64_t K) {
    constexpr size_t step = panel_step_bytes(T);
    constexpr size_t half = step / 2;
    __m256 acc[MR][2];
    #pragma GCC unroll 8
    for (int r = 0; r < MR; r++) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
    for (int64_t k = 0; k < K; k++) {
        if (t.prefetch && (k & 1) == 0) prefetch_step(t.pf, t.panel + k * t.stride, 2 * t.stride);
        const __m256 w0 = load_w<T>(t.panel + k * t.stride);
        const __m256 w1 = load_w<T>(t.panel + k * t.stride + half);
        #pragma GCC unroll 8
        for (int r = 0; r < MR; r++) {
            const __m256 xv = _mm256_set1_ps(X[(t.m0 + r) * ldx + k]);
            acc[r][0] = _mm256_fmadd_ps(w0, xv, acc[r][0]);
            acc[r][1] = _mm256_fmadd_ps(w1, xv, acc[r][1]);
        }
    }
    store_tile<MR>(t, acc);
}

// The quantised types' tile of rows `rows` over panel steps [st0, st1) of W.
template <int MR, class R>
void run_quantized_tile(TensorType type, const Tile& t, const R& rows, int64_t st0, int64_t st1) {
    switch (type) {
        case TensorType::Q4_1: tile_q4<true, MR>(t, rows, st0, st1); break;
        case TensorType::Q4_0: tile_q4<false, MR>(t, rows, st0, st1); break;
        case TensorType::Q8_0: tile_q8<MR>(t, rows, st0, st1); break;
        case TensorType::Q5_0: tile_new<TensorType::Q5_0, MR>(t, rows, st0, st1); break;
        case TensorType::Q4_K: tile_new<TensorType::Q4_K, MR>(t, rows, st0, st1); break;
        case TensorType::Q5_K: tile_new<TensorType::Q5_K, MR>(t, rows, st0, st1); break;
        case TensorType::Q6_K: tile_new<TensorType::Q6_K, MR>(t, rows, st0, st1); break;
        default: break;
    }
}

// Float weights' tiles of MR rows (run_tile's, and for_each_tile's RunF with kFloatRows).
template <int MR>
void run_float_tile(const MatmulArgs& args, const Tile& t) {
    switch (args.w->type()) {
        case TensorType::F32: tile_f<TensorType::F32, MR>(t, args.X, args.ldx, args.w->cols()); break;
        case TensorType::F16: tile_f<TensorType::F16, MR>(t, args.X, args.ldx, args.w->cols()); break;
        case TensorType::BF16: tile_f<TensorType::BF16, MR>(t, args.X, args.ldx, args.w->cols()); break;
        default: break;
    }
}

template <int MR>
void run_tile(const MatmulArgs& args, const Tile& t) {
    const TensorType type = args.w->type();
    switch (type) {
        case TensorType::Q4_1:
        case TensorType::Q4_0:
        case TensorType::Q8_0:
        case TensorType::Q5_0:
        case TensorType::Q4_K:
        case TensorType::Q5_K:
        case TensorType::Q6_K:
            run_quantized_tile<MR>(type, t, MatmulRows{*args.a, t.m0}, 0, args.a->blocks / (panel_step_elems(type) / 32));
            break;
        case TensorType::F32:
        case TensorType::F16:
        case TensorType::BF16: run_float_tile<MR>(args, t); break;
        default: break;
    }
}

// The fused residual (weight_matmul_fused_residual.hpp) on AVX2 and AVX-VNNI: after a panel's row
// tiles have stored their chains, per step in increasing order, the rows marked there in groups
// of up to kMaxRows run the same tiles on their residual codes, in place, over that one step,
// while the panel's weights are in L1, and add their sums to their rows of Y. Those are the
// separate pass's operations (the same tiles over gathered copies of the codes, from a zero
// accumulator, with s = 0, and zero codes and scale on a K-quant step's unmarked blocks, added to
// Y after), without the copies, the scratch tile and the second read of W. (The AVX-VNNI build
// has fused it since 0.3.3, when the residuals became the default: the tiles are the ones its
// 8-bit path runs, over rows of the ResidualRows interface; the `weight_matmul Q8R:` tests hold it
// to the scalar path's bits on CPUs with AVX-VNNI.)
alignas(32) constexpr int8_t kZeroCodes[32] = {};

// The residual codes of rows m[0 .. MR) (a step's marked rows): a row not marked at a block has
// no codes or sums written there and reads zeros, which add exactly nothing; its s is 0.
struct ResidualRows {
    const QuantizedRows& a;
    const int64_t* m;
    int64_t at(int r, int64_t b) const { return m[r] * a.blocks + b; }
    bool marked(int r, int64_t b) const { return a.rd[at(r, b)] != 0.0f; }
    const int8_t* x(int r, int64_t b) const { return marked(r, b) ? a.rq + at(r, b) * 32 : kZeroCodes; }
    float d(int r, int64_t b) const { return a.rd[at(r, b)]; }
    int32_t sum(int r, int64_t b) const { return marked(r, b) ? a.rsum[at(r, b)] : 0; }
    int32_t sum_lo(int r, int64_t b) const { return marked(r, b) ? a.rsum_lo[at(r, b)] : 0; }
    float s(int, int64_t) const { return 0.0f; }
    template <int MR>
    bool all_zero(int64_t b) const {
        bool zero = true;
        #pragma GCC unroll 8
        for (int r = 0; r < MR; r++) zero &= !marked(r, b);
        return zero;
    }
    // Y row m[r] of the panel's columns += acc[r] (its valid columns), as the separate pass adds
    // its scratch tile.
    template <int MR>
    void finish(const Tile& t, __m256 (&acc)[MR][2]) const {
        #pragma GCC unroll 8
        for (int r = 0; r < MR; r++) {
            float* y = t.y + m[r] * t.ldy;
            if (t.ncols == 16) {
                _mm256_storeu_ps(y, _mm256_add_ps(_mm256_loadu_ps(y), acc[r][0]));
                _mm256_storeu_ps(y + 8, _mm256_add_ps(_mm256_loadu_ps(y + 8), acc[r][1]));
                continue;
            }
            alignas(32) float tmp[16];
            _mm256_store_ps(tmp, acc[r][0]);
            _mm256_store_ps(tmp + 8, acc[r][1]);
            for (int n = 0; n < t.ncols; n++) y[n] += tmp[n];
        }
    }
};

// Every marked step's rows of the panel (t: the panel from row 0, without prefetch, skipping a
// K-quant step's unmarked blocks: for_each_tile sets it up so, in place, since a copy of the Tile
// it has just written cost more than the residual of a decode row: its share of a plain-AVX2 Qwen2.5
// decode went 4.6% -> 0.4% of the samples), in groups of kMaxRows, or of kXcRows first where the
// panel has expanded codes (as its row tiles).
void run_residual(const MatmulArgs& args, const Tile& t) {
    static_assert(kMaxRows == 2, "update the groups");
    const MarkedStepRows& l = *args.residual_rows;
    const TensorType type = args.w->type();
    for (int64_t k = 0; k < l.n_marked; k++) {
        const int64_t st = l.marked[k];
        const int64_t* rows = l.rows + l.start[st];
        const int64_t n = l.start[st + 1] - l.start[st];
        int64_t i = 0;
#if !KVRT_AVX2_VNNI  // (its panels have no expanded codes)
        if (t.xc)
            for (; i + kXcRows <= n; i += kXcRows)
                run_quantized_tile<kXcRows>(type, t, ResidualRows{*args.a, rows + i}, st, st + 1);
#endif
        for (; i + 2 <= n; i += 2) run_quantized_tile<2>(type, t, ResidualRows{*args.a, rows + i}, st, st + 1);
        if (i < n) run_quantized_tile<1>(type, t, ResidualRows{*args.a, rows + i}, st, st + 1);
    }
}

#if !KVRT_AVX2_VNNI
// Expanded codes on plain AVX2 (for_each_tile's Expand): with 2-row tiles, every pair of rows
// unpacks each sub-block's codes again (for Q6_K about as many vector operations as its
// multiplies); from kXcMinRows rows on, each panel's are unpacked once into per-thread scratch
// and its row tiles and fused residual load them. Which types: src/kernels/README.md, "Session 35".
// The AVX-VNNI build keeps unpacking in the tile (no CPU here runs it).
constexpr int64_t kXcMinRows = 8;
constexpr int kXcScratchSlot = 9;  // cpu::thread_scratch's slot (attention's use 0-7, AVX-512's 8)
inline bool expands(TensorType t) {
    return t == TensorType::Q5_0 || t == TensorType::Q4_K || t == TensorType::Q5_K || t == TensorType::Q6_K;
}
uint8_t* expand(const MatmulArgs& args, const Tile& t, uint8_t* xc) {
    const TensorType type = args.w->type();
    if (!xc) {  // the call's scratch, or null (refused: the tiles unpack their own)
        if (!expands(type) || args.M < kXcMinRows) return nullptr;
        return static_cast<uint8_t*>(
            cpu::thread_scratch_or_null(kXcScratchSlot, static_cast<size_t>(args.a->blocks) * kXcBlockBytes));
    }
    switch (type) {
        case TensorType::Q5_0: expand_panel<TensorType::Q5_0>(t, args.a->blocks, xc); break;
        case TensorType::Q4_K: expand_panel<TensorType::Q4_K>(t, args.a->blocks, xc); break;
        case TensorType::Q5_K: expand_panel<TensorType::Q5_K>(t, args.a->blocks, xc); break;
        case TensorType::Q6_K: expand_panel<TensorType::Q6_K>(t, args.a->blocks, xc); break;
        default: break;
    }
    return xc;
}
#endif

}  // namespace

#if KVRT_AVX2_VNNI
void KVRT_AVX2_ENTRY(const MatmulArgs& args, int64_t p0, int64_t p1) {
    for_each_tile<run_tile<1>, run_tile<2>, run_residual, nullptr, nullptr, run_float_tile<kFloatRows>>(args, p0, p1);
}
#else
void KVRT_AVX2_ENTRY(const MatmulArgs& args, int64_t p0, int64_t p1) {
    for_each_tile<run_tile<1>, run_tile<2>, run_residual, expand, run_tile<kXcRows>, run_float_tile<kFloatRows>>(args, p0, p1);
}
#endif

}  // namespace kvrt::kernels

