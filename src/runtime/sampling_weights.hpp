// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// The samplers' softmax weights: w(x) = exp(x) of a candidate's logit minus the largest one
// (times 1 / temperature), so x <= 0, and the sum of those weights over a whole vocabulary.
//
// A draw at a temperature sums every candidate's weight (the normaliser) before it walks the
// largest few: over Gemma 3's 262,144 logits the double-precision std::exp per candidate was
// ~1.4 ms per token [Intel Xeon @ 2.80GHz, Ice Lake-SP], a tenth of the decode step. These are
// float weights from one polynomial (Cephes' expf: Cody-Waite reduction by ln 2, degree 5;
// relative error <= 1e-7 against exp, checked in tests/unit/test_sampling.cpp), summed in
// vectors on AVX-512 or AVX2 where the CPU has them (isa_active()), else in SSE2.
//
// Same result on every machine: the file is compiled with -ffp-contract=off (no fused
// multiply-adds, whatever the target), each lane does the scalar function's operations, and
// the sum's order does not depend on the vector width (16 double partial sums, element i
// into sum i mod 16, folded in a fixed tree, then the tail in order). So a seed draws the
// same tokens with any ISA, and softmax_weight(x) is bit for bit a term of the sum.
#pragma once

#include <cstddef>

namespace kvrt::runtime {

// exp(x) for x <= 0 (x > 0 is outside the domain: the result is unspecified); 0 for x < -87
// (below float's normal range: exp(-87) ~ 1.6e-38), for -inf and for NaN.
float softmax_weight(float x) noexcept;

// The sum over i in [0, n) of softmax_weight((x[i] - shift) * scale), in double, in the
// order above (NaN and -inf entries add 0). isa: 0 the dispatch by isa_active(); 1 SSE2,
// 2 AVX2, 3 AVX-512 (tests: the CPU must have it).
double softmax_weight_sum(const float* x, size_t n, float shift, float scale, int isa = 0) noexcept;

}  // namespace kvrt::runtime
