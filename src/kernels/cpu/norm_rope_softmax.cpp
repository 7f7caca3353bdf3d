// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// cpu:: RMSNorm, RoPE and softmax: f32, OpenMP over rows, fixed per-row reduction order
// (8 interleaved partial sums combined pairwise), so a row's result never depends on the
// other rows or the thread count. Small next to attention and matmuls; the compiler
// vectorises the inner loops at the baseline ISA.
#include "kernels/rms_norm.hpp"
#include "kernels/rope.hpp"
#include "kernels/softmax.hpp"
#include "util/error.hpp"

#include <omp.h>

#include <cmath>
#include <limits>
#include <vector>

namespace kvrt::cpu {

namespace {
float sum_squares(const float* x, int32_t n) {
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int32_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; ++k) acc[k] += x[i + k] * x[i + k];
    for (; i < n; ++i) acc[i & 7] += x[i] * x[i];
    return ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
}
}  // namespace

void rms_norm(const float* x, const float* weight, float eps, int32_t n_rows, int32_t dim, float* out) {
    KVRT_CHECK(n_rows >= 0 && dim > 0 && x && out, KVRT_ERR_INVALID_ARGUMENT, "rms_norm: bad arguments");
#pragma omp parallel for schedule(static) if (int64_t(n_rows) * dim > 65536)
    for (int32_t r = 0; r < n_rows; ++r) {
        const float* xr = x + size_t(r) * dim;
        float* o = out + size_t(r) * dim;
        const float inv = 1.0f / std::sqrt(sum_squares(xr, dim) / float(dim) + eps);
        if (weight)
            for (int32_t i = 0; i < dim; ++i) o[i] = xr[i] * inv * weight[i];
        else
            for (int32_t i = 0; i < dim; ++i) o[i] = xr[i] * inv;
    }
}

namespace {

void check_rope(const RopeParams& p) {
    KVRT_CHECK(p.n_heads > 0 && p.head_dim > 0 && p.rope_dims >= 0 && p.rope_dims % 2 == 0 &&
                   p.rope_dims <= p.head_dim,
               KVRT_ERR_INVALID_ARGUMENT, "rope: bad shape (rope_dims must be even and <= head_dim)");
}

// theta^(-2i / R) x freq_scale, in double, for the R / 2 pairs.
void rope_inv_freq(const RopeParams& p, double* inv_freq) {
    const int32_t R = p.rope_dims;
    for (int32_t i = 0; i < R / 2; ++i) inv_freq[i] = double(p.freq_scale) * std::pow(double(p.theta), -2.0 * i / R);
}

void rope_pairs(int32_t pos, const double* inv_freq, int32_t half, bool inverse, float* cs) {
    for (int32_t i = 0; i < half; ++i) {
        const double ang = double(pos) * inv_freq[i];
        cs[2 * i] = float(std::cos(ang));
        cs[2 * i + 1] = float(inverse ? -std::sin(ang) : std::sin(ang));
    }
}

// Rotates the heads of one token with its pairs cs.
void rope_token(float* x, const float* cs, const RopeParams& p) {
    const int32_t half = p.rope_dims / 2, tail0 = p.head_dim - p.rope_dims;
    for (int32_t h = 0; h < p.n_heads; ++h) {
        float* v = x + size_t(h) * p.head_dim + tail0;
        if (p.mode == RopeMode::Neox) {
            for (int32_t i = 0; i < half; ++i) {
                const float x0 = v[i], x1 = v[i + half], c = cs[2 * i], s = cs[2 * i + 1];
                v[i] = x0 * c - x1 * s;
                v[i + half] = x0 * s + x1 * c;
            }
        } else {
            for (int32_t i = 0; i < half; ++i) {
                const float x0 = v[2 * i], x1 = v[2 * i + 1], c = cs[2 * i], s = cs[2 * i + 1];
                v[2 * i] = x0 * c - x1 * s;
                v[2 * i + 1] = x0 * s + x1 * c;
            }
        }
    }
}

}  // namespace

void rope(float* x, int32_t n_tokens, const int32_t* positions, const RopeParams& p, bool inverse) {
    KVRT_CHECK(n_tokens >= 0 && (n_tokens == 0 || (x && positions)), KVRT_ERR_INVALID_ARGUMENT, "rope: null pointer");
    check_rope(p);
    const int32_t R = p.rope_dims, half = R / 2;
    if (half == 0) return;
    std::vector<double> inv_freq(half);
    rope_inv_freq(p, inv_freq.data());
    // Each thread's (cos, sin) pairs, allocated before the region (an allocation inside it could
    // throw, and an exception may not leave an OpenMP region).
    const bool par = int64_t(n_tokens) * p.n_heads * R > 65536;
    std::vector<float> cs_all(size_t(par ? omp_get_max_threads() : 1) * size_t(half) * 2);
#pragma omp parallel if (par)
    {
        float* cs = cs_all.data() + size_t(omp_get_thread_num()) * size_t(half) * 2;
#pragma omp for schedule(static)
        for (int32_t t = 0; t < n_tokens; ++t) {
            rope_pairs(positions[t], inv_freq.data(), half, inverse, cs);
            rope_token(x + size_t(t) * p.n_heads * p.head_dim, cs, p);
        }
    }
}

void rope_table(const int32_t* positions, int32_t n_tokens, const RopeParams& p, bool inverse, float* cs) {
    KVRT_CHECK(n_tokens >= 0 && (n_tokens == 0 || (cs && positions)), KVRT_ERR_INVALID_ARGUMENT,
               "rope_table: null pointer");
    KVRT_CHECK(p.rope_dims >= 0 && p.rope_dims % 2 == 0, KVRT_ERR_INVALID_ARGUMENT, "rope_table: rope_dims must be even");
    const int32_t R = p.rope_dims, half = R / 2;
    if (half == 0) return;
    std::vector<double> inv_freq(half);
    rope_inv_freq(p, inv_freq.data());
#pragma omp parallel for schedule(static) if (int64_t(n_tokens) * R > 65536)
    for (int32_t t = 0; t < n_tokens; ++t) rope_pairs(positions[t], inv_freq.data(), half, inverse, cs + size_t(t) * R);
}

void rope_apply(float* x, int32_t n_tokens, const float* cs, const RopeParams& p) {
    KVRT_CHECK(n_tokens >= 0 && (n_tokens == 0 || (x && cs)), KVRT_ERR_INVALID_ARGUMENT, "rope_apply: null pointer");
    check_rope(p);
    if (p.rope_dims == 0) return;
#pragma omp parallel for schedule(static) if (int64_t(n_tokens) * p.n_heads * p.rope_dims > 65536)
    for (int32_t t = 0; t < n_tokens; ++t)
        rope_token(x + size_t(t) * p.n_heads * p.head_dim, cs + size_t(t) * p.rope_dims, p);
}

void softmax(float* x, int32_t n_rows, int32_t n) {
    KVRT_CHECK(n_rows >= 0 && n >= 0 && (n_rows == 0 || n == 0 || x), KVRT_ERR_INVALID_ARGUMENT,
               "softmax: bad arguments");
#pragma omp parallel for schedule(static) if (int64_t(n_rows) * n > 65536)
    for (int32_t r = 0; r < n_rows; ++r) {
        float* v = x + size_t(r) * n;
        float m = -std::numeric_limits<float>::infinity();
        for (int32_t i = 0; i < n; ++i) m = v[i] > m ? v[i] : m;
        if (std::isinf(m) && m < 0) {
            for (int32_t i = 0; i < n; ++i) v[i] = 0;
            continue;
        }
        float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        for (int32_t i = 0; i < n; ++i) {
            v[i] = std::exp(v[i] - m);
            acc[i & 7] += v[i];
        }
        const float s = ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
        const float inv = 1.0f / s;
        for (int32_t i = 0; i < n; ++i) v[i] *= inv;
    }
}

}  // namespace kvrt::cpu
