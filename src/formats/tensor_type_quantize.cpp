// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// ggml's reference quantisers; see tensor_type_quantize.hpp.
#include "formats/tensor_type_quantize.hpp"

#include "util/dtype.hpp"
#include "util/error.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <string>

namespace kvrt {

namespace {

// (int8_t)v as ggml writes it, without the undefined behaviour of converting an
// out-of-range or NaN float (NaN -> 0, saturating outside [-128, 127]).
inline int to_i8(float v) {
    if (!(v == v)) return 0;
    if (v >= 127.0f) return 127;
    if (v <= -128.0f) return -128;
    return static_cast<int>(v);  // truncation toward zero, as the cast does
}

void q8_0(const float* x, uint8_t* out) {
    float amax = 0.0f;
    for (int j = 0; j < kQK8_0; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ8_0 b;
    b.d = f32_to_f16(d);
    for (int j = 0; j < kQK8_0; ++j) b.qs[j] = static_cast<int8_t>(to_i8(std::roundf(x[j] * id)));
    std::memcpy(out, &b, sizeof b);
}

void q8_1(const float* x, uint8_t* out) {
    float amax = 0.0f;
    for (int j = 0; j < kQK8_1; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ8_1 b;
    b.d = f32_to_f16(d);
    int sum = 0;
    for (int j = 0; j < kQK8_1 / 2; ++j) {
        b.qs[j] = static_cast<int8_t>(to_i8(std::roundf(x[j] * id)));
        b.qs[j + kQK8_1 / 2] = static_cast<int8_t>(to_i8(std::roundf(x[j + kQK8_1 / 2] * id)));
        sum += b.qs[j] + b.qs[j + kQK8_1 / 2];
    }
    b.s = f32_to_f16(static_cast<float>(sum) * d);
    std::memcpy(out, &b, sizeof b);
}

void q4_0(const float* x, uint8_t* out) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < kQK4_0; ++j)
        if (amax < std::fabs(x[j])) {
            amax = std::fabs(x[j]);
            max = x[j];
        }
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ4_0 b;
    b.d = f32_to_f16(d);
    for (int j = 0; j < kQK4_0 / 2; ++j) {
        const int x0 = std::min(15, to_i8(x[j] * id + 8.5f));
        const int x1 = std::min(15, to_i8(x[j + kQK4_0 / 2] * id + 8.5f));
        b.qs[j] = static_cast<uint8_t>(x0 | (x1 << 4));
    }
    std::memcpy(out, &b, sizeof b);
}

void q4_1(const float* x, uint8_t* out) {
    float min = FLT_MAX, max = -FLT_MAX;
    for (int j = 0; j < kQK4_1; ++j) {
        min = std::min(min, x[j]);
        max = std::max(max, x[j]);
    }
    const float d = (max - min) / 15.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ4_1 b;
    b.d = f32_to_f16(d);
    b.m = f32_to_f16(min);
    for (int j = 0; j < kQK4_1 / 2; ++j) {
        const int x0 = std::min(15, to_i8((x[j] - min) * id + 0.5f));
        const int x1 = std::min(15, to_i8((x[j + kQK4_1 / 2] - min) * id + 0.5f));
        b.qs[j] = static_cast<uint8_t>(x0 | (x1 << 4));
    }
    std::memcpy(out, &b, sizeof b);
}

}  // namespace

bool quantize_supported(TensorType t) noexcept {
    switch (t) {
        case TensorType::F32: case TensorType::F16: case TensorType::BF16: case TensorType::Q8_0:
        case TensorType::Q8_1: case TensorType::Q4_0: case TensorType::Q4_1:
            return true;
        default:
            return false;
    }
}

void quantize(TensorType t, const float* src, void* dst, uint64_t n) {
    if (!quantize_supported(t))
        fail(KVRT_ERR_UNSUPPORTED, std::string("quantisation to ") + tensor_type_name(t) + " is not supported");
    const TensorTypeTraits& tr = tensor_type_traits(t);
    if (n % tr.block_elems != 0)
        fail(KVRT_ERR_INVALID_ARGUMENT, "quantise " + std::to_string(n) + " elements to " + tr.name +
                                            ": not a multiple of its block of " + std::to_string(tr.block_elems));
    uint8_t* out = static_cast<uint8_t*>(dst);
    switch (t) {
        case TensorType::F32: std::memcpy(dst, src, n * 4); return;
        case TensorType::F16:
            for (uint64_t i = 0; i < n; ++i) {
                const uint16_t h = f32_to_f16(src[i]);
                std::memcpy(out + 2 * i, &h, 2);
            }
            return;
        case TensorType::BF16:
            for (uint64_t i = 0; i < n; ++i) {
                const uint16_t h = f32_to_bf16(src[i]);
                std::memcpy(out + 2 * i, &h, 2);
            }
            return;
        default: break;
    }
    void (*fn)(const float*, uint8_t*) = t == TensorType::Q8_0   ? q8_0
                                         : t == TensorType::Q8_1 ? q8_1
                                         : t == TensorType::Q4_0 ? q4_0
                                                                 : q4_1;
    for (uint64_t b = 0; b < n / tr.block_elems; ++b) fn(src + b * tr.block_elems, out + b * tr.block_bytes);
}

}  // namespace kvrt
