// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

#include "kernels/query_quant.hpp"

#include <cmath>
#include <limits>

namespace kvrt {

void quantize_query_i8(const float* q, int32_t d, int8_t* qi, float* sc) {
    for (int32_t g0 = 0, g = 0; g0 < d; g0 += kQueryI8Group, ++g) {
        float amax = 0.0f;
        bool finite = true;
        for (int32_t c = g0; c < g0 + kQueryI8Group; ++c) {
            const float a = std::fabs(q[c]);
            if (!(a <= 3.4e38f)) finite = false;  // inf or NaN
            amax = a > amax ? a : amax;
        }
        if (!finite) {
            sc[g] = std::numeric_limits<float>::quiet_NaN();
            for (int32_t c = g0; c < g0 + kQueryI8Group; ++c) qi[c] = 0;
            continue;
        }
        sc[g] = amax / 127.0f;
        const float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
        // Round to nearest, ties to even, by the 1.5 x 2^23 shift (|v| <= 127 after the clamp;
        // std::nearbyint is a libm call on the baseline ISA).
        constexpr float kShift = 12582912.0f;
        for (int32_t c = g0; c < g0 + kQueryI8Group; ++c) {
            float v = q[c] * inv;
            v = v > 127.0f ? 127.0f : v < -127.0f ? -127.0f : v;
            const float r = (v + kShift) - kShift;
            qi[c] = static_cast<int8_t>(static_cast<int32_t>(r));
        }
    }
}

}  // namespace kvrt
