// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Scans of a row of logits that the samplers make over a whole vocabulary per token (262,144
// logits for Gemma 3), in vectors without a dependency from one element to the next
// (runtime/logit_scan.cpp says what they cost).
#pragma once

#include <cstddef>

namespace kvrt::runtime {

// The largest logit, NaN ignored; -inf when there is none.
float max_logit(const float* x, size_t n) noexcept;

// The first index whose logit equals v (+0 and -0 are equal), or n.
size_t first_equal(const float* x, size_t n, float v) noexcept;

// How many logits are NaN, -inf and +inf.
struct NonFinite {
    size_t nan = 0, neg_inf = 0, pos_inf = 0;
};
NonFinite count_non_finite(const float* x, size_t n) noexcept;

}  // namespace kvrt::runtime
