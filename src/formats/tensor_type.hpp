// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Tensor element types of GGUF files (ggml's type ids), their block layouts and
// row sizes.
//
// A quantised type stores a row as consecutive blocks of `block_elems` elements,
// each `block_bytes` long. The block structs below are byte-for-byte ggml's
// (ggml-common.h): scales are IEEE halves kept as raw uint16_t bits (convert with
// f16_to_f32 from util/dtype.hpp). Every struct has alignment 2 at most, so a
// block pointer needs only 2-byte alignment; GgufFile guarantees that for every
// tensor it hands out.
//
// Element j of a block (0 <= j < 32):
//   Q4_0: nibble = j < 16 ? qs[j] & 0xF : qs[j-16] >> 4;     x = (nibble - 8) * d
//   Q4_1: nibble as Q4_0;                                     x = nibble * d + m
//   Q5_0: q = nibble | (bit j of qh) << 4;                    x = (q - 16) * d
//   Q5_1: q as Q5_0;                                          x = q * d + m
//   Q8_0: x = qs[j] * d
//   Q8_1: x = qs[j] * d   (s = d * sum(qs) is a dot-product helper)
// (each product nibble * d is exact in f32; the add of m is the only rounding).
#pragma once

#include <cstddef>
#include <cstdint>

namespace kvrt {

// ggml_type ids. The gaps (4, 5, 31-33, 36-38) are types ggml removed; a file
// that uses them is rejected by name.
enum class TensorType : uint32_t {
    F32 = 0,
    F16 = 1,
    Q4_0 = 2,
    Q4_1 = 3,
    Q5_0 = 6,
    Q5_1 = 7,
    Q8_0 = 8,
    Q8_1 = 9,
    Q2_K = 10,
    Q3_K = 11,
    Q4_K = 12,
    Q5_K = 13,
    Q6_K = 14,
    Q8_K = 15,
    IQ2_XXS = 16,
    IQ2_XS = 17,
    IQ3_XXS = 18,
    IQ1_S = 19,
    IQ4_NL = 20,
    IQ3_S = 21,
    IQ2_S = 22,
    IQ4_XS = 23,
    I8 = 24,
    I16 = 25,
    I32 = 26,
    I64 = 27,
    F64 = 28,
    IQ1_M = 29,
    BF16 = 30,
    TQ1_0 = 34,
    TQ2_0 = 35,
    MXFP4 = 39,
};

inline constexpr uint32_t kTensorTypeIdCount = 40;  // ids 0..39 are listed in the table

struct TensorTypeTraits {
    const char* name;      // ggml's name ("q4_1"); "removed-4" for retired ids
    uint32_t block_elems;  // elements per block (1 for plain types); 0 = retired id
    uint32_t block_bytes;  // bytes per block
    bool dequant;          // kvrt can dequantise it (dequantize_* accept it)
};

// Traits of a raw ggml type id; nullptr when the id is past the table. A retired
// id returns traits with block_elems == 0.
const TensorTypeTraits* tensor_type_traits(uint32_t id) noexcept;

// Traits of a listed type (never nullptr for a TensorType enumerator).
const TensorTypeTraits& tensor_type_traits(TensorType t) noexcept;

// ggml's name of the type ("f32", "q4_1", ...), "unknown-<id>" for an id past the table.
const char* tensor_type_name(TensorType t) noexcept;

// True when `id` names a type ggml still defines (listed, not retired).
bool tensor_type_valid(uint32_t id) noexcept;

// Bytes of a row of `n_elems` elements of type t, or false when n_elems is not
// a multiple of the block size or the result overflows uint64. Never throws.
bool tensor_row_bytes_checked(TensorType t, uint64_t n_elems, uint64_t* bytes) noexcept;

// As above, throwing kvrt::Error(KVRT_ERR_BAD_FORMAT) naming the type and count.
uint64_t tensor_row_bytes(TensorType t, uint64_t n_elems);

// ---------------------------------------------------------------------------
// Block layouts (ggml-common.h). QK = elements per block.

inline constexpr int kQK4_0 = 32;
inline constexpr int kQK4_1 = 32;
inline constexpr int kQK5_0 = 32;
inline constexpr int kQK5_1 = 32;
inline constexpr int kQK8_0 = 32;
inline constexpr int kQK8_1 = 32;
inline constexpr int kQK_K = 256;   // super-block of the k-quants
inline constexpr int kKScaleSize = 12;

struct BlockQ4_0 {
    uint16_t d;              // scale (f16 bits)
    uint8_t qs[kQK4_0 / 2];  // element j: low nibble of qs[j]; element j+16: high nibble
};
struct BlockQ4_1 {
    uint16_t d;              // scale (f16 bits)
    uint16_t m;              // minimum (f16 bits)
    uint8_t qs[kQK4_1 / 2];  // as Q4_0
};
struct BlockQ5_0 {
    uint16_t d;              // scale (f16 bits)
    uint8_t qh[4];           // fifth bits: bit j (little-endian uint32) belongs to element j
    uint8_t qs[kQK5_0 / 2];  // low 4 bits, as Q4_0
};
struct BlockQ5_1 {
    uint16_t d;
    uint16_t m;
    uint8_t qh[4];
    uint8_t qs[kQK5_1 / 2];
};
struct BlockQ8_0 {
    uint16_t d;          // scale (f16 bits)
    int8_t qs[kQK8_0];   // element j
};
struct BlockQ8_1 {
    uint16_t d;          // scale (f16 bits)
    uint16_t s;          // d * sum(qs) (f16 bits)
    int8_t qs[kQK8_1];
};
struct BlockQ4_K {
    uint16_t d;                    // super-scale of the 6-bit scales (f16 bits)
    uint16_t dmin;                 // super-scale of the 6-bit mins (f16 bits)
    uint8_t scales[kKScaleSize];   // 8 scales and 8 mins, 6 bits each
    uint8_t qs[kQK_K / 2];         // 4-bit quants
};
struct BlockQ5_K {
    uint16_t d;
    uint16_t dmin;
    uint8_t scales[kKScaleSize];
    uint8_t qh[kQK_K / 8];
    uint8_t qs[kQK_K / 2];
};
struct BlockQ6_K {
    uint8_t ql[kQK_K / 2];      // low 4 bits
    uint8_t qh[kQK_K / 4];      // high 2 bits
    int8_t scales[kQK_K / 16];  // 8-bit scales of 16-element groups
    uint16_t d;                 // super-scale (f16 bits)
};
struct BlockQ8_K {
    float d;
    int8_t qs[kQK_K];
    int16_t bsums[kQK_K / 16];
};

static_assert(sizeof(BlockQ4_0) == 18 && alignof(BlockQ4_0) == 2, "block_q4_0 layout");
static_assert(sizeof(BlockQ4_1) == 20 && alignof(BlockQ4_1) == 2, "block_q4_1 layout");
static_assert(sizeof(BlockQ5_0) == 22 && alignof(BlockQ5_0) == 2, "block_q5_0 layout");
static_assert(sizeof(BlockQ5_1) == 24 && alignof(BlockQ5_1) == 2, "block_q5_1 layout");
static_assert(sizeof(BlockQ8_0) == 34 && alignof(BlockQ8_0) == 2, "block_q8_0 layout");
static_assert(sizeof(BlockQ8_1) == 36 && alignof(BlockQ8_1) == 2, "block_q8_1 layout");
static_assert(sizeof(BlockQ4_K) == 144 && alignof(BlockQ4_K) == 2, "block_q4_K layout");
static_assert(sizeof(BlockQ5_K) == 176 && alignof(BlockQ5_K) == 2, "block_q5_K layout");
static_assert(sizeof(BlockQ6_K) == 210 && alignof(BlockQ6_K) == 2, "block_q6_K layout");
static_assert(sizeof(BlockQ8_K) == 292, "block_q8_K layout");
static_assert(offsetof(BlockQ4_1, qs) == 4 && offsetof(BlockQ8_0, qs) == 2 && offsetof(BlockQ5_0, qs) == 6 &&
                  offsetof(BlockQ6_K, d) == 208 && offsetof(BlockQ4_K, qs) == 16,
              "block field offsets");

}  // namespace kvrt
