// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// ActBits::Q8R's residual of one row (quantize_row_residual, activation_quant.hpp), as an inline
// body compiled twice: portable (activation_quant.cpp) and for AVX2 + FMA CPUs
// (activation_quant_avx2.cpp), where std::fma and std::nearbyint become single instructions.
// Both give the same bytes: an fma is exact-rounded, nearbyint rounds half to even, and the mean
// is one sequential float sum. Include inside namespace kvrt::kernels, after <cmath>.

inline int32_t residual_row_core(const float* x, int64_t nb, const int8_t* qs, const float* d, float* s, int8_t* rq,
                                 float* rd, int32_t* rsum, int32_t* rsum_lo, int32_t* rlist) {
    float total = 0.0f;
    for (int64_t b = 0; b < nb; b++) total += d[b];
    const float limit = kOutlierBlockRatio * (total / static_cast<float>(nb));
    int32_t marked = 0;
    for (int64_t b = 0; b < nb; b++) {
        rd[b] = 0.0f;
        if (!(d[b] > limit)) continue;  // (NaN and inf scales and means are never marked)
        float r[32];
        float amax = 0.0f;
        for (int j = 0; j < 32; j++) {
            r[j] = std::fma(-d[b], static_cast<float>(qs[b * 32 + j]), x[b * 32 + j]);
            const float a = std::fabs(r[j]);
            amax = a > amax ? a : amax;
        }
        const BlockScale sc = block_scale(amax);
        if (!(sc.d > 0.0f) || !std::isfinite(sc.d)) continue;  // an exact block, or a non-finite x
        int8_t* r8 = rq + b * 32;
        int32_t t = 0, t_lo = 0;
        for (int j = 0; j < 32; j++) {
            const float v = std::nearbyint(r[j] * sc.id);  // |r| <= amax: within [-127, 127]
            const int32_t q = v >= 127.0f ? 127 : v <= -128.0f ? -128 : static_cast<int32_t>(v);
            r8[j] = static_cast<int8_t>(q);
            t += q;
            if (j < 16) t_lo += q;
        }
        rd[b] = sc.d;
        rsum[b] = t;
        rsum_lo[b] = t_lo;
        s[b] = std::fma(sc.d, static_cast<float>(t), s[b]);
        rlist[marked++] = static_cast<int32_t>(b);
    }
    return marked;
}
