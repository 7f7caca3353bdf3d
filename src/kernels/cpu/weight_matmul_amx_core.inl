// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// The AMX weight-matmul kernel (weight_matmul_amx.cpp says what it does and why), as a template
// over the tile unit: `panels<Tiles>(args, p0, p1)`. weight_matmul_amx.cpp instantiates it with
// the AMX instructions; the test-support library (tests/support/kernels/cpu/
// weight_matmul_amx_emulated.cpp) with the same arithmetic in C++, so that the tests check the
// tile layout and bookkeeping on CPUs without AMX and the emulator stays out of libkvrt.
// Include inside namespace kvrt::kernels, in an anonymous namespace, in a region compiled for
// avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,fma,f16c (#pragma GCC target), after
// weight_codes_avx512.hpp. Tiles provides configure(TileConfig), release(), zero<C>(),
// load<T>(p, stride), dot<C, A, B, SignedB>() (C[c] += A[a] . B[b], A signed, B signed or
// unsigned bytes) and store<C>(p, stride).

// Palette 1 tile configuration: the 64 bytes ldtilecfg reads.
struct alignas(64) TileConfig {
    uint8_t palette = 1;
    uint8_t start_row = 0;
    uint8_t reserved[14] = {};
    uint16_t colsb[16] = {};
    uint8_t rows[16] = {};
};
static_assert(sizeof(TileConfig) == 64, "ldtilecfg reads 64 bytes");

// A tiles hold 16 rows x one activation block (32 codes), B tiles 8 rows x 64 bytes (16 columns
// x 32 codes); Q6_K (half_blocks) takes each block as its two 16-element halves, whose products
// its two scales multiply: A 16 rows x 16 codes, B 4 rows x 64 bytes.
TileConfig tile_config(bool half_blocks) {
    TileConfig c;
    const int k = half_blocks ? 16 : 32;
    for (int t = 0; t < 4; t++) c.rows[t] = 16, c.colsb[t] = 64;
    for (int t : {4, 5}) c.rows[t] = 16, c.colsb[t] = static_cast<uint16_t>(k);
    for (int t : {6, 7}) c.rows[t] = static_cast<uint8_t>(k / 4), c.colsb[t] = 64;
    return c;
}


// Q5_0 and Q8_0 codes go into the B tiles signed (the packed panels hold them unsigned, with
// a zero point of 16 and 128, for vpdpbusd): tdpbssd's sums are then the blocks' dots
// themselves, with no zero-point correction per row and block in fold() (the integer sums are
// the same, so are the bits). The K-quants' codes have no zero point: unsigned, tdpbsud.
// Q6_K's codes (0..63, zero point 32) likewise.
template <TensorType T>
constexpr bool signed_codes() {
    return T == TensorType::Q5_0 || T == TensorType::Q8_0 || T == TensorType::Q6_K;
}

// One panel's weights for a chunk of blocks, laid out for the tiles: per block the B tile
// (8 rows x 64 bytes), the per-column factor of the integer sum (d, or d * sc for Q4_K /
// Q5_K) and of the activation block's s (Q4_K / Q5_K: -(dmin * m)); Q6_K: d, and the int8
// scales of the block's two 16-element halves as floats (mw, sw).
constexpr int kChunk = 64;  // blocks per chunk (a multiple of the K-quants' 8)
struct PanelPrep {
    alignas(64) uint8_t codes[kChunk][512];
    alignas(64) float cw[kChunk][16];
    alignas(64) float mw[kChunk][16];
    alignas(64) float sw[kChunk][16];
};
struct Prep {
    PanelPrep panel[2];  // the pair's two panels
};

// This thread's buffer, or null when it cannot be had (the caller then takes the AVX-512 path).
Prep* prep_buffer() {
    thread_local std::unique_ptr<Prep> buf;
    if (!buf) buf.reset(new (std::nothrow) Prep);
    return buf.get();
}

inline __m512 load_f16x16(const uint8_t* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
inline __m512 load_i8x16_ps(const uint8_t* p) {
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
}
inline __m512 load_u8x16_ps(const uint8_t* p) {
    return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
}

// The B tile of one block: its 4-bit chunk group qs with the high bits hx (Q5_0 / Q5_K hb, Q6_K
// qh), 8 rows of 64 bytes (chunk c: rows 2c and 2c + 1), minus the codes' zero point where they
// go in signed (signed_codes: Q5_0 16, Q6_K 32; the K-quants' unsigned codes as they are).
template <TensorType T>
inline void store_codes(const uint8_t* qs, const uint8_t* hx, uint8_t* bt) {
    const __m512i zero_point = _mm512_set1_epi8(T == TensorType::Q5_0 ? 16 : T == TensorType::Q6_K ? 32 : 0);
    for (int c = 0; c < 4; c++) {
        __m512i l, h;
        avx512_codes::codes<T>(qs, hx, c, l, h);
        _mm512_store_si512(bt + 128 * c, _mm512_sub_epi8(l, zero_point));
        _mm512_store_si512(bt + 128 * c + 64, _mm512_sub_epi8(h, zero_point));
    }
}

// Lays out blocks [b0, b1) of the panel whose first step is `pp` (steps 2 * step bytes apart:
// the pair's two panels alternate).
template <TensorType T>
void prepare(const uint8_t* pp, int64_t b0, int64_t b1, PanelPrep& out) {
    constexpr size_t step = panel_step_bytes(T);
    for (int64_t b = b0; b < b1; b++) {
        const int i = static_cast<int>(b - b0);
        uint8_t* bt = out.codes[i];
        if constexpr (T == TensorType::Q8_0 || T == TensorType::Q5_0) {
            const uint8_t* pb = pp + b * 2 * step;
            _mm512_store_ps(out.cw[i], load_f16x16(pb));
            if constexpr (T == TensorType::Q8_0) {
                const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));  // u8 - 128 = u8 ^ 0x80
                for (int g = 0; g < 8; g++)  // chunk g is B row g already
                    _mm512_store_si512(bt + 64 * g, _mm512_xor_si512(_mm512_loadu_si512(pb + 32 + 64 * g), flip));
            } else {
                store_codes<T>(pb + 96, pb + 32, bt);  // Q5_0: d[16] | hb (64 bytes) | 4 chunks from byte 96
            }
        } else if constexpr (T == TensorType::Q6_K) {  // sub-block s of super-block st
            const int64_t st = b / 8;
            const int s = static_cast<int>(b % 8);
            const uint8_t* pb = pp + st * 2 * step;
            store_codes<T>(pb + kQ6Ql + s * 256, pb + kQ6Qh + s * 128, bt);  // rows 0..3: elements 0..15
            _mm512_store_ps(out.cw[i], load_f16x16(pb));
            _mm512_store_ps(out.mw[i], load_i8x16_ps(pb + kQ6Sc + (2 * s) * 16));
            _mm512_store_ps(out.sw[i], load_i8x16_ps(pb + kQ6Sc + (2 * s + 1) * 16));
        } else {  // K-quants: sub-block s of super-block st
            const int64_t st = b / 8;
            const int s = static_cast<int>(b % 8);
            const uint8_t* pb = pp + st * 2 * step;
            const __m512 dw = load_f16x16(pb);
            store_codes<T>(pb + kKQs + s * 256, pb + kKHb + s * 64, bt);
            {
                _mm512_store_ps(out.cw[i], _mm512_mul_ps(dw, load_u8x16_ps(pb + kKSc + s * 16)));
                const __m512 dm = _mm512_mul_ps(load_f16x16(pb + kKDmin), load_u8x16_ps(pb + kKMin + s * 16));
                // fma(-dm, s, acc) has the bits of the VNNI kernel's fnmadd(dm, s, acc)
                _mm512_store_ps(out.mw[i], _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(dm), _mm512_set1_epi32(INT32_MIN))));
            }
        }
    }
}

template <TensorType T>
constexpr bool has_min() {
    return T == TensorType::Q4_K || T == TensorType::Q5_K;
}

// The float operations of block b for the 16 rows from m0 (accumulators acc, 32 floats
// apart), from the stored C tile ct, with panel prep pp at chunk index i.
template <TensorType T>
inline void fold(float* acc, const int32_t* ct, const PanelPrep& pp, int i, const QuantizedRows& a, int64_t m0,
                 int64_t b) {
    const int64_t nb = a.blocks;
    const __m512 cw = _mm512_load_ps(pp.cw[i]);
    const __m512 mw = has_min<T>() ? _mm512_load_ps(pp.mw[i]) : _mm512_setzero_ps();
    #pragma GCC unroll 16
    for (int r = 0; r < 16; r++) {
        const int64_t ab = (m0 + r) * nb + b;
        const __m512i I = _mm512_load_si512(ct + 16 * r);
        __m512 v = _mm512_fmadd_ps(_mm512_mul_ps(cw, _mm512_set1_ps(a.d[ab])), _mm512_cvtepi32_ps(I), _mm512_load_ps(acc + 32 * r));
        if constexpr (has_min<T>()) v = _mm512_fmadd_ps(mw, _mm512_set1_ps(a.s[ab]), v);
        _mm512_store_ps(acc + 32 * r, v);
    }
}

// The accumulators of `rows` rows x a panel pair (32 floats per row): the masks of the pair's
// ncols valid columns, and the rows' partial sums from y (zero for the first chunk, b0 = 0).
inline void acc_begin(float* acc, int rows, int ncols, int64_t b0, const float* y, int64_t ldy, __mmask16* mask) {
    for (int j = 0; j < 2; j++) {
        const int left = ncols - 16 * j;
        mask[j] = left >= 16 ? static_cast<__mmask16>(0xFFFF) : left <= 0 ? 0 : static_cast<__mmask16>((1u << left) - 1u);
    }
    for (int r = 0; r < rows; r++)
        for (int j = 0; j < 2; j++)
            _mm512_store_ps(acc + 32 * r + 16 * j,
                            b0 == 0 ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(mask[j], y + r * ldy + 16 * j));
}
// ... and back to y (np panels of the pair).
inline void acc_end(const float* acc, int rows, int np, float* y, int64_t ldy, const __mmask16* mask) {
    for (int r = 0; r < rows; r++)
        for (int j = 0; j < np; j++) _mm512_mask_storeu_ps(y + r * ldy + 16 * j, mask[j], _mm512_load_ps(acc + 32 * r + 16 * j));
}

// Row tile I x panel J of block b (NP panels): the product into C tile 2I + J.
template <class Tiles, TensorType T, int I, int J>
inline void tile_product() {
    Tiles::template zero<2 * I + J>();
    Tiles::template dot<2 * I + J, 4 + I, 6 + J, signed_codes<T>()>();
}

// Blocks [b0, b1) of NM row tiles from m0 (NM = 1 or 2) x the pair's NP panels (NP = 1: the
// second is padding), accumulated onto y (rows ldy apart, ncols valid columns of the pair;
// the first chunk starts from zero).
template <class Tiles, TensorType T, int NM, int NP>
void pair_rows(const QuantizedRows& a, int64_t m0, const Prep& pr, int64_t b0, int64_t b1, float* y, int64_t ldy,
               int ncols) {
    alignas(64) float acc[NM * 16][32];
    __mmask16 mask[2];
    acc_begin(acc[0], NM * 16, ncols, b0, y, ldy, mask);
    const int64_t lda = a.blocks * 32;
    const int8_t* x0 = a.row_qs(m0);
    // Software-pipelined by one block: the tiles of block b run (and store their C tiles into
    // cb[b % 2]) before the float work of block b - 1 (from cb[(b - 1) % 2]), so that the core
    // overlaps the tile unit's latency with the vector work instead of waiting on every store.
    alignas(64) int32_t cb[2][4][256];
    const auto fold_block = [&](int64_t b) {
        const int i = static_cast<int>(b - b0);
        for (int ti = 0; ti < NM; ti++)
            for (int j = 0; j < NP; j++)
                fold<T>(acc[16 * ti] + 16 * j, cb[b & 1][2 * ti + j], pr.panel[j], i, a, m0 + 16 * ti, b);
    };
    for (int64_t b = b0; b < b1; b++) {
        const int i = static_cast<int>(b - b0);
        int32_t(*c)[256] = cb[b & 1];
        Tiles::template load<4>(x0 + b * 32, lda);
        if constexpr (NM == 2) Tiles::template load<5>(x0 + 16 * lda + b * 32, lda);
        Tiles::template load<6>(pr.panel[0].codes[i], 64);
        if constexpr (NP == 2) Tiles::template load<7>(pr.panel[1].codes[i], 64);
        tile_product<Tiles, T, 0, 0>();
        if constexpr (NP == 2) tile_product<Tiles, T, 0, 1>();
        if constexpr (NM == 2) tile_product<Tiles, T, 1, 0>();
        if constexpr (NM == 2 && NP == 2) tile_product<Tiles, T, 1, 1>();
        Tiles::template store<0>(c[0], 64);
        if constexpr (NP == 2) Tiles::template store<1>(c[1], 64);
        if constexpr (NM == 2) Tiles::template store<2>(c[2], 64);
        if constexpr (NM == 2 && NP == 2) Tiles::template store<3>(c[3], 64);
        if (b > b0) fold_block(b - 1);
    }
    if (b1 > b0) fold_block(b1 - 1);
    acc_end(acc[0], NM * 16, NP, y, ldy, mask);
}

// Q6_K's float operations of block b for the 16 rows from m0: the halves' integer sums times
// their scales, lo * sc0 + hi * sc1, in floats (exact: |lo|, |hi| <= 16 * 32 * 127 < 2^16 and
// |sc| <= 128, so each product is below 2^23 and their sum below 2^24, an integer a float holds:
// the value the VNNI kernel's int32 sum converts to), then the other types' fma.
inline void fold_q6(float* acc, const int32_t* lo, const int32_t* hi, const PanelPrep& pp, int i,
                    const QuantizedRows& a, int64_t m0, int64_t b) {
    const int64_t nb = a.blocks;
    const __m512 cw = _mm512_load_ps(pp.cw[i]);
    const __m512 s0 = _mm512_load_ps(pp.mw[i]);
    const __m512 s1 = _mm512_load_ps(pp.sw[i]);
    #pragma GCC unroll 16
    for (int r = 0; r < 16; r++) {
        const int64_t ab = (m0 + r) * nb + b;
        const __m512 I = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_load_si512(hi + 16 * r)), s1,
                                         _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_load_si512(lo + 16 * r)), s0));
        _mm512_store_ps(acc + 32 * r, _mm512_fmadd_ps(_mm512_mul_ps(cw, _mm512_set1_ps(a.d[ab])), I, _mm512_load_ps(acc + 32 * r)));
    }
}

// Q6_K: blocks [b0, b1) of the row tile from m0 x the pair's NP panels, as pair_rows (one row
// tile: its two half-block A tiles feed four products, C0 / C1 the halves of panel 0, C2 / C3
// those of panel 1, the B tiles reloaded between the panels).
template <class Tiles, int NP>
void pair_rows_q6(const QuantizedRows& a, int64_t m0, const Prep& pr, int64_t b0, int64_t b1, float* y, int64_t ldy,
                  int ncols) {
    alignas(64) float acc[16][32];
    __mmask16 mask[2];
    acc_begin(acc[0], 16, ncols, b0, y, ldy, mask);
    const int64_t lda = a.blocks * 32;
    const int8_t* x0 = a.row_qs(m0);
    alignas(64) int32_t cb[2][4][256];  // pipelined by one block, as pair_rows
    const auto fold_block = [&](int64_t b) {
        const int i = static_cast<int>(b - b0);
        for (int j = 0; j < NP; j++) fold_q6(acc[0] + 16 * j, cb[b & 1][2 * j], cb[b & 1][2 * j + 1], pr.panel[j], i, a, m0, b);
    };
    for (int64_t b = b0; b < b1; b++) {
        const int i = static_cast<int>(b - b0);
        int32_t(*c)[256] = cb[b & 1];
        Tiles::template load<4>(x0 + b * 32, lda);
        Tiles::template load<5>(x0 + b * 32 + 16, lda);
        Tiles::template load<6>(pr.panel[0].codes[i], 64);
        Tiles::template load<7>(pr.panel[0].codes[i] + 256, 64);
        Tiles::template zero<0>();
        Tiles::template dot<0, 4, 6, true>();
        Tiles::template zero<1>();
        Tiles::template dot<1, 5, 7, true>();
        if constexpr (NP == 2) {
            Tiles::template load<6>(pr.panel[1].codes[i], 64);
            Tiles::template load<7>(pr.panel[1].codes[i] + 256, 64);
            Tiles::template zero<2>();
            Tiles::template dot<2, 4, 6, true>();
            Tiles::template zero<3>();
            Tiles::template dot<3, 5, 7, true>();
        }
        Tiles::template store<0>(c[0], 64);
        Tiles::template store<1>(c[1], 64);
        if constexpr (NP == 2) {
            Tiles::template store<2>(c[2], 64);
            Tiles::template store<3>(c[3], 64);
        }
        if (b > b0) fold_block(b - 1);
    }
    if (b1 > b0) fold_block(b1 - 1);
    acc_end(acc[0], 16, NP, y, ldy, mask);
}

template <class Tiles, TensorType T>
void panels_typed(const MatmulArgs& args, int64_t p0, int64_t p1, int64_t m_tiles, Prep& pr) {
    const PackedWeight& w = *args.w;
    const QuantizedRows& a = *args.a;
    const int64_t nb = a.blocks;
    Tiles::configure(tile_config(T == TensorType::Q6_K));
    for (int64_t p = p0; p < p1; p += 2) {
        const int ncols = static_cast<int>(std::min<int64_t>(2 * kPanel, w.rows() - p * kPanel));
        const bool two = ncols > kPanel;  // else the second panel is the zero padding
        for (int64_t b0 = 0; b0 < nb; b0 += kChunk) {
            const int64_t b1 = std::min<int64_t>(nb, b0 + kChunk);
            for (int h = 0; h < (two ? 2 : 1); h++) prepare<T>(w.panel(p) + h * panel_step_bytes(T), b0, b1, pr.panel[h]);
            float* y = args.Y + p * kPanel;
            if constexpr (T == TensorType::Q6_K) {
                for (int64_t mt = 0; mt < m_tiles; mt++) {
                    if (two) pair_rows_q6<Tiles, 2>(a, 16 * mt, pr, b0, b1, y + 16 * mt * args.ldy, args.ldy, ncols);
                    else pair_rows_q6<Tiles, 1>(a, 16 * mt, pr, b0, b1, y + 16 * mt * args.ldy, args.ldy, ncols);
                }
                continue;
            }
            int64_t mt = 0;
            for (; mt + 2 <= m_tiles; mt += 2) {
                if (two) pair_rows<Tiles, T, 2, 2>(a, 16 * mt, pr, b0, b1, y + 16 * mt * args.ldy, args.ldy, ncols);
                else pair_rows<Tiles, T, 2, 1>(a, 16 * mt, pr, b0, b1, y + 16 * mt * args.ldy, args.ldy, ncols);
            }
            if (mt < m_tiles) {
                if (two) pair_rows<Tiles, T, 1, 2>(a, 16 * mt, pr, b0, b1, y + 16 * mt * args.ldy, args.ldy, ncols);
                else pair_rows<Tiles, T, 1, 1>(a, 16 * mt, pr, b0, b1, y + 16 * mt * args.ldy, args.ldy, ncols);
            }
        }
    }
    Tiles::release();
}

template <class Tiles>
void panels(const MatmulArgs& args, int64_t p0, int64_t p1) {
    const TensorType t = args.w->type();
    const int64_t m_tiles = args.M / 16;
    const bool tiles = m_tiles > 0 && (t == TensorType::Q5_0 || t == TensorType::Q8_0 || t == TensorType::Q4_K ||
                                       t == TensorType::Q5_K || t == TensorType::Q6_K);
    Prep* pr = tiles ? prep_buffer() : nullptr;
    if (!pr) {
        matmul_panels_avx512(args, p0, p1);  // (which computes args.residual_rows' residual itself)
        return;
    }
    switch (t) {
        case TensorType::Q8_0: panels_typed<Tiles, TensorType::Q8_0>(args, p0, p1, m_tiles, *pr); break;
        case TensorType::Q5_0: panels_typed<Tiles, TensorType::Q5_0>(args, p0, p1, m_tiles, *pr); break;
        case TensorType::Q4_K: panels_typed<Tiles, TensorType::Q4_K>(args, p0, p1, m_tiles, *pr); break;
        case TensorType::Q5_K: panels_typed<Tiles, TensorType::Q5_K>(args, p0, p1, m_tiles, *pr); break;
        case TensorType::Q6_K: panels_typed<Tiles, TensorType::Q6_K>(args, p0, p1, m_tiles, *pr); break;
        default: matmul_panels_avx512(args, p0, p1); return;
    }
    // The rows past the last whole tile: the AVX-512 kernel (the same bits).
    const int64_t m0 = 16 * m_tiles;
    if (m0 < args.M) {
        MatmulArgs rest = args;
        const QuantizedRows rows = args.a->from_row(m0);
        rest.a = &rows;
        rest.X = args.X ? args.X + m0 * args.ldx : nullptr;
        rest.Y = args.Y + m0 * args.ldy;
        rest.M = args.M - m0;
        rest.residual_rows = nullptr;  // (the lists number all of args' rows: done below)
        matmul_panels_avx512(rest, p0, p1);
    }
    // The outlier residual of every row (ActBits::Q8R), now that all their chains are stored, as the
    // AVX-512 kernel adds it after a pair's row tiles: with the pairs' weights in L2 rather than
    // L1, without the separate pass's gathering and per-step kernel calls.
    matmul_residual_panels_avx512(args, p0, p1);
}

