// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// 16-bit activation codes (ActBits::Q16, weight_matmul.hpp), portable path: per
// 32-element block, d = amax / 32767, q = round-half-even(x / d) clamped to
// [-32767, 32767] (NaN -> -32767, as the AVX2 conversion's INT_MIN clamps), the
// integer sum and d * sum. activation_quant16_avx2.cpp gives the same bytes.
#include "kernels/cpu/activation_quant.hpp"

#include <cmath>

namespace kvrt::kernels {

void quantize_row16_scalar(const float* x, int64_t nb, int16_t* qs, float* d, int32_t* sum, float* s) {
    for (int64_t b = 0; b < nb; b++) {
        const float* xb = x + b * 32;
        float amax = 0.0f;
        for (int j = 0; j < 32; j++) {
            const float a = std::fabs(xb[j]);
            amax = a > amax ? a : amax;
        }
        const auto [db, id] = block_scale16(amax);
        int32_t total = 0;
        for (int j = 0; j < 32; j++) {
            const float r = std::nearbyint(xb[j] * id);  // round half to even (default FP environment)
            const int32_t q = r >= 32767.0f ? 32767 : r <= -32767.0f ? -32767 : r == r ? static_cast<int32_t>(r) : -32767;
            qs[b * 32 + j] = static_cast<int16_t>(q);
            total += q;
        }
        store_block_stats(b, db, total, d, sum, s);
    }
}

}  // namespace kvrt::kernels
