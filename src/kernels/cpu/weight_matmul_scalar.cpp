// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Portable weight-matmul kernel (any x86-64 or other CPU): the same float
// operations as the SIMD paths (see weight_matmul_kernels.hpp), one output
// element at a time, so every path gives the same bits.
#include "kernels/cpu/weight_matmul_kernels.hpp"
#include "kernels/cpu/weight_matmul_layout.hpp"
#include "util/dtype.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace kvrt::kernels {

namespace {

inline float half_at(const uint8_t* p, int r) {
    uint16_t h;
    std::memcpy(&h, p + 2 * r, 2);
    return f16_to_f32(h);
}

// The row's activation codes: 8-bit (A = int8_t) or 16-bit (A = int16_t).
template <class A>
const A* codes_of(const QuantizedRows& a, int64_t m) {
    if constexpr (sizeof(A) == 1) return a.row_qs(m);
    else return a.row_q16(m);
}

template <class A>
float dot_q4(const uint8_t* panel, size_t step, int r, bool q41, int64_t nb, const QuantizedRows& a, int64_t m) {
    const A* x = codes_of<A>(a, m);
    const float* da = a.d + m * nb;
    const int32_t* sa = a.sum + m * nb;
    const float* ss = a.s + m * nb;
    const size_t qoff = q41 ? 64 : 32;
    float acc = 0.0f;
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t* pb = panel + b * step;
        const A* xb = x + b * 32;
        int32_t isum = q41 ? 0 : -8 * sa[b];
        for (int c = 0; c < 4; c++)
            for (int j = 0; j < 4; j++) {
                const uint8_t v = pb[qoff + c * 64 + 4 * r + j];
                isum += (v & 0xF) * xb[8 * c + j] + (v >> 4) * xb[8 * c + 4 + j];
            }
        const float dw = half_at(pb, r);
        const float sc = dw * da[b];
        acc = std::fma(sc, static_cast<float>(isum), acc);
        if (q41) acc = std::fma(half_at(pb + 32, r), ss[b], acc);
    }
    return acc;
}

template <class A>
float dot_q8(const uint8_t* panel, size_t step, int r, int64_t nb, const QuantizedRows& a, int64_t m) {
    const A* x = codes_of<A>(a, m);
    const float* da = a.d + m * nb;
    const int32_t* sa = a.sum + m * nb;
    float acc = 0.0f;
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t* pb = panel + b * step;
        const A* xb = x + b * 32;
        int32_t isum = -128 * sa[b];
        for (int g = 0; g < 8; g++)
            for (int j = 0; j < 4; j++) isum += pb[32 + g * 64 + 4 * r + j] * xb[4 * g + j];
        const float sc = half_at(pb, r) * da[b];
        acc = std::fma(sc, static_cast<float>(isum), acc);
    }
    return acc;
}

// Q5_0, Q4_K, Q5_K, Q6_K: codes read back through the layout's accessors.
template <class A>
float dot_new(TensorType t, const uint8_t* panel, size_t step, int r, int64_t nb, const QuantizedRows& a, int64_t m) {
    const A* x = codes_of<A>(a, m);
    const float* da = a.d + m * nb;
    const int32_t* sa = a.sum + m * nb;
    const int32_t* slo = a.sum_lo + m * nb;
    const float* ss = a.s + m * nb;
    const int subs = t == TensorType::Q5_0 ? 1 : 8;
    float acc = 0.0f;
    for (int64_t st = 0; st < nb / subs; st++) {
        const uint8_t* pb = panel + st * step;
        const float dw = half_at(pb, r);
        for (int s = 0; s < subs; s++) {
            const int64_t b = st * subs + s;
            const A* xb = x + b * 32;
            int32_t lo = 0, hi = 0;  // integer dots over elements 0..15 and 16..31
            for (int e = 0; e < 32; e++) {
                unsigned q;
                if (t == TensorType::Q5_0) q = chunk_nibble(pb + 96, r, e) | hb_bit(pb + 32, r, e) << 4;
                else if (t == TensorType::Q6_K)
                    q = chunk_nibble(pb + kQ6Ql + s * 256, r, e) | h6_bits(pb + kQ6Qh + s * 128, r, e) << 4;
                else {
                    q = chunk_nibble(pb + kKQs + s * 256, r, e);
                    if (t == TensorType::Q5_K) q |= hb_bit(pb + kKHb + s * 64, r, e) << 4;
                }
                (e < 16 ? lo : hi) += static_cast<int32_t>(q) * xb[e];
            }
            if (t == TensorType::Q5_0) {
                acc = std::fma(dw * da[b], static_cast<float>(lo + hi - 16 * sa[b]), acc);
            } else if (t == TensorType::Q6_K) {
                const int32_t sc0 = static_cast<int8_t>(pb[kQ6Sc + (2 * s) * 16 + r]);
                const int32_t sc1 = static_cast<int8_t>(pb[kQ6Sc + (2 * s + 1) * 16 + r]);
                if constexpr (sizeof(A) == 1) {
                    const int32_t I = sc0 * (lo - 32 * slo[b]) + sc1 * (hi - 32 * (sa[b] - slo[b]));
                    acc = std::fma(dw * da[b], static_cast<float>(I), acc);
                } else {  // 16-bit codes: each group product fits int32, their sum may not
                    const int32_t Ilo = sc0 * (lo - 32 * slo[b]), Ihi = sc1 * (hi - 32 * (sa[b] - slo[b]));
                    acc = std::fma(dw * da[b], static_cast<float>(Ilo), acc);
                    acc = std::fma(dw * da[b], static_cast<float>(Ihi), acc);
                }
            } else {
                const float ds = dw * static_cast<float>(pb[kKSc + s * 16 + r]);
                const float dm = half_at(pb + kKDmin, r) * static_cast<float>(pb[kKMin + s * 16 + r]);
                acc = std::fma(ds * da[b], static_cast<float>(lo + hi), acc);
                acc = std::fma(-dm, ss[b], acc);
            }
        }
    }
    return acc;
}

float dot_float(TensorType t, const uint8_t* panel, size_t step, int r, int64_t k, const float* x) {
    float acc = 0.0f;
    for (int64_t i = 0; i < k; i++) {
        float w;
        if (t == TensorType::F32) {
            std::memcpy(&w, panel + i * step + 4 * r, 4);
        } else {
            uint16_t h;
            std::memcpy(&h, panel + i * step + 2 * r, 2);
            w = t == TensorType::F16 ? f16_to_f32(h) : bf16_to_f32(h);
        }
        acc = std::fma(w, x[i], acc);
    }
    return acc;
}

template <class A>
void panels_scalar(const MatmulArgs& args, int64_t p0, int64_t p1) {
    const PackedWeight& w = *args.w;
    const TensorType t = w.type();
    const int64_t nb = args.a ? args.a->blocks : 0;  // (from panel step args.step0 on)
    for (int64_t p = p0; p < p1; p++) {
        const uint8_t* panel = w.panel(p) + args.step0 * static_cast<int64_t>(w.panel_stride());
        const size_t step = w.panel_stride();
        const int nr = static_cast<int>(std::min<int64_t>(kPanel, w.rows() - p * kPanel));
        if (nr <= 0) break;  // the zero padding panel
        for (int64_t m = 0; m < args.M; m++) {
            float* y = args.Y + m * args.ldy + (p * kPanel - args.col0);
            for (int r = 0; r < nr; r++) {
                switch (t) {
                    case TensorType::Q4_1: y[r] = dot_q4<A>(panel, step, r, true, nb, *args.a, m); break;
                    case TensorType::Q4_0: y[r] = dot_q4<A>(panel, step, r, false, nb, *args.a, m); break;
                    case TensorType::Q8_0: y[r] = dot_q8<A>(panel, step, r, nb, *args.a, m); break;
                    case TensorType::Q5_0:
                    case TensorType::Q4_K:
                    case TensorType::Q5_K:
                    case TensorType::Q6_K: y[r] = dot_new<A>(t, panel, step, r, nb, *args.a, m); break;
                    default: y[r] = dot_float(t, panel, step, r, w.cols(), args.X + m * args.ldx); break;
                }
            }
        }
    }
}

}  // namespace

void matmul_panels_scalar(const MatmulArgs& args, int64_t p0, int64_t p1) { panels_scalar<int8_t>(args, p0, p1); }
void matmul_panels16_scalar(const MatmulArgs& args, int64_t p0, int64_t p1) { panels_scalar<int16_t>(args, p0, p1); }

}  // namespace kvrt::kernels
