// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Reference indexer scoring: double accumulation. 4-bit keys are scored against the query
// quantised per 32 dims as the fast kernels quantise it (query_quant.hpp; indexer_core.inl,
// "Integer tiles"): each group's exact integer dot product of the codes times the query's
// scale and the key's, in double.
#include "kernels/indexer.hpp"
#include "kernels/kv_checks.hpp"
#include "kernels/query_quant.hpp"
#include "kernels/ref/elem.hpp"

#include <cstddef>
#include <vector>

namespace kvrt::ref {

namespace {
// q . k for a 4-bit key k: per group g of 32 dims, the integer dot of the query's int8 codes with
// the key's codes (twice the e2m1 values) times q's scale and half the key's.
double dot_fp4(const float* q, const uint8_t* k, DType dt, int32_t d) {
    std::vector<int8_t> qi(static_cast<size_t>(d));
    std::vector<float> qs(static_cast<size_t>(d / kQueryI8Group));
    quantize_query_i8(q, d, qi.data(), qs.data());
    double dot = 0;
    for (int32_t g = 0; g < d / kQueryI8Group; ++g) {
        int64_t idot = 0;
        for (int32_t c = g * kQueryI8Group; c < (g + 1) * kQueryI8Group; ++c)
            idot += int64_t(qi[size_t(c)]) * kFp4Twice[fp4_code_at(k, c)];
        dot += double(idot) * double(qs[size_t(g)]) * (0.5 * double(kv_scale_at(k, dt, d, g * kQueryI8Group)));
    }
    return dot;
}

float score(const PagedKV& keys, const IndexerQuery& q, int64_t pos) {
    const uint8_t* k = keys.k_row(pos);
    const int32_t d = keys.head_dim;
    double total = 0;
    for (int32_t h = 0; h < q.n_heads; ++h) {
        const float* qh = q.q + size_t(h) * d;
        double dot = 0;
        if (dtype_fp4(keys.dtype)) {
            dot = dot_fp4(qh, k, keys.dtype, d);
        } else {
            for (int32_t c = 0; c < d; ++c) dot += double(qh[c]) * kv_load(k, keys.dtype, d, c);
        }
        total += double(q.w[h]) * (dot > 0 ? dot : 0);
    }
    return float(total);
}
}  // namespace

void indexer_scores(const PagedKV& keys, const IndexerQuery& q, int32_t n_visible, float* scores) {
    kernels::check_indexer_scores(keys, q, n_visible, scores);
    for (int32_t s = 0; s < n_visible; ++s) scores[s] = score(keys, q, s);
}

void indexer_scores_rows(const PagedKV& keys, const IndexerQuery& q, const int32_t* rows, int32_t n_rows,
                         float* scores) {
    kernels::check_indexer_rows(keys, q, rows, n_rows, scores);
    for (int32_t i = 0; i < n_rows; ++i) scores[i] = score(keys, q, rows[i]);
}

void indexer_scores_batch(const PagedKV& keys, const IndexerQuery* queries, const int32_t* n_visible,
                          int32_t n_queries, float* scores, size_t stride) {
    kernels::check_indexer_batch(keys, queries, n_visible, n_queries, scores, stride);
    for (int32_t i = 0; i < n_queries; ++i)
        for (int32_t s = 0; s < n_visible[i]; ++s) scores[size_t(i) * stride + s] = score(keys, queries[i], s);
}

}  // namespace kvrt::ref
