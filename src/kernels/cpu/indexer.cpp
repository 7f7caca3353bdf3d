// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// cpu:: indexer scoring entry points: argument checks, then the active ISA's kernel.
#include "kernels/indexer.hpp"
#include "kernels/cpu/attention_isa.hpp"
#include "kernels/kv_checks.hpp"

namespace kvrt::cpu {

void indexer_scores(const PagedKV& keys, const IndexerQuery& q, int32_t n_visible, float* scores) {
    kernels::check_indexer_scores(keys, q, n_visible, scores);
    if (n_visible == 0) return;
    attention_impl().indexer(keys, q, nullptr, n_visible, scores);
}

void indexer_scores_rows(const PagedKV& keys, const IndexerQuery& q, const int32_t* rows, int32_t n_rows,
                         float* scores) {
    kernels::check_indexer_rows(keys, q, rows, n_rows, scores);
    if (n_rows == 0) return;
    attention_impl().indexer(keys, q, rows, n_rows, scores);
}

void indexer_scores_batch(const PagedKV& keys, const IndexerQuery* queries, const int32_t* n_visible,
                          int32_t n_queries, float* scores, size_t stride) {
    if (kernels::check_indexer_batch(keys, queries, n_visible, n_queries, scores, stride) == 0) return;
    attention_impl().indexer_batch(keys, queries, n_visible, n_queries, scores, stride);
}

}  // namespace kvrt::cpu
