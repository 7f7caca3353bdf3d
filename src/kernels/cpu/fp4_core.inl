// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// 4-bit rows (FP4 bank rows with f16 scales, FP4_E8 indexer keys with e8m0 scales; the format
// is util/kv_quant.hpp's) for the sparse K = V attention and the indexer scan. Compiled once
// per ISA inside attention_core.inl (before `sparse`), in that ISA's namespace.
//
// A tile of 4-bit rows is built by decoding each present row once into the tile's spare f32
// rows (kbuf): 32 codes at a time through a 16-entry table in registers (twice the e2m1 value,
// an integer), times half the group's scale. That product is exact, so every path gets the
// value kv_load gives. An f32 tile is then built over those rows: the K transpose reads them
// and, the rows being K = V, P.V reads the same rows as f32 values. The 4-bit path therefore
// has the f32 path's arithmetic on the decoded values (a row's result depends on its own rows
// only; chunking, threads and decode vs prefill change no bit), and a bank row is decoded once
// per tile for both its roles.
//
// The indexer's scan reads 4-bit keys as integer tiles instead (tile_build_fp4_i8, at the end of
// this file; indexer_core.inl, "Integer tiles").

// Half of scale gi of a 4-bit head (sc: the scales after the codes); kv_raw_unit(t) is 0.5.
inline float fp4_half_scale(const uint8_t* sc, DType t, int gi) {
    if (t == DType::FP4_E8) {  // 2^(b - 127) / 2 built from the bits (0xff: NaN)
        const uint32_t b = sc[gi];
        const uint32_t u = b == 0xffu ? 0x7fc00000u : b >= 2 ? (b - 1) << 23 : b == 1 ? 0x00400000u : 0x00200000u;
        float f;
        std::memcpy(&f, &u, 4);
        return f;
    }
    uint16_t h;
    std::memcpy(&h, sc + 2 * gi, 2);
    return Ops::h2f(h) * 0.5f;
}

#if defined(KVRT_ISA_AVX2) || defined(KVRT_ISA_AVX512)
#include "kernels/cpu/fp4_decode_avx2.hpp"
#endif

// The 32 elements of one group (16 code bytes at p) times hs, into out.
inline void fp4_decode32(const uint8_t* p, float hs, float* out) {
#if defined(KVRT_ISA_AVX512)
    __m128i e0, e1;
    fp4_codes32_i8(p, e0, e1);
    const __m512 s = _mm512_set1_ps(hs);
    _mm512_storeu_ps(out, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(e0)), s));
    _mm512_storeu_ps(out + 16, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(e1)), s));
#elif defined(KVRT_ISA_AVX2)
    fp4_decode32_avx2(p, hs, out);
#else
    for (int i = 0; i < 16; ++i) {
        out[2 * i] = float(kFp4Twice[p[i] & 15u]) * hs;
        out[2 * i + 1] = float(kFp4Twice[p[i] >> 4]) * hs;
    }
#endif
}

// A 4-bit head of width d (a multiple of 32) -> d f32, the values kv_load gives.
inline void fp4_dequant_head(const uint8_t* h, DType t, int d, float* out, LineStream* pf) {
    const uint8_t* sc = h + d / 2;
    for (int gi = 0; gi < d / 32; ++gi) {
        if (pf && (gi & 1) == 0) pf->step();
        fp4_decode32(h + gi * 16, fp4_half_scale(sc, t, gi), out + gi * 32);
    }
}

// tile_build for one-head rows that may be 4-bit (the bank of `sparse`, the indexer's keys):
// kp(j) is key j's row; need_v: the rows are also the values (K = V). Other types: tile_build.
template <class KP>
inline void tile_build_rows(KeyTile& t, int d, DType dt, int ja, int jb, KP kp, bool need_v) {
    if (!dtype_fp4(dt)) return tile_build(t, d, dt, dt, ja, jb, kp, kp, need_v);
    for (int j = ja; j <= jb; ++j) fp4_dequant_head(kp(j), dt, d, t.kbuf + size_t(j) * d, t.pf);
    auto row = [&](int j) { return reinterpret_cast<const uint8_t*>(t.kbuf + size_t(j) * d); };
    tile_build(t, d, DType::F32, DType::F32, ja, jb, row, row, need_v);
}

#if defined(KVRT_ISA_AVX512) || defined(KVRT_ISA_AVX2)
#if defined(KVRT_ISA_AVX512)
using Fp4VW = __m512i;
#else
using Fp4VW = __m256i;
#endif
// One vector of transposed code units (32 bits = 8 dims per key) -> the keys' 4-dim words of
// their first 4 dims (lo) and last 4 (hi), int8 (+ 128 where FLIP). (A function, not a lambda:
// GCC 12 compiles lambdas without the file's target pragma.)
template <bool FLIP>
inline void fp4_split_units(Fp4VW x, Fp4VW& lo, Fp4VW& hi) {
    // The code -> value table, + 128 where FLIP (the words below only move its bytes).
    const __m128i lut16 = _mm_xor_si128(_mm_setr_epi8(0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12),
                                        _mm_set1_epi8(FLIP ? static_cast<char>(0x80) : 0));
#if defined(KVRT_ISA_AVX512)
    const Fp4VW lut = _mm512_broadcast_i32x4(lut16);
    const Fp4VW m4 = _mm512_set1_epi8(15);
    const Fp4VW a = _mm512_shuffle_epi8(lut, _mm512_and_si512(x, m4));                        // even dims
    const Fp4VW b = _mm512_shuffle_epi8(lut, _mm512_and_si512(_mm512_srli_epi16(x, 4), m4));  // odd dims
    // Per 128-bit lane (keys 4l .. 4l + 3): u = (k0 lo, k0 hi, k1 lo, k1 hi), v = the same of k2, k3.
    const __m512 u = _mm512_castsi512_ps(_mm512_unpacklo_epi8(a, b)), v = _mm512_castsi512_ps(_mm512_unpackhi_epi8(a, b));
    lo = _mm512_castps_si512(_mm512_shuffle_ps(u, v, 0x88));
    hi = _mm512_castps_si512(_mm512_shuffle_ps(u, v, 0xDD));
#else
    const Fp4VW lut = _mm256_broadcastsi128_si256(lut16);
    const Fp4VW m4 = _mm256_set1_epi8(15);
    const Fp4VW a = _mm256_shuffle_epi8(lut, _mm256_and_si256(x, m4));
    const Fp4VW b = _mm256_shuffle_epi8(lut, _mm256_and_si256(_mm256_srli_epi16(x, 4), m4));
    const __m256 u = _mm256_castsi256_ps(_mm256_unpacklo_epi8(a, b)), v = _mm256_castsi256_ps(_mm256_unpackhi_epi8(a, b));
    lo = _mm256_castps_si256(_mm256_shuffle_ps(u, v, 0x88));
    hi = _mm256_castps_si256(_mm256_shuffle_ps(u, v, 0xDD));
#endif
}

// W keys at once (16 on AVX-512, 8 on AVX2; rows[j]: key j's 4-bit head, or a zero one): the packed
// codes are transposed as 32-bit units (8 dims each) and then decoded, so each decode serves W
// keys and writes two whole rows of kti (the 4-dim words 2i and 2i + 1): out[w * ld + j] = word w
// of key j (bytes + 128 where FLIP). Half the instructions per key of decoding the rows and then
// transposing their int8 words. d a multiple of 64; only the codes are read (d / 2 bytes).
template <bool FLIP>
inline void fp4_i8_words(const uint8_t* const* rows, int d, uint32_t* out, int ld) {
    const int nu = d / 8;  // 32-bit units of codes per key (a multiple of 8)
#if defined(KVRT_ISA_AVX512)
    const float* rf[16];
    for (int j = 0; j < 16; ++j) rf[j] = reinterpret_cast<const float*>(rows[j]);
#endif
    for (int c0 = 0; c0 < nu; c0 += 8) {
        constexpr int n = 8;  // units per step: the loads read exactly the codes
#if defined(KVRT_ISA_AVX512)
        // 16 keys x 8 units (Ops::transpose16x8: 32 shuffles where the 16 x 16 transpose of d = 64's
        // half-empty vectors took 64; the shuffle port bounded the tile build).
        __m512 r[8];
        Ops::transpose16x8(rf, c0, r);
#else
        __m256 r[8];
        for (int j = 0; j < 8; ++j) r[j] = _mm256_loadu_ps(reinterpret_cast<const float*>(rows[j]) + c0);
        Ops::transpose8x8(r);
#endif
        for (int i = 0; i < n; ++i) {
            Fp4VW lo, hi;
#if defined(KVRT_ISA_AVX512)
            fp4_split_units<FLIP>(_mm512_castps_si512(r[i]), lo, hi);
#else
            fp4_split_units<FLIP>(_mm256_castps_si256(r[i]), lo, hi);
#endif
            std::memcpy(out + size_t(2 * (c0 + i)) * ld, &lo, sizeof lo);
            std::memcpy(out + size_t(2 * (c0 + i) + 1) * ld, &hi, sizeof hi);
        }
    }
}

// fp4_half_scale of the e8m0 scales of W keys at once (rows[j]: key j's 4-bit head, d a multiple
// of 64; lanes of keys not in `in` (bit j: key j present) get 0): out[gi * ld + j] = half of key j's
// scale gi. Each key's scale bytes are read as 32-bit words, one load per key and word (a gather
// measured no faster on AVX-512 and 10% slower on AVX2), the first word starting `off` bytes
// before the scales so that every word lies inside the head (d = 64: the last two code bytes,
// then the 2 scales); the W keys' bytes of a group are then turned into half scales from the
// exponent's bits, as fp4_half_scale does: (b - 1) << 23; b = 1, 0: the denormals 2^-127, 2^-128;
// b = 255: NaN. (A byte load, a table load and a scalar store per key and group had been a quarter
// of the tile build.)
inline void fp4_e8_half_scales(const uint8_t* const* rows, int d, unsigned in, float* out, int ld) {
    const int ng = d / 32, off = (4 - ng % 4) % 4;
#if defined(KVRT_ISA_AVX512)
    const __mmask16 present = static_cast<__mmask16>(in);
    const __m512i one = _mm512_set1_epi32(1), ff = _mm512_set1_epi32(255);
    for (int w = 0; 4 * w - off < ng; ++w) {
        const int o = d / 2 - off + 4 * w;
        int32_t v[16];
        for (int j = 0; j < 16; ++j) std::memcpy(&v[j], rows[j] + o, 4);
        const __m512i x = _mm512_setr_epi32(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10], v[11],
                                            v[12], v[13], v[14], v[15]);
        for (int b = 0; b < 4; ++b) {
            const int gi = 4 * w - off + b;
            if (gi < 0 || gi >= ng) continue;
            const __m512i e = _mm512_and_si512(_mm512_srli_epi32(x, 8 * b), ff);
            __m512i u = _mm512_slli_epi32(_mm512_sub_epi32(e, one), 23);
            u = _mm512_mask_sllv_epi32(u, _mm512_cmplt_epu32_mask(e, _mm512_set1_epi32(2)), _mm512_set1_epi32(0x00200000), e);
            u = _mm512_mask_mov_epi32(u, _mm512_cmpeq_epi32_mask(e, ff), _mm512_set1_epi32(0x7fc00000));
            _mm512_storeu_si512(out + size_t(gi) * ld, _mm512_maskz_mov_epi32(present, u));
        }
    }
#else
    const __m256i bits = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    const __m256i present = _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32(static_cast<int>(in)), bits), bits);
    const __m256i one = _mm256_set1_epi32(1), two = _mm256_set1_epi32(2), ff = _mm256_set1_epi32(255);
    for (int w = 0; 4 * w - off < ng; ++w) {
        const int o = d / 2 - off + 4 * w;
        int32_t v[8];
        for (int j = 0; j < 8; ++j) std::memcpy(&v[j], rows[j] + o, 4);
        const __m256i x = _mm256_setr_epi32(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]);
        for (int b = 0; b < 4; ++b) {
            const int gi = 4 * w - off + b;
            if (gi < 0 || gi >= ng) continue;
            const __m256i e = _mm256_and_si256(_mm256_srli_epi32(x, 8 * b), ff);
            __m256i u = _mm256_slli_epi32(_mm256_sub_epi32(e, one), 23);
            u = _mm256_blendv_epi8(u, _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), e), _mm256_cmpgt_epi32(two, e));
            u = _mm256_blendv_epi8(u, _mm256_set1_epi32(0x7fc00000), _mm256_cmpeq_epi32(e, ff));
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + size_t(gi) * ld), _mm256_and_si256(u, present));
        }
    }
#endif
}
#endif

// The indexer's integer tiles of 4-bit keys (indexer_core.inl): an int8 tile (KeyTile::ints, as
// tile_build_i8 builds over int8 K) of the codes' integer values, twice the e2m1 value (0, +-1,
// 2, 3, 4, 6, 8, 12: kFp4Twice), with half of each group's scale as the key's group scale (ksc).
// A key's element c is then exactly code(c) * ksc[c / 32], the value kv_load gives, and
// tile_scores_i8 scores it against a query quantised per 32 dims (quantize_query_i8) with exact
// int32 group dot products: s = ((0 + f32(dot_0) * (q's scale_0 * ksc_0)) + ...) over the groups
// in increasing order. AVX-512 and AVX2 with d a multiple of 64: the codes of W keys are
// transposed packed and decoded after (fp4_i8_words); otherwise each present row is decoded into
// int8 rows in kbuf (32 codes through a 16-entry table at a time) and its 4-dim words are
// transposed as int8 keys' are. Absent keys: the zero head, scale 0.
template <class KP>
inline void tile_build_fp4_i8(KeyTile& t, int d, DType dt, int ja, int jb, KP kp) {
    constexpr int W = Ops::W;
    t.ja = ja;
    t.jb = jb;
    t.vdt = DType::I8;  // (no V: the indexer's keys)
    t.kdt = DType::I8;
    t.pairs = false;
    t.direct = false;
    t.ints = true;
    t.lanes = true;
    t.kti = reinterpret_cast<uint32_t*>(t.kt);
    const int ng = d / 32;
    t.kng = ng;
    const uint8_t* zero = reinterpret_cast<const uint8_t*>(t.zero);
#if defined(KVRT_ISA_AVX512) || defined(KVRT_ISA_AVX2)
    if (d % 64 == 0) {
        for (int j = 0; j < T; ++j) t.kraw[j] = t.vraw[j] = zero;
        for (int g = 0; g < T; g += W) {
            if (g + W - 1 < ja || g > jb) continue;  // (no keys: every row skips these lanes)
            const uint8_t* pr[W];
            unsigned in = 0;
            for (int j = 0; j < W; ++j) {
                const bool present = g + j >= ja && g + j <= jb;
                pr[j] = present ? kp(g + j) : zero;
                in |= unsigned(present) << j;
            }
            if (dt == DType::FP4_E8) {
                fp4_e8_half_scales(pr, d, in, t.ksc + g, T);
            } else {
                for (int j = 0; j < W; ++j)
                    for (int gi = 0; gi < ng; ++gi)
                        t.ksc[gi * T + g + j] = (in >> j) & 1u ? fp4_half_scale(pr[j] + d / 2, dt, gi) : 0.0f;
            }
            if (t.pf) t.pf->step();
            if (Ops::kI8Unsigned) fp4_i8_words<true>(pr, d, t.kti + g, T);
            else fp4_i8_words<false>(pr, d, t.kti + g, T);
            if (t.pf) t.pf->step();
        }
        return;
    }
#endif
    uint8_t* rows = reinterpret_cast<uint8_t*>(t.kbuf);  // [T][d] int8 codes
    for (int j = 0; j < T; ++j) {
        const bool in = j >= ja && j <= jb;
        t.kraw[j] = in ? rows + size_t(j) * d : zero;
        t.vraw[j] = zero;
        if (!in)
            for (int gi = 0; gi < ng; ++gi) t.ksc[gi * T + j] = 0.0f;
    }
    for (int j = ja; j <= jb; ++j) {
        const uint8_t* h = kp(j);
        const uint8_t* sc = h + d / 2;
        uint8_t* out = rows + size_t(j) * d;
        for (int gi = 0; gi < ng; ++gi) {
            if (t.pf && (gi & 1) == 0) t.pf->step();
            t.ksc[gi * T + j] = fp4_half_scale(sc, dt, gi);
#if defined(KVRT_ISA_AVX2) || defined(KVRT_ISA_AVX512)
            __m128i e0, e1;
            fp4_codes32_i8(h + gi * 16, e0, e1);
            _mm_storeu_si128(reinterpret_cast<__m128i*>(out + gi * 32), e0);
            _mm_storeu_si128(reinterpret_cast<__m128i*>(out + gi * 32 + 16), e1);
#else
            for (int i = 0; i < 16; ++i) {
                out[gi * 32 + 2 * i] = uint8_t(kFp4Twice[h[gi * 16 + i] & 15u]);
                out[gi * 32 + 2 * i + 1] = uint8_t(kFp4Twice[h[gi * 16 + i] >> 4]);
            }
#endif
        }
    }
    const int nw = d / 4;
    const uint32_t flip = Ops::kI8Unsigned ? 0x80808080u : 0u;
    for (int g = 0; g < T; g += W) {
        if (g + W - 1 < ja || g > jb) continue;
        int c = 0;
        for (; c + W <= nw; c += W) Ops::i8_transpose(t.kraw + g, c, t.kti + size_t(c) * T + g, T);
        for (; c < nw; ++c)
            for (int j = 0; j < W; ++j) {
                uint32_t w;
                std::memcpy(&w, t.kraw[g + j] + 4 * c, 4);
                t.kti[size_t(c) * T + g + j] = w ^ flip;
            }
    }
}
