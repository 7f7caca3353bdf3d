// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// AMX weight-matmul kernels (KernelIsa::Amx): the quantised weight types against 8-bit
// activation codes, in blocks of 32 rows of X x 32 output columns (a panel pair): 2 x 2 tiles.
//
// Per 32-element block b, tdpbsud (tdpbssd for Q5_0, Q8_0 and Q6_K, whose codes are laid out
// signed) computes the block's exact integer dots for 16 rows x 16 columns per tile (signed
// activation codes in the A tiles, straight from the quantised rows; the panels' weight codes in
// the B tiles, laid out once per panel and chunk of blocks: B row kk holds, per column, the 4 codes of elements 4kk..4kk+3, which is what the
// packed 4-bit chunks hold after a mask or a shift, weight_matmul_layout.hpp). Each A and B
// tile feeds two products. The C tiles go to memory and the float operations of
// weight_matmul_kernels.hpp are applied per row on AVX-512 (accumulators in an L1 buffer),
// the same operations in the same order as the AVX-512 VNNI kernel, so every output element
// has the bits of every other path (integer sums are exact whatever computes them).
//
// Types: Q5_0, Q8_0, Q4_K, Q5_K and Q6_K (its two 16-element halves per block as tiles of
// K = 16, their sums scaled in floats, exactly), where the tiles measured faster end to end (the
// 5-bit and K-quant codes are unpacked once per panel here, once per 4 rows in the VNNI kernel; Gemma 3
// 270M and Qwen2.5-Coder-0.5B prefill 1.06-1.16x on a Xeon with AMX, src/kernels/README.md).
// What goes elsewhere (matmul_panels_avx512): Q4_0 / Q4_1 (their VNNI kernel is lean enough
// that the tiles' per-block store and float work cost more: SmolLM2's prefill 0.96x), rows past
// the last whole tile of 16 (a decode row, a prefill's last rows), float weights, and any call when this thread's
// panel buffer cannot be allocated. 16-bit activation codes never come here.
//
// Tiles: tmm0..tmm3 C (16 x 16 int32; C[2i + j] = row tile i x panel j), tmm4, tmm5 A (16 rows
// x 32 codes: row tiles 0 and 1), tmm6, tmm7 B (8 rows x 64 bytes: panels 0 and 1). Q6_K:
// tmm4, tmm5 the two halves (16 x 16 codes) of one row tile, tmm6, tmm7 B (4 rows x 64 bytes)
// of the halves of one panel, C[2j + h] = panel j x half h.
//
// The kernel itself is weight_matmul_amx_core.inl, a template over the tile unit: here with the
// AMX instructions; the test-support library instantiates it with the same arithmetic in C++
// (EmulatedTiles), so that the tests check the tile layout and bookkeeping on any AVX-512 VNNI
// CPU, and the real instructions where the CPU has AMX.
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

#include "kernels/cpu/weight_matmul_amx_core.inl"

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
    // C[c] += A[a] . B[b] (A signed; B signed: tdpbssd, unsigned: tdpbsud)
    template <int C, int A, int B, bool SignedB>
    static void dot() {
        static_assert(C >= 0 && C < 4 && (A == 4 || A == 5) && (B == 6 || B == 7), "C tmm0..3, A tmm4..5, B tmm6..7");
        constexpr int k = C * 4 + (A - 4) * 2 + (B - 6);
#define KVRT_AMX_DOT(op)                                  \
    if constexpr (k == 0) op(0, 4, 6);                    \
    else if constexpr (k == 1) op(0, 4, 7);               \
    else if constexpr (k == 2) op(0, 5, 6);               \
    else if constexpr (k == 3) op(0, 5, 7);               \
    else if constexpr (k == 4) op(1, 4, 6);               \
    else if constexpr (k == 5) op(1, 4, 7);               \
    else if constexpr (k == 6) op(1, 5, 6);               \
    else if constexpr (k == 7) op(1, 5, 7);               \
    else if constexpr (k == 8) op(2, 4, 6);               \
    else if constexpr (k == 9) op(2, 4, 7);               \
    else if constexpr (k == 10) op(2, 5, 6);              \
    else if constexpr (k == 11) op(2, 5, 7);              \
    else if constexpr (k == 12) op(3, 4, 6);              \
    else if constexpr (k == 13) op(3, 4, 7);              \
    else if constexpr (k == 14) op(3, 5, 6);              \
    else op(3, 5, 7);
        if constexpr (SignedB) {
            KVRT_AMX_DOT(_tile_dpbssd)
        } else {
            KVRT_AMX_DOT(_tile_dpbsud)
        }
#undef KVRT_AMX_DOT
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


}  // namespace

void matmul_panels_amx(const MatmulArgs& args, int64_t p0, int64_t p1) { panels<AmxTiles>(args, p0, p1); }

}  // namespace kvrt::kernels

#pragma GCC pop_options

#else  // not x86-64: never selected (kernel_isa_supported() is false); keeps the link whole.

namespace kvrt::kernels {
void matmul_panels_amx(const MatmulArgs& args, int64_t p0, int64_t p1) { matmul_panels_scalar(args, p0, p1); }
}  // namespace kvrt::kernels

#endif
