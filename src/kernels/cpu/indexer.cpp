// cpu:: indexer scoring entry points: argument checks, then the active ISA's kernel.
#include "kernels/indexer.hpp"
#include "kernels/cpu/attention_isa.hpp"
#include "kernels/kv_checks.hpp"
#include "util/error.hpp"

#include <algorithm>
#include <string>

#include <string>

namespace kvrt::cpu {

namespace {
void check(const PagedKV& keys, const IndexerQuery& q, const char* what) {
    kernels::check_paged_kv(keys, what);
    KVRT_CHECK(keys.n_kv_heads == 1, KVRT_ERR_INVALID_ARGUMENT, std::string(what) + ": indexer keys need one head");
    KVRT_CHECK(q.q && q.w && q.n_heads > 0, KVRT_ERR_INVALID_ARGUMENT, std::string(what) + ": bad indexer query");
}
}  // namespace

void indexer_scores(const PagedKV& keys, const IndexerQuery& q, int32_t n_visible, float* scores) {
    check(keys, q, "indexer_scores");
    KVRT_CHECK(n_visible >= 0 && (n_visible == 0 || scores), KVRT_ERR_INVALID_ARGUMENT, "indexer_scores: bad output");
    kernels::check_rows_present(keys, 0, int64_t(n_visible) - 1, "indexer_scores");
    if (n_visible == 0) return;
    attention_impl().indexer(keys, q, nullptr, n_visible, scores);
}

void indexer_scores_rows(const PagedKV& keys, const IndexerQuery& q, const int32_t* rows, int32_t n_rows,
                         float* scores) {
    check(keys, q, "indexer_scores_rows");
    KVRT_CHECK(n_rows >= 0 && (n_rows == 0 || (rows && scores)), KVRT_ERR_INVALID_ARGUMENT,
               "indexer_scores_rows: bad rows or output");
    for (int32_t i = 0; i < n_rows; ++i)
        KVRT_CHECK(rows[i] >= 0 && rows[i] < keys.n_tokens && keys.blocks[rows[i] / keys.block_tokens],
                   KVRT_ERR_INVALID_ARGUMENT, "indexer_scores_rows: row " + std::to_string(rows[i]) + " not present");
    if (n_rows == 0) return;
    attention_impl().indexer(keys, q, rows, n_rows, scores);
}

void indexer_scores_batch(const PagedKV& keys, const IndexerQuery* queries, const int32_t* n_visible,
                          int32_t n_queries, float* scores, size_t stride) {
    const char* what = "indexer_scores_batch";
    KVRT_CHECK(n_queries >= 0 && (n_queries == 0 || (queries && n_visible)), KVRT_ERR_INVALID_ARGUMENT,
               "indexer_scores_batch: null queries or n_visible");
    int32_t n_max = 0;
    for (int32_t i = 0; i < n_queries; ++i) {
        check(keys, queries[i], what);
        KVRT_CHECK(n_visible[i] >= 0 && size_t(n_visible[i]) <= stride, KVRT_ERR_INVALID_ARGUMENT,
                   "indexer_scores_batch: query " + std::to_string(i) + " sees " + std::to_string(n_visible[i]) +
                       " keys, outside [0, stride " + std::to_string(stride) + "]");
        n_max = std::max(n_max, n_visible[i]);
    }
    if (n_max == 0) return;
    KVRT_CHECK(scores != nullptr, KVRT_ERR_INVALID_ARGUMENT, "indexer_scores_batch: null scores");
    kernels::check_rows_present(keys, 0, int64_t(n_max) - 1, what);
    attention_impl().indexer_batch(keys, queries, n_visible, n_queries, scores, stride);
}

}  // namespace kvrt::cpu
