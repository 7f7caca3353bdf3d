// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// The per-ISA weight-matmul kernels behind matmul() (weight_matmul.hpp).
// Each computes the output columns of panels [p0, p1) for all M rows, with the
// float operations of the contract in weight_matmul.hpp: per output element,
//   Q4_1: acc = fma(dw*da, (float)isum, acc); acc = fma(mw, sa, acc)      per block
//   Q4_0: acc = fma(dw*da, (float)(isum - 8*asum), acc)                     per block
//   Q8_0: acc = fma(dw*da, (float)(isum - 128*asum), acc)                   per block
//   Q5_0: acc = fma(dw*da, (float)(isum - 16*asum), acc)                    per block
//   Q4_K, Q5_K, per sub-block s of 32 (= activation block): ds = dw*(float)sc_s and
//         dm = dmin*(float)m_s (both exact: 11 + 6 significant bits), then
//         acc = fma(ds*da, (float)isum, acc); acc = fma(-dm, sa, acc)
//   Q6_K, per sub-block s: I = sc_2s*(isum_lo - 32*asum_lo)
//                             + sc_2s+1*(isum_hi - 32*(asum - asum_lo))     (int32, exact)
//         acc = fma(dw*da, (float)I, acc)
//   F32/F16/BF16: acc = fma(w_k, x_k, acc)                                  per k
// starting from acc = 0 and going up in k, where isum is the exact integer dot
// of the block (unsigned weight codes times signed activation codes), sa = the
// activation block's s = da*(float)asum, and isum_lo / asum_lo cover elements
// 0..15 of the block, isum_hi elements 16..31.
#pragma once

#include "kernels/cpu/activation_quant.hpp"
#include "kernels/weight_matmul.hpp"
#include "util/isa.hpp"

#include <cstdint>

namespace kvrt::kernels {

struct MarkedStepRows;

struct MatmulArgs {
    const PackedWeight* w = nullptr;
    const QuantizedRows* a = nullptr;  // quantised weight types
    const float* X = nullptr;          // float weight types
    int64_t ldx = 0;
    float* Y = nullptr;
    int64_t ldy = 0;
    int64_t M = 0;
    // The outlier residual pass (weight_matmul_residual.cpp): the codes in `a` start at panel step
    // step0 of W (a.blocks blocks from there), and Y holds output columns from col0 on.
    int64_t step0 = 0;
    int64_t col0 = 0;
    // The residual pass of a K-quant step: most of the gathered rows' sub-blocks are unmarked
    // (zero scale and codes); a tile skips a sub-block whose rows' scales are all 0, which
    // changes no bit (each would add exactly nothing).
    bool sparse_blocks = false;
    // ActBits::Q8R with the residual products computed by the kernel after each panel pair's (or
    // panel's) row tiles (the AVX-512, AVX2 and AVX-VNNI kernels, AMX after its tiles:
    // weight_matmul_fused_residual.hpp), with the separate pass's bits: the rows marked per panel
    // step, set by the caller, which then skips matmul_residual.
    const MarkedStepRows* residual_rows = nullptr;
};

// The weight stream's software prefetch: how far ahead of the block being computed, and into
// which level. Chosen once per process from the CPU, per call shape (weight_prefetch_for, by
// prefetch_streams_into_l2 of util/isa.hpp and, on Intel, the core's generation;
// KVRT_WEIGHT_PREFETCH=l1:BYTES or l2:BYTES overrides it for every shape, for measurements):
//   Intel cores of the Alder Lake / Sapphire Rapids generation and later (told by AVX-VNNI;
//   Sapphire Rapids class measured) and AMD Zen 4: into L2, 8 KiB ahead. Decode at 256
//   positions, Qwen2.5 Q4_K_M, 2 threads: 0.65-0.75 -> 0.79-0.85 of the STREAM read on the Xeon;
//   on Zen 4 1 thread 38.6-39.0 -> 55.3-55.9 tok/s, 2 threads 61-65 -> 72-77 (src/kernels/README.md).
//   Older Intel cores (cpu_is_intel_before_avxvnni; Ice Lake-SP measured, session 48): calls of
//   fewer than kPrefetchPrefillRows rows (decode) into L1, 4 KiB ahead. There L2 was the slowest
//   setting tried for decode, on the AVX2 path most: M = 1 passes over each K-quant type 0.69-0.76
//   of the STREAM read into L2 against 0.71-0.83 into L1 2-8 KiB ahead (alike within the noise).
//   Prefill (more rows; only the first row tile prefetches) keeps L2 8 KiB there: into L1 it
//   measured 2-10% slower in most pairs (Qwen2.5 and Gemma 3, 2,048 tokens).
//   AMD Zen 3 / Zen 5: into L1, 2 KiB ahead (the best of the L1 distances measured there; L2 was
//   not tried on those CPUs).
// Results never depend on it.
struct WeightPrefetch {
    size_t ahead = 2048;
    bool l2 = false;
};
constexpr int64_t kPrefetchPrefillRows = 16;
// The rule for a call of `rows` rows.
const WeightPrefetch& weight_prefetch(int64_t rows) noexcept;
// Rows m0 .. m0 + MR - 1 all have scale 0 at block b (MatmulArgs::sparse_blocks).
template <int MR>
inline bool all_zero_scales(const QuantizedRows& a, int64_t m0, int64_t b) {
    bool zero = true;
    #pragma GCC unroll 8
    for (int r = 0; r < MR; r++) zero &= a.d[(m0 + r) * a.blocks + b] == 0.0f;
    return zero;
}
// The rule above for a CPU and a call of `rows` rows (tests check it per CPU kind).
WeightPrefetch weight_prefetch_for(const CpuFeatures& f, int64_t rows) noexcept;

void matmul_panels_scalar(const MatmulArgs& args, int64_t p0, int64_t p1);
// An 8-bit panel kernel (any of the above but AMX, whose whole-tile path has no step0 / col0).
using PanelKernel8 = void (*)(const MatmulArgs&, int64_t, int64_t);
// ActBits::Q8R's second pass over panels [p0, p1) (weight_matmul_residual.cpp): after the 8-bit
// pass over the same panels and rows (args.a with its residual, args.Y written), adds the outlier
// blocks' residual products to Y. Allocates nothing; a no-op when args.a has no residual.
void matmul_residual(const MatmulArgs& args, PanelKernel8 kernel, int64_t p0, int64_t p1);
void matmul_panels_avx2(const MatmulArgs& args, int64_t p0, int64_t p1);
void matmul_panels_avxvnni(const MatmulArgs& args, int64_t p0, int64_t p1);
void matmul_panels_avx512(const MatmulArgs& args, int64_t p0, int64_t p1);
// The AVX-512 kernel's fused residual alone (args.residual_rows, all of args' rows) over the
// panel pairs of [p0, p1), after another kernel (AMX's tiles) has stored their 8-bit chains: the
// operations and order of matmul_panels_avx512's own, so the same bits.
void matmul_residual_panels_avx512(const MatmulArgs& args, int64_t p0, int64_t p1);
// AMX (weight_matmul_amx.cpp): whole tiles of 16 rows on tdpbsud, the other rows and the other
// types through matmul_panels_avx512; with args.residual_rows, the residual of all rows by
// matmul_residual_panels_avx512 after them. (Its emulated twin is in the test-support library.)
void matmul_panels_amx(const MatmulArgs& args, int64_t p0, int64_t p1);
// 16-bit activation codes (args.a->q16; ActBits::Q16 in weight_matmul.hpp): the same
// per-element float operations (Q6_K: two fmas, see there). Float weight types as above.
void matmul_panels16_scalar(const MatmulArgs& args, int64_t p0, int64_t p1);
void matmul_panels16_avx2(const MatmulArgs& args, int64_t p0, int64_t p1);
void matmul_panels16_avxvnni(const MatmulArgs& args, int64_t p0, int64_t p1);
void matmul_panels16_avx512(const MatmulArgs& args, int64_t p0, int64_t p1);

}  // namespace kvrt::kernels
