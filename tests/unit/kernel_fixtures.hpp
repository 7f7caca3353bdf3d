// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Test fixtures for the kernel tests: a PagedKV over the test's own blocks filled
// with random values, and helpers to compare fast kernels with their ref twins.
#pragma once

#include "util/isa.hpp"
#include "kernels/cpu/attention_isa.hpp"
#include "kernels/paged_kv.hpp"
#include "util/dtype.hpp"
#include "util/kv_quant.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace kvrt::test {

// The K and V element types of a TestKV (a single DType: both).
struct KvTypes {
    DType k, v;
    KvTypes(DType t) : k(t), v(t) {}  // NOLINT: implicit on purpose
    KvTypes(DType kt, DType vt) : k(kt), v(vt) {}
};
inline std::string kv_types_name(KvTypes t) {
    return t.k == t.v ? dtype_name(t.k) : std::string(dtype_name(t.k)) + "/" + dtype_name(t.v);
}

// Owns blocks of `block_tokens` rows; K rows at k_offset, V rows after them (or the same
// rows when kv_shared), with `pad` spare bytes per row to catch stride mistakes. Quantised
// types (util/kv_quant.hpp) are written with kv_store_head, scales included.
struct TestKV {
    std::vector<std::vector<uint8_t>> storage;
    std::vector<const uint8_t*> ptrs;
    PagedKV kv;

    TestKV(int32_t n_tokens, int32_t n_kv_heads, int32_t head_dim, KvTypes dt, int32_t block_tokens, uint32_t seed,
           bool kv_shared = false, size_t pad = 16) {
        kv.block_tokens = block_tokens;
        kv.n_kv_heads = n_kv_heads;
        kv.head_dim = head_dim;
        kv.dtype = dt.k;
        kv.row_bytes = size_t(n_kv_heads) * kv_head_bytes(dt.k, head_dim) + pad;
        if (dt.v != dt.k) {
            kv.v_dtype = dt.v;
            kv.v_row_bytes = size_t(n_kv_heads) * kv_head_bytes(dt.v, head_dim) + pad;
        }
        kv.k_offset = 64;
        kv.v_offset = kv_shared ? kv.k_offset : kv.k_offset + kv.row_bytes * block_tokens;
        kv.n_tokens = n_tokens;
        kv.n_blocks = (n_tokens + block_tokens - 1) / block_tokens;
        const size_t block_bytes = kv.v_offset + kv.vrb() * block_tokens + 64;
        std::mt19937 rng(seed);
        std::uniform_real_distribution<float> u(-1.0f, 1.0f);
        storage.resize(kv.n_blocks);
        ptrs.resize(kv.n_blocks);
        for (int32_t b = 0; b < kv.n_blocks; ++b) {
            storage[b].assign(block_bytes, 0xFF);  // padding = NaN patterns: must never be read
            ptrs[b] = storage[b].data();
        }
        std::vector<float> x(size_t(n_kv_heads) * head_dim);
        for (int32_t pos = 0; pos < n_tokens; ++pos)
            for (int which = 0; which < (kv_shared ? 1 : 2); ++which) {
                uint8_t* row = const_cast<uint8_t*>(which == 0 ? kv_k(pos) : kv_v(pos));
                const DType t = which == 0 ? dt.k : dt.v;
                for (auto& e : x) e = u(rng);
                for (int32_t h = 0; h < n_kv_heads; ++h)
                    kv_store_head(row + size_t(h) * kv_head_bytes(t, head_dim), x.data() + size_t(h) * head_dim, t,
                                  head_dim);
            }
        kv.blocks = ptrs.data();
    }
    const uint8_t* kv_k(int64_t pos) { return storage[pos / kv.block_tokens].data() + kv.k_offset + (pos % kv.block_tokens) * kv.row_bytes; }
    const uint8_t* kv_v(int64_t pos) { return storage[pos / kv.block_tokens].data() + kv.v_offset + (pos % kv.block_tokens) * kv.vrb(); }
    // Drops (nulls) every block wholly before position `pos`, as a sliding window would.
    void drop_before(int64_t pos) {
        for (int64_t b = 0; (b + 1) * kv.block_tokens <= pos; ++b) ptrs[b] = nullptr;
    }
    // A view of the first n_tokens rows.
    PagedKV prefix(int32_t n_tokens) const {
        PagedKV p = kv;
        p.n_tokens = n_tokens;
        return p;
    }
};

inline std::vector<float> random_vec(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(lo, hi);
    std::vector<float> v(n);
    for (auto& x : v) x = u(rng);
    return v;
}

inline float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
    float m = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        if (a[i] == b[i]) continue;  // also equal infinities
        float d = std::fabs(a[i] - b[i]);
        if (std::isnan(d)) return INFINITY;
        m = d > m ? d : m;
    }
    return m;
}

inline bool bit_equal(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Every ISA path this machine can run, lowest first.
inline std::vector<Isa> available_isas() {
    std::vector<Isa> v;
    for (int i = 0; i <= static_cast<int>(isa_detected()); ++i) v.push_back(static_cast<Isa>(i));
    return v;
}

// Tolerance of a cpu:: attention result (output and lse) against its ref:: twin, for inputs in
// [-1, 1] and scale = 1/sqrt(d). f32 arithmetic (every path but one): 2e-5. The avx512bf16 path
// over bf16 KV (isa.hpp; also the amx level's attention) rounds the pre-scaled query and the softmax weights to bf16 (relative
// error <= 2^-9 each) before its bf16 dot products: a logit moves by at most
// 2^-9 * scale * log2(e) * sum_c |q_c k_c| (~0.016 in the exp2 domain at d = 512 when every
// rounding error had the same sign; they have random signs, so typically ~0.001), a weight by
// 2^-9 more; the output, a convex combination of |v| <= 1, moves by about as much. Measured max
// over the unit tests' shapes: 2e-3. 1e-2 keeps a margin and still catches a wrong key, lane or
// mask (errors ~0.1-1). Int8 V (every path): P.V codes each tile's weights p_j * scale_j as
// 8-bit integers against their largest magnitude (attention_core.inl, pv_rows_i8): a weight
// moves by at most 1/510 of the tile's largest, so the output by at most 32 / 510 ~ 0.06 of max
// |v| if every error had the same sign, by ~sqrt(32) / (255 sqrt(12)) ~ 6e-3 with random signs
// and every weight as large as the largest (measured max over the unit tests' shapes: 1.95e-3;
// it was 2.9e-5 with the int16 codes before session 25). 1e-2, as for bf16.
inline float attn_tolerance(Isa isa, KvTypes kv, float f32_tol = 2e-5f) {
    const float t = isa >= Isa::Avx512Bf16 && kv.k == DType::BF16 && cpu::attention_bf16_dot() ? 1e-2f : f32_tol;
    return kv.v == DType::I8 && t < 1e-2f ? 1e-2f : t;
}

// The CED indexer (indexer_core.inl) on the avx512bf16 path over bf16 keys, where the CPU takes
// bf16 dot products (cpu::attention_bf16_dot), rounds each query head to bf16 (nearest even) and
// multiplies with bf16 dot products; every other path keeps the query in f32.
inline bool indexer_rounds_q(Isa isa, DType key_dtype) {
    return isa >= Isa::Avx512Bf16 && key_dtype == DType::BF16 && cpu::attention_bf16_dot();
}

// Sets one of the attention's per-CPU choices for the scope (1 on, 0 off), then puts back the
// choice it found: Bf16DotScope (cpu::attention_bf16_dot), GatherScalesScope
// (cpu::attention_gather_scales), I8DotScope (cpu::attention_avx512_i8_dot).
template <bool (*Get)() noexcept, void (*Set)(int) noexcept>
struct ChoiceScope {
    explicit ChoiceScope(int mode) : prev_(Get() ? 1 : 0) { Set(mode); }
    ~ChoiceScope() { Set(prev_); }
    ChoiceScope(const ChoiceScope&) = delete;
    ChoiceScope& operator=(const ChoiceScope&) = delete;

private:
    int prev_;
};
using Bf16DotScope = ChoiceScope<cpu::attention_bf16_dot, cpu::attention_bf16_dot_override>;
using GatherScalesScope = ChoiceScope<cpu::attention_gather_scales, cpu::attention_gather_scales_override>;
using I8DotScope = ChoiceScope<cpu::attention_avx512_i8_dot, cpu::attention_avx512_i8_dot_override>;

// v rounded to bf16 (nearest even) and widened back: the query the indexer computes with
// where indexer_rounds_q.
inline std::vector<float> bf16_rounded(std::vector<float> v) {
    for (auto& x : v) x = bf16_to_f32(f32_to_bf16(x));
    return v;
}

// Element i of a cached row of dtype dt, as f32 (exact; rows of one head for quantised types).
inline float row_elem(const uint8_t* row, DType dt, int32_t i) {
    switch (dt) {
        case DType::F32: { float f; std::memcpy(&f, row + size_t(i) * 4, 4); return f; }
        case DType::BF16: { uint16_t h; std::memcpy(&h, row + size_t(i) * 2, 2); return bf16_to_f32(h); }
        case DType::F16: { uint16_t h; std::memcpy(&h, row + size_t(i) * 2, 2); return f16_to_f32(h); }
        default: break;
    }
    return NAN;
}

// How far rounding the query to bf16 can move the indexer score of the key at `pos`:
// each q_hc moves by at most 2^-9 |q_hc| (8 significant bits, round to nearest), so
// q_h . k by at most 2^-9 sum_c |q_hc k_c|; ReLU is 1-Lipschitz and the heads are weighted
// by w_h: |delta score| <= 2^-9 sum_h |w_h| sum_c |q_hc k_c|. (A bound, not an estimate: the
// errors have random signs, so the typical move is ~10x smaller.)
inline float indexer_bf16_q_bound(const PagedKV& keys, const float* q, const float* w, int32_t n_heads, int64_t pos) {
    const uint8_t* k = keys.k_row(pos);
    double b = 0;
    for (int32_t h = 0; h < n_heads; ++h) {
        double s = 0;
        for (int32_t c = 0; c < keys.head_dim; ++c)
            s += std::fabs(double(q[size_t(h) * keys.head_dim + c]) * row_elem(k, keys.dtype, c));
        b += std::fabs(double(w[h])) * s;
    }
    return float(b * std::ldexp(1.0, -9));
}

// Forces an ISA path for the scope.
struct IsaScope {
    Isa prev;
    explicit IsaScope(Isa isa) : prev(isa_set_limit(isa)) {}
    ~IsaScope() { isa_set_limit(prev); }
};

// n distinct rows of a bank of n_bank (all of them when n >= n_bank), ascending, drawn by seed.
inline std::vector<int32_t> pick_rows(int32_t n_bank, int32_t n, uint32_t seed) {
    std::vector<int32_t> all(static_cast<size_t>(n_bank));
    std::iota(all.begin(), all.end(), 0);
    std::mt19937 rng(seed);
    std::shuffle(all.begin(), all.end(), rng);
    all.resize(static_cast<size_t>(std::min(n, n_bank)));
    std::sort(all.begin(), all.end());
    return all;
}

}  // namespace kvrt::test
