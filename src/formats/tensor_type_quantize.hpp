// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Quantisation of f32 rows into GGUF tensor types (ggml's reference algorithms,
// quantize_row_*_ref), so kvrt can write quantised GGUF files (`kvrt ced-init`,
// test fixtures) that llama.cpp reads identically.
//
//   Q8_0: d = max|x| / 127, q = round(x / d)                     (x = q * d)
//   Q8_1: as Q8_0, plus s = d * sum(q)
//   Q4_0: d = (the x of largest |x|) / -8, q = min(15, trunc(x / d + 8.5))  (x = (q - 8) * d)
//   Q4_1: d = (max - min) / 15, m = min, q = min(15, trunc((x - m) / d + 0.5))  (x = q * d + m)
//   F16 / BF16: round to nearest even.  F32: copy.
// Scales are stored as f16 (round to nearest even), so dequantize(quantize(x))
// is within about d / 2 (+ the f16 rounding of d and m) of x.
//
// Thread safety: pure functions. Cost: O(n).
#pragma once

#include "formats/tensor_type.hpp"

#include <cstdint>

namespace kvrt {

// True when quantize() accepts type t.
bool quantize_supported(TensorType t) noexcept;

// Quantises n floats (a multiple of t's block size) into tensor_row_bytes(t, n)
// bytes at dst. Throws KVRT_ERR_UNSUPPORTED (type) or KVRT_ERR_INVALID_ARGUMENT (n).
void quantize(TensorType t, const float* src, void* dst, uint64_t n);

}  // namespace kvrt
