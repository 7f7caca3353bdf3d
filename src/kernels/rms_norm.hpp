// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// RMSNorm: out[i] = x[i] / sqrt(mean_j(x[j]^2) + eps) * weight[i], row by row.
// ref:: double accumulation; cpu:: f32 with a fixed reduction order (deterministic).
// out may equal x. weight may be nullptr (no scaling).
#pragma once

#include <cstdint>

namespace kvrt {
namespace ref {
void rms_norm(const float* x, const float* weight, float eps, int32_t n_rows, int32_t dim, float* out);
}
namespace cpu {
void rms_norm(const float* x, const float* weight, float eps, int32_t n_rows, int32_t dim, float* out);
}
}  // namespace kvrt
