// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Gated FFN activations: gate[i] = act(gate[i]) * up[i] for n elements.
//   silu_mul       act(x) = x / (1 + e^-x)                          (llama, qwen2)
//   gelu_tanh_mul  act(x) = 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3)
//                        = x / (1 + e^(-2u))                          (gemma3)
// ref:: evaluates in double with libm (the oracle). cpu:: evaluates in f32 with one
// exp of its own (Cody-Waite reduction by ln 2, degree-7 polynomial: <= 2 ulp from the
// correctly rounded e^y over the f32 range), the same operations in the same order on
// every ISA path (scalar fmaf or 8/16-wide FMA), so every path gives the same bits.
// NaN propagates; +-inf inputs give the limits (silu(+inf) = +inf, silu(-inf) = -0).
#pragma once

#include <cstdint>

namespace kvrt {
namespace ref {
void silu_mul(float* gate, const float* up, int64_t n);
void gelu_tanh_mul(float* gate, const float* up, int64_t n);
}  // namespace ref
namespace cpu {
void silu_mul(float* gate, const float* up, int64_t n);
void gelu_tanh_mul(float* gate, const float* up, int64_t n);
// e^x by the kernel's own routine (scalar path): exposed for the accuracy test.
float exp_f32(float x);
}  // namespace cpu
}  // namespace kvrt
