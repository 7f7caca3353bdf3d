// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// ref:: gated activations in double with libm: the oracle of cpu::silu_mul / gelu_tanh_mul.
#include "kernels/activation.hpp"

#include <cmath>

namespace kvrt::ref {

void silu_mul(float* gate, const float* up, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        const double x = gate[i];
        gate[i] = static_cast<float>(x / (1.0 + std::exp(-x)) * double(up[i]));
    }
}

void gelu_tanh_mul(float* gate, const float* up, int64_t n) {
    constexpr double kSqrt2OverPi = 0.79788456080286535588;
    for (int64_t i = 0; i < n; ++i) {
        const double x = gate[i];
        gate[i] = static_cast<float>(0.5 * x * (1.0 + std::tanh(kSqrt2OverPi * (x + 0.044715 * x * x * x))) *
                                     double(up[i]));
    }
}

}  // namespace kvrt::ref
