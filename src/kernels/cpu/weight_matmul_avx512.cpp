// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// AVX-512 weight-matmul kernels: integer dot products with VNNI (vpdpbusd:
// unsigned weight codes x signed activation codes, 16 output columns per zmm)
// and f32 FMA for float weights. A tile is MR rows of X x 32 columns (two
// panels): its 32 x 32-element block of weights is loaded once and feeds MR
// rows. Float operations per output element: see weight_matmul_kernels.hpp.
//
// 16-bit activation codes (ActBits::Q16, matmul_panels16_avx512) run the same tiles
// with vpdpwssd (int16 x int16, pairs summed into int32): a 64-byte load holds, per
// panel row, one dword of 4 weight codes (bytes); vpshufb widens bytes 0-1 and 2-3 of
// every dword into two int16 each (zero-extended: the codes are unsigned), so one
// vpdpwssd against activation codes e, e+1 (and one against e+2, e+3) adds into the
// row's own int32, as vpdpbusd does for 8-bit codes. The integer sums are exact and
// the float operations per element are the scalar Q16 path's (Q6_K: two fmas), so
// this path gives the bits of the others.
#include "kernels/cpu/weight_matmul_fused_residual.hpp"
#include "kernels/cpu/weight_matmul_kernels.hpp"
#include "kernels/cpu/weight_matmul_layout.hpp"
#include "kernels/cpu/scratch.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#pragma GCC push_options
// GCC 12 warns falsely inside its own AVX-512 headers (_mm512_undefined_*).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,fma,f16c")

#include "kernels/cpu/weight_codes_avx512.hpp"

namespace kvrt::kernels {

namespace {

using avx512_codes::codes;

// Rows of X per tile (register blocking): 4 rows x 2 panels, or more for 8-bit codes where the
// registers allow, so that each panel's codes are unpacked once for more rows (the tiles are bound by
// their vector operations, not their multiplies: src/kernels/README.md, "Session 28"). Q4_0, Q4_1 and
// Q4_K (one mask and one shift to unpack) take 6: 6 x 2 accumulators. Q5_0 takes 5 (its fifth-bit
// masks leave no room for 6). Measured on an Intel Xeon (model 207, avx512 VNNI; `bench_weight_matmul
// --quick`, 1 thread, M = 512, alternated runs): Q4_1 +7-17% on SmolLM2's shapes, Q4_K 298-304 ->
// 321-329 GOP/s, Q5_0 251-289 -> 304-310 at 5 rows (200-278 at 6). Q6_K (two chains per row) was
// mixed at 5 and 6 and keeps 4, as do 16-bit codes (two vectors per code group). Same integer sums
// and float operations per element: the same bits for any row count.
constexpr int kRows = 4;
constexpr int kQ5Rows = 5;
constexpr int kWideRows = 6;
// 16-bit float weights (F16 / BF16: tile_f) take 8 rows x 2 panels (16 accumulators): each k's
// two weight vectors, widened by one conversion each, serve 8 rows' FMAs instead of 4. On a core
// that splits 512-bit operations in two (AMD Zen 4) the conversions share the FMA pipes, and at 4
// rows they had cost 16-bit weights ~20% of the f32 rate. F32 weights (no conversion) keep 4 rows:
// 8 measured ~4% slower. Each output element is still one FMA chain over k in order: the same
// bits for any row count. (src/kernels/README.md, "Session 49".)
constexpr int kFloatRows = 8;

inline bool wide_float_weights(TensorType t) { return t == TensorType::F16 || t == TensorType::BF16; }

inline int tile_rows(TensorType t, int ab) {
    if (wide_float_weights(t)) return kFloatRows;
    if (ab != 8) return kRows;
    if (t == TensorType::Q4_0 || t == TensorType::Q4_1 || t == TensorType::Q4_K) return kWideRows;
    return t == TensorType::Q5_0 ? kQ5Rows : kRows;
}

// Expanded codes (prefill, Q6_K): a tile unpacks each sub-block's codes (4-bit chunks and their
// 2-bit pairs) for its rows, and every row tile of a panel pair unpacks them again. With enough
// rows, panels() unpacks a pair's codes once into per-thread scratch (expand_pair: per sub-block,
// per panel, the 4 chunks' lo and hi vectors, 1 KiB per sub-block and pair) and its full row tiles
// load them (tile_new<..., XC>). The same bytes, so the same bits. AMD EPYC Zen 4
// (`bench_weight_matmul --quick --kquant-only`, M = 512, 896 x 4864, alternated with the previous
// build): Q6_K 226-248 -> 267-280 GOP/s on 1 thread, 446-461 -> 500-511 on 2 (one run 286). Q5_0,
// Q4_K and Q5_K measured no faster (their tiles are not bound by their unpacking on Zen 4: its
// shifts and masks run beside vpdpbusd), and neither did the fused residual on expanded codes
// (Gemma 3's prefill, `perf`: its share unchanged), so they keep unpacking in the tile.
constexpr size_t kXcBlockBytes = 2 * 8 * 64;
// Row tiles per pair from which expanding pays (its own pass costs about one tile's unpacking).
constexpr int64_t kXcMinTiles = 3;
inline bool expands(TensorType t) { return t == TensorType::Q6_K; }
constexpr int kXcScratchSlot = 8;  // cpu::thread_scratch's slot (attention's use 0-7)

// The weight stream is prefetched weight_prefetch().ahead bytes ahead of the block being computed
// (weight_matmul_kernels.hpp: the distance and level per CPU vendor): the hardware prefetchers
// alone leave a decode GEMV at ~60% of the STREAM read.
inline void prefetch_line(const uint8_t* p, bool l2) {
    if (l2) _mm_prefetch(reinterpret_cast<const char*>(p), _MM_HINT_T1);
    else _mm_prefetch(reinterpret_cast<const char*>(p), _MM_HINT_T0);
}

struct Tile {
    const uint8_t* panel;  // the panel pair (PackedWeight::panel(p), p even)
    bool prefetch;         // prefetch the weight stream (first row tile of the pair)
    WeightPrefetch pf;     // how (weight_prefetch(), read once per call)
    int64_t m0;            // first row of X / Y
    float* y;              // Y + m0 * ldy + first column
    int64_t ldy;
    int ncols;             // valid columns (1..16*NP)
    bool sparse;           // MatmulArgs::sparse_blocks
    const MarkedStepRows* rrows;  // MatmulArgs::residual_rows (8-bit codes)
    const uint8_t* xc = nullptr;  // the pair's codes unpacked (expand_pair), for tiles with XC
};

template <int N>
using Int = std::integral_constant<int, N>;

alignas(64) constexpr int8_t kZeroCodes[32] = {};

// The fused residual (weight_matmul_fused_residual.hpp) of a panel pair whose row tiles have stored
// their chains (t: the pair from row 0): per step in increasing order, blk(Int<RR>, st, rows) adds
// the residual products of RR (1..kFusedResidualGroup) of the rows marked there to their rows of Y.
template <class Blk>
void fused_residual_pair(const Tile& t, Blk&& blk) {
    static_assert(kFusedResidualGroup == 4, "update the dispatch");
    const MarkedStepRows& l = *t.rrows;
    for (int64_t k = 0; k < l.n_marked; k++) {
        const int64_t st = l.marked[k];
        const int64_t* rows = l.rows + l.start[st];
        const int64_t n = l.start[st + 1] - l.start[st];
        for (int64_t i = 0; i < n; i += kFusedResidualGroup) {
            switch (std::min<int64_t>(n - i, kFusedResidualGroup)) {
                case 1: blk(Int<1>{}, st, rows + i); break;
                case 2: blk(Int<2>{}, st, rows + i); break;
                case 3: blk(Int<3>{}, st, rows + i); break;
                default: blk(Int<4>{}, st, rows + i); break;
            }
        }
    }
}

// Y row m of the tile's columns += v (its valid columns).
template <int NP>
inline void add_to_row(const Tile& t, int64_t m, const __m512 (&v)[NP]) {
    #pragma GCC unroll 8
    for (int p = 0; p < NP; p++) {
        const int left = t.ncols - 16 * p;
        if (left <= 0) break;
        const __mmask16 mask = left >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << left) - 1u);
        float* y = t.y + m * t.ldy + 16 * p;
        _mm512_mask_storeu_ps(y, mask, _mm512_add_ps(_mm512_maskz_loadu_ps(mask, y), v[p]));
    }
}

inline int32_t load_i32(const void* p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return v;
}

// Activation codes of AB bits (8: vpdpbusd, 16: vpdpwssd; see the top of the file).
template <int AB>
using Code = std::conditional_t<AB == 16, int16_t, int8_t>;

template <int AB>
inline const Code<AB>* act_row(const QuantizedRows& a, int64_t m) {
    if constexpr (AB == 16) return a.row_q16(m);
    else return a.row_qs(m);
}

// 64 bytes of weight codes (dword r = 4 unsigned codes of panel row r), ready for dot().
template <int AB>
struct WCodes {
    __m512i v[AB == 16 ? 2 : 1];
};
template <int AB>
inline WCodes<AB> wcodes(__m512i w) {
    if constexpr (AB == 16) {
        // per dword: bytes 0, 1 -> the two int16 of the first vector; bytes 2, 3 -> of the second
        // (-128: a zero byte; vpshufb indexes within each 128-bit lane)
        const __m512i c01 = _mm512_broadcast_i32x4(_mm_setr_epi8(0, -128, 1, -128, 4, -128, 5, -128, 8, -128, 9, -128, 12, -128, 13, -128));
        const __m512i c23 = _mm512_broadcast_i32x4(_mm_setr_epi8(2, -128, 3, -128, 6, -128, 7, -128, 10, -128, 11, -128, 14, -128, 15, -128));
        return {{_mm512_shuffle_epi8(w, c01), _mm512_shuffle_epi8(w, c23)}};
    } else {
        return {{w}};
    }
}

// The 4 activation codes x[0..3], broadcast for dot().
template <int AB>
struct XCodes {
    __m512i v[AB == 16 ? 2 : 1];
};
template <int AB>
inline XCodes<AB> xcodes(const Code<AB>* x) {
    if constexpr (AB == 16) return {{_mm512_set1_epi32(load_i32(x)), _mm512_set1_epi32(load_i32(x + 2))}};
    else return {{_mm512_set1_epi32(load_i32(x))}};
}

// d += per panel row, sum over the 4 elements of weight code x activation code.
template <int AB>
inline __m512i dot(__m512i d, const WCodes<AB>& w, const XCodes<AB>& x) {
    if constexpr (AB == 16) return _mm512_dpwssd_epi32(_mm512_dpwssd_epi32(d, w.v[0], x.v[0]), w.v[1], x.v[1]);
    else return _mm512_dpbusd_epi32(d, w.v[0], x.v[0]);
}

template <int MR, int NP>
inline void store_tile(const Tile& t, __m512 (&acc)[MR][NP]) {
    #pragma GCC unroll 8
    for (int p = 0; p < NP; p++) {
        const int left = t.ncols - 16 * p;
        if (left <= 0) break;
        const __mmask16 mask = left >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << left) - 1u);
        #pragma GCC unroll 8
        for (int r = 0; r < MR; r++) _mm512_mask_storeu_ps(t.y + r * t.ldy + 16 * p, mask, acc[r][p]);
    }
}

template <bool Q41, int MR, int NP, int AB, bool FUSE = false>
void tile_q4(const Tile& t, const QuantizedRows& a) {
    const WeightPrefetch& pf = t.pf;
    constexpr size_t step = Q41 ? kQ4_1PanelBlock : kQ4_0PanelBlock;
    constexpr size_t qoff = Q41 ? 64 : 32;
    const int64_t nb = a.blocks;
    const __m512i lo = _mm512_set1_epi8(0x0F);
    __m512 acc[MR][NP];
    #pragma GCC unroll 8
    for (int r = 0; r < MR; r++)
        #pragma GCC unroll 8
        for (int p = 0; p < NP; p++) acc[r][p] = _mm512_setzero_ps();
    const Code<AB>* xq[MR];
    #pragma GCC unroll 8
    for (int r = 0; r < MR; r++) xq[r] = act_row<AB>(a, t.m0 + r);
    // Block b: for the tile's MR rows (RR = 0), or for the residual codes of RR marked rows (the
    // fused residual: rows rrow, their products added to Y).
    auto blk = [&](auto rr, int64_t b, const int64_t* rrow) {
        constexpr int RR = decltype(rr)::value, MX = RR == 0 ? MR : 0;
        constexpr int MA = MX > 0 ? MX : 1, RA = RR > 0 ? RR : 1;
        const uint8_t* pb = t.panel + b * 2 * step;
        if (MX > 0 && t.prefetch)
            for (size_t o = 0; o < 2 * step; o += 64)
                prefetch_line(pb + pf.ahead + o, pf.l2);
        // With few rows the vpdpbusd chains are too few to hide their latency:
        // split each in two (integer sums: exact, the result is unchanged).
        constexpr bool kSplit = MR <= 2;
        // The residual rows (alone) take two chains each, chunks 0-1 and 2-3: shorter dependent
        // vpdpbusd chains (integer sums: exact).
        __m512i ia[MA][NP], ib[MA][NP], ir[RA][NP][2];
        const int8_t* xr[RA];
        #pragma GCC unroll 8
        for (int r = 0; r < MX; r++) {
            const __m512i init = Q41 ? _mm512_setzero_si512() : _mm512_set1_epi32(-8 * a.sum[(t.m0 + r) * nb + b]);
            #pragma GCC unroll 8
            for (int p = 0; p < NP; p++) ia[r][p] = init, ib[r][p] = _mm512_setzero_si512();
        }
        #pragma GCC unroll 8
        for (int k = 0; k < RR; k++) {
            const int64_t ab = (t.m0 + rrow[k]) * nb + b;
            xr[k] = a.rq + ab * 32;
            const __m512i init = Q41 ? _mm512_setzero_si512() : _mm512_set1_epi32(-8 * a.rsum[ab]);
            #pragma GCC unroll 8
            for (int p = 0; p < NP; p++) ir[k][p][0] = init, ir[k][p][1] = _mm512_setzero_si512();
        }
        #pragma GCC unroll 8
        for (int c = 0; c < 4; c++) {
            WCodes<AB> wl[NP], wh[NP];
            #pragma GCC unroll 8
            for (int p = 0; p < NP; p++) {
                const __m512i w = _mm512_loadu_si512(pb + p * step + qoff + c * 64);
                wl[p] = wcodes<AB>(_mm512_and_si512(w, lo));
                wh[p] = wcodes<AB>(_mm512_and_si512(_mm512_srli_epi16(w, 4), lo));
            }
            #pragma GCC unroll 8
            for (int r = 0; r < MX; r++) {
                const Code<AB>* xb = xq[r] + b * 32 + 8 * c;
                const XCodes<AB> x0 = xcodes<AB>(xb), x1 = xcodes<AB>(xb + 4);
                #pragma GCC unroll 8
                for (int p = 0; p < NP; p++) {
                    ia[r][p] = dot<AB>(ia[r][p], wl[p], x0);
                    if (kSplit) ib[r][p] = dot<AB>(ib[r][p], wh[p], x1);
                    else ia[r][p] = dot<AB>(ia[r][p], wh[p], x1);
                }
            }
            if constexpr (RR > 0) {
                #pragma GCC unroll 8
                for (int k = 0; k < RR; k++) {
                    const XCodes<8> x0 = xcodes<8>(xr[k] + 8 * c), x1 = xcodes<8>(xr[k] + 8 * c + 4);
                    #pragma GCC unroll 8
                    for (int p = 0; p < NP; p++) ir[k][p][c >> 1] = dot<8>(dot<8>(ir[k][p][c >> 1], wl[p], x0), wh[p], x1);
                }
            }
        }
        if (kSplit)
            #pragma GCC unroll 8
            for (int r = 0; r < MX; r++)
                #pragma GCC unroll 8
                for (int p = 0; p < NP; p++) ia[r][p] = _mm512_add_epi32(ia[r][p], ib[r][p]);
        __m512 dw[NP], mw[NP];
        #pragma GCC unroll 8
        for (int p = 0; p < NP; p++) {
            const uint8_t* pp = pb + p * step;
            dw[p] = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(pp)));
            if (Q41) mw[p] = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(pp + 32)));
        }
        #pragma GCC unroll 8
        for (int r = 0; r < MX; r++) {
            const __m512 da = _mm512_set1_ps(a.d[(t.m0 + r) * nb + b]);
            const __m512 sa = Q41 ? _mm512_set1_ps(a.s[(t.m0 + r) * nb + b]) : _mm512_setzero_ps();
            #pragma GCC unroll 8
            for (int p = 0; p < NP; p++) {
                acc[r][p] = _mm512_fmadd_ps(_mm512_mul_ps(dw[p], da), _mm512_cvtepi32_ps(ia[r][p]), acc[r][p]);
                if (Q41) acc[r][p] = _mm512_fmadd_ps(mw[p], sa, acc[r][p]);
            }
        }
        // The residual products from 0, their min term with s = 0 (the main codes' s covers it).
        #pragma GCC unroll 8
        for (int k = 0; k < RR; k++) {
            const __m512 rd = _mm512_set1_ps(a.rd[(t.m0 + rrow[k]) * nb + b]), zero = _mm512_setzero_ps();
            __m512 v[NP];
            #pragma GCC unroll 8
            for (int p = 0; p < NP; p++) {
                v[p] = _mm512_fmadd_ps(_mm512_mul_ps(dw[p], rd), _mm512_cvtepi32_ps(_mm512_add_epi32(ir[k][p][0], ir[k][p][1])), zero);
                if (Q41) v[p] = _mm512_fmadd_ps(mw[p], zero, v[p]);
            }
            add_to_row<NP>(t, rrow[k], v);
        }
    };
    if constexpr (FUSE) {  // the fused residual of the pair (its row tiles have run)
        fused_residual_pair(t, [&](auto rr, int64_t b, const int64_t* rows) { blk(rr, b, rows); });
        return;
    }
    for (int64_t b = 0; b < nb; b++) blk(Int<0>{}, b, nullptr);
    store_tile<MR, NP>(t, acc);
}

template <int MR, int NP, int AB, bool FUSE = false>
void tile_q8(const Tile& t, const QuantizedRows& a) {
    const WeightPrefetch& pf = t.pf;
    const int64_t nb = a.blocks;
    __m512 acc[MR][NP];
    #pragma GCC unroll 8
    for (int r = 0; r < MR; r++)
        #pragma GCC unroll 8
        for (int p = 0; p < NP; p++) acc[r][p] = _mm512_setzero_ps();
    const Code<AB>* xq[MR];
    #pragma GCC unroll 8
    for (int r = 0; r < MR; r++) xq[r] = act_row<AB>(a, t.m0 + r);
    // Block b for the tile's rows or RR residual rows, as in tile_q4.
    auto blk = [&](auto rr, int64_t b, const int64_t* rrow) {
        constexpr int RR = decltype(rr)::value, MX = RR == 0 ? MR : 0;
        constexpr int MA = MX > 0 ? MX : 1, RA = RR > 0 ? RR : 1;
        const uint8_t* pb = t.panel + b * 2 * kQ8_0PanelBlock;
        if (MX > 0 && t.prefetch)
            for (size_t o = 0; o < 2 * kQ8_0PanelBlock; o += 64)
                prefetch_line(pb + pf.ahead + o, pf.l2);
        constexpr bool kSplit = MR <= 2;  // as in tile_q4
        __m512i ia[MA][NP], ib[MA][NP], ir[RA][NP][2];  // (residual rows: 2 chains, as in tile_q4)
        const int8_t* xr[RA];
        #pragma GCC unroll 8
        for (int r = 0; r < MX; r++) {
            const __m512i init = _mm512_set1_epi32(-128 * a.sum[(t.m0 + r) * nb + b]);
            #pragma GCC unroll 8
            for (int p = 0; p < NP; p++) ia[r][p] = init, ib[r][p] = _mm512_setzero_si512();
        }
        #pragma GCC unroll 8
        for (int k = 0; k < RR; k++) {
            const int64_t ab = (t.m0 + rrow[k]) * nb + b;
            xr[k] = a.rq + ab * 32;
            const __m512i init = _mm512_set1_epi32(-128 * a.rsum[ab]);
            #pragma GCC unroll 8
            for (int p = 0; p < NP; p++) ir[k][p][0] = init, ir[k][p][1] = _mm512_setzero_si512();
        }
        #pragma GCC unroll 8
        for (int g = 0; g < 8; g++) {
            WCodes<AB> w[NP];
            #pragma GCC unroll 8
            for (int p = 0; p < NP; p++) w[p] = wcodes<AB>(_mm512_loadu_si512(pb + p * kQ8_0PanelBlock + 32 + g * 64));
            #pragma GCC unroll 8
            for (int r = 0; r < MX; r++) {
                const XCodes<AB> x = xcodes<AB>(xq[r] + b * 32 + 4 * g);
                #pragma GCC unroll 8
                for (int p = 0; p < NP; p++) {
                    if (kSplit && (g & 1)) ib[r][p] = dot<AB>(ib[r][p], w[p], x);
                    else ia[r][p] = dot<AB>(ia[r][p], w[p], x);
                }
            }
            if constexpr (RR > 0) {
                #pragma GCC unroll 8
                for (int k = 0; k < RR; k++) {
                    const XCodes<8> x = xcodes<8>(xr[k] + 4 * g);
                    #pragma GCC unroll 8
                    for (int p = 0; p < NP; p++) ir[k][p][g >> 2] = dot<8>(ir[k][p][g >> 2], w[p], x);
                }
            }
        }
        if (kSplit)
            #pragma GCC unroll 8
            for (int r = 0; r < MX; r++)
                #pragma GCC unroll 8
                for (int p = 0; p < NP; p++) ia[r][p] = _mm512_add_epi32(ia[r][p], ib[r][p]);
        __m512 dw[NP];
        #pragma GCC unroll 8
        for (int p = 0; p < NP; p++)
            dw[p] = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(pb + p * kQ8_0PanelBlock)));
        #pragma GCC unroll 8
        for (int r = 0; r < MX; r++) {
            const __m512 da = _mm512_set1_ps(a.d[(t.m0 + r) * nb + b]);
            #pragma GCC unroll 8
            for (int p = 0; p < NP; p++)
                acc[r][p] = _mm512_fmadd_ps(_mm512_mul_ps(dw[p], da), _mm512_cvtepi32_ps(ia[r][p]), acc[r][p]);
        }
        #pragma GCC unroll 8
        for (int k = 0; k < RR; k++) {
            const __m512 rd = _mm512_set1_ps(a.rd[(t.m0 + rrow[k]) * nb + b]);
            __m512 v[NP];
            #pragma GCC unroll 8
            for (int p = 0; p < NP; p++)
                v[p] = _mm512_fmadd_ps(_mm512_mul_ps(dw[p], rd), _mm512_cvtepi32_ps(_mm512_add_epi32(ir[k][p][0], ir[k][p][1])),
                                       _mm512_setzero_ps());
            add_to_row<NP>(t, rrow[k], v);
        }
    };
    if constexpr (FUSE) {  // the fused residual of the pair (its row tiles have run)
        fused_residual_pair(t, [&](auto rr, int64_t b, const int64_t* rows) { blk(rr, b, rows); });
        return;
    }
    for (int64_t b = 0; b < nb; b++) blk(Int<0>{}, b, nullptr);
    store_tile<MR, NP>(t, acc);
}

// Q5_0 and the K-quants: per step (a Q5_0 block or a 256-element super-block),
// per 32-element sub-block, the integer dots over elements 0..15 (lo) and 16..31
// (hi) of the block (two vpdpbusd chains), then the float operations of
// weight_matmul_kernels.hpp.
template <TensorType T, int MR, int NP, int AB, bool FUSE = false, bool XC = false>
void tile_new(const Tile& t, const QuantizedRows& a) {
    static_assert(!XC || NP == 2, "expanded codes are laid out per panel pair");
    const WeightPrefetch& pf = t.pf;
    constexpr size_t step = panel_step_bytes(T);
    constexpr SubBlockLayout kL = sub_block_layout(T);
    constexpr int kSubs = kL.subs;
    constexpr size_t qoff = kL.qs, hoff = kL.hx, hstep = kL.hstep;
    constexpr size_t pf_chunk = ((2 * step + kSubs - 1) / kSubs + 63) & ~size_t{63};
    // Two vpdpbusd chains per output vector (elements 0..15 and 16..31): Q6_K needs
    // both sums; the others add them (exact), and with many rows one chain keeps the
    // registers free while the rows hide its latency.
    constexpr bool kTwo = T == TensorType::Q6_K || MR <= 2;
    const int64_t nb = a.blocks;
    __m512 acc[MR][NP];
    #pragma GCC unroll 8
    for (int r = 0; r < MR; r++)
        #pragma GCC unroll 8
        for (int p = 0; p < NP; p++) acc[r][p] = _mm512_setzero_ps();
    const Code<AB>* xq[MR];
    #pragma GCC unroll 8
    for (int r = 0; r < MR; r++) xq[r] = act_row<AB>(a, t.m0 + r);
    // Sub-block s of step st, whose bytes start at pb and whose super-block scales are dw, for the
    // tile's MR rows (RR = 0) or for the residual codes of RR marked rows (the fused residual:
    // rrow, their products accumulated in pacc where their block s is marked). It is a
    // lambda called from the step loop rather than the loop's body: the same operations, but GCC 12
    // inlines it late and then schedules the 5-row Q5_0 tile better (Q5_0 prefill 296-301 -> 318-326
    // GOP/s on 1 thread, 597-599 -> 627-650 on 2; bench_weight_matmul --quick, AMD EPYC Zen 4; the
    // K-quants unchanged). Inlined early (always_inline), the K-quants' decode tiles ran at half
    // speed. The AVX2 tiles in this shape measured no gain and keep the loop body.
    auto sub = [&](auto rr, int64_t st, int s, const uint8_t* pb, const __m512 (&dw)[NP], const int64_t* rrow,
                   __m512 (*pacc)[NP]) {
        constexpr int RR = decltype(rr)::value, MX = RR == 0 ? MR : 0;
        constexpr int MA = MX > 0 ? MX : 1, RA = RR > 0 ? RR : 1;
        const int64_t b = st * kSubs + s;
        if (MX > 0 && t.sparse && all_zero_scales<MR>(a, t.m0, b)) return;
        if (MX > 0 && t.prefetch)
            for (size_t o = 0; o < pf_chunk; o += 64)
                prefetch_line(pb + s * pf_chunk + pf.ahead + o, pf.l2);
        __m512i ilo[MA][NP], ihi[MA][NP], rc[RA][NP][2];  // (residual rows: elements 0..15, 16..31)
        const int8_t* xr[RA];
        // Q5_0 and Q6_K: the -16 * sum(x) / -32 * sum(x) offsets start the chains (exact: integer
        // sums); Q6_K's two chains take their groups' (kTwo).
        auto init = [&](int32_t sum, int32_t sum_lo, __m512i& lo_, __m512i& hi_) {
            lo_ = _mm512_setzero_si512(), hi_ = _mm512_setzero_si512();
            if constexpr (T == TensorType::Q5_0) lo_ = _mm512_set1_epi32(-16 * sum);
            if constexpr (T == TensorType::Q6_K) {
                lo_ = _mm512_set1_epi32(-32 * sum_lo);
                hi_ = _mm512_set1_epi32(-32 * (sum - sum_lo));
            }
        };
        #pragma GCC unroll 8
        for (int r = 0; r < MX; r++) {
            const int64_t ab = (t.m0 + r) * nb + b;
            __m512i i0, i1;
            init(a.sum[ab], T == TensorType::Q6_K ? a.sum_lo[ab] : 0, i0, i1);
            #pragma GCC unroll 8
            for (int p = 0; p < NP; p++) ilo[r][p] = i0, ihi[r][p] = i1;
        }
        #pragma GCC unroll 8
        for (int k = 0; k < RR; k++) {
            // A group row not marked at this block of its K-quant step has no residual codes or
            // sums here (they are written for marked blocks only): zeros, whose product the update
            // below skips anyway.
            const int64_t ab = (t.m0 + rrow[k]) * nb + b;
            const bool mark = a.rd[ab] != 0.0f;
            xr[k] = mark ? a.rq + ab * 32 : kZeroCodes;
            __m512i i0, i1;
            init(mark ? a.rsum[ab] : 0, mark && T == TensorType::Q6_K ? a.rsum_lo[ab] : 0, i0, i1);
            #pragma GCC unroll 8
            for (int p = 0; p < NP; p++) rc[k][p][0] = i0, rc[k][p][1] = i1;
        }
        #pragma GCC unroll 8
        for (int c = 0; c < 4; c++) {
            WCodes<AB> wl[NP], wh[NP];
            #pragma GCC unroll 8
            for (int p = 0; p < NP; p++) {
                __m512i l, h;
                if constexpr (XC) {  // unpacked once for the pair (expand_pair)
                    const uint8_t* q = t.xc + (static_cast<size_t>(b) * 2 + p) * kXcBlockBytes / 2 + c * 128;
                    l = _mm512_load_si512(q);
                    h = _mm512_load_si512(q + 64);
                } else {
                    codes<T>(pb + p * step + qoff + s * 256, pb + p * step + hoff + s * hstep, c, l, h);
                }
                wl[p] = wcodes<AB>(l);
                wh[p] = wcodes<AB>(h);
            }
            #pragma GCC unroll 8
            for (int r = 0; r < MX; r++) {
                const Code<AB>* xb = xq[r] + b * 32 + 8 * c;
                const XCodes<AB> x0 = xcodes<AB>(xb), x1 = xcodes<AB>(xb + 4);
                #pragma GCC unroll 8
                for (int p = 0; p < NP; p++) {
                    __m512i& d = kTwo && c >= 2 ? ihi[r][p] : ilo[r][p];
                    d = dot<AB>(d, wl[p], x0);
                    d = dot<AB>(d, wh[p], x1);
                }
            }
            if constexpr (RR > 0) {
                #pragma GCC unroll 8
                for (int k = 0; k < RR; k++) {
                    const XCodes<8> x0 = xcodes<8>(xr[k] + 8 * c), x1 = xcodes<8>(xr[k] + 8 * c + 4);
                    #pragma GCC unroll 8
                    for (int p = 0; p < NP; p++) {
                        rc[k][p][c >> 1] = dot<8>(dot<8>(rc[k][p][c >> 1], wl[p], x0), wh[p], x1);
                    }
                }
            }
        }
        // The residual rows' products (added to pacc, from 0 at the step) where their block s is
        // marked, their min terms with s = 0 (the main codes' s covers them).
        auto rd_of = [&](int k) { return a.rd[(t.m0 + rrow[k]) * nb + b]; };
        auto rlo = [&](int k, int p) { return rc[k][p][0]; };
        auto rhi = [&](int k, int p) { return rc[k][p][1]; };
        // pacc[k][p] = f(k, p, rd, pacc[k][p]) for the residual rows marked at b (an unmarked one
        // would add exactly nothing).
        auto residual = [&](auto&& f) {
            #pragma GCC unroll 8
            for (int k = 0; k < RR; k++) {
                if (rd_of(k) == 0.0f) continue;
                const __m512 rd = _mm512_set1_ps(rd_of(k));
                #pragma GCC unroll 8
                for (int p = 0; p < NP; p++) pacc[k][p] = f(k, p, rd, pacc[k][p]);
            }
        };
        if constexpr (T == TensorType::Q5_0) {
            #pragma GCC unroll 8
            for (int r = 0; r < MX; r++) {
                const int64_t ab = (t.m0 + r) * nb + b;
                const __m512 da = _mm512_set1_ps(a.d[ab]);
                #pragma GCC unroll 8
                for (int p = 0; p < NP; p++) {
                    const __m512i I = kTwo ? _mm512_add_epi32(ilo[r][p], ihi[r][p]) : ilo[r][p];
                    acc[r][p] = _mm512_fmadd_ps(_mm512_mul_ps(dw[p], da), _mm512_cvtepi32_ps(I), acc[r][p]);
                }
            }
            residual([&](int k, int p, __m512 rd, __m512 v) {
                return _mm512_fmadd_ps(_mm512_mul_ps(dw[p], rd), _mm512_cvtepi32_ps(_mm512_add_epi32(rlo(k, p), rhi(k, p))), v);
            });
        } else if constexpr (T == TensorType::Q6_K) {
            // I = sc0 * Ilo + sc1 * Ihi (the chains hold the offsets already). With 8-bit codes
            // each group sum is at most 16 * 32 * 128 = 2^16 in magnitude and a scale at most 128,
            // so the products and their sum are integers of at most 2^24: exact in f32, and
            // fma(Ihi, sc1, Ilo * sc0) gives the bits of the int32 formula's (float)I without
            // vpmulld (2 uops on port 0, which vpdpbusd needs). 16-bit codes: each group product
            // fits int32 (their sum need not), two fmas.
            __m512i sc0[NP], sc1[NP];
            __m512 sf0[NP], sf1[NP];
            #pragma GCC unroll 8
            for (int p = 0; p < NP; p++) {
                const uint8_t* sp = pb + p * step + kQ6Sc + (2 * s) * 16;
                sc0[p] = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sp)));
                sc1[p] = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sp + 16)));
                if constexpr (AB == 8) sf0[p] = _mm512_cvtepi32_ps(sc0[p]), sf1[p] = _mm512_cvtepi32_ps(sc1[p]);
            }
            #pragma GCC unroll 8
            for (int r = 0; r < MX; r++) {
                const __m512 da = _mm512_set1_ps(a.d[(t.m0 + r) * nb + b]);
                #pragma GCC unroll 8
                for (int p = 0; p < NP; p++) {
                    const __m512 dd = _mm512_mul_ps(dw[p], da);
                    if constexpr (AB == 16) {
                        acc[r][p] = _mm512_fmadd_ps(dd, _mm512_cvtepi32_ps(_mm512_mullo_epi32(sc0[p], ilo[r][p])), acc[r][p]);
                        acc[r][p] = _mm512_fmadd_ps(dd, _mm512_cvtepi32_ps(_mm512_mullo_epi32(sc1[p], ihi[r][p])), acc[r][p]);
                    } else {
                        const __m512 I = _mm512_fmadd_ps(_mm512_cvtepi32_ps(ihi[r][p]), sf1[p],
                                                         _mm512_mul_ps(_mm512_cvtepi32_ps(ilo[r][p]), sf0[p]));
                        acc[r][p] = _mm512_fmadd_ps(dd, I, acc[r][p]);
                    }
                }
            }
            if constexpr (RR > 0)
                residual([&](int k, int p, __m512 rd, __m512 v) {
                    const __m512 I = _mm512_fmadd_ps(_mm512_cvtepi32_ps(rhi(k, p)), sf1[p],
                                                     _mm512_mul_ps(_mm512_cvtepi32_ps(rlo(k, p)), sf0[p]));
                    return _mm512_fmadd_ps(_mm512_mul_ps(dw[p], rd), I, v);
                });
        } else {  // Q4_K, Q5_K
            __m512 ds[NP], dm[NP];
            #pragma GCC unroll 8
            for (int p = 0; p < NP; p++) {
                const uint8_t* pp = pb + p * step;
                const __m512 sc = _mm512_cvtepi32_ps(
                    _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(pp + kKSc + s * 16))));
                const __m512 mn = _mm512_cvtepi32_ps(
                    _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(pp + kKMin + s * 16))));
                ds[p] = _mm512_mul_ps(dw[p], sc);
                dm[p] = _mm512_mul_ps(_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(pp + kKDmin))), mn);
            }
            #pragma GCC unroll 8
            for (int r = 0; r < MX; r++) {
                const int64_t ab = (t.m0 + r) * nb + b;
                const __m512 da = _mm512_set1_ps(a.d[ab]);
                const __m512 sa = _mm512_set1_ps(a.s[ab]);
                #pragma GCC unroll 8
                for (int p = 0; p < NP; p++) {
                    const __m512i I = kTwo ? _mm512_add_epi32(ilo[r][p], ihi[r][p]) : ilo[r][p];
                    acc[r][p] = _mm512_fmadd_ps(_mm512_mul_ps(ds[p], da), _mm512_cvtepi32_ps(I), acc[r][p]);
                    acc[r][p] = _mm512_fnmadd_ps(dm[p], sa, acc[r][p]);
                }
            }
            residual([&](int k, int p, __m512 rd, __m512 v) {
                v = _mm512_fmadd_ps(_mm512_mul_ps(ds[p], rd), _mm512_cvtepi32_ps(_mm512_add_epi32(rlo(k, p), rhi(k, p))), v);
                return _mm512_fnmadd_ps(dm[p], _mm512_setzero_ps(), v);
            });
        }
    };
    auto scales = [&](const uint8_t* pb, __m512 (&dw)[NP]) {
        #pragma GCC unroll 8
        for (int p = 0; p < NP; p++)
            dw[p] = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(pb + p * step)));
    };
    if constexpr (FUSE) {  // the fused residual of the pair (its row tiles have run)
        fused_residual_pair(t, [&](auto rr, int64_t st, const int64_t* rows) {
            constexpr int RR = decltype(rr)::value;
            const uint8_t* pb = t.panel + st * 2 * step;
            __m512 dw[NP], pacc[RR][NP];
            scales(pb, dw);
            #pragma GCC unroll 8
            for (int k = 0; k < RR; k++)
                #pragma GCC unroll 8
                for (int p = 0; p < NP; p++) pacc[k][p] = _mm512_setzero_ps();
            for (int s = 0; s < kSubs; s++) {  // the step's blocks where one of the rows is marked
                bool marked = false;
                #pragma GCC unroll 8
                for (int k = 0; k < RR; k++) marked |= a.rd[rows[k] * nb + st * kSubs + s] != 0.0f;
                if (marked) sub(rr, st, s, pb, dw, rows, pacc);
            }
            #pragma GCC unroll 8
            for (int k = 0; k < RR; k++) add_to_row<NP>(t, rows[k], pacc[k]);
        });
        return;
    }
    for (int64_t st = 0; st < nb / kSubs; st++) {
        const uint8_t* pb = t.panel + st * 2 * step;
        __m512 dw[NP];
        scales(pb, dw);
        for (int s = 0; s < kSubs; s++) sub(Int<0>{}, st, s, pb, dw, nullptr, nullptr);
    }
    store_tile<MR, NP>(t, acc);
}

// The codes of a panel pair's nb sub-blocks from pb (tile_new's layout), unpacked into xc
// (kXcBlockBytes per sub-block), prefetching the weight stream ahead as the first row tile would.
template <TensorType T>
void expand_pair(const uint8_t* pb, int64_t nb, uint8_t* xc, const WeightPrefetch& pf) {
    constexpr size_t step = panel_step_bytes(T);
    constexpr SubBlockLayout kL = sub_block_layout(T);
    constexpr int kSubs = kL.subs;
    constexpr size_t qoff = kL.qs, hoff = kL.hx, hstep = kL.hstep;
    for (int64_t st = 0; st < nb / kSubs; st++) {
        const uint8_t* ps = pb + st * 2 * step;
        for (size_t o = 0; o < 2 * step; o += 64) prefetch_line(ps + pf.ahead + o, pf.l2);
        for (int s = 0; s < kSubs; s++) {
            uint8_t* q = xc + static_cast<size_t>(st * kSubs + s) * kXcBlockBytes;
            #pragma GCC unroll 2
            for (int p = 0; p < 2; p++)
                #pragma GCC unroll 4
                for (int c = 0; c < 4; c++) {
                    __m512i l, h;
                    codes<T>(ps + p * step + qoff + s * 256, ps + p * step + hoff + s * hstep, c, l, h);
                    _mm512_store_si512(q + p * (kXcBlockBytes / 2) + c * 128, l);
                    _mm512_store_si512(q + p * (kXcBlockBytes / 2) + c * 128 + 64, h);
                }
        }
    }
}

template <TensorType T>
inline __m512 load_w(const uint8_t* p) {
    if constexpr (T == TensorType::F32) {
        return _mm512_loadu_ps(p);
    } else if constexpr (T == TensorType::F16) {
        return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    } else {
        const __m512i u = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
        return _mm512_castsi512_ps(_mm512_slli_epi32(u, 16));
    }
}

template <TensorType T, int MR, int NP>
void tile_f(const Tile& t, const float* X, int64_t ldx, int64_t K) {
    const WeightPrefetch& pf = t.pf;
    constexpr size_t step = panel_step_bytes(T);
    __m512 acc[MR][NP];
    #pragma GCC unroll 8
    for (int r = 0; r < MR; r++)
        #pragma GCC unroll 8
        for (int p = 0; p < NP; p++) acc[r][p] = _mm512_setzero_ps();
    const float* x[MR];
    #pragma GCC unroll 8
    for (int r = 0; r < MR; r++) x[r] = X + (t.m0 + r) * ldx;
    for (int64_t k = 0; k < K; k++) {
        const uint8_t* pk = t.panel + k * 2 * step;
        if (t.prefetch)
            for (size_t o = 0; o < 2 * step; o += 64)
                prefetch_line(pk + pf.ahead + o, pf.l2);
        __m512 w[NP];
        #pragma GCC unroll 8
        for (int p = 0; p < NP; p++) w[p] = load_w<T>(pk + p * step);
        #pragma GCC unroll 8
        for (int r = 0; r < MR; r++) {
            const __m512 xv = _mm512_set1_ps(x[r][k]);
            #pragma GCC unroll 8
            for (int p = 0; p < NP; p++) acc[r][p] = _mm512_fmadd_ps(w[p], xv, acc[r][p]);
        }
    }
    store_tile<MR, NP>(t, acc);
}

// Float weights' tiles of MR rows (run_tile's, and run_rows' 5 to kFloatRows for 16-bit weights).
template <int MR, int NP>
void run_float_tile(const MatmulArgs& args, const Tile& t) {
    switch (args.w->type()) {
        case TensorType::F32: tile_f<TensorType::F32, MR, NP>(t, args.X, args.ldx, args.w->cols()); break;
        case TensorType::F16: tile_f<TensorType::F16, MR, NP>(t, args.X, args.ldx, args.w->cols()); break;
        case TensorType::BF16: tile_f<TensorType::BF16, MR, NP>(t, args.X, args.ldx, args.w->cols()); break;
        default: break;
    }
}

template <int MR, int NP, int AB>
void run_tile(const MatmulArgs& args, const Tile& t) {
    switch (args.w->type()) {
        case TensorType::Q4_1: tile_q4<true, MR, NP, AB>(t, *args.a); break;
        case TensorType::Q4_0: tile_q4<false, MR, NP, AB>(t, *args.a); break;
        case TensorType::Q8_0: tile_q8<MR, NP, AB>(t, *args.a); break;
        case TensorType::Q5_0: tile_new<TensorType::Q5_0, MR, NP, AB>(t, *args.a); break;
        case TensorType::Q4_K: tile_new<TensorType::Q4_K, MR, NP, AB>(t, *args.a); break;
        case TensorType::Q5_K: tile_new<TensorType::Q5_K, MR, NP, AB>(t, *args.a); break;
        case TensorType::Q6_K: tile_new<TensorType::Q6_K, MR, NP, AB>(t, *args.a); break;
        case TensorType::F32:
        case TensorType::F16:
        case TensorType::BF16: run_float_tile<MR, NP>(args, t); break;
        default: break;
    }
}

// The 5- and 6-row tiles of the types tile_rows() gives more than kRows (8-bit codes only).
template <int MR, int NP>
void run_wide_tile(const MatmulArgs& args, const Tile& t) {
    switch (args.w->type()) {
        case TensorType::Q4_1: tile_q4<true, MR, NP, 8>(t, *args.a); break;
        case TensorType::Q4_0: tile_q4<false, MR, NP, 8>(t, *args.a); break;
        case TensorType::Q4_K: tile_new<TensorType::Q4_K, MR, NP, 8>(t, *args.a); break;
        case TensorType::Q5_0: if constexpr (MR == 5) tile_new<TensorType::Q5_0, 5, NP, 8>(t, *args.a); break;
        default: break;
    }
}

// The fused residual of a panel pair (tile_*<..., FUSE = true>; the row count is not used).
void fused_residual(const MatmulArgs& args, const Tile& t) {
    switch (args.w->type()) {
        case TensorType::Q4_1: tile_q4<true, 1, 2, 8, true>(t, *args.a); break;
        case TensorType::Q4_0: tile_q4<false, 1, 2, 8, true>(t, *args.a); break;
        case TensorType::Q8_0: tile_q8<1, 2, 8, true>(t, *args.a); break;
        case TensorType::Q5_0: tile_new<TensorType::Q5_0, 1, 2, 8, true>(t, *args.a); break;
        case TensorType::Q4_K: tile_new<TensorType::Q4_K, 1, 2, 8, true>(t, *args.a); break;
        case TensorType::Q5_K: tile_new<TensorType::Q5_K, 1, 2, 8, true>(t, *args.a); break;
        case TensorType::Q6_K: tile_new<TensorType::Q6_K, 1, 2, 8, true>(t, *args.a); break;
        default: break;
    }
}

// A full row tile (tile_rows rows) on a pair's expanded codes (t.xc; expands()).
template <int AB>
void run_expanded_tile(const MatmulArgs& args, const Tile& t) {
    if (args.w->type() == TensorType::Q6_K) tile_new<TensorType::Q6_K, kRows, 2, AB, false, true>(t, *args.a);
}

void expand(const MatmulArgs& args, const uint8_t* pb, uint8_t* xc, const WeightPrefetch& pf) {
    if (args.w->type() == TensorType::Q6_K) expand_pair<TensorType::Q6_K>(pb, args.a->blocks, xc, pf);
}

template <int NP, int AB>
void run_rows(const MatmulArgs& args, const Tile& t, int mr) {
    static_assert(kRows == 4 && kWideRows == 6 && kFloatRows == 8, "update the dispatch");
    if (mr > kRows && wide_float_weights(args.w->type())) {
        switch (mr) {
            case 5: return run_float_tile<5, NP>(args, t);
            case 6: return run_float_tile<6, NP>(args, t);
            case 7: return run_float_tile<7, NP>(args, t);
            default: return run_float_tile<8, NP>(args, t);
        }
    }
    switch (mr) {
        case 1: run_tile<1, NP, AB>(args, t); break;
        case 2: run_tile<2, NP, AB>(args, t); break;
        case 3: run_tile<3, NP, AB>(args, t); break;
        case 4: run_tile<4, NP, AB>(args, t); break;
        case 5: if constexpr (AB == 8) run_wide_tile<5, NP>(args, t); break;
        default: if constexpr (AB == 8) run_wide_tile<6, NP>(args, t); break;
    }
}

// Tall tiles: kTallRows rows of X x one panel (16 columns), for Q5_K, whose codes (4 + 1 bits)
// and sub-block scales take the most instructions per block to unpack: a panel's are unpacked once
// for 8 rows instead of 4, at the same register count as 4 rows x 2 panels. The integer sums are
// exact and the float operations per element unchanged: the same bits. Q5_0 and Q4_K measured no
// faster so, Q6_K slower (its two chains per row spill): they keep 4 x 2 (figures in
// src/kernels/README.md, "Weight matmul: Q5_0 and the K-quants").
constexpr int kTallRows = 8;

template <int AB>
void panels(const MatmulArgs& args, int64_t p0, int64_t p1) {
    const PackedWeight& w = *args.w;
    const WeightPrefetch pf = weight_prefetch(args.M);
    const bool tall = args.M >= kTallRows && w.type() == TensorType::Q5_K;
    const int rows = tile_rows(w.type(), AB);
    const size_t step = panel_step_bytes(w.type());
    // Expanded codes (kXcBlockBytes per sub-block): when enough full row tiles share them, in
    // per-thread scratch; without it (refused), the tiles unpack their own.
    uint8_t* xc = nullptr;
    if (!tall && expands(w.type()) && args.M >= kXcMinTiles * rows)
        xc = static_cast<uint8_t*>(
            cpu::thread_scratch_or_null(kXcScratchSlot, static_cast<size_t>(args.a->blocks) * kXcBlockBytes));
    for (int64_t p = p0; p < p1; p += 2) {  // p0 is even; panels come in pairs
        Tile t;
        t.pf = pf;
        t.panel = w.panel(p) + args.step0 * static_cast<int64_t>(w.panel_stride());
        t.sparse = args.sparse_blocks;
        t.rrows = args.residual_rows;
        t.ldy = args.ldy;
        t.ncols = static_cast<int>(std::min<int64_t>(2 * kPanel, w.rows() - p * kPanel));
        int64_t m0 = 0;
        if (tall) {
            for (; m0 + kTallRows <= args.M; m0 += kTallRows)
                for (int h = 0; h < 2 && t.ncols > h * kPanel; h++) {  // each panel of the pair
                    Tile th = t;
                    th.panel = t.panel + h * step;  // blocks stay 2 * step apart
                    th.ncols = t.ncols - h * kPanel;
                    th.m0 = m0;
                    th.prefetch = m0 == 0 && h == 0;  // (the prefetch covers both panels' bytes)
                    th.y = args.Y + m0 * args.ldy + (p * kPanel - args.col0) + h * kPanel;
                    tile_new<TensorType::Q5_K, kTallRows, 1, AB>(th, *args.a);
                }
        }
        if (xc) {
            expand(args, t.panel, xc, pf);
            t.xc = xc;
        }
        for (int64_t m = m0; m < args.M; m += rows) {
            const int mr = static_cast<int>(std::min<int64_t>(rows, args.M - m));
            t.m0 = m;
            t.prefetch = m == 0 && !xc;  // (m0 > 0: the tall tiles prefetched; xc: expand did)
            t.y = args.Y + m * args.ldy + (p * kPanel - args.col0);
            if (xc && mr == rows) run_expanded_tile<AB>(args, t);
            else run_rows<2, AB>(args, t, mr);
        }
        if constexpr (AB == 8)
            if (args.residual_rows && args.residual_rows->n_marked > 0) {  // the pair's fused residual: all rows, from row 0
                t.m0 = 0;
                t.prefetch = false;
                t.y = args.Y + (p * kPanel - args.col0);
                fused_residual(args, t);
            }
    }
}

}  // namespace

void matmul_panels_avx512(const MatmulArgs& args, int64_t p0, int64_t p1) { panels<8>(args, p0, p1); }

void matmul_residual_panels_avx512(const MatmulArgs& args, int64_t p0, int64_t p1) {
    if (!args.residual_rows || args.residual_rows->n_marked == 0) return;
    const PackedWeight& w = *args.w;
    for (int64_t p = p0; p < p1; p += 2) {  // as panels<8>'s pair loop, after its row tiles
        Tile t;
        t.pf = weight_prefetch(args.M);
        t.panel = w.panel(p) + args.step0 * static_cast<int64_t>(w.panel_stride());
        t.prefetch = false;
        t.sparse = args.sparse_blocks;
        t.rrows = args.residual_rows;
        t.ldy = args.ldy;
        t.ncols = static_cast<int>(std::min<int64_t>(2 * kPanel, w.rows() - p * kPanel));
        t.m0 = 0;
        t.y = args.Y + (p * kPanel - args.col0);
        fused_residual(args, t);
    }
}

// Float weights have no activation codes: the same tiles as 8-bit (tile_f).
void matmul_panels16_avx512(const MatmulArgs& args, int64_t p0, int64_t p1) { panels<16>(args, p0, p1); }

}  // namespace kvrt::kernels

#pragma GCC pop_options

#else  // not x86: never selected (kernel_isa_supported() is false); keeps the link whole.

namespace kvrt::kernels {
void matmul_panels_avx512(const MatmulArgs& args, int64_t p0, int64_t p1) { matmul_panels_scalar(args, p0, p1); }
void matmul_residual_panels_avx512(const MatmulArgs&, int64_t, int64_t) {}
void matmul_panels16_avx512(const MatmulArgs& args, int64_t p0, int64_t p1) { matmul_panels16_scalar(args, p0, p1); }
}  // namespace kvrt::kernels

#endif
