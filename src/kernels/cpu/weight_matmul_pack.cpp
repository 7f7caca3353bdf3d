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
#include <bit>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <string>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

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

// Packing writes the bytes of row r in the layouts of weight_matmul_layout.hpp straight from
// the GGUF blocks, a 4-byte word of each chunk at a time, with 64-bit lane-wise (SWAR) shifts and
// masks (little-endian, as the formats are). Placing one code at a time had been ~80% of loading
// Qwen2.5 0.5B, and decoding a block's 32 or 256 codes before placing them ~1 ns per element.
static_assert(std::endian::native == std::endian::little, "packing reads GGUF blocks as little-endian words");
uint64_t load64(const uint8_t* p) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    return v;
}
void store32(uint8_t* p, uint32_t v) { std::memcpy(p, &v, 4); }
constexpr uint64_t kLowNibbles = 0x0F0F0F0F0F0F0F0Full;

// A 4-bit chunk's word for one row: the 8 codes n[i] = (p[i] >> shift) & 15 (i = 0..7) as bytes
// j = n[j] | n[4 + j] << 4 (chunk_nibble's order).
uint32_t nibble_chunk(const uint8_t* p, int shift) {
    const uint64_t n = (load64(p) >> shift) & kLowNibbles;
    return static_cast<uint32_t>(n) | static_cast<uint32_t>(n >> 32) << 4;
}
// Q4_0 / Q4_1 / Q5_0 nibbles (element e < 16: low nibble of qs[e]; e >= 16: high nibble of
// qs[e - 16]) into the 4 chunks at `chunks`, row r.
void put_block_nibbles(const uint8_t* qs, uint8_t* chunks, int r) {
    store32(chunks + 0 * 64 + 4 * r, nibble_chunk(qs, 0));
    store32(chunks + 1 * 64 + 4 * r, nibble_chunk(qs + 8, 0));
    store32(chunks + 2 * 64 + 4 * r, nibble_chunk(qs, 4));
    store32(chunks + 3 * 64 + 4 * r, nibble_chunk(qs + 8, 4));
}
// Bits 0, 8, 16, 24 of x as bits 0..3 (one multiply: the 16 partial products land on distinct
// bits, so nothing carries into bits 21..24).
uint32_t gather4(uint32_t x) { return (((x & 0x01010101u) * 0x00204081u) >> 21) & 0xFu; }
// Q5_0's fifth bits (bit e of qh for element e) as hb_bit's word for row r: byte j, bit c for
// element 8 c + j, bit 4 + c for 8 c + 4 + j.
uint32_t fifth_bits_word(uint32_t qh) {
    uint32_t w = 0;
    for (int j = 0; j < 4; j++) w |= (gather4(qh >> j) | gather4(qh >> (4 + j)) << 4) << (8 * j);
    return w;
}
// The same word for sub-block s of a Q5_K super-block (element i's fifth bit is bit s of qh[i]).
uint32_t fifth_bits_word_k(const uint8_t* qh, int s) {
    uint64_t u = 0;  // byte i: bit c is the fifth bit of element 8 c + i
    for (int c = 0; c < 4; c++) u |= ((load64(qh + 8 * c) >> s) & 0x0101010101010101ull) << c;
    return static_cast<uint32_t>(u) | static_cast<uint32_t>(u >> 32) << 4;
}
// Q6_K's high 2 bits of sub-block 4 n + jj (bits 2 jj, 2 jj + 1 of qh[32 n + l] for element l)
// as h6_bits' two words for row r, stored at `dst` (h * 64 + 4 r).
void put_high_pairs(const uint8_t* qh32, int jj, uint8_t* dst, int r) {
    for (int h = 0; h < 2; h++) {
        const uint64_t v0 = (load64(qh32 + 16 * h) >> (2 * jj)) & 0x0303030303030303ull;      // elements 16 h + i
        const uint64_t v1 = (load64(qh32 + 16 * h + 8) >> (2 * jj)) & 0x0303030303030303ull;  // 16 h + 8 + i
        const uint64_t x = v0 | v1 << 4;
        store32(dst + h * 64 + 4 * r, static_cast<uint32_t>(x) | static_cast<uint32_t>(x >> 32) << 2);
    }
}

// A K-quant super-block (GGUF) -> lane r of a panel step.
void pack_kquant_block(TensorType t, const uint8_t* src, int r, uint8_t* pb) {
    const SubBlockLayout L = sub_block_layout(t);
    if (t == TensorType::Q6_K) {
        const auto& b = *reinterpret_cast<const BlockQ6_K*>(src);  // read in place, as the other types' blocks
        std::memcpy(pb + 2 * r, &b.d, 2);
        for (int g = 0; g < 16; g++) pb[kQ6Sc + g * 16 + r] = static_cast<uint8_t>(b.scales[g]);
        // Sub-block s = 4 n + jj (elements 128 n + 32 jj + l): nibble jj / 2 of
        // ql[64 n + 32 (jj % 2) + l], bits 2 jj, 2 jj + 1 of qh[32 n + l].
        for (int s = 0; s < 8; s++) {
            const int n = s / 4, jj = s % 4;
            const uint8_t* lo = b.ql + 64 * n + 32 * (jj & 1);
            uint8_t* chunks = pb + L.qs + size_t(s) * 256;
            for (int c = 0; c < 4; c++) store32(chunks + c * 64 + 4 * r, nibble_chunk(lo + 8 * c, jj >= 2 ? 4 : 0));
            put_high_pairs(b.qh + 32 * n, jj, pb + L.hx + size_t(s) * L.hstep, r);
        }
        return;
    }
    // Q4_K / Q5_K: d, dmin, 12 bytes of 6-bit scales and mins, (Q5_K) qh[32], qs[128].
    const bool q5 = t == TensorType::Q5_K;
    std::memcpy(pb + 2 * r, src, 2);
    std::memcpy(pb + kKDmin + 2 * r, src + 2, 2);
    uint8_t sc[8], mn[8];
    decode_scales_k4(src + 4, sc, mn);
    for (int s = 0; s < 8; s++) {
        pb[kKSc + s * 16 + r] = sc[s];
        pb[kKMin + s * 16 + r] = mn[s];
    }
    const uint8_t* qh = src + 16;
    const uint8_t* qs = src + (q5 ? 48 : 16);
    // Sub-block s (elements 32 s..32 s + 31): the low (s even) or high (s odd) nibbles of
    // qs[32 (s / 2) + i], fifth bit s of qh[i].
    for (int s = 0; s < 8; s++) {
        const uint8_t* n = qs + 32 * (s / 2);
        uint8_t* chunks = pb + L.qs + size_t(s) * 256;
        for (int c = 0; c < 4; c++) store32(chunks + c * 64 + 4 * r, nibble_chunk(n + 8 * c, 4 * (s & 1)));
        if (q5) store32(pb + L.hx + size_t(s) * L.hstep + 4 * r, fifth_bits_word_k(qh, s));
    }
}

// Lane r of a panel step -> Decoded (the inverse of packing, for unpack_row).
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
    if (is_kquant_weight(t)) {
        const size_t bb = tensor_type_traits(t).block_bytes;
        for (int64_t b = 0; b < k / panel_step_elems(t); b++) pack_kquant_block(t, src + b * bb, r, panel + b * stride);
        return;
    }
    switch (t) {
        case TensorType::Q5_0: {
            const auto* blk = reinterpret_cast<const BlockQ5_0*>(src);
            constexpr SubBlockLayout L = sub_block_layout(TensorType::Q5_0);
            for (int64_t b = 0; b < nb; b++) {
                uint8_t* pb = panel + b * stride;
                std::memcpy(pb + 2 * r, &blk[b].d, 2);
                uint32_t qh;
                std::memcpy(&qh, blk[b].qh, 4);
                put_block_nibbles(blk[b].qs, pb + L.qs, r);
                store32(pb + L.hx + 4 * r, fifth_bits_word(qh));
            }
            break;
        }
        case TensorType::Q4_1: {
            const auto* blk = reinterpret_cast<const BlockQ4_1*>(src);
            for (int64_t b = 0; b < nb; b++) {
                uint8_t* pb = panel + b * stride;
                std::memcpy(pb + 2 * r, &blk[b].d, 2);
                std::memcpy(pb + 32 + 2 * r, &blk[b].m, 2);
                put_block_nibbles(blk[b].qs, pb + 64, r);
            }
            break;
        }
        case TensorType::Q4_0: {
            const auto* blk = reinterpret_cast<const BlockQ4_0*>(src);
            for (int64_t b = 0; b < nb; b++) {
                uint8_t* pb = panel + b * stride;
                std::memcpy(pb + 2 * r, &blk[b].d, 2);
                put_block_nibbles(blk[b].qs, pb + 32, r);
            }
            break;
        }
        case TensorType::Q8_0: {
            const auto* blk = reinterpret_cast<const BlockQ8_0*>(src);
            for (int64_t b = 0; b < nb; b++) {
                uint8_t* pb = panel + b * stride;
                std::memcpy(pb + 2 * r, &blk[b].d, 2);
                for (int g = 0; g < 8; g++) {
                    uint32_t w;
                    std::memcpy(&w, blk[b].qs + 4 * g, 4);
                    store32(pb + 32 + g * 64 + 4 * r, w ^ 0x80808080u);  // q + 128, unsigned
                }
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

// Maps the pages of the panel pairs holding rows [first, first + n) in one call
// (MADV_POPULATE_WRITE, Linux 5.14+) instead of one page fault each as packing first writes them:
// a fault is a trap per 4 KiB page, and a model's packed weights are ~100,000 pages (Qwen2.5-0.5B).
// Measured at load (`kvrt bench --only load`, Ice Lake-SP KVM guest, session 45, three
// alternated runs each, medians): Qwen2.5-0.5B 681 -> 522 ms on 1 thread (system time 0.30 ->
// 0.18 s), 311 -> 293 ms on 2 (0.28 -> 0.24 s); Gemma 3 270M 162 -> 143 ms on 2; SmolLM2-135M
// 120 -> 98 ms on 1. The pages' contents are untouched (zero, as a fault would leave them);
// concurrent calls on neighbouring ranges may map a shared page twice, which is harmless. Where
// the kernel lacks the advice the call fails and packing faults the pages in as before.
void map_pages(const PackedWeight& w, int64_t first, int64_t n) {
#if defined(__linux__) && defined(MADV_POPULATE_WRITE)
    static const uintptr_t page = [] {
        const long p = sysconf(_SC_PAGESIZE);
        return p > 0 ? static_cast<uintptr_t>(p) : uintptr_t{4096};
    }();
    const int64_t pa = first / PackedWeight::kPackRowAlign;
    const int64_t pe = (first + n + PackedWeight::kPackRowAlign - 1) / PackedWeight::kPackRowAlign;
    const uintptr_t a = reinterpret_cast<uintptr_t>(w.panel(2 * pa)) & ~(page - 1);
    const uintptr_t e = reinterpret_cast<uintptr_t>(w.panel(2 * pe));  // (pe <= panels() / 2: at most the end)
    if (e > a) (void)madvise(reinterpret_cast<void*>(a), e - a, MADV_POPULATE_WRITE);
#else
    (void)w, (void)first, (void)n;
#endif
}

// Rows [first, first + n) of w from src (n rows in GGUF layout), unchecked.
void pack_range(const PackedWeight& w, int64_t first, int64_t n, const uint8_t* src) {
    map_pages(w, first, n);
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
