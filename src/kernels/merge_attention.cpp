// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// merge_attention: combine two attention partials over disjoint key sets by their log-sum-exp.
#include "kernels/attention.hpp"
#include "util/error.hpp"

#include <cmath>

namespace kvrt {

void merge_attention(float* out_a, float* lse_a, const float* out_b, const float* lse_b, int32_t n_rows,
                     int32_t head_dim) {
    KVRT_CHECK(n_rows >= 0 && head_dim > 0, KVRT_ERR_INVALID_ARGUMENT, "merge_attention: bad shape");
    if (n_rows == 0) return;
    KVRT_CHECK(out_a && lse_a && out_b && lse_b, KVRT_ERR_INVALID_ARGUMENT, "merge_attention: null pointer");
    for (int32_t r = 0; r < n_rows; ++r) {
        const float la = lse_a[r], lb = lse_b[r];
        float* oa = out_a + size_t(r) * head_dim;
        const float* ob = out_b + size_t(r) * head_dim;
        if (std::isinf(lb) && lb < 0) continue;  // B empty: A unchanged
        if (std::isinf(la) && la < 0) {          // A empty: take B
            for (int32_t c = 0; c < head_dim; ++c) oa[c] = ob[c];
            lse_a[r] = lb;
            continue;
        }
        const float m = la > lb ? la : lb;
        const float wa = std::exp(la - m), wb = std::exp(lb - m);
        const float inv = 1.0f / (wa + wb);
        const float ca = wa * inv, cb = wb * inv;
        for (int32_t c = 0; c < head_dim; ++c) oa[c] = oa[c] * ca + ob[c] * cb;
        lse_a[r] = m + std::log(wa + wb);
    }
}

}  // namespace kvrt
