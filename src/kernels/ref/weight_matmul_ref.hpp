// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Reference weight matmul (the oracle of the fast kernels): naive loops over
// the original GGUF layout. Quantised weights: each X row is quantised with
// the same rule as the fast path (activation_quant.hpp, written again here
// naively), each block's dot product is the exact integer sum, and the block
// partials d_w*d_a*isum (+ m_w*s_a for Q4_1; - (dmin*m)*s_a per sub-block for
// Q4_K / Q5_K; Q6_K: d*d_a*(sc_lo*isum_lo + sc_hi*isum_hi) over the two 16-element
// groups of the block) are accumulated in double. Float
// weights: products accumulated in double. Single-threaded.
#pragma once

#include "formats/tensor_type.hpp"
#include "kernels/weight_matmul.hpp"

#include <cstdint>

namespace kvrt::ref {

// Q8 activation quantisation of one row of nb blocks (same bytes as the fast path).
void quantize_row_q8(const float* x, int64_t nb, int8_t* qs, float* d, int32_t* sum);
// 16-bit activation codes (ActBits::Q16): d = amax / 32767, |q| <= 32767 (same bytes as the fast path).
void quantize_row_q16(const float* x, int64_t nb, int16_t* qs, float* d, int32_t* sum);
// ActBits::Q8R's outlier residual of a row quantised by quantize_row_q8 (weight_matmul.hpp): the
// residual codes (zero outside marked blocks), scales (0: not marked) and sums; same values as the
// fast path's.
void residual_row_q8(const float* x, int64_t nb, const int8_t* qs, const float* d, int32_t* rq, float* rd,
                     int32_t* rsum);

// Y[m][n] = sum_k X[m][k] W[n][k]; W: n_rows rows of k elements of `type` (GGUF layout);
// act: the activation code width of the quantised types.
void weight_matmul(TensorType type, const void* w, int64_t n_rows, int64_t k, const float* X, int64_t M, int64_t ldx,
                   float* Y, int64_t ldy, ActBits act = ActBits::Q8);

// Plain f32 math for error bounds: W dequantised to f32 (ggml's formulas),
// X as given, products accumulated in double.
void weight_matmul_dequant_f32(TensorType type, const void* w, int64_t n_rows, int64_t k, const float* X, int64_t M,
                               int64_t ldx, float* Y, int64_t ldy);

// Row n of W dequantised to f32 (ggml's formulas: x = q*d + m for Q4_1, (q-8)*d for Q4_0, q*d for Q8_0;
// Q5_0 and the K-quants through formats' scalar reference, ref::dequantize_f32).
void dequantize_row(TensorType type, const void* w, int64_t n, int64_t k, float* out);

}  // namespace kvrt::ref
