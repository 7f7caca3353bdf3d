// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Argument checks shared by the ref/ and cpu/ kernels: each throws
// kvrt::Error(KVRT_ERR_INVALID_ARGUMENT) naming the problem, before a kernel
// writes anything.
#pragma once

#include "kernels/attention.hpp"
#include "kernels/indexer.hpp"
#include "kernels/paged_kv.hpp"

#include <cstdint>

namespace kvrt::kernels {

// The PagedKV is self-consistent: blocks array, positive sizes, rows wide enough.
void check_paged_kv(const PagedKV& kv, const char* what);
// Positions [lo, hi] are valid rows (hi < n_tokens) in non-null blocks.
void check_rows_present(const PagedKV& kv, int64_t lo, int64_t hi, const char* what);
// AttnParams agree with kv: head_dim, n_heads a positive multiple of n_kv_heads, finite scale.
void check_attn_params(const PagedKV& kv, const AttnParams& p, const char* what);
// attention_sparse's arguments: check_attn_params, a one-KV-head bank, non-null queries with
// non-null q, out, lse and rows, every selected row present in the bank.
void check_sparse_args(const PagedKV& bank, const AttnParams& p, const SparseQuery* queries, int32_t n_queries,
                       const char* what);

// Indexer arguments (indexer_scores*): one-head keys and a query with q, w and heads.
void check_indexer_query(const PagedKV& keys, const IndexerQuery& q, const char* what);
// indexer_scores: the query, an output for n_visible >= 0 scores, rows [0, n_visible) present.
void check_indexer_scores(const PagedKV& keys, const IndexerQuery& q, int32_t n_visible, const float* scores);
// indexer_scores_rows: the query, non-null rows and output, every listed row present.
void check_indexer_rows(const PagedKV& keys, const IndexerQuery& q, const int32_t* rows, int32_t n_rows,
                        const float* scores);
// indexer_scores_batch: every query, 0 <= n_visible[i] <= stride, rows present and an output
// when any query sees a row. Returns the largest n_visible (0: nothing to score).
int32_t check_indexer_batch(const PagedKV& keys, const IndexerQuery* queries, const int32_t* n_visible,
                            int32_t n_queries, const float* scores, size_t stride);

}  // namespace kvrt::kernels
