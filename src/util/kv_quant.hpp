// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Quantised KV rows: the row format of the int8 and fp8 element types, their
// bytes, and scalar quantise / dequantise (the reference and the writers).
//
// A row holds n_kv_heads heads, head-major. For f32/f16/bf16 a head is
// head_dim elements. For a quantised type a head is
//
//     [head_dim element bytes][n_groups f16 scales]      n_groups = head_dim / group
//
// and element c of the head is  raw(c) * scale[c / group]:
//   I8        int8 in [-127, 127], group 32: one scale per 32 elements, q8_0's
//             grouping (34 bytes per 32 elements, the same as a per-head f32
//             scale at head_dim 64, and it isolates the outlier channels of K
//             that a single per-head scale would spread over the whole head).
//             head_dim must be a multiple of 32.
//   FP8_E4M3  OCP e4m3 ("fn": no infinities, max 448), group = head_dim: one
//             scale per head of a row (the per-row scale of vLLM/TensorRT-LLM).
// Scales are f16: scale = f16(amax / qmax) (qmax 127 or 448), the elements are
// x / scale rounded to nearest even (saturated); a zero group stores scale 0
// and zeros. Writers and readers (every kernel path, the ref twins) use the
// formulas below, so a row means the same to all of them.
#pragma once

#include "util/dtype.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace kvrt {

inline constexpr bool dtype_quantized(DType t) { return t == DType::I8 || t == DType::FP8_E4M3; }

// Elements per scale of a head of width d (0 for the unquantised types).
inline constexpr int32_t kv_scale_group(DType t, int32_t d) {
    return t == DType::I8 ? 32 : t == DType::FP8_E4M3 ? d : 0;
}

// True when a head of width d can be stored in type t (I8 needs d % 32 == 0).
inline constexpr bool kv_head_dim_ok(DType t, int32_t d) {
    return d > 0 && (!dtype_quantized(t) || d % kv_scale_group(t, d) == 0);
}

// Bytes of one head of width d in type t, scales included.
inline constexpr size_t kv_head_bytes(DType t, int32_t d) {
    if (!dtype_quantized(t)) return size_t(d) * dtype_size(t);
    return size_t(d) + 2 * size_t(d / kv_scale_group(t, d));
}

// The factor the kernels' raw element decode leaves out: fp8 elements are decoded as the f16
// with the same sign, exponent and mantissa bits placed 7 bits up (exact), which is the e4m3
// value / 256; the kernels multiply 256 into the scale. int8: 1.
inline constexpr float kv_raw_unit(DType t) { return t == DType::FP8_E4M3 ? 256.0f : 1.0f; }

// e4m3 byte -> the f16 bits of (its value / 256) (NaN 0x7f decodes as 480/256; never written).
inline uint16_t fp8_e4m3_raw_f16(uint8_t b) {
    return static_cast<uint16_t>((uint16_t(b & 0x80u) << 8) | (uint16_t(b & 0x7fu) << 7));
}
inline float fp8_e4m3_to_f32(uint8_t b) { return f16_to_f32(fp8_e4m3_raw_f16(b)) * 256.0f; }

// f32 -> e4m3, round to nearest even, saturating at +-448 (NaN -> 0x7f).
inline uint8_t f32_to_fp8_e4m3(float x) {
    uint32_t u;
    std::memcpy(&u, &x, 4);
    const uint8_t sign = static_cast<uint8_t>((u >> 24) & 0x80u);
    u &= 0x7fffffffu;
    if (u > 0x7f800000u) return sign | 0x7f;
    float a;
    std::memcpy(&a, &u, 4);
    if (a >= 448.0f) return sign | 0x7e;
    if (a < 0.015625f) {  // below 2^-6: subnormal steps of 2^-9 (8 rounds up to the first normal)
        const float q = std::nearbyint(a * 512.0f);
        return static_cast<uint8_t>(sign | static_cast<uint8_t>(q));
    }
    int32_t e = static_cast<int32_t>(u >> 23) - 127;
    uint32_t m3 = (u >> 20) & 7u, rem = u & 0xfffffu;
    if (rem > 0x80000u || (rem == 0x80000u && (m3 & 1u))) m3++;
    if (m3 == 8) {
        m3 = 0;
        e++;
    }
    const int32_t be = e + 7;
    if (be > 15 || (be == 15 && m3 == 7)) return sign | 0x7e;
    return static_cast<uint8_t>(sign | (be << 3) | m3);
}

// The scale of element c of a quantised head (f16 after the elements), as f32.
inline float kv_scale_at(const uint8_t* head, DType t, int32_t d, int32_t c) {
    uint16_t h;
    std::memcpy(&h, head + d + 2 * (c / kv_scale_group(t, d)), 2);
    return f16_to_f32(h);
}

// Element c of a head of width d in type t, as f32 (exact: raw * scale, both from few bits,
// is computed in double and rounded once; the kernels' f32 product of the same two is the same
// value: an 8-bit integer or 4-bit mantissa times an 11-bit mantissa fits a float exactly).
inline float kv_load(const uint8_t* head, DType t, int32_t d, int32_t c) {
    switch (t) {
        case DType::F32: {
            float f;
            std::memcpy(&f, head + size_t(c) * 4, 4);
            return f;
        }
        case DType::F16: {
            uint16_t h;
            std::memcpy(&h, head + size_t(c) * 2, 2);
            return f16_to_f32(h);
        }
        case DType::BF16: {
            uint16_t h;
            std::memcpy(&h, head + size_t(c) * 2, 2);
            return bf16_to_f32(h);
        }
        case DType::I8: return float(static_cast<int8_t>(head[c])) * kv_scale_at(head, t, d, c);
        case DType::FP8_E4M3: return fp8_e4m3_to_f32(head[c]) * kv_scale_at(head, t, d, c);
    }
    return 0.0f;
}

// Quantises the group of n elements x into out (n element bytes) and returns the f16 scale.
inline uint16_t kv_quantize_group(const float* x, int32_t n, DType t, uint8_t* out) {
    const float qmax = t == DType::I8 ? 127.0f : 448.0f;
    float amax = 0.0f;
    for (int32_t i = 0; i < n; ++i) {
        const float a = std::fabs(x[i]);
        amax = a > amax || a != a ? a : amax;  // NaN propagates into the scale
    }
    const uint16_t sh = f32_to_f16(amax / qmax);
    const float s = f16_to_f32(sh);
    for (int32_t i = 0; i < n; ++i) {
        if (!(s > 0.0f) || !std::isfinite(s)) {
            out[i] = 0;
            continue;
        }
        const float y = x[i] / s;
        if (t == DType::I8) {
            float q = std::nearbyint(y);
            q = q > 127.0f ? 127.0f : q < -127.0f ? -127.0f : q;
            out[i] = static_cast<uint8_t>(static_cast<int8_t>(q == q ? q : 0.0f));
        } else {
            out[i] = f32_to_fp8_e4m3(y);
        }
    }
    return sh;
}

// Writes one head of width d (x: d floats) in type t at `head` (kv_head_bytes(t, d) bytes).
inline void kv_store_head(uint8_t* head, const float* x, DType t, int32_t d) {
    if (!dtype_quantized(t)) {
        for (int32_t c = 0; c < d; ++c) {
            if (t == DType::F32) {
                std::memcpy(head + size_t(c) * 4, x + c, 4);
            } else {
                const uint16_t h = t == DType::F16 ? f32_to_f16(x[c]) : f32_to_bf16(x[c]);
                std::memcpy(head + size_t(c) * 2, &h, 2);
            }
        }
        return;
    }
    const int32_t g = kv_scale_group(t, d);
    for (int32_t c = 0; c < d; c += g) {
        const uint16_t sh = kv_quantize_group(x + c, g, t, head + c);
        std::memcpy(head + d + 2 * (c / g), &sh, 2);
    }
}

// Writes columns [c0, c0 + n) of a quantised row (heads of width d) from x (n floats). c0 and n
// must be multiples of the scale group (whole heads for fp8).
inline void kv_store_cols(uint8_t* row, const float* x, int64_t c0, int64_t n, DType t, int32_t d) {
    const int32_t g = kv_scale_group(t, d);
    const size_t hb = kv_head_bytes(t, d);
    for (int64_t c = c0; c < c0 + n; c += g) {
        uint8_t* head = row + size_t(c / d) * hb;
        const int32_t ci = static_cast<int32_t>(c % d);
        const uint16_t sh = kv_quantize_group(x + (c - c0), g, t, head + ci);
        std::memcpy(head + d + 2 * (ci / g), &sh, 2);
    }
}

}  // namespace kvrt
