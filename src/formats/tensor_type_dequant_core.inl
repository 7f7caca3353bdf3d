// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// The vector dequantisation of every vectorised type, written once over a vector-operations
// struct `DOps` (W lanes of int32 / f32: 8 on AVX2, 16 on AVX-512) and compiled once per ISA inside
// that ISA's namespace and target pragma (tensor_type_dequant_avx2.cpp, _avx512.cpp). Bit-identical
// to the scalar reference (tensor_type_dequant.cpp): the same f32 operations per element (a
// multiply followed by an add is exact before the add, so FMA contraction cannot change it), bf16
// by integer round-to-nearest-even (DOps::store_bf16). Every header it needs is included by the
// .cpp before the target pragma; no standard-library templates here (their instantiations would be
// compiled for the ISA and could be shared with baseline code).

using VI = DOps::VI;
using VF = DOps::VF;
constexpr int W = DOps::W;
static_assert(16 % W == 0, "a vector holds a whole part of a 16-code half block");

inline float h2f(const uint8_t* p) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return dequant_f16(h);
}

struct OutF32 {
    float* p;
    void put(uint64_t i, VF v) const { DOps::store(p + i, v); }
    void put1(uint64_t i, float v) const { p[i] = v; }
};
struct OutBf16 {
    uint16_t* p;
    void put(uint64_t i, VF v) const { DOps::store_bf16(p + i, v); }
    void put1(uint64_t i, float v) const { p[i] = f32_to_bf16(v); }
};

// fn(e, codes [e, e + W)) for the 32 codes of a 4-bit block (qs: 16 bytes; code e < 16 is byte e's
// low nibble, code e >= 16 byte e - 16's high nibble), each byte loaded once.
template <class Fn>
inline void for_nibbles(const uint8_t* qs, Fn&& fn) {
    for (int e = 0; e < 16; e += W) {
        const VI b = DOps::u8(qs + e);
        fn(e, DOps::and_(b, DOps::set1i(0x0F)));
        fn(e + 16, DOps::srli4(b));
    }
}
// The fifth bits of codes [e0, e0 + W) of a Q5 block: bit e of qh, moved to bit 4.
inline VI fifth_bits(uint32_t qh, int e0) {
    const VI idx = DOps::add_i(DOps::iota(), DOps::set1i(e0));
    const VI bit = DOps::and_(DOps::srlv(DOps::set1i(static_cast<int>(qh)), idx), DOps::set1i(1));
    return DOps::slli4(bit);
}
// d * q and d * q + m of a block's codes q (the reference's order of operations).
inline VF scaled(VI q, VF d) { return DOps::mul(DOps::cvt(q), d); }
inline VF scaled_min(VI q, VF d, VF m) { return DOps::add(DOps::mul(DOps::cvt(q), d), m); }

// 6-bit scale and min j of a Q4_K block (ggml's get_scale_min_k4).
inline void scale_min_k4(int j, const uint8_t* q, uint8_t* d, uint8_t* m) {
    if (j < 4) {
        *d = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *d = static_cast<uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        *m = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j - 0] >> 6) << 4));
    }
}

template <class Out>
void q4_k(const uint8_t* src, Out out, uint64_t n) {
    const VI mask = DOps::set1i(0x0F);
    for (uint64_t b = 0; b < n / kQK_K; ++b) {
        const uint8_t* p = src + b * sizeof(BlockQ4_K);
        const float d = h2f(p + offsetof(BlockQ4_K, d));
        const float dmin = h2f(p + offsetof(BlockQ4_K, dmin));
        const uint8_t* scales = p + offsetof(BlockQ4_K, scales);
        const uint8_t* q = p + offsetof(BlockQ4_K, qs);
        for (int k = 0; k < 4; ++k) {  // elements [64k, 64k + 64): 32 low nibbles, then 32 high
            uint8_t sc, m;
            scale_min_k4(2 * k, scales, &sc, &m);
            const VF d1 = DOps::set1(d * static_cast<float>(sc));
            const VF m1 = DOps::set1(dmin * static_cast<float>(m));
            scale_min_k4(2 * k + 1, scales, &sc, &m);
            const VF d2 = DOps::set1(d * static_cast<float>(sc));
            const VF m2 = DOps::set1(dmin * static_cast<float>(m));
            const uint64_t base = b * kQK_K + 64 * k;
            for (int e = 0; e < 32; e += W) {
                const VI bytes = DOps::u8(q + 32 * k + e);
                out.put(base + e, DOps::sub(DOps::mul(d1, DOps::cvt(DOps::and_(bytes, mask))), m1));
                out.put(base + 32 + e, DOps::sub(DOps::mul(d2, DOps::cvt(DOps::srli4(bytes))), m2));
            }
        }
    }
}

template <class Out>
void q6_k(const uint8_t* src, Out out, uint64_t n) {
    const VI m4 = DOps::set1i(0x0F), m2 = DOps::set1i(3), k32 = DOps::set1i(32);
    auto high = [&](VI h) { return DOps::slli4(DOps::and_(h, m2)); };  // bits 0-1 of h, as bits 4-5
    for (uint64_t b = 0; b < n / kQK_K; ++b) {
        const uint8_t* p = src + b * sizeof(BlockQ6_K);
        const float d = h2f(p + offsetof(BlockQ6_K, d));
        const uint8_t* ql = p + offsetof(BlockQ6_K, ql);
        const uint8_t* qh = p + offsetof(BlockQ6_K, qh);
        const int8_t* sc = reinterpret_cast<const int8_t*>(p + offsetof(BlockQ6_K, scales));
        for (int half = 0; half < 2; ++half) {
            for (int l0 = 0; l0 < 32; l0 += W) {  // l in [l0, l0 + W): scale index is = l0 / 16
                const int is = l0 / 16;
                const VI a = DOps::u8(ql + l0), bb = DOps::u8(ql + 32 + l0), h = DOps::u8(qh + l0);
                const VI q1 = DOps::sub_i(DOps::or_(DOps::and_(a, m4), high(h)), k32);
                const VI q2 = DOps::sub_i(DOps::or_(DOps::and_(bb, m4), high(DOps::srli2(h))), k32);
                const VI q3 = DOps::sub_i(DOps::or_(DOps::srli4(a), high(DOps::srli4(h))), k32);
                const VI q4 = DOps::sub_i(DOps::or_(DOps::srli4(bb), high(DOps::srli6(h))), k32);
                const uint64_t base = b * kQK_K + 128 * half + l0;
                out.put(base + 0, DOps::mul(DOps::set1(d * static_cast<float>(sc[is + 0])), DOps::cvt(q1)));
                out.put(base + 32, DOps::mul(DOps::set1(d * static_cast<float>(sc[is + 2])), DOps::cvt(q2)));
                out.put(base + 64, DOps::mul(DOps::set1(d * static_cast<float>(sc[is + 4])), DOps::cvt(q3)));
                out.put(base + 96, DOps::mul(DOps::set1(d * static_cast<float>(sc[is + 6])), DOps::cvt(q4)));
            }
            ql += 64;
            qh += 32;
            sc += 8;
        }
    }
}

template <class Out>
void run(TensorType t, const uint8_t* src, Out out, uint64_t n) {
    switch (t) {
        case TensorType::F32: {
            uint64_t i = 0;
            for (; i + W <= n; i += W) out.put(i, DOps::load(reinterpret_cast<const float*>(src) + i));
            for (; i < n; ++i) {
                float v;
                std::memcpy(&v, src + 4 * i, 4);
                out.put1(i, v);
            }
            return;
        }
        case TensorType::F16: {
            uint64_t i = 0;
            for (; i + W <= n; i += W) out.put(i, DOps::load_f16(src + 2 * i));
            for (; i < n; ++i) out.put1(i, h2f(src + 2 * i));
            return;
        }
        case TensorType::BF16: {
            uint64_t i = 0;
            for (; i + W <= n; i += W) out.put(i, DOps::load_bf16(src + 2 * i));
            for (; i < n; ++i) {
                uint16_t h;
                std::memcpy(&h, src + 2 * i, 2);
                out.put1(i, bf16_to_f32(h));
            }
            return;
        }
        case TensorType::Q4_0:
            for (uint64_t b = 0; b < n / 32; ++b) {
                const uint8_t* p = src + b * sizeof(BlockQ4_0);
                const VF d = DOps::set1(h2f(p));
                for_nibbles(p + offsetof(BlockQ4_0, qs),
                            [&](int e, VI q) { out.put(b * 32 + e, scaled(DOps::sub_i(q, DOps::set1i(8)), d)); });
            }
            return;
        case TensorType::Q4_1:
            for (uint64_t b = 0; b < n / 32; ++b) {
                const uint8_t* p = src + b * sizeof(BlockQ4_1);
                const VF d = DOps::set1(h2f(p + offsetof(BlockQ4_1, d)));
                const VF m = DOps::set1(h2f(p + offsetof(BlockQ4_1, m)));
                for_nibbles(p + offsetof(BlockQ4_1, qs), [&](int e, VI q) { out.put(b * 32 + e, scaled_min(q, d, m)); });
            }
            return;
        case TensorType::Q5_0:
            for (uint64_t b = 0; b < n / 32; ++b) {
                const uint8_t* p = src + b * sizeof(BlockQ5_0);
                const VF d = DOps::set1(h2f(p));
                uint32_t qh;
                std::memcpy(&qh, p + offsetof(BlockQ5_0, qh), 4);
                for_nibbles(p + offsetof(BlockQ5_0, qs), [&](int e, VI q) {
                    out.put(b * 32 + e, scaled(DOps::sub_i(DOps::or_(q, fifth_bits(qh, e)), DOps::set1i(16)), d));
                });
            }
            return;
        case TensorType::Q5_1:
            for (uint64_t b = 0; b < n / 32; ++b) {
                const uint8_t* p = src + b * sizeof(BlockQ5_1);
                const VF d = DOps::set1(h2f(p + offsetof(BlockQ5_1, d)));
                const VF m = DOps::set1(h2f(p + offsetof(BlockQ5_1, m)));
                uint32_t qh;
                std::memcpy(&qh, p + offsetof(BlockQ5_1, qh), 4);
                for_nibbles(p + offsetof(BlockQ5_1, qs),
                            [&](int e, VI q) { out.put(b * 32 + e, scaled_min(DOps::or_(q, fifth_bits(qh, e)), d, m)); });
            }
            return;
        case TensorType::Q8_0:
        case TensorType::Q8_1: {
            const size_t bytes = t == TensorType::Q8_0 ? sizeof(BlockQ8_0) : sizeof(BlockQ8_1);
            const size_t qs = t == TensorType::Q8_0 ? offsetof(BlockQ8_0, qs) : offsetof(BlockQ8_1, qs);
            for (uint64_t b = 0; b < n / 32; ++b) {
                const uint8_t* p = src + b * bytes;
                const VF d = DOps::set1(h2f(p));
                for (int e = 0; e < 32; e += W) out.put(b * 32 + e, scaled(DOps::i8(p + qs + e), d));
            }
            return;
        }
        case TensorType::Q4_K:
            q4_k(src, out, n);
            return;
        case TensorType::Q6_K:
            q6_k(src, out, n);
            return;
        default:
            return;
    }
}

inline bool vectorised(TensorType t) {
    switch (t) {
        case TensorType::F32: case TensorType::F16: case TensorType::BF16: case TensorType::Q4_0:
        case TensorType::Q4_1: case TensorType::Q5_0: case TensorType::Q5_1: case TensorType::Q8_0:
        case TensorType::Q8_1: case TensorType::Q4_K: case TensorType::Q6_K:
            return true;
        default:
            return false;
    }
}

inline bool dequantize_f32(TensorType t, const void* src, float* dst, uint64_t n) {
    if (!vectorised(t)) return false;
    run(t, static_cast<const uint8_t*>(src), OutF32{dst}, n);
    return true;
}

inline bool dequantize_bf16(TensorType t, const void* src, uint16_t* dst, uint64_t n) {
    if (!vectorised(t)) return false;
    if (t == TensorType::BF16) {
        std::memcpy(dst, src, n * 2);
        return true;
    }
    run(t, static_cast<const uint8_t*>(src), OutBf16{dst}, n);
    return true;
}
