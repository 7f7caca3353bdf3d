// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// What the AVX2 weight-matmul kernels share: the 8-bit ones (weight_matmul_avx2_impl.hpp,
// compiled for AVX2 and for AVX-VNNI) and the 16-bit-code ones (weight_matmul16_avx2.cpp):
// the panel tile, its store, the weight prefetch, the unpacking of 4/5/6-bit codes and the
// loop over (panel, row tile). Included inside namespace kvrt::kernels { namespace { ... } }
// of a translation unit that has set its target ISA and included <immintrin.h>, <algorithm>,
// <cstring> and weight_matmul_kernels.hpp / weight_matmul_layout.hpp / weight_matmul_fused_residual.hpp.
// No include guard: meant to be included once per translation unit.

constexpr int kMaxRows = 2;
// Rows per tile on a panel's expanded codes (Tile::xc): with the codes loaded rather than unpacked,
// 4 rows amortise each load and broadcast better despite a few spills (16 registers). AMD EPYC
// Zen 4 under KVRT_ISA=avx2, `bench_weight_matmul --quick --kquant-only`, GOP/s against 2-row
// tiles on the same expanded codes, 1 thread: Q4_K 146-151 -> 176-179, Q5_K 147-152 -> 175-178,
// Q6_K 136 -> 150-159, Q5_0 176-177 -> 178-188; 3 rows gained less on Q4_K and Q5_K (Q6_K
// alike), 6 no more (src/kernels/README.md, "Session 35").
constexpr int kXcRows = 4;
// Rows per tile of float weights (F32 / F16 / BF16, tile_f), where the call has that many: 6 rows x
// 2 halves are 12 accumulators, 12 independent FMA chains per k (2-row tiles had 4, too few to
// cover the FMA latency on two pipes), with the two weight vectors and a broadcast in the other 3
// registers. AMD EPYC Zen 4 under KVRT_ISA=avx2, `bench_onednn_matmul --quick` (M = 512), the hand
// kernel's GFLOP/s on 1 thread: src/kernels/README.md, "Session 49". Each output element is one FMA
// chain over k in order whatever the tile's rows: the same bits.
constexpr int kFloatRows = 6;
// Prefetches `bytes` of the weight stream pf.ahead bytes ahead of p, into the level pf names
// (weight_matmul_kernels.hpp: per CPU vendor, as the AVX-512 path).
inline void prefetch_step(const WeightPrefetch& pf, const uint8_t* p, size_t bytes) {
    const uint8_t* q = p + pf.ahead;
    if (pf.l2)
        for (size_t o = 0; o < bytes; o += 64) _mm_prefetch(reinterpret_cast<const char*>(q + o), _MM_HINT_T1);
    else
        for (size_t o = 0; o < bytes; o += 64) _mm_prefetch(reinterpret_cast<const char*>(q + o), _MM_HINT_T0);
}

struct Tile {
    const uint8_t* panel;  // PackedWeight::panel(p)
    size_t stride;         // PackedWeight::panel_stride()
    bool prefetch;         // prefetch the pair's stream (first panel of the pair, first row tile)
    WeightPrefetch pf;     // how (weight_prefetch(), read once per call)
    int64_t m0;
    float* y;
    int64_t ldy;
    int ncols;  // valid columns (1..16)
    bool sparse;  // MatmulArgs::sparse_blocks
    const uint8_t* xc = nullptr;  // the panel's codes unpacked once (kXcBlockBytes per sub-block), or null
};

// Expanded codes: a sub-block's unpacked codes per chunk c and ymm half h, lo then hi (32 bytes
// each), for the tiles of a panel to load instead of unpacking them again (the same bytes).
constexpr size_t kXcBlockBytes = 4 * 2 * 64;

template <int MR>
inline void store_tile(const Tile& t, __m256 (&acc)[MR][2]) {
    if (t.ncols == 16) {
        #pragma GCC unroll 8
        for (int r = 0; r < MR; r++) {
            _mm256_storeu_ps(t.y + r * t.ldy, acc[r][0]);
            _mm256_storeu_ps(t.y + r * t.ldy + 8, acc[r][1]);
        }
        return;
    }
    alignas(32) float tmp[16];
    #pragma GCC unroll 8
    for (int r = 0; r < MR; r++) {
        _mm256_store_ps(tmp, acc[r][0]);
        _mm256_store_ps(tmp + 8, acc[r][1]);
        std::memcpy(t.y + r * t.ldy, tmp, sizeof(float) * static_cast<size_t>(t.ncols));
    }
}

// Codes of chunk c (elements 8c..8c+3 -> lo, 8c+4..8c+7 -> hi) of one ymm half
// (8 rows) of a Q5_0 / Q4_K / Q5_K / Q6_K sub-block, as unsigned bytes
// (weight_matmul_layout.hpp). qs: the 4 chunks; hx: Q5 hb or Q6 qh of the sub-block.
template <TensorType T>
inline void codes(const uint8_t* qs, const uint8_t* hx, int c, int h, __m256i& wl, __m256i& wh) {
    const __m256i lo = _mm256_set1_epi8(0x0F);
    const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + c * 64 + 32 * h));
    wl = _mm256_and_si256(w, lo);
    wh = _mm256_and_si256(_mm256_srli_epi16(w, 4), lo);
    if constexpr (T == TensorType::Q5_0 || T == TensorType::Q5_K) {
        const __m256i b5 = _mm256_set1_epi8(0x10);
        const __m256i hb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(hx + 32 * h));
        // bit c -> bit 4 (left shift 4 - c), bit 4 + c -> bit 4 (right shift c): within each byte
        wl = _mm256_or_si256(wl, _mm256_and_si256(_mm256_sll_epi16(hb, _mm_cvtsi32_si128(4 - c)), b5));
        wh = _mm256_or_si256(wh, _mm256_and_si256(_mm256_srl_epi16(hb, _mm_cvtsi32_si128(c)), b5));
    } else if constexpr (T == TensorType::Q6_K) {
        const __m256i b6 = _mm256_set1_epi8(0x30);
        const __m256i hq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(hx + (c >> 1) * 64 + 32 * h));
        if (c & 1) {  // bits 4-5 and 6-7
            wl = _mm256_or_si256(wl, _mm256_and_si256(hq, b6));
            wh = _mm256_or_si256(wh, _mm256_and_si256(_mm256_srli_epi16(hq, 2), b6));
        } else {      // bits 0-1 and 2-3
            wl = _mm256_or_si256(wl, _mm256_and_si256(_mm256_slli_epi16(hq, 4), b6));
            wh = _mm256_or_si256(wh, _mm256_and_si256(_mm256_slli_epi16(hq, 2), b6));
        }
    }
}

// Every (panel, row tile) of panels [p0, p1): tiles of kMaxRows rows, the last of 1; then, where
// the call carries MatmulArgs::residual_rows with a marked step, RunR on the panel (t from row 0,
// prefetch off, sparse on).
// Expand, where given, returns per-thread scratch for the panels' expanded codes when the call's
// rows make them pay (else null) and, called with it, fills it for panel t; a panel with expanded
// codes runs its rows in tiles of kXcRows (Run4) first. RunF, where given, runs float weights'
// rows in tiles of kFloatRows first.
template <void (*Run1)(const MatmulArgs&, const Tile&), void (*Run2)(const MatmulArgs&, const Tile&),
          void (*RunR)(const MatmulArgs&, const Tile&) = nullptr,
          uint8_t* (*Expand)(const MatmulArgs&, const Tile&, uint8_t*) = nullptr,
          void (*Run4)(const MatmulArgs&, const Tile&) = nullptr,
          void (*RunF)(const MatmulArgs&, const Tile&) = nullptr>
void for_each_tile(const MatmulArgs& args, int64_t p0, int64_t p1) {
    const PackedWeight& w = *args.w;
    const WeightPrefetch pf = weight_prefetch(args.M);
    uint8_t* xc = nullptr;
    if constexpr (Expand != nullptr) xc = Expand(args, Tile{}, nullptr);
    for (int64_t p = p0; p < p1; p++) {
        Tile t;
        t.pf = pf;
        t.panel = w.panel(p) + args.step0 * static_cast<int64_t>(w.panel_stride());
        t.stride = w.panel_stride();
        t.sparse = args.sparse_blocks;
        t.ldy = args.ldy;
        t.ncols = static_cast<int>(std::min<int64_t>(kPanel, w.rows() - p * kPanel));
        if (t.ncols <= 0) break;  // the zero padding panel
        if constexpr (Expand != nullptr)
            if (xc) {
                t.prefetch = p % 2 == 0;
                t.xc = Expand(args, t, xc);
            }
        int64_t m = 0;
        if constexpr (RunF != nullptr)
            if (!is_quantized_weight(w.type()))
                for (; m + kFloatRows <= args.M; m += kFloatRows) {
                    t.m0 = m;
                    t.prefetch = m == 0 && p % 2 == 0;
                    t.y = args.Y + m * args.ldy + (p * kPanel - args.col0);
                    RunF(args, t);
                }
        if constexpr (Run4 != nullptr)
            if (t.xc)
                for (; m + kXcRows <= args.M; m += kXcRows) {
                    t.m0 = m;
                    t.prefetch = false;
                    t.y = args.Y + m * args.ldy + (p * kPanel - args.col0);
                    Run4(args, t);
                }
        for (; m < args.M; m += kMaxRows) {
            t.m0 = m;
            t.prefetch = m == 0 && p % 2 == 0 && !t.xc;  // (xc: Expand prefetched)
            t.y = args.Y + m * args.ldy + (p * kPanel - args.col0);
            if (args.M - m >= 2) Run2(args, t);
            else Run1(args, t);
        }
        if constexpr (RunR != nullptr) {
            if (args.residual_rows && args.residual_rows->n_marked > 0) {
                t.m0 = 0;
                t.y = args.Y + (p * kPanel - args.col0);
                t.prefetch = false;
                t.sparse = true;  // a K-quant step's blocks where no row of the group is marked are skipped
                RunR(args, t);
            }
        }
    }
}
