// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Dequantisation of tensor rows to f32 and bf16.
//
// Two implementations of the same arithmetic:
//   - kvrt::ref::dequantize_*: a plain scalar loop per type, ggml's formulas
//     (tensor_type.hpp); the oracle.
//   - kvrt::dequantize_*: picks the widest path the CPU has at run time
//     (AVX-512 > AVX2 > scalar) and gives bit-for-bit the reference's output.
//     Why that holds even where the compiler fuses a multiply and an add: every
//     product that is followed by an add (Q4_1, Q5_1: q * d; Q4_K, Q5_K: (d * sc) * q)
//     is exact in f32 (at most 6 + 11 + 6 significant bits < 24), so the add is
//     the only rounding, fused or not. Halves convert as dequant_f16 (signalling
//     NaNs made quiet); bf16 output is the f32 value rounded to nearest even
//     (NaN kept quiet), exactly util/dtype.hpp's f32_to_bf16.
// Supported types: F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1, Q4_K, Q6_K
// (all vectorised) and Q5_K (the scalar reference on every path: the weight matmul
// packs it natively, so only f32_weights loads dequantise it). Others throw
// KVRT_ERR_UNSUPPORTED naming the type.
//
// Thread safety: pure functions; call from any thread. Cost: O(n), memory bound.
#pragma once

#include "formats/tensor_type.hpp"
#include "util/dtype.hpp"

#include <cstdint>
#include <cstring>

namespace kvrt {

struct GgufTensor;

// f16 -> f32 as every dequantisation path does it: exact, with signalling NaNs
// made quiet (what F16C's VCVTPH2PS does, so scalar and vector paths agree).
inline float dequant_f16(uint16_t h) noexcept {
    float f = f16_to_f32(h);
    if ((h & 0x7c00u) == 0x7c00u && (h & 0x03ffu) != 0) {
        uint32_t u;
        std::memcpy(&u, &f, 4);
        u |= 0x00400000u;
        std::memcpy(&f, &u, 4);
    }
    return f;
}

enum class DequantIsa : uint8_t { Scalar = 0, Avx2 = 1, Avx512 = 2 };

const char* dequant_isa_name(DequantIsa isa) noexcept;
// True when this CPU can run `isa` (Scalar always).
bool dequant_isa_available(DequantIsa isa) noexcept;
// The widest available path at the process-wide level (util/isa.hpp: KVRT_ISA, isa_set_limit).
DequantIsa dequant_best_isa() noexcept;

// True when dequantize_* accept type t.
bool dequant_supported(TensorType t) noexcept;

// Dequantises `n` elements of type t starting at `src` (which points at a block
// boundary; n must be a multiple of the block size) into dst[0..n).
// Throws KVRT_ERR_UNSUPPORTED (type) or KVRT_ERR_INVALID_ARGUMENT (n).
void dequantize_f32(TensorType t, const void* src, float* dst, uint64_t n);
void dequantize_bf16(TensorType t, const void* src, uint16_t* dst, uint64_t n);
// The same with an explicit path (tests and benchmarks); throws KVRT_ERR_UNSUPPORTED
// when the CPU lacks it.
void dequantize_f32(TensorType t, const void* src, float* dst, uint64_t n, DequantIsa isa);
void dequantize_bf16(TensorType t, const void* src, uint16_t* dst, uint64_t n, DequantIsa isa);

// Rows [first, first + count) of a tensor, row-major into dst (count * t.row_elems()
// values). Throws KVRT_ERR_OUT_OF_RANGE naming the tensor when the rows are past its end.
void dequantize_rows_f32(const GgufTensor& t, uint64_t first, uint64_t count, float* dst);
void dequantize_rows_bf16(const GgufTensor& t, uint64_t first, uint64_t count, uint16_t* dst);

namespace ref {
// Scalar reference (same contract as above).
void dequantize_f32(TensorType t, const void* src, float* dst, uint64_t n);
void dequantize_bf16(TensorType t, const void* src, uint16_t* dst, uint64_t n);
}  // namespace ref

namespace detail {
// Vector paths (tensor_type_dequant_avx2.cpp / _avx512.cpp). They return false for
// a type they do not vectorise (the caller then runs the scalar reference).
bool dequantize_f32_avx2(TensorType t, const void* src, float* dst, uint64_t n);
bool dequantize_bf16_avx2(TensorType t, const void* src, uint16_t* dst, uint64_t n);
bool dequantize_f32_avx512(TensorType t, const void* src, float* dst, uint64_t n);
bool dequantize_bf16_avx512(TensorType t, const void* src, uint16_t* dst, uint64_t n);
}  // namespace detail

}  // namespace kvrt
