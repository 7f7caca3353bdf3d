// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Element types of KV rows and activations, and scalar half-precision conversions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace kvrt {

// Values match the public kvrt_dtype enum of include/kvrt/cache.h.
enum class DType : uint8_t {
    F32 = 0,
    F16 = 1,
    BF16 = 2,
    // Quantised KV element types (util/kv_quant.hpp: the row format, scales included).
    I8 = 3,        // int8, one f16 scale per 32 elements of a head (q8_0-like)
    FP8_E4M3 = 4,  // fp8 e4m3, one f16 scale per head of a row
    // 4-bit e2m1 (two per byte) with one scale per 32 elements, CED bank rows and indexer keys
    // only (util/kv_quant.hpp). The public KVRT_DTYPE_FP4 is FP4 on bank rows (f16 scales) and
    // FP4_E8 on indexer keys (e8m0 power-of-two scales, the MX format): the layout picks by kind.
    FP4 = 5,
    FP4_E8 = 16,  // internal (never a public kvrt_dtype value): how an FP4 indexer key is stored
};

inline constexpr size_t dtype_size(DType t) {
    switch (t) {
        case DType::F32: return 4;
        case DType::F16: return 2;
        case DType::BF16: return 2;
        case DType::I8: return 1;        // the element bytes; the scales come on top (kv_head_bytes)
        case DType::FP8_E4M3: return 1;
        case DType::FP4:
        case DType::FP4_E8: return 1;  // (two elements per byte: kv_head_bytes has the exact figure)
    }
    return 0;
}

inline const char* dtype_name(DType t) {
    switch (t) {
        case DType::F32: return "f32";
        case DType::F16: return "f16";
        case DType::BF16: return "bf16";
        case DType::I8: return "int8";
        case DType::FP8_E4M3: return "fp8";
        case DType::FP4: return "fp4";
        case DType::FP4_E8: return "fp4-e8m0";
    }
    return "?";
}

// bf16 <-> f32, round to nearest even (NaN kept quiet).
inline uint16_t f32_to_bf16(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1u);
    return static_cast<uint16_t>(u >> 16);
}
inline float bf16_to_f32(uint16_t h) {
    uint32_t u = static_cast<uint32_t>(h) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

// IEEE half <-> f32 (portable; the kernels use F16C where the CPU has it).
inline float f16_to_f32(uint16_t h) {
    uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    uint32_t u;
    if (exp == 0) {
        if (man == 0) {
            u = sign;
        } else {  // subnormal: normalise
            int e = -1;
            do {
                man <<= 1;
                e++;
            } while ((man & 0x400u) == 0);
            u = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | ((man & 0x3ffu) << 13);
        }
    } else if (exp == 31) {
        u = sign | 0x7f800000u | (man << 13);
    } else {
        u = sign | ((exp + 127 - 15) << 23) | (man << 13);
    }
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}
inline uint16_t f32_to_f16(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    uint32_t sign = (u >> 16) & 0x8000u;
    int32_t exp = static_cast<int32_t>((u >> 23) & 0xffu) - 127 + 15;
    uint32_t man = u & 0x7fffffu;
    if (((u >> 23) & 0xffu) == 0xffu) return static_cast<uint16_t>(sign | 0x7c00u | (man ? 0x200u : 0));
    if (exp >= 31) return static_cast<uint16_t>(sign | 0x7c00u);
    if (exp <= 0) {
        if (exp < -10) return static_cast<uint16_t>(sign);
        man |= 0x800000u;
        uint32_t shift = static_cast<uint32_t>(14 - exp);
        uint32_t half = man >> shift;
        uint32_t rem = man & ((1u << shift) - 1);
        uint32_t mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1u))) half++;
        return static_cast<uint16_t>(sign | half);
    }
    uint32_t half = sign | (static_cast<uint32_t>(exp) << 10) | (man >> 13);
    uint32_t rem = man & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) half++;
    return static_cast<uint16_t>(half);
}

}  // namespace kvrt
