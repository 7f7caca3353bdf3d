// Argument checks shared by the ref/ and cpu/ kernels: each throws
// kvrt::Error(KVRT_ERR_INVALID_ARGUMENT) naming the problem, before a kernel
// writes anything.
#pragma once

#include "kernels/attention.hpp"
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

}  // namespace kvrt::kernels
