// The packed layout of PackedWeight (src/kernels/weight_matmul.hpp): what the
// kernels of every ISA path read. Internal to src/kernels/.
//
// W's rows are grouped in panels of 16, and panels in pairs (32 rows; the
// padding rows are zero). A panel has, for each 32-element block b along K in
// order, one "panel block" (its step) covering its 16 rows x 32 elements of
// block b. The two panels of a pair alternate step by step, so that a pair is
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

// Bytes of one panel block (quantised types) or of one k group (float types).
inline constexpr size_t panel_step_bytes(TensorType t) {
    switch (t) {
        case TensorType::Q4_1: return kQ4_1PanelBlock;
        case TensorType::Q4_0: return kQ4_0PanelBlock;
        case TensorType::Q8_0: return kQ8_0PanelBlock;
        case TensorType::F32: return kPanel * 4;
        case TensorType::F16:
        case TensorType::BF16: return kPanel * 2;
        default: return 0;
    }
}

inline constexpr bool is_quantized_weight(TensorType t) {
    return t == TensorType::Q4_0 || t == TensorType::Q4_1 || t == TensorType::Q8_0;
}

}  // namespace kvrt::kernels
