// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// PackedWeight: repacking GGUF weight rows into the panel layout of
// weight_matmul_layout.hpp, and back.
#include "kernels/cpu/weight_matmul_layout.hpp"
#include "formats/tensor_type_dequant.hpp"
#include "kernels/weight_matmul.hpp"
#include "util/dtype.hpp"
#include "util/error.hpp"

#include <array>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <string>

namespace kvrt {

using namespace kernels;

void PackedWeight::Free::operator()(uint8_t* p) const noexcept { std::free(p); }

namespace {

// A Q5_0 block or K-quant super-block with its codes and scales unpacked:
// q = ggml's unsigned code of each element, sc/mn = the 6-bit scales and mins of
// Q4_K / Q5_K sub-blocks (get_scale_min_k4) or Q6_K's 16 int8 scales (as bytes).
struct Decoded {
    uint16_t d = 0, dmin = 0;
    uint8_t sc[16] = {}, mn[8] = {};
    uint8_t q[256] = {};
};

void decode_scales_k4(const uint8_t* s, uint8_t* sc, uint8_t* mn) {
    for (int j = 0; j < 8; j++) {
        if (j < 4) {
            sc[j] = s[j] & 63;
            mn[j] = s[j + 4] & 63;
        } else {
            sc[j] = static_cast<uint8_t>((s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4));
            mn[j] = static_cast<uint8_t>((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
        }
    }
}

void encode_scales_k4(const uint8_t* sc, const uint8_t* mn, uint8_t* s) {
    for (int j = 0; j < 4; j++) {
        s[j] = static_cast<uint8_t>((sc[j] & 63) | (sc[j + 4] >> 4) << 6);
        s[j + 4] = static_cast<uint8_t>((mn[j] & 63) | (mn[j + 4] >> 4) << 6);
        s[j + 8] = static_cast<uint8_t>((sc[j + 4] & 0xF) | (mn[j + 4] & 0xF) << 4);
    }
}

// K-quant super-block -> Decoded (ggml's element order, tensor_type.hpp / ggml-quants.c).
// (Q5_0 rows are packed straight from their blocks: pack_row.)
void decode_block(TensorType t, const uint8_t* src, Decoded& o) {
    switch (t) {
        case TensorType::Q4_K:
        case TensorType::Q5_K: {
            const bool q5 = t == TensorType::Q5_K;
            uint16_t d, dmin;
            std::memcpy(&d, src, 2);
            std::memcpy(&dmin, src + 2, 2);
            o.d = d;
            o.dmin = dmin;
            decode_scales_k4(src + 4, o.sc, o.mn);
            const uint8_t* qh = src + 16;
            const uint8_t* qs = src + (q5 ? 48 : 16);
            // Sub-block s (elements 32 s..32 s + 31): the low (s even) or high (s odd) nibbles of
            // qs[32 (s / 2) + i], fifth bit s of qh[i].
            for (int s = 0; s < 8; s++) {
                const uint8_t* n = qs + 32 * (s / 2);
                const int shift = 4 * (s & 1);
                uint8_t* q = o.q + 32 * s;
                if (q5)
                    for (int i = 0; i < 32; i++)
                        q[i] = static_cast<uint8_t>(((n[i] >> shift) & 0xF) | ((qh[i] >> s) & 1u) << 4);
                else
                    for (int i = 0; i < 32; i++) q[i] = static_cast<uint8_t>((n[i] >> shift) & 0xF);
            }
            break;
        }
        default: {  // Q6_K
            BlockQ6_K b;
            std::memcpy(&b, src, sizeof b);
            o.d = b.d;
            std::memcpy(o.sc, b.scales, 16);
            // Sub-block s = 4 n + j (elements 128 n + 32 j + l): nibble j / 2 of ql[64 n + 32 (j % 2) + l],
            // bits 2 j, 2 j + 1 of qh[32 n + l].
            for (int s = 0; s < 8; s++) {
                const int n = s / 4, j = s % 4;
                const uint8_t* lo = b.ql + 64 * n + 32 * (j & 1);
                const uint8_t* hi = b.qh + 32 * n;
                const int lshift = j >= 2 ? 4 : 0;
                uint8_t* q = o.q + 32 * s;
                for (int l = 0; l < 32; l++)
                    q[l] = static_cast<uint8_t>(((lo[l] >> lshift) & 0xF) | ((hi[l] >> (2 * j)) & 3u) << 4);
            }
            break;
        }
    }
}

// Decoded -> GGUF block (the inverse: every bit of these formats is used).
void encode_block(TensorType t, const Decoded& o, uint8_t* dst) {
    switch (t) {
        case TensorType::Q5_0: {
            BlockQ5_0 b{};
            b.d = o.d;
            uint32_t qh = 0;
            for (int e = 0; e < 32; e++) {
                if (e < 16) b.qs[e] |= o.q[e] & 0xF;
                else b.qs[e - 16] |= static_cast<uint8_t>((o.q[e] & 0xF) << 4);
                qh |= static_cast<uint32_t>((o.q[e] >> 4) & 1u) << e;
            }
            std::memcpy(b.qh, &qh, 4);
            std::memcpy(dst, &b, sizeof b);
            break;
        }
        case TensorType::Q4_K:
        case TensorType::Q5_K: {
            const bool q5 = t == TensorType::Q5_K;
            const size_t bytes = q5 ? sizeof(BlockQ5_K) : sizeof(BlockQ4_K);
            std::memset(dst, 0, bytes);
            std::memcpy(dst, &o.d, 2);
            std::memcpy(dst + 2, &o.dmin, 2);
            encode_scales_k4(o.sc, o.mn, dst + 4);
            uint8_t* qh = dst + 16;
            uint8_t* qs = dst + (q5 ? 48 : 16);
            for (int e = 0; e < 256; e++) {
                const int g = e / 64, l = e % 64;
                if (l < 32) qs[32 * g + l] |= o.q[e] & 0xF;
                else qs[32 * g + l - 32] |= static_cast<uint8_t>((o.q[e] & 0xF) << 4);
                if (q5) qh[l % 32] |= static_cast<uint8_t>(((o.q[e] >> 4) & 1u) << (2 * g + (l >= 32)));
            }
            break;
        }
        default: {  // Q6_K
            BlockQ6_K b{};
            b.d = o.d;
            std::memcpy(b.scales, o.sc, 16);
            for (int e = 0; e < 256; e++) {
                const int n = e / 128, q4 = (e % 128) / 32, l = e % 32;
                uint8_t& lo = b.ql[64 * n + l + ((q4 & 1) ? 32 : 0)];
                lo |= static_cast<uint8_t>(q4 >= 2 ? (o.q[e] & 0xF) << 4 : o.q[e] & 0xF);
                b.qh[32 * n + l] |= static_cast<uint8_t>(((o.q[e] >> 4) & 3u) << (2 * q4));
            }
            std::memcpy(dst, &b, sizeof b);
            break;
        }
    }
}

// The bytes of row r in the layouts of weight_matmul_layout.hpp (what chunk_nibble, hb_bit and
// h6_bits read), each assembled whole from the 32 codes q of a sub-block and stored once. (ORing
// one element at a time into zeroed bytes had been ~80% of loading Qwen2.5 0.5B.)
// Low 4 bits: chunk c, byte j holds elements 8 c + j (low nibble) and 8 c + 4 + j (high).
void put_nibbles(uint8_t* chunks, int r, const uint8_t* q) {
    for (int c = 0; c < 4; c++)
        for (int j = 0; j < 4; j++)
            chunks[c * 64 + 4 * r + j] = static_cast<uint8_t>((q[8 * c + j] & 0xF) | (q[8 * c + 4 + j] & 0xF) << 4);
}
// Fifth bits (bit 4 of q; hb_bit): byte j, bit c for element 8 c + j, bit 4 + c for 8 c + 4 + j.
void put_fifth_bits(uint8_t* hb, int r, const uint8_t* q) {
    for (int j = 0; j < 4; j++) {
        unsigned v = 0;
        for (int c = 0; c < 4; c++) v |= ((q[8 * c + j] >> 4) & 1u) << c | ((q[8 * c + 4 + j] >> 4) & 1u) << (4 + c);
        hb[4 * r + j] = static_cast<uint8_t>(v);
    }
}
// Q6_K's high 2 bits (bits 4-5 of q; h6_bits): chunks 2 h and 2 h + 1 share the bytes at
// h * 64, element 8 c + j at bit 4 (c & 1), 8 c + 4 + j at 4 (c & 1) + 2.
void put_high_pairs(uint8_t* qh, int r, const uint8_t* q) {
    for (int h = 0; h < 2; h++)
        for (int j = 0; j < 4; j++) {
            unsigned v = 0;
            for (int cc = 0; cc < 2; cc++) {
                const int c = 2 * h + cc;
                v |= ((q[8 * c + j] >> 4) & 3u) << (4 * cc) | ((q[8 * c + 4 + j] >> 4) & 3u) << (4 * cc + 2);
            }
            qh[h * 64 + 4 * r + j] = static_cast<uint8_t>(v);
        }
}

// Decoded K-quant super-block -> lane r of a panel step (weight_matmul_layout.hpp).
void place(TensorType t, const Decoded& o, int r, uint8_t* pb) {
    std::memcpy(pb + 2 * r, &o.d, 2);
    const SubBlockLayout L = sub_block_layout(t);
    if (t == TensorType::Q6_K) {
        for (int g = 0; g < 16; g++) pb[kQ6Sc + g * 16 + r] = o.sc[g];
    } else {
        std::memcpy(pb + kKDmin + 2 * r, &o.dmin, 2);
        for (int s = 0; s < 8; s++) {
            pb[kKSc + s * 16 + r] = o.sc[s];
            pb[kKMin + s * 16 + r] = o.mn[s];
        }
    }
    for (int s = 0; s < L.subs; s++) {
        const uint8_t* q = o.q + 32 * s;
        put_nibbles(pb + L.qs + size_t(s) * 256, r, q);
        if (t == TensorType::Q6_K) put_high_pairs(pb + L.hx + size_t(s) * L.hstep, r, q);
        else if (t != TensorType::Q4_K) put_fifth_bits(pb + L.hx + size_t(s) * L.hstep, r, q);
    }
}

// Lane r of a panel step -> Decoded (the inverse of place).
void fetch(TensorType t, const uint8_t* pb, int r, Decoded& o) {
    std::memcpy(&o.d, pb + 2 * r, 2);
    if (t == TensorType::Q5_0) {
        for (int e = 0; e < 32; e++)
            o.q[e] = static_cast<uint8_t>(chunk_nibble(pb + 96, r, e) | hb_bit(pb + 32, r, e) << 4);
        return;
    }
    if (t == TensorType::Q6_K) {
        for (int g = 0; g < 16; g++) o.sc[g] = pb[kQ6Sc + g * 16 + r];
        for (int e = 0; e < 256; e++)
            o.q[e] = static_cast<uint8_t>(chunk_nibble(pb + kQ6Ql + (e / 32) * 256, r, e % 32) |
                                          h6_bits(pb + kQ6Qh + (e / 32) * 128, r, e % 32) << 4);
        return;
    }
    std::memcpy(&o.dmin, pb + kKDmin + 2 * r, 2);
    for (int s = 0; s < 8; s++) {
        o.sc[s] = pb[kKSc + s * 16 + r];
        o.mn[s] = pb[kKMin + s * 16 + r];
    }
    for (int e = 0; e < 256; e++) {
        unsigned v = chunk_nibble(pb + kKQs + (e / 32) * 256, r, e % 32);
        if (t == TensorType::Q5_K) v |= hb_bit(pb + kKHb + (e / 32) * 64, r, e % 32) << 4;
        o.q[e] = static_cast<uint8_t>(v);
    }
}

bool decoded_type(TensorType t) { return t == TensorType::Q5_0 || is_kquant_weight(t); }

// Packs one row (GGUF layout) into lane r of a panel.
void pack_row(TensorType t, const uint8_t* src, int64_t k, int r, uint8_t* panel, size_t stride) {
    const int64_t nb = k / 32;
    if (t == TensorType::Q5_0) {
        // Straight from the block (the bulk of Q4_K_M files' bytes): the bytes place() would
        // write, without the 32 codes in between. Element e < 16 is the low nibble of qs[e],
        // e >= 16 the high nibble of qs[e - 16]; its fifth bit is bit e of qh.
        const auto* blk = reinterpret_cast<const BlockQ5_0*>(src);
        for (int64_t b = 0; b < nb; b++) {
            uint8_t* pb = panel + b * stride;
            std::memcpy(pb + 2 * r, &blk[b].d, 2);
            uint32_t qh;
            std::memcpy(&qh, blk[b].qh, 4);
            const uint8_t* qs = blk[b].qs;
            constexpr SubBlockLayout L = sub_block_layout(TensorType::Q5_0);
            for (int c = 0; c < 4; c++) {
                const int half = c / 2, at = 8 * (c % 2);  // elements 8 c.. live in qs[at..] (nibble half)
                for (int j = 0; j < 4; j++) {
                    const unsigned lo = (qs[at + j] >> (4 * half)) & 0xF, hi = (qs[at + 4 + j] >> (4 * half)) & 0xF;
                    pb[L.qs + c * 64 + 4 * r + j] = static_cast<uint8_t>(lo | hi << 4);
                }
            }
            for (int j = 0; j < 4; j++) {
                unsigned v = 0;
                for (int c = 0; c < 4; c++) v |= ((qh >> (8 * c + j)) & 1u) << c | ((qh >> (8 * c + 4 + j)) & 1u) << (4 + c);
                pb[L.hx + 4 * r + j] = static_cast<uint8_t>(v);
            }
        }
        return;
    }
    if (is_kquant_weight(t)) {
        const size_t bb = tensor_type_traits(t).block_bytes;
        Decoded o;
        for (int64_t b = 0; b < k / panel_step_elems(t); b++) {
            decode_block(t, src + b * bb, o);
            place(t, o, r, panel + b * stride);
        }
        return;
    }
    switch (t) {
        case TensorType::Q4_1: {
            const auto* blk = reinterpret_cast<const BlockQ4_1*>(src);
            for (int64_t b = 0; b < nb; b++) {
                uint8_t* pb = panel + b * stride;
                std::memcpy(pb + 2 * r, &blk[b].d, 2);
                std::memcpy(pb + 32 + 2 * r, &blk[b].m, 2);
                for (int c = 0; c < 4; c++)
                    for (int j = 0; j < 4; j++) {
                        // element e: e < 16 -> qs[e] & 0xF, else qs[e-16] >> 4
                        auto nib = [&](int e) { return e < 16 ? blk[b].qs[e] & 0xF : blk[b].qs[e - 16] >> 4; };
                        pb[64 + c * 64 + 4 * r + j] = static_cast<uint8_t>(nib(8 * c + j) | nib(8 * c + 4 + j) << 4);
                    }
            }
            break;
        }
        case TensorType::Q4_0: {
            const auto* blk = reinterpret_cast<const BlockQ4_0*>(src);
            for (int64_t b = 0; b < nb; b++) {
                uint8_t* pb = panel + b * stride;
                std::memcpy(pb + 2 * r, &blk[b].d, 2);
                for (int c = 0; c < 4; c++)
                    for (int j = 0; j < 4; j++) {
                        auto nib = [&](int e) { return e < 16 ? blk[b].qs[e] & 0xF : blk[b].qs[e - 16] >> 4; };
                        pb[32 + c * 64 + 4 * r + j] = static_cast<uint8_t>(nib(8 * c + j) | nib(8 * c + 4 + j) << 4);
                    }
            }
            break;
        }
        case TensorType::Q8_0: {
            const auto* blk = reinterpret_cast<const BlockQ8_0*>(src);
            for (int64_t b = 0; b < nb; b++) {
                uint8_t* pb = panel + b * stride;
                std::memcpy(pb + 2 * r, &blk[b].d, 2);
                for (int g = 0; g < 8; g++)
                    for (int j = 0; j < 4; j++)
                        pb[32 + g * 64 + 4 * r + j] = static_cast<uint8_t>(blk[b].qs[4 * g + j]) ^ 0x80u;
            }
            break;
        }
        case TensorType::F32:
            for (int64_t i = 0; i < k; i++) std::memcpy(panel + i * stride + 4 * r, src + i * 4, 4);
            break;
        default:  // F16, BF16
            for (int64_t i = 0; i < k; i++) std::memcpy(panel + i * stride + 2 * r, src + i * 2, 2);
            break;
    }
}

// Inverse of pack_row.
void unpack_row_impl(TensorType t, const uint8_t* panel, size_t stride, int64_t k, int r, uint8_t* dst) {
    const int64_t nb = k / 32;
    if (decoded_type(t)) {
        const size_t bb = tensor_type_traits(t).block_bytes;
        Decoded o;
        for (int64_t b = 0; b < k / panel_step_elems(t); b++) {
            fetch(t, panel + b * stride, r, o);
            encode_block(t, o, dst + b * bb);
        }
        return;
    }
    switch (t) {
        case TensorType::Q4_1:
        case TensorType::Q4_0: {
            const bool q41 = t == TensorType::Q4_1;
            const size_t qoff = q41 ? 64 : 32;
            const size_t bsz = q41 ? sizeof(BlockQ4_1) : sizeof(BlockQ4_0);
            for (int64_t b = 0; b < nb; b++) {
                const uint8_t* pb = panel + b * stride;
                uint8_t* out = dst + b * bsz;
                std::memcpy(out, pb + 2 * r, 2);
                if (q41) std::memcpy(out + 2, pb + 32 + 2 * r, 2);
                uint8_t nibs[32];
                for (int c = 0; c < 4; c++)
                    for (int j = 0; j < 4; j++) {
                        const uint8_t v = pb[qoff + c * 64 + 4 * r + j];
                        nibs[8 * c + j] = v & 0xF;
                        nibs[8 * c + 4 + j] = v >> 4;
                    }
                uint8_t* qs = out + (q41 ? 4 : 2);
                for (int j = 0; j < 16; j++) qs[j] = static_cast<uint8_t>(nibs[j] | nibs[j + 16] << 4);
            }
            break;
        }
        case TensorType::Q8_0:
            for (int64_t b = 0; b < nb; b++) {
                const uint8_t* pb = panel + b * stride;
                uint8_t* out = dst + b * sizeof(BlockQ8_0);
                std::memcpy(out, pb + 2 * r, 2);
                for (int g = 0; g < 8; g++)
                    for (int j = 0; j < 4; j++) out[2 + 4 * g + j] = pb[32 + g * 64 + 4 * r + j] ^ 0x80u;
            }
            break;
        case TensorType::F32:
            for (int64_t i = 0; i < k; i++) std::memcpy(dst + i * 4, panel + i * stride + 4 * r, 4);
            break;
        default:
            for (int64_t i = 0; i < k; i++) std::memcpy(dst + i * 2, panel + i * stride + 2 * r, 2);
            break;
    }
}

}  // namespace

bool PackedWeight::supports(TensorType type) noexcept { return panel_step_bytes(type) != 0; }

namespace {
void require_supported(TensorType type) {
    if (!PackedWeight::supports(type))
        fail(KVRT_ERR_UNSUPPORTED, std::string("weight matmul: tensor type ") + std::to_string(static_cast<uint32_t>(type)) +
                                       " is not supported (F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q8_0, Q4_K, Q5_K, Q6_K are)");
}

// Rows [first, first + n) of w from src (n rows in GGUF layout), unchecked.
void pack_range(const PackedWeight& w, int64_t first, int64_t n, const uint8_t* src) {
    for (int64_t i = 0; i < n; i++) {
        const int64_t r = first + i;
        pack_row(w.type(), src + static_cast<size_t>(i) * w.row_bytes(), w.cols(), static_cast<int>(r % kPanel),
                 const_cast<uint8_t*>(w.panel(r / kPanel)), w.panel_stride());
    }
}
}  // namespace

PackedWeight::PackedWeight(TensorType type, const void* data, int64_t n_rows, int64_t k)
    : PackedWeight(type, std::span<const WeightRows>(std::array<WeightRows, 1>{WeightRows{data, n_rows}}), k) {}

PackedWeight::PackedWeight(TensorType type, std::span<const WeightRows> parts, int64_t k) : type_(type) {
    require_supported(type);
    KVRT_CHECK(!parts.empty(), KVRT_ERR_INVALID_ARGUMENT, "weight matmul: no weight tensor given");
    int64_t n_rows = 0;
    for (const WeightRows& part : parts) {
        KVRT_CHECK(part.data != nullptr, KVRT_ERR_INVALID_ARGUMENT, "weight matmul: weight data is NULL");
        KVRT_CHECK(part.rows >= 1 && part.rows < (int64_t{1} << 40), KVRT_ERR_INVALID_ARGUMENT,
                   "weight matmul: a weight part has " + std::to_string(part.rows) + " rows");
        n_rows += part.rows;
    }
    *this = PackedWeight(type, n_rows, k, Unpacked{});
    int64_t n = 0;
    for (const WeightRows& part : parts) {
        pack_range(*this, n, part.rows, static_cast<const uint8_t*>(part.data));
        n += part.rows;
    }
}

PackedWeight::PackedWeight(TensorType type, int64_t n_rows, int64_t k, Unpacked how) : type_(type) {
    require_supported(type);
    KVRT_CHECK(n_rows >= 1 && k >= 1, KVRT_ERR_INVALID_ARGUMENT,
               "weight matmul: weight shape " + std::to_string(n_rows) + " x " + std::to_string(k) + " is empty or negative");
    const int64_t step_elems = panel_step_elems(type);
    KVRT_CHECK(k % step_elems == 0, KVRT_ERR_INVALID_ARGUMENT,
               "weight matmul: row length " + std::to_string(k) + " is not a multiple of the " +
                   std::to_string(step_elems) + "-element block of " + tensor_type_name(type));
    constexpr int64_t kMax = int64_t{1} << 40;
    KVRT_CHECK(n_rows < kMax && k < kMax && static_cast<double>(n_rows) * static_cast<double>(k) < 1e13,
               KVRT_ERR_OVERFLOW, "weight matmul: weight shape too large");
    KVRT_CHECK(how.fill >= -1 && how.fill <= 255, KVRT_ERR_INVALID_ARGUMENT,
               "weight matmul: fill byte " + std::to_string(how.fill) + " is outside -1..255");
    n_ = n_rows;
    k_ = k;
    panels_ = (n_rows + kPackRowAlign - 1) / kPackRowAlign * 2;
    const size_t step = panel_step_bytes(type);
    stride_ = 2 * step;
    group_bytes_ = static_cast<size_t>(k / step_elems) * stride_;
    bytes_ = group_bytes_ * static_cast<size_t>(panels_ / 2);
    row_bytes_ = static_cast<size_t>(tensor_row_bytes(type, static_cast<uint64_t>(k)));
    const size_t alloc = (bytes_ + 63) & ~size_t{63};
    void* p = std::aligned_alloc(64, alloc);
    if (!p) throw std::bad_alloc();
    data_.reset(static_cast<uint8_t*>(p));
    // Packing writes every byte of a row's lanes, so only the padding rows (zero scales, zero
    // values) need zeroing: with the last pair's real rows, which pack_rows writes afterwards, that
    // is the last panel pair. (A memset of the whole buffer had been a second pass over all of a
    // model's packed weights at every load.)
    if (how.fill >= 0) std::memset(data_.get(), how.fill, bytes_);
    if (n_rows % kPackRowAlign) std::memset(data_.get() + bytes_ - group_bytes_, 0, group_bytes_);
    std::memset(data_.get() + bytes_, 0, alloc - bytes_);
}

void PackedWeight::pack_rows(int64_t first, int64_t n, const void* rows) {
    KVRT_CHECK(rows != nullptr, KVRT_ERR_INVALID_ARGUMENT, "weight matmul: weight data is NULL");
    KVRT_CHECK(first >= 0 && n >= 0 && first <= n_ && n <= n_ - first && first % kPackRowAlign == 0, KVRT_ERR_OUT_OF_RANGE,
               "weight matmul: rows [" + std::to_string(first) + ", +" + std::to_string(n) + ") are outside [0, " +
                   std::to_string(n_) + ") or do not start on a panel pair (" + std::to_string(kPackRowAlign) + " rows)");
    pack_range(*this, first, n, static_cast<const uint8_t*>(rows));
}

void PackedWeight::unpack_row(int64_t n, void* out) const {
    KVRT_CHECK(n >= 0 && n < n_, KVRT_ERR_OUT_OF_RANGE,
               "weight matmul: row " + std::to_string(n) + " is outside [0, " + std::to_string(n_) + ")");
    KVRT_CHECK(out != nullptr, KVRT_ERR_INVALID_ARGUMENT, "weight matmul: output is NULL");
    unpack_row_impl(type_, panel(n / kPanel), stride_, k_, static_cast<int>(n % kPanel), static_cast<uint8_t*>(out));
}

void PackedWeight::dequantize_row(int64_t n, float* out) const {
    KVRT_CHECK(out != nullptr, KVRT_ERR_INVALID_ARGUMENT, "weight matmul: output is NULL");
    // Small rows: a stack buffer would do, but K is unbounded; use the output
    // itself for float types and a heap copy for the rest.
    const size_t rb = row_bytes_;
    std::unique_ptr<uint8_t[]> tmp(new uint8_t[rb]);
    unpack_row(n, tmp.get());
    const uint8_t* r = tmp.get();
    const int64_t nb = k_ / 32;
    switch (type_) {
        case TensorType::Q4_1: {
            const auto* blk = reinterpret_cast<const BlockQ4_1*>(r);
            for (int64_t b = 0; b < nb; b++) {
                const float d = f16_to_f32(blk[b].d), m = f16_to_f32(blk[b].m);
                for (int j = 0; j < 16; j++) {
                    out[b * 32 + j] = static_cast<float>(blk[b].qs[j] & 0xF) * d + m;
                    out[b * 32 + j + 16] = static_cast<float>(blk[b].qs[j] >> 4) * d + m;
                }
            }
            break;
        }
        case TensorType::Q4_0: {
            const auto* blk = reinterpret_cast<const BlockQ4_0*>(r);
            for (int64_t b = 0; b < nb; b++) {
                const float d = f16_to_f32(blk[b].d);
                for (int j = 0; j < 16; j++) {
                    out[b * 32 + j] = static_cast<float>((blk[b].qs[j] & 0xF) - 8) * d;
                    out[b * 32 + j + 16] = static_cast<float>((blk[b].qs[j] >> 4) - 8) * d;
                }
            }
            break;
        }
        case TensorType::Q8_0: {
            const auto* blk = reinterpret_cast<const BlockQ8_0*>(r);
            for (int64_t b = 0; b < nb; b++) {
                const float d = f16_to_f32(blk[b].d);
                for (int j = 0; j < 32; j++) out[b * 32 + j] = static_cast<float>(blk[b].qs[j]) * d;
            }
            break;
        }
        case TensorType::F32: std::memcpy(out, r, rb); break;
        case TensorType::Q5_0:
        case TensorType::Q4_K:
        case TensorType::Q5_K:
        case TensorType::Q6_K: dequantize_f32(type_, r, out, static_cast<uint64_t>(k_), DequantIsa::Scalar); break;
        case TensorType::F16:
            for (int64_t i = 0; i < k_; i++) {
                uint16_t h;
                std::memcpy(&h, r + 2 * i, 2);
                out[i] = f16_to_f32(h);
            }
            break;
        default:
            for (int64_t i = 0; i < k_; i++) {
                uint16_t h;
                std::memcpy(&h, r + 2 * i, 2);
                out[i] = bf16_to_f32(h);
            }
            break;
    }
}

}  // namespace kvrt
