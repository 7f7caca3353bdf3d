// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Row softmax in place: x[r][i] = exp(x[r][i] - max_r) / sum_j exp(x[r][j] - max_r).
// -inf entries get 0; a row of all -inf becomes all 0. ref:: double; cpu:: f32, fixed order.
#pragma once

#include <cstdint>

namespace kvrt {
namespace ref {
void softmax(float* x, int32_t n_rows, int32_t n);
}
namespace cpu {
void softmax(float* x, int32_t n_rows, int32_t n);
}
}  // namespace kvrt
