// Reference indexer scoring: double accumulation.
#include "kernels/indexer.hpp"
#include "kernels/kv_checks.hpp"
#include "kernels/ref/elem.hpp"
#include "util/error.hpp"

#include <algorithm>
#include <string>

namespace kvrt::ref {

namespace {
void check(const PagedKV& keys, const IndexerQuery& q, const char* what) {
    kernels::check_paged_kv(keys, what);
    KVRT_CHECK(keys.n_kv_heads == 1, KVRT_ERR_INVALID_ARGUMENT, std::string(what) + ": indexer keys need one head");
    KVRT_CHECK(q.q && q.w && q.n_heads > 0, KVRT_ERR_INVALID_ARGUMENT, std::string(what) + ": bad indexer query");
}
float score(const PagedKV& keys, const IndexerQuery& q, int64_t pos) {
    const uint8_t* k = keys.k_row(pos);
    double total = 0;
    for (int32_t h = 0; h < q.n_heads; ++h) {
        double dot = 0;
        for (int32_t c = 0; c < keys.head_dim; ++c)
            dot += double(q.q[size_t(h) * keys.head_dim + c]) * load_elem(k, keys.dtype, c);
        total += double(q.w[h]) * (dot > 0 ? dot : 0);
    }
    return float(total);
}
}  // namespace

void indexer_scores(const PagedKV& keys, const IndexerQuery& q, int32_t n_visible, float* scores) {
    check(keys, q, "indexer_scores");
    KVRT_CHECK(n_visible >= 0 && (n_visible == 0 || scores), KVRT_ERR_INVALID_ARGUMENT, "indexer_scores: bad output");
    kernels::check_rows_present(keys, 0, int64_t(n_visible) - 1, "indexer_scores");
    for (int32_t s = 0; s < n_visible; ++s) scores[s] = score(keys, q, s);
}

void indexer_scores_rows(const PagedKV& keys, const IndexerQuery& q, const int32_t* rows, int32_t n_rows,
                         float* scores) {
    check(keys, q, "indexer_scores_rows");
    KVRT_CHECK(n_rows >= 0 && (n_rows == 0 || (rows && scores)), KVRT_ERR_INVALID_ARGUMENT,
               "indexer_scores_rows: bad rows or output");
    for (int32_t i = 0; i < n_rows; ++i) kernels::check_rows_present(keys, rows[i], rows[i], "indexer_scores_rows");
    for (int32_t i = 0; i < n_rows; ++i) scores[i] = score(keys, q, rows[i]);
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
    for (int32_t i = 0; i < n_queries; ++i)
        for (int32_t s = 0; s < n_visible[i]; ++s) scores[size_t(i) * stride + s] = score(keys, queries[i], s);
}

}  // namespace kvrt::ref
