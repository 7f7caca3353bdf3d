// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// AMX weight-matmul kernels (KernelIsa::Amx): the quantised weight types against 8-bit
// activation codes, in blocks of 32 rows of X x 32 output columns (a panel pair): 2 x 2 tiles.
//
// Per 32-element block b, tdpbsud computes the block's exact integer dots for 16 rows x 16
// columns per tile (signed activation codes in the A tiles, straight from the quantised rows;
// the panels' unsigned weight codes in the B tiles, laid out once per panel and chunk of
// blocks: B row kk holds, per column, the 4 codes of elements 4kk..4kk+3, which is what the
// packed 4-bit chunks hold after a mask or a shift, weight_matmul_layout.hpp). Each A and B
// tile feeds two products. The C tiles go to memory and the float operations of
// weight_matmul_kernels.hpp are applied per row on AVX-512 (accumulators in an L1 buffer),
// the same operations in the same order as the AVX-512 VNNI kernel, so every output element
// has the bits of every other path (integer sums are exact whatever computes them).
//
// Types: Q5_0, Q8_0, Q4_K and Q5_K, where the tiles measured faster end to end (the 5-bit and
// K-quant codes are unpacked once per panel here, once per 4 rows in the VNNI kernel; Gemma 3
// 270M and Qwen2.5-Coder-0.5B prefill 1.06-1.16x on a Xeon with AMX, src/kernels/README.md).
// What goes elsewhere (matmul_panels_avx512): Q4_0 / Q4_1 (their VNNI kernel is lean enough
// that the tiles' per-block store and float work cost more: SmolLM2's prefill 0.96x), Q6_K
// (two 16-element halves with their own sums: slower on tiles), rows past the last whole tile
// of 16 (a decode row, a prefill's last rows), float weights, and any call when this thread's
// panel buffer cannot be allocated. 16-bit activation codes never come here.
//
// Tiles: tmm0..tmm3 C (16 x 16 int32; C[2i + j] = row tile i x panel j), tmm4, tmm5 A (16 rows
// x 32 codes: row tiles 0 and 1), tmm6, tmm7 B (8 rows x 64 bytes: panels 0 and 1).
//
// The tile instructions are behind a policy class: AmxTiles runs them, EmulatedTiles does the
// same arithmetic in C++ (matmul_panels_amx_emulated), so that the tests check the tile layout
// and bookkeeping on any AVX-512 VNNI CPU, and the real instructions where the CPU has AMX.
#include "kernels/cpu/weight_matmul_kernels.hpp"
#include "kernels/cpu/weight_matmul_layout.hpp"

#if defined(__x86_64__)
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <new>

#pragma GCC push_options
// GCC 12 warns falsely inside its own AVX-512 headers (_mm512_undefined_*).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,fma,f16c,amx-tile,amx-int8")

#include "kernels/cpu/weight_codes_avx512.hpp"

namespace kvrt::kernels {

namespace {

// Palette 1 tile configuration: the 64 bytes ldtilecfg reads.
struct alignas(64) TileConfig {
    uint8_t palette = 1;
    uint8_t start_row = 0;
    uint8_t reserved[14] = {};
    uint16_t colsb[16] = {};
    uint8_t rows[16] = {};
};
static_assert(sizeof(TileConfig) == 64, "ldtilecfg reads 64 bytes");

TileConfig tile_config() {
    TileConfig c;
    for (int t = 0; t < 4; t++) c.rows[t] = 16, c.colsb[t] = 64;
    for (int t : {4, 5}) c.rows[t] = 16, c.colsb[t] = 32;
    for (int t : {6, 7}) c.rows[t] = 8, c.colsb[t] = 64;
    return c;
}

// (GCC's tile intrinsics paste their tile argument into the assembly text: literals only.)
struct AmxTiles {
    static void configure(const TileConfig& c) { _tile_loadconfig(&c); }
    static void release() { _tile_release(); }
    template <int T>
    static void zero() {
        static_assert(T >= 0 && T < 4, "C tiles are tmm0..tmm3");
        if constexpr (T == 0) _tile_zero(0);
        else if constexpr (T == 1) _tile_zero(1);
        else if constexpr (T == 2) _tile_zero(2);
        else _tile_zero(3);
    }
    template <int T>
    static void load(const void* p, int64_t stride) {
        static_assert(T >= 4 && T < 8, "A and B tiles are tmm4..tmm7");
        if constexpr (T == 4) _tile_loadd(4, p, stride);
        else if constexpr (T == 5) _tile_loadd(5, p, stride);
        else if constexpr (T == 6) _tile_loadd(6, p, stride);
        else _tile_loadd(7, p, stride);
    }
    // C[c] += A[4 + c / 2] . B[6 + c % 2]
    template <int C>
    static void dot() {
        static_assert(C >= 0 && C < 4, "C tiles are tmm0..tmm3");
        if constexpr (C == 0) _tile_dpbsud(0, 4, 6);
        else if constexpr (C == 1) _tile_dpbsud(1, 4, 7);
        else if constexpr (C == 2) _tile_dpbsud(2, 5, 6);
        else _tile_dpbsud(3, 5, 7);
    }
    template <int T>
    static void store(void* p, int64_t stride) {
        static_assert(T >= 0 && T < 4, "C tiles are tmm0..tmm3");
        if constexpr (T == 0) _tile_stored(0, p, stride);
        else if constexpr (T == 1) _tile_stored(1, p, stride);
        else if constexpr (T == 2) _tile_stored(2, p, stride);
        else _tile_stored(3, p, stride);
    }
};

// The same operations in C++ (Intel SDM: TILELOADD, TILEZERO, TDPBSUD, TILESTORED).
struct EmulatedTiles {
    struct State {
        TileConfig cfg;
        alignas(64) uint8_t t[8][16 * 64];
    };
    static State& st() {
        thread_local State s;
        return s;
    }
    static void configure(const TileConfig& c) {
        st().cfg = c;
        std::memset(st().t, 0, sizeof(st().t));
    }
    static void release() {}
    template <int T>
    static void zero() { std::memset(st().t[T], 0, sizeof(st().t[T])); }
    template <int T>
    static void load(const void* p, int64_t stride) {
        State& s = st();
        for (int r = 0; r < s.cfg.rows[T]; r++)
            std::memcpy(s.t[T] + 64 * r, static_cast<const uint8_t*>(p) + r * stride, s.cfg.colsb[T]);
    }
    template <int C>
    static void dot() {
        constexpr int A = 4 + C / 2, B = 6 + C % 2;
        State& s = st();
        const int m_rows = s.cfg.rows[A], k4 = s.cfg.colsb[A] / 4, n = s.cfg.colsb[C] / 4;
        for (int m = 0; m < m_rows; m++) {
            const int8_t* a = reinterpret_cast<const int8_t*>(s.t[A] + 64 * m);
            for (int j = 0; j < n; j++) {
                int32_t c;
                std::memcpy(&c, s.t[C] + 64 * m + 4 * j, 4);
                for (int kk = 0; kk < k4; kk++)
                    for (int i = 0; i < 4; i++) c += int32_t(a[4 * kk + i]) * int32_t(s.t[B][64 * kk + 4 * j + i]);
                std::memcpy(s.t[C] + 64 * m + 4 * j, &c, 4);
            }
        }
    }
    template <int T>
    static void store(void* p, int64_t stride) {
        State& s = st();
        for (int r = 0; r < s.cfg.rows[T]; r++)
            std::memcpy(static_cast<uint8_t*>(p) + r * stride, s.t[T] + 64 * r, s.cfg.colsb[T]);
    }
};

// One panel's weights for a chunk of blocks, laid out for the tiles: per block the B tile
// (8 rows x 64 bytes), the per-column factor of the integer sum (d, or d * sc for Q4_K /
// Q5_K) and of the activation block's s (Q4_K / Q5_K: -(dmin * m)).
constexpr int kChunk = 64;  // blocks per chunk (a multiple of the K-quants' 8)
struct PanelPrep {
    alignas(64) uint8_t codes[kChunk][512];
    alignas(64) float cw[kChunk][16];
    alignas(64) float mw[kChunk][16];
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
inline __m512 load_u8x16_ps(const uint8_t* p) {
    return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
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
                std::memcpy(bt, pb + 32, 512);  // chunk g is B row g already
            } else {
                for (int c = 0; c < 4; c++) {  // Q5_0: d[16] | hb (64 bytes) | 4 chunks from byte 96
                    __m512i l, h;
                    avx512_codes::codes<T>(pb + 96, pb + 32, c, l, h);
                    _mm512_store_si512(bt + 128 * c, l);
                    _mm512_store_si512(bt + 128 * c + 64, h);
                }
            }
        } else {  // K-quants: sub-block s of super-block st
            const int64_t st = b / 8;
            const int s = static_cast<int>(b % 8);
            const uint8_t* pb = pp + st * 2 * step;
            const __m512 dw = load_f16x16(pb);
            for (int c = 0; c < 4; c++) {
                __m512i l, h;
                avx512_codes::codes<T>(pb + kKQs + s * 256, pb + kKHb + s * 64, c, l, h);
                _mm512_store_si512(bt + 128 * c, l);
                _mm512_store_si512(bt + 128 * c + 64, h);
            }
            {
                _mm512_store_ps(out.cw[i], _mm512_mul_ps(dw, load_u8x16_ps(pb + kKSc + s * 16)));
                const __m512 dm = _mm512_mul_ps(load_f16x16(pb + kKDmin), load_u8x16_ps(pb + kKMin + s * 16));
                // fma(-dm, s, acc) has the bits of the VNNI kernel's fnmadd(dm, s, acc)
                _mm512_store_ps(out.mw[i], _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(dm), _mm512_set1_epi32(INT32_MIN))));
            }
        }
    }
}

// The integer offset per activation block sum: the unsigned codes' zero point.
template <TensorType T>
constexpr int32_t code_offset() {
    return T == TensorType::Q5_0 ? 16 : T == TensorType::Q8_0 ? 128 : 0;
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
        __m512i I = _mm512_load_si512(ct + 16 * r);
        if constexpr (code_offset<T>() != 0) I = _mm512_add_epi32(I, _mm512_set1_epi32(-code_offset<T>() * a.sum[ab]));
        __m512 v = _mm512_fmadd_ps(_mm512_mul_ps(cw, _mm512_set1_ps(a.d[ab])), _mm512_cvtepi32_ps(I), _mm512_load_ps(acc + 32 * r));
        if constexpr (has_min<T>()) v = _mm512_fmadd_ps(mw, _mm512_set1_ps(a.s[ab]), v);
        _mm512_store_ps(acc + 32 * r, v);
    }
}

// Row tile I x panel J of block b (NP panels): the product into C tile 2I + J.
template <class Tiles, int I, int J>
inline void tile_product() {
    Tiles::template zero<2 * I + J>();
    Tiles::template dot<2 * I + J>();
}

// Blocks [b0, b1) of NM row tiles from m0 (NM = 1 or 2) x the pair's NP panels (NP = 1: the
// second is padding), accumulated onto y (rows ldy apart, ncols valid columns of the pair;
// the first chunk starts from zero).
template <class Tiles, TensorType T, int NM, int NP>
void pair_rows(const QuantizedRows& a, int64_t m0, const Prep& pr, int64_t b0, int64_t b1, float* y, int64_t ldy,
               int ncols) {
    alignas(64) float acc[NM * 16][32];
    __mmask16 mask[2];
    for (int j = 0; j < 2; j++) {
        const int left = ncols - 16 * j;
        mask[j] = left >= 16 ? static_cast<__mmask16>(0xFFFF) : left <= 0 ? 0 : static_cast<__mmask16>((1u << left) - 1u);
    }
    for (int r = 0; r < NM * 16; r++)
        for (int j = 0; j < 2; j++)
            _mm512_store_ps(acc[r] + 16 * j, b0 == 0 ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(mask[j], y + r * ldy + 16 * j));
    const int64_t lda = a.blocks * 32;
    const int8_t* x0 = a.row_qs(m0);
    alignas(64) int32_t cb[4][256];
    for (int64_t b = b0; b < b1; b++) {
        const int i = static_cast<int>(b - b0);
        Tiles::template load<4>(x0 + b * 32, lda);
        if constexpr (NM == 2) Tiles::template load<5>(x0 + 16 * lda + b * 32, lda);
        Tiles::template load<6>(pr.panel[0].codes[i], 64);
        if constexpr (NP == 2) Tiles::template load<7>(pr.panel[1].codes[i], 64);
        tile_product<Tiles, 0, 0>();
        if constexpr (NP == 2) tile_product<Tiles, 0, 1>();
        if constexpr (NM == 2) tile_product<Tiles, 1, 0>();
        if constexpr (NM == 2 && NP == 2) tile_product<Tiles, 1, 1>();
        Tiles::template store<0>(cb[0], 64);
        if constexpr (NP == 2) Tiles::template store<1>(cb[1], 64);
        if constexpr (NM == 2) Tiles::template store<2>(cb[2], 64);
        if constexpr (NM == 2 && NP == 2) Tiles::template store<3>(cb[3], 64);
        for (int ti = 0; ti < NM; ti++)
            for (int j = 0; j < NP; j++) fold<T>(acc[16 * ti] + 16 * j, cb[2 * ti + j], pr.panel[j], i, a, m0 + 16 * ti, b);
    }
    for (int r = 0; r < NM * 16; r++)
        for (int j = 0; j < NP; j++) _mm512_mask_storeu_ps(y + r * ldy + 16 * j, mask[j], _mm512_load_ps(acc[r] + 16 * j));
}

template <class Tiles, TensorType T>
void panels_typed(const MatmulArgs& args, int64_t p0, int64_t p1, int64_t m_tiles, Prep& pr) {
    const PackedWeight& w = *args.w;
    const QuantizedRows& a = *args.a;
    const int64_t nb = a.blocks;
    Tiles::configure(tile_config());
    for (int64_t p = p0; p < p1; p += 2) {
        const int ncols = static_cast<int>(std::min<int64_t>(2 * kPanel, w.rows() - p * kPanel));
        const bool two = ncols > kPanel;  // else the second panel is the zero padding
        for (int64_t b0 = 0; b0 < nb; b0 += kChunk) {
            const int64_t b1 = std::min<int64_t>(nb, b0 + kChunk);
            for (int h = 0; h < (two ? 2 : 1); h++) prepare<T>(w.panel(p) + h * panel_step_bytes(T), b0, b1, pr.panel[h]);
            float* y = args.Y + p * kPanel;
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
                                       t == TensorType::Q5_K);
    Prep* pr = tiles ? prep_buffer() : nullptr;
    if (!pr) {
        matmul_panels_avx512(args, p0, p1);
        return;
    }
    switch (t) {
        case TensorType::Q8_0: panels_typed<Tiles, TensorType::Q8_0>(args, p0, p1, m_tiles, *pr); break;
        case TensorType::Q5_0: panels_typed<Tiles, TensorType::Q5_0>(args, p0, p1, m_tiles, *pr); break;
        case TensorType::Q4_K: panels_typed<Tiles, TensorType::Q4_K>(args, p0, p1, m_tiles, *pr); break;
        case TensorType::Q5_K: panels_typed<Tiles, TensorType::Q5_K>(args, p0, p1, m_tiles, *pr); break;
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
        matmul_panels_avx512(rest, p0, p1);
    }
}

}  // namespace

void matmul_panels_amx(const MatmulArgs& args, int64_t p0, int64_t p1) { panels<AmxTiles>(args, p0, p1); }
void matmul_panels_amx_emulated(const MatmulArgs& args, int64_t p0, int64_t p1) { panels<EmulatedTiles>(args, p0, p1); }

}  // namespace kvrt::kernels

#pragma GCC pop_options

#else  // not x86-64: never selected (kernel_isa_supported() is false); keeps the link whole.

namespace kvrt::kernels {
void matmul_panels_amx(const MatmulArgs& args, int64_t p0, int64_t p1) { matmul_panels_scalar(args, p0, p1); }
void matmul_panels_amx_emulated(const MatmulArgs& args, int64_t p0, int64_t p1) { matmul_panels_scalar(args, p0, p1); }
}  // namespace kvrt::kernels

#endif
