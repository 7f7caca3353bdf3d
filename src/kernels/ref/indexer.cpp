// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Reference indexer scoring: double accumulation.
#include "kernels/indexer.hpp"
#include "kernels/kv_checks.hpp"
#include "kernels/ref/elem.hpp"

#include <cstddef>

namespace kvrt::ref {

namespace {
float score(const PagedKV& keys, const IndexerQuery& q, int64_t pos) {
    const uint8_t* k = keys.k_row(pos);
    double total = 0;
    for (int32_t h = 0; h < q.n_heads; ++h) {
        double dot = 0;
        for (int32_t c = 0; c < keys.head_dim; ++c)
            dot += double(q.q[size_t(h) * keys.head_dim + c]) * kv_load(k, keys.dtype, keys.head_dim, c);
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
