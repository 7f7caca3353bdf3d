// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Reference RMSNorm, RoPE and softmax in double precision.
#include "kernels/rms_norm.hpp"
#include "kernels/rope.hpp"
#include "kernels/softmax.hpp"
#include "util/error.hpp"

#include <cmath>
#include <limits>

namespace kvrt::ref {

void rms_norm(const float* x, const float* weight, float eps, int32_t n_rows, int32_t dim, float* out) {
    KVRT_CHECK(n_rows >= 0 && dim > 0 && x && out, KVRT_ERR_INVALID_ARGUMENT, "rms_norm: bad arguments");
    for (int32_t r = 0; r < n_rows; ++r) {
        const float* xr = x + size_t(r) * dim;
        double ss = 0;
        for (int32_t i = 0; i < dim; ++i) ss += double(xr[i]) * xr[i];
        double inv = 1.0 / std::sqrt(ss / dim + double(eps));
        float* o = out + size_t(r) * dim;
        for (int32_t i = 0; i < dim; ++i) o[i] = float(double(xr[i]) * inv * (weight ? double(weight[i]) : 1.0));
    }
}

void rope(float* x, int32_t n_tokens, const int32_t* positions, const RopeParams& p, bool inverse) {
    KVRT_CHECK(n_tokens >= 0 && (n_tokens == 0 || (x && positions)), KVRT_ERR_INVALID_ARGUMENT, "rope: null pointer");
    KVRT_CHECK(p.n_heads > 0 && p.head_dim > 0 && p.rope_dims >= 0 && p.rope_dims % 2 == 0 &&
                   p.rope_dims <= p.head_dim,
               KVRT_ERR_INVALID_ARGUMENT, "rope: bad shape (rope_dims must be even and <= head_dim)");
    const int32_t R = p.rope_dims, half = R / 2, tail0 = p.head_dim - R;
    for (int32_t t = 0; t < n_tokens; ++t)
        for (int32_t h = 0; h < p.n_heads; ++h) {
            float* v = x + (size_t(t) * p.n_heads + h) * p.head_dim + tail0;
            for (int32_t i = 0; i < half; ++i) {
                double ang = double(positions[t]) * double(p.freq_scale) * std::pow(double(p.theta), -2.0 * i / R);
                if (inverse) ang = -ang;
                double c = std::cos(ang), s = std::sin(ang);
                int32_t a = p.mode == RopeMode::Neox ? i : 2 * i, b = p.mode == RopeMode::Neox ? i + half : 2 * i + 1;
                double x0 = v[a], x1 = v[b];
                v[a] = float(x0 * c - x1 * s);
                v[b] = float(x0 * s + x1 * c);
            }
        }
}

void softmax(float* x, int32_t n_rows, int32_t n) {
    KVRT_CHECK(n_rows >= 0 && n >= 0 && (n_rows == 0 || n == 0 || x), KVRT_ERR_INVALID_ARGUMENT, "softmax: bad arguments");
    for (int32_t r = 0; r < n_rows; ++r) {
        float* v = x + size_t(r) * n;
        double m = -std::numeric_limits<double>::infinity();
        for (int32_t i = 0; i < n; ++i) m = std::max(m, double(v[i]));
        if (std::isinf(m) && m < 0) {
            for (int32_t i = 0; i < n; ++i) v[i] = 0;
            continue;
        }
        double s = 0;
        for (int32_t i = 0; i < n; ++i) s += std::exp(double(v[i]) - m);
        for (int32_t i = 0; i < n; ++i) v[i] = float(std::exp(double(v[i]) - m) / s);
    }
}

}  // namespace kvrt::ref
