// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// The packed layout of PackedWeight (src/kernels/weight_matmul.hpp): what the
// kernels of every ISA path read. Internal to src/kernels/.
//
// W's rows are grouped in panels of 16, and panels in pairs (32 rows; the
// padding rows are zero). A panel has, for each 32-element block b along K in
// order, one "panel block" (its step) covering its 16 rows x 32 elements of
// block b (K-quants: one step per 256-element super-block, below). The two panels of a pair alternate step by step, so that a pair is
// one sequential stream: step s of panel 2q+h is at
//   pair q's base + s * 2 * step_bytes + h * step_bytes   (PackedWeight::panel()).
//
//
//   Q4_1 (320 bytes): d[16] f16 | m[16] f16 | 4 chunks of 64 bytes
//   Q4_0 (288 bytes): d[16] f16 |             4 chunks of 64 bytes
//   Q8_0 (544 bytes): d[16] f16 |             8 chunks of 64 bytes
//
// 4-bit chunk c (0..3): bytes 4r..4r+3 belong to row r of the panel; byte j
// holds element 8c+j of the block in its low nibble and element 8c+4+j in its
// high nibble. So `chunk & 0x0F` is the 4-element group 2c of all 16 rows and
// `(chunk >> 4) & 0x0F` the group 2c+1, each in the dword order vpdpbusd wants.
// Nibbles are ggml's unsigned q (0..15).
//
// 8-bit chunk g (0..7): bytes 4r..4r+3 are elements 4g..4g+3 of row r, stored
// as q + 128 (q ^ 0x80: unsigned, so that vpdpbusd takes them against signed
// activations; the kernels subtract 128 * sum(activation block)).
//
// Q5_0 (352 bytes per 32-element block): d[16] f16 | hb: 64 bytes | 4 chunks of 64 bytes
//   The 4-bit chunks hold the low 4 bits of ggml's unsigned q (0..31) as above;
//   hb byte 4r+j holds the fifth bits of row r: bit c is that of element 8c+j,
//   bit 4+c that of element 8c+4+j (so, per chunk c, `(hb << (4-c)) & 0x10` and
//   `(hb >> c) & 0x10` are the fifth bits of the two nibble groups: 16-bit shifts
//   move no bit across a byte into bit 4).
//
// K-quants: one step per 256-element super-block (8 sub-blocks of 32, matching
// the activation blocks), K a multiple of 256:
//   Q4_K (2368 bytes): d[16] f16 | dmin[16] f16 | sc[8][16] u8 | m[8][16] u8 | qs[8][256]
//   Q5_K (2880 bytes): as Q4_K, then hb[8][64]
//   Q6_K (3360 bytes): d[16] f16 | sc[16][16] i8 | ql[8][256] | qh[8][128]
// sc/m are the decoded 6-bit scales and mins of sub-block s (get_scale_min_k4),
// one byte per row; Q6_K's sc are its 16 int8 scales of 16-element groups (group
// 2s covers elements 0..15 of sub-block s, 2s+1 elements 16..31). qs[s] / ql[s]
// are the low 4 bits of sub-block s's codes in the 4-bit chunk layout above; Q5_K's
// hb[s] is Q5_0's hb for sub-block s. Q6_K's qh[s] is two 64-byte chunks h0, h1:
// byte 4r+j of h(c/2) holds, at bits 4t..4t+1 (t = c & 1), the high 2 bits of
// element 8c+j and, at bits 4t+2..4t+3, those of element 8c+4+j.
// Codes are ggml's unsigned q: 0..15 (Q4_K), 0..31 (Q5_0, Q5_K), 0..63 (Q6_K).
//
// Float types (F32, F16, BF16): for each k, the 16 rows' elements of column k
// (64 or 32 bytes); a panel has K such steps.
#pragma once

#include "formats/tensor_type.hpp"

#include <cstddef>
#include <cstdint>

namespace kvrt::kernels {

inline constexpr int kPanel = 16;   // rows of W per panel (output columns per panel)
inline constexpr int kBlock = 32;   // elements per quantisation block along K

inline constexpr size_t kQ4_1PanelBlock = 32 + 32 + 256;
inline constexpr size_t kQ4_0PanelBlock = 32 + 256;
inline constexpr size_t kQ8_0PanelBlock = 32 + 512;
inline constexpr size_t kQ5_0PanelBlock = 32 + 64 + 256;
inline constexpr size_t kQ4_KPanelBlock = 32 + 32 + 128 + 128 + 8 * 256;
inline constexpr size_t kQ5_KPanelBlock = kQ4_KPanelBlock + 8 * 64;
inline constexpr size_t kQ6_KPanelBlock = 32 + 256 + 8 * 256 + 8 * 128;

// Offsets inside a K-quant panel step (see above).
inline constexpr size_t kKDmin = 32;        // Q4_K / Q5_K: dmin[16]
inline constexpr size_t kKSc = 64;          // Q4_K / Q5_K: sc[8][16]
inline constexpr size_t kKMin = 192;        // Q4_K / Q5_K: m[8][16]
inline constexpr size_t kKQs = 320;         // Q4_K / Q5_K: qs[8][256]
inline constexpr size_t kKHb = 320 + 2048;  // Q5_K: hb[8][64]
inline constexpr size_t kQ6Sc = 32;         // Q6_K: sc[16][16]
inline constexpr size_t kQ6Ql = 288;        // Q6_K: ql[8][256]
inline constexpr size_t kQ6Qh = 288 + 2048; // Q6_K: qh[8][128]

// Bytes of one panel block (quantised types) or of one k group (float types).
inline constexpr size_t panel_step_bytes(TensorType t) {
    switch (t) {
        case TensorType::Q4_1: return kQ4_1PanelBlock;
        case TensorType::Q4_0: return kQ4_0PanelBlock;
        case TensorType::Q8_0: return kQ8_0PanelBlock;
        case TensorType::Q5_0: return kQ5_0PanelBlock;
        case TensorType::Q4_K: return kQ4_KPanelBlock;
        case TensorType::Q5_K: return kQ5_KPanelBlock;
        case TensorType::Q6_K: return kQ6_KPanelBlock;
        case TensorType::F32: return kPanel * 4;
        case TensorType::F16:
        case TensorType::BF16: return kPanel * 2;
        default: return 0;
    }
}

inline constexpr bool is_kquant_weight(TensorType t) {
    return t == TensorType::Q4_K || t == TensorType::Q5_K || t == TensorType::Q6_K;
}

inline constexpr bool is_quantized_weight(TensorType t) {
    return t == TensorType::Q4_0 || t == TensorType::Q4_1 || t == TensorType::Q8_0 || t == TensorType::Q5_0 ||
           is_kquant_weight(t);
}

// Elements of K per panel step: 256 (K-quants), 32 (other quantised types), 1 (float types).
inline constexpr int64_t panel_step_elems(TensorType t) {
    return is_kquant_weight(t) ? 256 : is_quantized_weight(t) ? 32 : 1;
}

// Where a Q5_0 / K-quant panel step keeps its sub-blocks' codes (the tiles' and the expansions'
// `codes(qs, hx, ...)` arguments): `subs` 32-element sub-blocks per step; sub-block s's 4-bit
// chunks at qs + s * 256 and its fifth bits (Q5_0, Q5_K) or 2-bit pairs (Q6_K) at hx + s * hstep.
struct SubBlockLayout {
    int subs;
    size_t qs, hx, hstep;
};
inline constexpr SubBlockLayout sub_block_layout(TensorType t) {
    if (t == TensorType::Q5_0) return {1, 96, 32, 64};
    if (t == TensorType::Q6_K) return {8, kQ6Ql, kQ6Qh, 128};
    return {8, kKQs, kKHb, 64};  // Q4_K (no fifth bits), Q5_K
}
}  // namespace kvrt::kernels

namespace kvrt::kernels {

// Element e (0..31) of row r in a 4-bit chunk group (4 chunks of 64 bytes).
inline unsigned chunk_nibble(const uint8_t* chunks, int r, int e) {
    const uint8_t v = chunks[(e / 8) * 64 + 4 * r + (e & 3)];
    return (e & 4) ? v >> 4 : v & 0xFu;
}
// Fifth bit of element e of row r (Q5_0 / Q5_K hb).
inline unsigned hb_bit(const uint8_t* hb, int r, int e) {
    return (hb[4 * r + (e & 3)] >> ((e & 4) ? 4 + e / 8 : e / 8)) & 1u;
}
// High 2 bits of element e of row r (Q6_K qh of one sub-block: 128 bytes).
inline unsigned h6_bits(const uint8_t* qh, int r, int e) {
    const int c = e / 8;
    return (qh[(c >> 1) * 64 + 4 * r + (e & 3)] >> (4 * (c & 1) + ((e & 4) ? 2 : 0))) & 3u;
}

}  // namespace kvrt::kernels
