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
//
// 4-bit (CED bank rows and indexer keys only; head_dim a multiple of 32): OCP e2m1 elements
// (sign, 2 exponent bits, 1 mantissa bit: 0, 0.5, 1, 1.5, 2, 3, 4, 6), two per byte (element
// 2i in the low nibble, 2i + 1 in the high one), then one scale per 32 elements:
//   FP4       bank rows (K = V, attended values): an f16 scale, q4_0's grouping:
//             d/2 + d/16 bytes, 288 for CED's 512-wide rows. An f16 scale keeps 11 bits, so a
//             group's largest element lands on 6 within 1/2048 (a power-of-two scale wastes up
//             to half the grid on it); the rows are values as well as keys, so that matters.
//   FP4_E8    indexer keys (the public KVRT_DTYPE_FP4 on an INDEXER_KEYS layer): an e8m0 scale
//             (one byte, 2^(e - 127), 0xff = NaN; the MX block format): d/2 + d/32 bytes, 68
//             for CED's 128-wide keys. The keys only rank rows (top-k), so a coarser scale costs
//             little, and a power-of-two scale is an exact exponent add for the scan.
// Quantiser: the scale is the smallest one with 6 * scale >= amax (f16: f16(amax / 6), raised
// by one f16 step when that falls short; e8m0: 2^ceil(log2(amax / 6))), so no element
// overflows the grid; elements are |x| / scale rounded to the nearest e2m1 value, ties to the
// even code (decided exactly: |x| against threshold * scale in double); a zero magnitude is
// stored as +0. Saturation: a group whose amax / 6 exceeds the largest scale (f16 65504,
// e8m0 2^125) keeps that scale and its elements clamp to +-6 * scale. A NaN or inf element
// makes its group's scale NaN (f16 0x7e00 / e8m0 0xff) and its codes 0, as int8/fp8 do:
// the row reads as NaN, and a state file or tier block holding it is refused as corrupt.
#pragma once

#include "util/dtype.hpp"

#include <cmath>
#include <cstddef>
#include <limits>
#include <cstdint>
#include <cstring>

namespace kvrt {

// The 4-bit types (e2m1 + a scale per 32: FP4 with f16 scales, FP4_E8 with e8m0 ones).
inline constexpr bool dtype_fp4(DType t) { return t == DType::FP4 || t == DType::FP4_E8; }
// Types whose heads carry scales after their elements.
inline constexpr bool dtype_quantized(DType t) {
    return t == DType::I8 || t == DType::FP8_E4M3 || dtype_fp4(t);
}

// Elements per scale of a head of width d (0 for the unquantised types).
inline constexpr int32_t kv_scale_group(DType t, int32_t d) {
    return t == DType::I8 || dtype_fp4(t) ? 32 : t == DType::FP8_E4M3 ? d : 0;
}

// Bytes of the elements of a head of width d (the scales start there) and of one scale.
inline constexpr size_t kv_elem_bytes(DType t, int32_t d) {
    return dtype_fp4(t) ? size_t(d) / 2 : dtype_quantized(t) ? size_t(d) : size_t(d) * dtype_size(t);
}
inline constexpr size_t kv_scale_bytes(DType t) { return t == DType::FP4_E8 ? 1 : 2; }

// True when a head of width d can be stored in type t (I8 needs d % 32 == 0).
inline constexpr bool kv_head_dim_ok(DType t, int32_t d) {
    return d > 0 && (!dtype_quantized(t) || d % kv_scale_group(t, d) == 0);
}

// Bytes of one head of width d in type t, scales included.
inline constexpr size_t kv_head_bytes(DType t, int32_t d) {
    if (!dtype_quantized(t)) return size_t(d) * dtype_size(t);
    return kv_elem_bytes(t, d) + kv_scale_bytes(t) * size_t(d / kv_scale_group(t, d));
}

// The factor the kernels' raw element decode leaves out: fp8 elements are decoded as the f16
// with the same sign, exponent and mantissa bits placed 7 bits up (exact), which is the e4m3
// value / 256; the kernels multiply 256 into the scale. int8: 1. fp4: the raw decode is twice
// the e2m1 value (an integer in [-12, 12]), so 0.5.
inline constexpr float kv_raw_unit(DType t) {
    return t == DType::FP8_E4M3 ? 256.0f : dtype_fp4(t) ? 0.5f : 1.0f;
}

// e2m1 code (4 bits: sign, 2 exponent bits, 1 mantissa bit) -> twice its value.
inline constexpr int8_t kFp4Twice[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
inline float fp4_e2m1_to_f32(uint8_t code) { return 0.5f * float(kFp4Twice[code & 15u]); }
// The e2m1 code of element c of a head's element bytes.
inline uint8_t fp4_code_at(const uint8_t* elems, int32_t c) {
    return static_cast<uint8_t>((elems[c >> 1] >> ((c & 1) * 4)) & 15u);
}
// e8m0 scale byte -> 2^(b - 127) (exact in f32, 2^-127 as a subnormal); 0xff: NaN.
inline float fp4_e8_to_f32(uint8_t b) {
    return b == 0xffu ? std::numeric_limits<float>::quiet_NaN() : std::ldexp(1.0f, int(b) - 127);
}

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

// Scale i of a quantised head of width d (after the elements), as f32.
inline float kv_scale_i(const uint8_t* head, DType t, int32_t d, int32_t i) {
    const uint8_t* sc = head + kv_elem_bytes(t, d);
    if (t == DType::FP4_E8) return fp4_e8_to_f32(sc[i]);
    uint16_t h;
    std::memcpy(&h, sc + 2 * i, 2);
    return f16_to_f32(h);
}
// The scale of element c of a quantised head, as f32.
inline float kv_scale_at(const uint8_t* head, DType t, int32_t d, int32_t c) {
    return kv_scale_i(head, t, d, c / kv_scale_group(t, d));
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
        case DType::FP4:
        case DType::FP4_E8:
            return float(double(fp4_e2m1_to_f32(fp4_code_at(head, c))) * double(kv_scale_at(head, t, d, c)));
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

// The scale of a 4-bit group whose largest magnitude is amax (see the top of this file):
// FP4 f16 bits or the FP4_E8 byte, in the low bits of the result.
inline uint16_t fp4_group_scale(float amax, DType t) {
    const bool e8 = t == DType::FP4_E8;
    if (!(amax <= std::numeric_limits<float>::max())) return e8 ? 0xffu : 0x7e00u;  // NaN or inf
    if (amax == 0.0f) return 0;  // f16 0 / e8m0 2^-127: every element is 0 either way
    const double a = amax;
    if (!e8) {
        uint16_t h = f32_to_f16(amax / 6.0f);
        while (h < 0x7c00u && double(f16_to_f32(h)) * 6.0 < a) ++h;  // nonnegative f16 bits order like values
        return h >= 0x7c00u ? uint16_t(0x7bffu) : h;
    }
    int e = std::ilogb(amax) - 2;
    while (std::ldexp(6.0, e) < a) ++e;
    while (e > -127 && std::ldexp(6.0, e - 1) >= a) --e;
    e = e < -127 ? -127 : e > 125 ? 125 : e;
    return static_cast<uint16_t>(e + 127);
}

// |x| / s rounded to the nearest e2m1 magnitude, ties to the even code (s > 0, finite),
// decided exactly: |x| against each midpoint times s (products exact in double). Saturates at 6.
inline uint8_t fp4_magnitude_code(double ax, double s) {
    if (ax <= 0.25 * s) return 0;
    if (ax < 0.75 * s) return 1;
    if (ax <= 1.25 * s) return 2;
    if (ax < 1.75 * s) return 3;
    if (ax <= 2.5 * s) return 4;
    if (ax < 3.5 * s) return 5;
    if (ax <= 5.0 * s) return 6;
    return 7;
}

// Quantises the 32 elements x of a 4-bit group: 16 code bytes into out, the scale (f16 bits or
// the e8m0 byte) returned.
inline uint16_t fp4_quantize_group(const float* x, DType t, uint8_t* out) {
    float amax = 0.0f;
    for (int32_t i = 0; i < 32; ++i) {
        const float a = std::fabs(x[i]);
        amax = a > amax || a != a ? a : amax;
    }
    const uint16_t sc = fp4_group_scale(amax, t);
    const float s = t == DType::FP4_E8 ? fp4_e8_to_f32(static_cast<uint8_t>(sc)) : f16_to_f32(sc);
    const bool ok = amax > 0.0f && s > 0.0f && std::isfinite(s);
    for (int32_t i = 0; i < 32; i += 2) {
        uint8_t b = 0;
        for (int32_t k = 0; k < 2; ++k) {
            const float v = x[i + k];
            uint8_t code = ok ? fp4_magnitude_code(std::fabs(double(v)), double(s)) : 0;
            if (code != 0 && v < 0.0f) code |= 8u;
            b = static_cast<uint8_t>(b | (code << (4 * k)));
        }
        out[i / 2] = b;
    }
    return sc;
}

// Group gi (32 elements at x) of a 4-bit head of width d: codes and scale in place.
inline void fp4_store_group(uint8_t* head, const float* x, DType t, int32_t d, int32_t gi) {
    const uint16_t sc = fp4_quantize_group(x, t, head + size_t(gi) * 16);
    uint8_t* sp = head + kv_elem_bytes(t, d);
    if (t == DType::FP4_E8) sp[gi] = static_cast<uint8_t>(sc);
    else std::memcpy(sp + 2 * gi, &sc, 2);
}

// Writes one head of width d (x: d floats) in type t at `head` (kv_head_bytes(t, d) bytes).
inline void kv_store_head(uint8_t* head, const float* x, DType t, int32_t d) {
    if (dtype_fp4(t)) {
        for (int32_t c = 0; c < d; c += 32) fp4_store_group(head, x + c, t, d, c / 32);
        return;
    }
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
        if (dtype_fp4(t)) {
            fp4_store_group(head, x + (c - c0), t, d, ci / 32);
            continue;
        }
        const uint16_t sh = kv_quantize_group(x + (c - c0), g, t, head + ci);
        std::memcpy(head + d + 2 * (ci / g), &sh, 2);
    }
}

}  // namespace kvrt
