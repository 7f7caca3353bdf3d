// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Reference attention: naive loops in double precision. The oracle the fast
// kernels are tested against; never on a hot path.
#include "kernels/attention.hpp"
#include "kernels/kv_checks.hpp"
#include "kernels/query_quant.hpp"
#include "kernels/ref/elem.hpp"
#include "util/kv_quant.hpp"
#include "util/error.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace kvrt::ref {

namespace {

// Dense attention over int8 K quantises the query as the fast kernels do (query_quant.hpp):
// scaled in f32 by scale * log2(e), as they scale it, then int8 per group of 32.
constexpr float kLog2eF = 1.4426950408889634f;

// One query row against the keys given by key(i) for i in [0, n): softmax(scale q.k) . v.
// int_k: int8 K read with the query quantised (dense attention, as the fast kernels' int8 tiles).
template <class KeyRow, class ValRow>
void attend(const PagedKV& kv, int32_t kv_head, const float* q, int64_t n, KeyRow key, ValRow val, double scale,
            const float* sink, float* out, float* lse, bool int_k = false) {
    const int32_t d = kv.head_dim;
    const DType kdt = kv.dtype, vdt = kv.vdt();
    const size_t off = static_cast<size_t>(kv_head) * kv_head_bytes(kdt, d);
    const size_t voff = static_cast<size_t>(kv_head) * kv_head_bytes(vdt, d);
    std::vector<double> s(static_cast<size_t>(n));
    // The query as the scores multiply it: q (scale applied after), or the quantised codes times
    // their group's scale (the scale and log2(e) already in).
    std::vector<double> qd(static_cast<size_t>(d));
    double post = scale;
    if (int_k && kdt == DType::I8) {
        const float qscale = static_cast<float>(scale) * kLog2eF;
        std::vector<float> qs(static_cast<size_t>(d)), sc(static_cast<size_t>(d / kQueryI8Group));
        std::vector<int8_t> qi(static_cast<size_t>(d));
        for (int32_t c = 0; c < d; ++c) qs[c] = q[c] * qscale;
        quantize_query_i8(qs.data(), d, qi.data(), sc.data());
        for (int32_t c = 0; c < d; ++c) qd[c] = double(qi[c]) * sc[c / kQueryI8Group];
        post = std::log(2.0);
    } else {
        for (int32_t c = 0; c < d; ++c) qd[c] = q[c];
    }
    double m = -std::numeric_limits<double>::infinity();
    for (int64_t i = 0; i < n; ++i) {
        const uint8_t* k = key(i) + off;
        double acc = 0;
        for (int32_t c = 0; c < d; ++c) acc += qd[c] * kv_load(k, kdt, d, c);
        s[i] = acc * post;
        m = std::max(m, s[i]);
    }
    if (sink) m = std::max(m, double(*sink));
    std::vector<double> o(d, 0.0);
    double l = 0;
    if (n > 0 || sink) {
        for (int64_t i = 0; i < n; ++i) {
            double p = std::exp(s[i] - m);
            l += p;
            const uint8_t* v = val(i) + voff;
            for (int32_t c = 0; c < d; ++c) o[c] += p * kv_load(v, vdt, d, c);
        }
        if (sink) l += std::exp(double(*sink) - m);
    }
    for (int32_t c = 0; c < d; ++c) out[c] = l > 0 ? float(o[c] / l) : 0.0f;
    if (lse) *lse = l > 0 ? float(m + std::log(l)) : -std::numeric_limits<float>::infinity();
}

}  // namespace

void attention_prefill(const PagedKV& kv, const AttnParams& p, const float* q, int32_t n_q, int32_t q_pos0,
                       float* out, float* lse) {
    const char* what = "attention_prefill";
    kernels::check_attn_params(kv, p, what);
    KVRT_CHECK(n_q >= 0 && q_pos0 >= 0, KVRT_ERR_INVALID_ARGUMENT, "attention_prefill: negative n_q or q_pos0");
    if (n_q == 0) return;
    KVRT_CHECK(q && out, KVRT_ERR_INVALID_ARGUMENT, "attention_prefill: null q or out");
    kernels::check_rows_present(kv, attn_first_key(p, q_pos0), int64_t(q_pos0) + n_q - 1, what);
    const int32_t group = p.n_heads / kv.n_kv_heads, d = p.head_dim;
    for (int32_t t = 0; t < n_q; ++t) {
        const int64_t pos = int64_t(q_pos0) + t, lo = attn_first_key(p, pos);
        for (int32_t h = 0; h < p.n_heads; ++h) {
            size_t row = (size_t(t) * p.n_heads + h) * d;
            attend(
                kv, h / group, q + row, std::max<int64_t>(0, pos - lo + 1), [&](int64_t i) { return kv.k_row(lo + i); },
                [&](int64_t i) { return kv.v_row(lo + i); }, p.scale, p.sinks ? p.sinks + h : nullptr, out + row,
                lse ? lse + size_t(t) * p.n_heads + h : nullptr, true);
        }
    }
}

void attention_decode(const DecodeSeq* seqs, int32_t n_seqs, const AttnParams& p) {
    const char* what = "attention_decode";
    KVRT_CHECK(n_seqs >= 0 && (n_seqs == 0 || seqs), KVRT_ERR_INVALID_ARGUMENT, "attention_decode: null seqs");
    for (int32_t i = 0; i < n_seqs; ++i) {
        const DecodeSeq& s = seqs[i];
        KVRT_CHECK(s.kv && s.q && s.out, KVRT_ERR_INVALID_ARGUMENT, "attention_decode: null kv, q or out");
        kernels::check_attn_params(*s.kv, p, what);
        KVRT_CHECK(s.pos >= 0, KVRT_ERR_INVALID_ARGUMENT, "attention_decode: negative pos");
        kernels::check_rows_present(*s.kv, attn_first_key(p, s.pos), s.pos, what);
    }
    for (int32_t i = 0; i < n_seqs; ++i) {
        const DecodeSeq& s = seqs[i];
        const PagedKV& kv = *s.kv;
        const int32_t group = p.n_heads / kv.n_kv_heads, d = p.head_dim;
        const int64_t lo = attn_first_key(p, s.pos);
        for (int32_t h = 0; h < p.n_heads; ++h)
            attend(
                kv, h / group, s.q + size_t(h) * d, std::max<int64_t>(0, s.pos - lo + 1), [&](int64_t j) { return kv.k_row(lo + j); },
                [&](int64_t j) { return kv.v_row(lo + j); }, p.scale, p.sinks ? p.sinks + h : nullptr,
                s.out + size_t(h) * d, s.lse ? s.lse + h : nullptr, true);
    }
}

void attention_sparse(const PagedKV& bank, const AttnParams& p, const SparseQuery* queries, int32_t n_queries) {
    const char* what = "attention_sparse";
    kernels::check_sparse_args(bank, p, queries, n_queries, what);
    const int32_t d = p.head_dim;
    for (int32_t i = 0; i < n_queries; ++i) {
        const SparseQuery& sq = queries[i];
        for (int32_t h = 0; h < p.n_heads; ++h) {
            auto row = [&](int64_t j) { return bank.k_row(sq.rows[j]); };
            attend(bank, 0, sq.q + size_t(h) * d, sq.n_rows, row, row, p.scale, p.sinks ? p.sinks + h : nullptr,
                   sq.out + size_t(h) * d, sq.lse + h);
        }
    }
}

}  // namespace kvrt::ref
