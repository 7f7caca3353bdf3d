// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

#include "kernels/kv_checks.hpp"

#include "util/error.hpp"
#include "util/kv_quant.hpp"

#include <cmath>
#include <string>

namespace kvrt::kernels {

namespace {
[[noreturn]] void bad(const char* what, const std::string& msg) {
    fail(KVRT_ERR_INVALID_ARGUMENT, std::string(what) + ": " + msg);
}
}  // namespace

namespace {
// fp4_ok: the 4-bit types (bank rows and indexer keys) are read by the sparse attention and
// the indexer only.
void paged_kv_ok(const PagedKV& kv, const char* what, bool fp4_ok) {
    if (kv.n_blocks > 0 && kv.blocks == nullptr) bad(what, "PagedKV.blocks is null");
    if (kv.block_tokens <= 0) bad(what, "PagedKV.block_tokens must be positive");
    if (kv.n_kv_heads <= 0 || kv.head_dim <= 0) bad(what, "PagedKV n_kv_heads and head_dim must be positive");
    for (DType t : {kv.dtype, kv.vdt()}) {
        const bool fp4 = dtype_fp4(t);
        if (fp4 && !fp4_ok)
            bad(what, std::string("PagedKV.dtype ") + dtype_name(t) +
                          " (4-bit) is read by the sparse attention and the indexer only");
        if (!fp4 && static_cast<int>(t) > static_cast<int>(DType::FP8_E4M3))
            bad(what, "PagedKV.dtype must be f32, f16, bf16, int8, fp8 (or 4-bit for banks and indexer keys)");
        if (!kv_head_dim_ok(t, kv.head_dim))
            bad(what, "head_dim " + std::to_string(kv.head_dim) + " is not a multiple of " + dtype_name(t) +
                          "'s scale group");
    }
    const size_t need = static_cast<size_t>(kv.n_kv_heads) * kv_head_bytes(kv.dtype, kv.head_dim);
    const size_t vneed = static_cast<size_t>(kv.n_kv_heads) * kv_head_bytes(kv.vdt(), kv.head_dim);
    if (kv.row_bytes < need || kv.vrb() < vneed)
        bad(what, "PagedKV.row_bytes (" + std::to_string(kv.row_bytes) + ", V " + std::to_string(kv.vrb()) +
                      ") is smaller than a row (" + std::to_string(need) + ", V " + std::to_string(vneed) + " bytes)");
    if (kv.n_tokens < 0 || static_cast<int64_t>(kv.n_tokens) > static_cast<int64_t>(kv.n_blocks) * kv.block_tokens)
        bad(what, "PagedKV.n_tokens (" + std::to_string(kv.n_tokens) + ") exceeds n_blocks * block_tokens");
}

}  // namespace

void check_paged_kv(const PagedKV& kv, const char* what) { paged_kv_ok(kv, what, false); }

void check_rows_present(const PagedKV& kv, int64_t lo, int64_t hi, const char* what) {
    if (lo > hi) return;
    if (lo < 0 || hi >= kv.n_tokens)
        bad(what, "positions [" + std::to_string(lo) + ", " + std::to_string(hi) + "] outside the cached rows [0, " +
                      std::to_string(kv.n_tokens) + ")");
    for (int64_t b = lo / kv.block_tokens; b <= hi / kv.block_tokens; ++b)
        if (kv.blocks[b] == nullptr)
            bad(what, "block " + std::to_string(b) + " holding needed positions is null (dropped)");
}

namespace {
void attn_params_ok(const PagedKV& kv, const AttnParams& p, const char* what, bool fp4_ok) {
    paged_kv_ok(kv, what, fp4_ok);
    if (p.head_dim != kv.head_dim)
        bad(what, "head_dim " + std::to_string(p.head_dim) + " differs from the cache's " + std::to_string(kv.head_dim));
    if (p.n_heads <= 0 || p.n_heads % kv.n_kv_heads != 0)
        bad(what, "n_heads " + std::to_string(p.n_heads) + " is not a positive multiple of n_kv_heads " +
                      std::to_string(kv.n_kv_heads));
    if (!std::isfinite(p.scale)) bad(what, "scale is not finite");
    if (p.window_floor < 0) bad(what, "window_floor is negative");
}
}  // namespace

void check_attn_params(const PagedKV& kv, const AttnParams& p, const char* what) { attn_params_ok(kv, p, what, false); }

void check_sparse_args(const PagedKV& bank, const AttnParams& p, const SparseQuery* queries, int32_t n_queries,
                       const char* what) {
    attn_params_ok(bank, p, what, true);
    if (bank.n_kv_heads != 1) bad(what, "the bank must have one KV head");
    if (dtype_fp4(bank.dtype) && bank.vdt() != bank.dtype) bad(what, "a 4-bit bank holds one row as K and V");
    if (n_queries < 0 || (n_queries > 0 && !queries)) bad(what, "null queries");
    for (int32_t i = 0; i < n_queries; ++i) {
        const SparseQuery& sq = queries[i];
        if (!sq.q || !sq.out || !sq.lse || sq.n_rows < 0 || (sq.n_rows > 0 && !sq.rows))
            bad(what, "query " + std::to_string(i) + ": null q, out, lse or rows");
        for (int32_t j = 0; j < sq.n_rows; ++j) {
            const int32_t r = sq.rows[j];
            if (r < 0 || r >= bank.n_tokens || !bank.blocks[r / bank.block_tokens])
                bad(what, "selected row " + std::to_string(r) + " is not in the bank");
        }
    }
}

void check_indexer_query(const PagedKV& keys, const IndexerQuery& q, const char* what) {
    paged_kv_ok(keys, what, true);
    if (keys.n_kv_heads != 1) bad(what, "indexer keys need one head");
    if (!q.q || !q.w || q.n_heads <= 0) bad(what, "bad indexer query");
}

void check_indexer_scores(const PagedKV& keys, const IndexerQuery& q, int32_t n_visible, const float* scores) {
    const char* what = "indexer_scores";
    check_indexer_query(keys, q, what);
    if (n_visible < 0 || (n_visible > 0 && !scores)) bad(what, "bad output");
    check_rows_present(keys, 0, int64_t(n_visible) - 1, what);
}

void check_indexer_rows(const PagedKV& keys, const IndexerQuery& q, const int32_t* rows, int32_t n_rows,
                        const float* scores) {
    const char* what = "indexer_scores_rows";
    check_indexer_query(keys, q, what);
    if (n_rows < 0 || (n_rows > 0 && (!rows || !scores))) bad(what, "bad rows or output");
    for (int32_t i = 0; i < n_rows; ++i) check_rows_present(keys, rows[i], rows[i], what);
}

int32_t check_indexer_batch(const PagedKV& keys, const IndexerQuery* queries, const int32_t* n_visible,
                            int32_t n_queries, const float* scores, size_t stride) {
    const char* what = "indexer_scores_batch";
    if (n_queries < 0 || (n_queries > 0 && (!queries || !n_visible))) bad(what, "null queries or n_visible");
    int32_t n_max = 0;
    for (int32_t i = 0; i < n_queries; ++i) {
        check_indexer_query(keys, queries[i], what);
        if (n_visible[i] < 0 || size_t(n_visible[i]) > stride)
            bad(what, "query " + std::to_string(i) + " sees " + std::to_string(n_visible[i]) +
                          " keys, outside [0, stride " + std::to_string(stride) + "]");
        n_max = n_visible[i] > n_max ? n_visible[i] : n_max;
    }
    if (n_max == 0) return 0;
    if (!scores) bad(what, "null scores");
    check_rows_present(keys, 0, int64_t(n_max) - 1, what);
    return n_max;
}

}  // namespace kvrt::kernels
