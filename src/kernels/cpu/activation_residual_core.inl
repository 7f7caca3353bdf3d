// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// ActBits::Q8R's residual of one row (quantize_row_residual, activation_quant.hpp), as an inline
// body compiled twice: portable (activation_quant.cpp) and for AVX2 + FMA CPUs
// (activation_quant_avx2.cpp, with a vector twin of the marked block's body). Both give the same
// bytes: an fma is exact-rounded, nearbyint and vcvtps2dq round half to even, the mean is one
// sequential float sum, the sum of squares one fma chain, and the block's largest magnitude one
// maximum. Include inside namespace kvrt::kernels, after <cmath>.

// A marked block's residual: its codes into r8 and their scale and sums; d = 0 (nothing written)
// for an exact block or a non-finite x.
struct ResidualBlock {
    float d;
    int32_t sum, sum_lo;
};
inline ResidualBlock residual_block_portable(const float* x, float d, const int8_t* q, int8_t* r8) {
    float r[32];
    float amax = 0.0f;
    for (int j = 0; j < 32; j++) {
        r[j] = std::fma(-d, static_cast<float>(q[j]), x[j]);
        const float a = std::fabs(r[j]);
        amax = a > amax ? a : amax;
    }
    const BlockScale sc = block_scale(amax);
    if (!(sc.d > 0.0f) || !std::isfinite(sc.d)) return ResidualBlock{0.0f, 0, 0};
    int32_t t = 0, t_lo = 0;
    for (int j = 0; j < 32; j++) {
        const float v = std::nearbyint(r[j] * sc.id);  // |r| <= amax: within [-127, 127]
        const int32_t c = v >= 127.0f ? 127 : v <= -128.0f ? -128 : static_cast<int32_t>(v);
        r8[j] = static_cast<int8_t>(c);
        t += c;
        if (j < 16) t_lo += c;
    }
    return ResidualBlock{sc.d, t, t_lo};
}

// The row: its outlier blocks marked, each one's residual by block(x, d, q, r8) (the portable one
// above, or a vector twin giving the same bytes).
template <class Block>
inline int32_t residual_row_core(const float* x, int64_t nb, const int8_t* qs, const float* d, float* s, int8_t* rq,
                                 float* rd, int32_t* rsum, int32_t* rsum_lo, int32_t* rlist, Block&& block) {
    float total = 0.0f, squares = 0.0f;
    for (int64_t b = 0; b < nb; b++) {
        total += d[b];
        squares = std::fma(d[b], d[b], squares);
    }
    const float limit = kOutlierBlockRatio * (total / static_cast<float>(nb));
    const float share = kOutlierBlockShare * squares;
    int32_t marked = 0;
    for (int64_t b = 0; b < nb; b++) {
        rd[b] = 0.0f;
        // (NaN and inf scales, means and sums are never marked)
        if (!(d[b] > limit) || !(d[b] * d[b] >= share)) continue;
        const ResidualBlock r = block(x + b * 32, d[b], qs + b * 32, rq + b * 32);
        if (r.d == 0.0f) continue;  // an exact block, or a non-finite x
        rd[b] = r.d;
        rsum[b] = r.sum;
        rsum_lo[b] = r.sum_lo;
        s[b] = std::fma(r.d, static_cast<float>(r.sum), s[b]);
        rlist[marked++] = static_cast<int32_t>(b);
    }
    return marked;
}
