// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Scalar reference dequantisation (ggml's formulas) and the run-time dispatch.
#include "formats/tensor_type_dequant.hpp"
#include "util/isa.hpp"

#include "model/gguf/gguf.hpp"
#include "util/dtype.hpp"
#include "util/error.hpp"

#include <cstring>
#include <string>

namespace kvrt {

namespace {

inline float h2f(uint16_t h) { return dequant_f16(h); }

template <class Block>
inline Block load_block(const uint8_t* p) {
    Block b;
    std::memcpy(&b, p, sizeof(Block));
    return b;
}

// One block of each type into y[0 .. block_elems).
void block_q4_0(const uint8_t* p, float* y) {
    auto b = load_block<BlockQ4_0>(p);
    const float d = h2f(b.d);
    for (int j = 0; j < kQK4_0 / 2; ++j) {
        const int x0 = (b.qs[j] & 0x0F) - 8;
        const int x1 = (b.qs[j] >> 4) - 8;
        y[j] = static_cast<float>(x0) * d;
        y[j + kQK4_0 / 2] = static_cast<float>(x1) * d;
    }
}

void block_q4_1(const uint8_t* p, float* y) {
    auto b = load_block<BlockQ4_1>(p);
    const float d = h2f(b.d);
    const float m = h2f(b.m);
    for (int j = 0; j < kQK4_1 / 2; ++j) {
        const int x0 = b.qs[j] & 0x0F;
        const int x1 = b.qs[j] >> 4;
        y[j] = static_cast<float>(x0) * d + m;
        y[j + kQK4_1 / 2] = static_cast<float>(x1) * d + m;
    }
}

void block_q5_0(const uint8_t* p, float* y) {
    auto b = load_block<BlockQ5_0>(p);
    const float d = h2f(b.d);
    uint32_t qh;
    std::memcpy(&qh, b.qh, 4);
    for (int j = 0; j < kQK5_0 / 2; ++j) {
        const uint8_t xh0 = static_cast<uint8_t>(((qh >> (j + 0)) << 4) & 0x10);
        const uint8_t xh1 = static_cast<uint8_t>(((qh >> (j + 12))) & 0x10);
        const int x0 = ((b.qs[j] & 0x0F) | xh0) - 16;
        const int x1 = ((b.qs[j] >> 4) | xh1) - 16;
        y[j] = static_cast<float>(x0) * d;
        y[j + kQK5_0 / 2] = static_cast<float>(x1) * d;
    }
}

void block_q5_1(const uint8_t* p, float* y) {
    auto b = load_block<BlockQ5_1>(p);
    const float d = h2f(b.d);
    const float m = h2f(b.m);
    uint32_t qh;
    std::memcpy(&qh, b.qh, 4);
    for (int j = 0; j < kQK5_1 / 2; ++j) {
        const uint8_t xh0 = static_cast<uint8_t>(((qh >> (j + 0)) << 4) & 0x10);
        const uint8_t xh1 = static_cast<uint8_t>(((qh >> (j + 12))) & 0x10);
        const int x0 = (b.qs[j] & 0x0F) | xh0;
        const int x1 = (b.qs[j] >> 4) | xh1;
        y[j] = static_cast<float>(x0) * d + m;
        y[j + kQK5_1 / 2] = static_cast<float>(x1) * d + m;
    }
}

void block_q8_0(const uint8_t* p, float* y) {
    auto b = load_block<BlockQ8_0>(p);
    const float d = h2f(b.d);
    for (int j = 0; j < kQK8_0; ++j) y[j] = static_cast<float>(b.qs[j]) * d;
}

void block_q8_1(const uint8_t* p, float* y) {
    auto b = load_block<BlockQ8_1>(p);
    const float d = h2f(b.d);
    for (int j = 0; j < kQK8_1; ++j) y[j] = static_cast<float>(b.qs[j]) * d;
}

// 6-bit scale and min j of a Q4_K / Q5_K block (ggml's get_scale_min_k4).
inline void scale_min_k4(int j, const uint8_t* q, uint8_t* d, uint8_t* m) {
    if (j < 4) {
        *d = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *d = static_cast<uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        *m = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j - 0] >> 6) << 4));
    }
}

void block_q4_k(const uint8_t* p, float* y) {
    auto b = load_block<BlockQ4_K>(p);
    const float d = h2f(b.d);
    const float dmin = h2f(b.dmin);
    const uint8_t* q = b.qs;
    int is = 0;
    for (int j = 0; j < kQK_K; j += 64) {
        uint8_t sc, m;
        scale_min_k4(is + 0, b.scales, &sc, &m);
        const float d1 = d * static_cast<float>(sc);
        const float m1 = dmin * static_cast<float>(m);
        scale_min_k4(is + 1, b.scales, &sc, &m);
        const float d2 = d * static_cast<float>(sc);
        const float m2 = dmin * static_cast<float>(m);
        for (int l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>(q[l] & 0xF) - m1;
        for (int l = 0; l < 32; ++l) *y++ = d2 * static_cast<float>(q[l] >> 4) - m2;
        q += 32;
        is += 2;
    }
}

void block_q5_k(const uint8_t* p, float* y) {
    auto b = load_block<BlockQ5_K>(p);
    const float d = h2f(b.d);
    const float dmin = h2f(b.dmin);
    const uint8_t* ql = b.qs;
    const uint8_t* qh = b.qh;
    int is = 0;
    uint8_t u1 = 1, u2 = 2;
    for (int j = 0; j < kQK_K; j += 64) {
        uint8_t sc, m;
        scale_min_k4(is + 0, b.scales, &sc, &m);
        const float d1 = d * static_cast<float>(sc);
        const float m1 = dmin * static_cast<float>(m);
        scale_min_k4(is + 1, b.scales, &sc, &m);
        const float d2 = d * static_cast<float>(sc);
        const float m2 = dmin * static_cast<float>(m);
        for (int l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>((ql[l] & 0xF) + (qh[l] & u1 ? 16 : 0)) - m1;
        for (int l = 0; l < 32; ++l) *y++ = d2 * static_cast<float>((ql[l] >> 4) + (qh[l] & u2 ? 16 : 0)) - m2;
        ql += 32;
        is += 2;
        u1 = static_cast<uint8_t>(u1 << 2);
        u2 = static_cast<uint8_t>(u2 << 2);
    }
}

void block_q6_k(const uint8_t* p, float* y) {
    auto b = load_block<BlockQ6_K>(p);
    const float d = h2f(b.d);
    const uint8_t* ql = b.ql;
    const uint8_t* qh = b.qh;
    const int8_t* sc = b.scales;
    for (int n = 0; n < kQK_K; n += 128) {
        for (int l = 0; l < 32; ++l) {
            const int is = l / 16;
            const int q1 = static_cast<int8_t>((ql[l + 0] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
            const int q2 = static_cast<int8_t>((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
            const int q3 = static_cast<int8_t>((ql[l + 0] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
            const int q4 = static_cast<int8_t>((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
            y[l + 0] = d * static_cast<float>(sc[is + 0]) * static_cast<float>(q1);
            y[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
            y[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
            y[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
        }
        y += 128;
        ql += 64;
        qh += 32;
        sc += 8;
    }
}

using BlockFn = void (*)(const uint8_t*, float*);

BlockFn block_fn(TensorType t) {
    switch (t) {
        case TensorType::Q4_0: return block_q4_0;
        case TensorType::Q4_1: return block_q4_1;
        case TensorType::Q5_0: return block_q5_0;
        case TensorType::Q5_1: return block_q5_1;
        case TensorType::Q8_0: return block_q8_0;
        case TensorType::Q8_1: return block_q8_1;
        case TensorType::Q4_K: return block_q4_k;
        case TensorType::Q5_K: return block_q5_k;
        case TensorType::Q6_K: return block_q6_k;
        default: return nullptr;
    }
}

void check_args(TensorType t, uint64_t n) {
    if (!dequant_supported(t))
        fail(KVRT_ERR_UNSUPPORTED, std::string("dequantisation of tensor type ") + tensor_type_name(t) + " is not supported");
    const uint32_t be = tensor_type_traits(t).block_elems;
    if (n % be != 0)
        fail(KVRT_ERR_INVALID_ARGUMENT, "dequantise " + std::to_string(n) + " elements of " + tensor_type_name(t) +
                                            ": not a multiple of its block of " + std::to_string(be));
}

void ref_f32(TensorType t, const uint8_t* src, float* dst, uint64_t n) {
    switch (t) {
        case TensorType::F32:
            std::memcpy(dst, src, n * 4);
            return;
        case TensorType::F16:
            for (uint64_t i = 0; i < n; ++i) {
                uint16_t h;
                std::memcpy(&h, src + 2 * i, 2);
                dst[i] = dequant_f16(h);
            }
            return;
        case TensorType::BF16:
            for (uint64_t i = 0; i < n; ++i) {
                uint16_t h;
                std::memcpy(&h, src + 2 * i, 2);
                dst[i] = bf16_to_f32(h);
            }
            return;
        default: break;
    }
    const TensorTypeTraits& tr = tensor_type_traits(t);
    BlockFn fn = block_fn(t);
    for (uint64_t b = 0; b < n / tr.block_elems; ++b) fn(src + b * tr.block_bytes, dst + b * tr.block_elems);
}

void ref_bf16(TensorType t, const uint8_t* src, uint16_t* dst, uint64_t n) {
    if (t == TensorType::BF16) {
        std::memcpy(dst, src, n * 2);
        return;
    }
    const TensorTypeTraits& tr = tensor_type_traits(t);
    constexpr uint64_t kChunk = 1024;  // a multiple of every block size
    float tmp[kChunk];
    for (uint64_t i = 0; i < n; i += kChunk) {
        const uint64_t m = n - i < kChunk ? n - i : kChunk;
        ref_f32(t, src + i / tr.block_elems * tr.block_bytes, tmp, m);
        for (uint64_t k = 0; k < m; ++k) dst[i + k] = f32_to_bf16(tmp[k]);
    }
}

void require_isa(DequantIsa isa) {
    if (!dequant_isa_available(isa))
        fail(KVRT_ERR_UNSUPPORTED, std::string("this CPU cannot run the ") + dequant_isa_name(isa) + " dequantisation path");
}

}  // namespace

const char* dequant_isa_name(DequantIsa isa) noexcept {
    switch (isa) {
        case DequantIsa::Scalar: return "scalar";
        case DequantIsa::Avx2: return "avx2";
        case DequantIsa::Avx512: return "avx512";
    }
    return "?";
}

bool dequant_isa_available(DequantIsa isa) noexcept {
    const CpuFeatures& f = cpu_features();
    switch (isa) {
        case DequantIsa::Scalar: return true;
        case DequantIsa::Avx2: return f.avx2;
        case DequantIsa::Avx512: return f.avx512;
    }
    return false;
}

DequantIsa dequant_best_isa() noexcept {
    // The process-wide level (util/isa.hpp: KVRT_ISA, isa_set_limit).
    const Isa level = isa_active();
    if (level >= Isa::Avx512 && dequant_isa_available(DequantIsa::Avx512)) return DequantIsa::Avx512;
    if (level >= Isa::Avx2 && dequant_isa_available(DequantIsa::Avx2)) return DequantIsa::Avx2;
    return DequantIsa::Scalar;
}

bool dequant_supported(TensorType t) noexcept {
    const TensorTypeTraits* tr = tensor_type_traits(static_cast<uint32_t>(t));
    return tr != nullptr && tr->dequant;
}

namespace ref {
void dequantize_f32(TensorType t, const void* src, float* dst, uint64_t n) {
    check_args(t, n);
    ref_f32(t, static_cast<const uint8_t*>(src), dst, n);
}
void dequantize_bf16(TensorType t, const void* src, uint16_t* dst, uint64_t n) {
    check_args(t, n);
    ref_bf16(t, static_cast<const uint8_t*>(src), dst, n);
}
}  // namespace ref

void dequantize_f32(TensorType t, const void* src, float* dst, uint64_t n, DequantIsa isa) {
    check_args(t, n);
    require_isa(isa);
    bool done = false;
    if (isa == DequantIsa::Avx512) done = detail::dequantize_f32_avx512(t, src, dst, n);
    else if (isa == DequantIsa::Avx2) done = detail::dequantize_f32_avx2(t, src, dst, n);
    if (!done) ref_f32(t, static_cast<const uint8_t*>(src), dst, n);
}

void dequantize_bf16(TensorType t, const void* src, uint16_t* dst, uint64_t n, DequantIsa isa) {
    check_args(t, n);
    require_isa(isa);
    bool done = false;
    if (isa == DequantIsa::Avx512) done = detail::dequantize_bf16_avx512(t, src, dst, n);
    else if (isa == DequantIsa::Avx2) done = detail::dequantize_bf16_avx2(t, src, dst, n);
    if (!done) ref_bf16(t, static_cast<const uint8_t*>(src), dst, n);
}

void dequantize_f32(TensorType t, const void* src, float* dst, uint64_t n) {
    dequantize_f32(t, src, dst, n, dequant_best_isa());
}
void dequantize_bf16(TensorType t, const void* src, uint16_t* dst, uint64_t n) {
    dequantize_bf16(t, src, dst, n, dequant_best_isa());
}

namespace {
void check_rows(const GgufTensor& t, uint64_t first, uint64_t count) {
    const uint64_t rows = t.n_rows();
    if (first > rows || count > rows - first)
        fail(KVRT_ERR_OUT_OF_RANGE, "tensor '" + std::string(t.name) + "': rows [" + std::to_string(first) + ", " +
                                        std::to_string(first) + "+" + std::to_string(count) + ") past its " +
                                        std::to_string(rows) + " rows");
}
}  // namespace

void dequantize_rows_f32(const GgufTensor& t, uint64_t first, uint64_t count, float* dst) {
    check_rows(t, first, count);
    dequantize_f32(t.type, t.row(first), dst, count * t.row_elems());
}

void dequantize_rows_bf16(const GgufTensor& t, uint64_t first, uint64_t count, uint16_t* dst) {
    check_rows(t, first, count);
    dequantize_bf16(t.type, t.row(first), dst, count * t.row_elems());
}

}  // namespace kvrt
