// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Sparse selection for CED models (see /work/shared/docs/CED.md): indexer
// scoring, top-k, and the decoder's block-max candidate selection.
//
// ref:: naive, double accumulation; cpu:: OpenMP + AVX-512/AVX2/portable. The
// score of one key depends only on that key and the query (per-key reduction
// order fixed), so selections do not depend on chunking or thread count.
// Bad arguments throw kvrt::Error(KVRT_ERR_INVALID_ARGUMENT).
#pragma once

#include "kernels/paged_kv.hpp"

#include <cstdint>

namespace kvrt {

// Indexer query of one token: n_heads heads of width keys.head_dim and per-head weights.
struct IndexerQuery {
    const float* q = nullptr;  // [n_heads][head_dim]
    const float* w = nullptr;  // [n_heads]
    int32_t n_heads = 0;
};

namespace ref {
// scores[s] = sum_h w_h * ReLU(q_h . k_s) for positions s in [0, n_visible) of `keys`
// (keys.n_kv_heads == 1, n_visible <= keys.n_tokens).
void indexer_scores(const PagedKV& keys, const IndexerQuery& q, int32_t n_visible, float* scores);
// Same for an explicit list of positions: scores[i] scores rows[i].
void indexer_scores_rows(const PagedKV& keys, const IndexerQuery& q, const int32_t* rows, int32_t n_rows,
                         float* scores);
// A batch of queries against the same keys (a prefill chunk): query i scores positions
// [0, n_visible[i]) into scores + i * stride (stride >= every n_visible[i]; the rest of
// each output row is left untouched).
void indexer_scores_batch(const PagedKV& keys, const IndexerQuery* queries, const int32_t* n_visible,
                          int32_t n_queries, float* scores, size_t stride);
}  // namespace ref

namespace cpu {
void indexer_scores(const PagedKV& keys, const IndexerQuery& q, int32_t n_visible, float* scores);
void indexer_scores_rows(const PagedKV& keys, const IndexerQuery& q, const int32_t* rows, int32_t n_rows,
                         float* scores);
// The batch builds each tile of keys once for all queries (register blocks of
// (query, head) rows); every score is bit-identical to cpu::indexer_scores of
// that query alone. Threads: over key tiles.
void indexer_scores_batch(const PagedKV& keys, const IndexerQuery* queries, const int32_t* n_visible,
                          int32_t n_queries, float* scores, size_t stride);
}  // namespace cpu

// Top-k of scores[0, n): writes the ids of the k best entries to out_ids in ASCENDING id order
// and returns how many were written (min(k, n); all of them when n <= k). ids == nullptr means
// ids are 0..n-1, else entry i has id ids[i]. Ties in score are broken by the smaller id; NaN
// scores rank last. Deterministic. k >= 0.
int32_t topk_rows(const float* scores, const int32_t* ids, int32_t n, int32_t k, int32_t* out_ids);

// Block-max candidate selection of the hierarchical decoder indexer: block b covers positions
// [b * block, (b + 1) * block) of scores[0, n_visible); its score is the max over its visible
// positions. Keeps the max_blocks best blocks, always including the block holding position
// n_visible - 1 (the newest), and writes their ids ascending to out_blocks (capacity max_blocks).
// Returns the count (all blocks when there are no more than max_blocks). max_blocks >= 1.
int32_t block_max_candidates(const float* scores, int32_t n_visible, int32_t block, int32_t max_blocks,
                             int32_t* out_blocks);

// Expands block ids into their positions below n_visible, ascending; returns the count.
// out_rows needs capacity n_blocks * block.
int32_t expand_blocks(const int32_t* blocks, int32_t n_blocks, int32_t block, int32_t n_visible,
                      int32_t* out_rows);

}  // namespace kvrt
