// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Quantising activation rows for the integer weight-matmul kernels: each row of
// X is cut into 32-element blocks along K; block b of row m becomes 32 int8
// values q (|q| <= 127), a float scale d and the exact integer sum of q:
//
//   amax = max |x_j|;  d = amax / 127;  id = d != 0 ? 1 / d : 0
//   q_j  = round-half-even(x_j * id);   sum = sum_j q_j;  s = d * (float)sum
//
// (llama.cpp's Q8_1 with f32 instead of f16 scale and sum, and round-half-even,
// which is what the SIMD conversions do), plus sum_lo = sum of q_0..q_15 (the
// first of the two 16-element groups Q6_K scales separately). The result is a function of the row
// alone, and every ISA path produces the same bytes (the tests check it).
#pragma once

#include "kernels/weight_matmul.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>

namespace kvrt::kernels {

// A view of M quantised rows of nb blocks. Row m's int8 values start at
// qs + m * nb * 32; its scales, sums, d*sum and half sums at d/sum/s/sum_lo + m * nb.
// 16-bit codes (ActBits::Q16, activation_quant.cpp): q16 instead of qs (qs is then
// null), d = amax / 32767, |q| <= 32767; the sums as above.
// ActBits::Q8R adds the outlier blocks' residuals (weight_matmul.hpp): rq (32 codes per block,
// written for marked blocks only), rd (their scale; 0: not marked), rsum / rsum_lo (their sums,
// as sum / sum_lo, marked blocks only), rcount and rlist (per row: how many blocks are marked, and
// which, in increasing order, rlist[m * blocks + i] for i < rcount[m]); s then covers both parts.
// Null otherwise.
struct QuantizedRows {
    int64_t rows = 0;
    int64_t blocks = 0;  // nb = K / 32
    int8_t* qs = nullptr;
    float* d = nullptr;
    int32_t* sum = nullptr;
    float* s = nullptr;
    int32_t* sum_lo = nullptr;
    int16_t* q16 = nullptr;
    int8_t* rq = nullptr;
    float* rd = nullptr;
    int32_t* rsum = nullptr;
    int32_t* rsum_lo = nullptr;
    int32_t* rlist = nullptr;
    int32_t* rcount = nullptr;

    const int8_t* row_qs(int64_t m) const { return qs + m * blocks * 32; }
    const int16_t* row_q16(int64_t m) const { return q16 + m * blocks * 32; }
    // The view of rows [m0, rows).
    QuantizedRows from_row(int64_t m0) const {
        auto at = [m0](auto* p, int64_t per_row) { return p ? p + m0 * per_row : p; };
        const int64_t nb = blocks;
        return QuantizedRows{rows - m0,
                             nb,
                             at(qs, 32 * nb), at(d, nb), at(sum, nb), at(s, nb), at(sum_lo, nb),
                             at(q16, 32 * nb),
                             at(rq, 32 * nb), at(rd, nb), at(rsum, nb), at(rsum_lo, nb), at(rlist, nb),
                             at(rcount, 1)};
    }
    // Bytes of storage per row and block for codes of `act` (QuantizedRowsBuffer::view).
    static size_t bytes_per_block(ActBits act) {
        return act == ActBits::Q16 ? 64 + 16 : act == ActBits::Q8R ? 32 + 16 + 32 + 16 + 4 : 32 + 16;
    }
};

// Storage for QuantizedRows, grown on demand and reused (64-byte aligned).
class QuantizedRowsBuffer {
public:
    // A view over storage for `rows` x `blocks` (reallocates only when larger), with
    // 8-bit (qs) or 16-bit (q16) codes.
    QuantizedRows view(int64_t rows, int64_t blocks, ActBits act = ActBits::Q8);

private:
    struct Free {
        void operator()(uint8_t* p) const noexcept;
    };
    std::unique_ptr<uint8_t[], Free> mem_;
    size_t capacity_ = 0;
};

// ActBits::Q8R's second step for one row already quantised to 8-bit codes (qs, d, s, sum_lo):
// marks its outlier blocks (d > kOutlierBlockRatio * the mean of the row's d and d^2 >=
// kOutlierBlockShare * the sum of its d^2: rd != 0), writes
// their residual codes and sums, lists them in rlist and updates s; returns how many it marked.
// One body (activation_residual_core.inl) compiled portable and for AVX2 + FMA: the same bytes
// (its float steps are fmas, round-half-even, one sequential mean and one fma chain of squares).
int32_t quantize_row_residual(const float* x, int64_t nb, const int8_t* qs, const float* d, float* s, int8_t* rq,
                              float* rd, int32_t* rsum, int32_t* rsum_lo, int32_t* rlist);
int32_t quantize_row_residual_avx2(const float* x, int64_t nb, const int8_t* qs, const float* d, float* s, int8_t* rq,
                                   float* rd, int32_t* rsum, int32_t* rsum_lo, int32_t* rlist);

// Quantises rows [m0, m1) of X (rows ldx floats apart, K = out.blocks * 32)
// into `out` (8-bit codes, or 16-bit ones when out.q16 is set). isa must be
// supported by the CPU; Auto takes the CPU's best path (kernel_isa_detected()).
void quantize_rows(const float* X, int64_t ldx, int64_t m0, int64_t m1, const QuantizedRows& out, KernelIsa isa);

// The block's scale d = amax / 127 and its inverse (0 for an all-zero block): the one
// definition every ISA path uses, so they agree to the bit.
struct BlockScale {
    float d, id;
};
inline BlockScale block_scale(float amax) {
    const float d = amax / 127.0f;
    return BlockScale{d, d != 0.0f ? 1.0f / d : 0.0f};
}
// Stores block b's scale, integer sum and d * sum.
inline void store_block_stats(int64_t b, float d, int32_t total, float* ds, int32_t* sum, float* s) {
    ds[b] = d;
    sum[b] = total;
    s[b] = d * static_cast<float>(total);
}

// One row with the portable code (also what the scalar path uses).
void quantize_row_scalar(const float* x, int64_t nb, int8_t* qs, float* d, int32_t* sum, float* s);

// The SIMD twins (defined in activation_quant_avx2.cpp / _avx512.cpp).
void quantize_row_avx2(const float* x, int64_t nb, int8_t* qs, float* d, int32_t* sum, float* s);
void quantize_row_avx512(const float* x, int64_t nb, int8_t* qs, float* d, int32_t* sum, float* s);

// 16-bit codes (activation_quant.cpp, activation_quant_avx2.cpp): d = amax / 32767, q = round-half-even(x / d)
// clamped to [-32767, 32767] (a NaN gives -32767), the same bytes on every path.
inline BlockScale block_scale16(float amax) {
    const float d = amax / 32767.0f;
    return BlockScale{d, d != 0.0f ? 1.0f / d : 0.0f};
}
void quantize_row16_scalar(const float* x, int64_t nb, int16_t* qs, float* d, int32_t* sum, float* s);
void quantize_row16_avx2(const float* x, int64_t nb, int16_t* qs, float* d, int32_t* sum, float* s);
void quantize_row16_avx512(const float* x, int64_t nb, int16_t* qs, float* d, int32_t* sum, float* s);

}  // namespace kvrt::kernels
