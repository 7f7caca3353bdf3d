#include "kernels/kv_checks.hpp"

#include "util/error.hpp"

#include <cmath>
#include <string>

namespace kvrt::kernels {

namespace {
[[noreturn]] void bad(const char* what, const std::string& msg) {
    fail(KVRT_ERR_INVALID_ARGUMENT, std::string(what) + ": " + msg);
}
}  // namespace

void check_paged_kv(const PagedKV& kv, const char* what) {
    if (kv.n_blocks > 0 && kv.blocks == nullptr) bad(what, "PagedKV.blocks is null");
    if (kv.block_tokens <= 0) bad(what, "PagedKV.block_tokens must be positive");
    if (kv.n_kv_heads <= 0 || kv.head_dim <= 0) bad(what, "PagedKV n_kv_heads and head_dim must be positive");
    if (kv.dtype != DType::F32 && kv.dtype != DType::F16 && kv.dtype != DType::BF16)
        bad(what, "PagedKV.dtype must be f32, f16 or bf16");
    size_t need = static_cast<size_t>(kv.n_kv_heads) * static_cast<size_t>(kv.head_dim) * dtype_size(kv.dtype);
    if (kv.row_bytes < need)
        bad(what, "PagedKV.row_bytes (" + std::to_string(kv.row_bytes) + ") is smaller than a row (" +
                      std::to_string(need) + " bytes)");
    if (kv.n_tokens < 0 || static_cast<int64_t>(kv.n_tokens) > static_cast<int64_t>(kv.n_blocks) * kv.block_tokens)
        bad(what, "PagedKV.n_tokens (" + std::to_string(kv.n_tokens) + ") exceeds n_blocks * block_tokens");
}

void check_rows_present(const PagedKV& kv, int64_t lo, int64_t hi, const char* what) {
    if (lo > hi) return;
    if (lo < 0 || hi >= kv.n_tokens)
        bad(what, "positions [" + std::to_string(lo) + ", " + std::to_string(hi) + "] outside the cached rows [0, " +
                      std::to_string(kv.n_tokens) + ")");
    for (int64_t b = lo / kv.block_tokens; b <= hi / kv.block_tokens; ++b)
        if (kv.blocks[b] == nullptr)
            bad(what, "block " + std::to_string(b) + " holding needed positions is null (dropped)");
}

void check_attn_params(const PagedKV& kv, const AttnParams& p, const char* what) {
    check_paged_kv(kv, what);
    if (p.head_dim != kv.head_dim)
        bad(what, "head_dim " + std::to_string(p.head_dim) + " differs from the cache's " + std::to_string(kv.head_dim));
    if (p.n_heads <= 0 || p.n_heads % kv.n_kv_heads != 0)
        bad(what, "n_heads " + std::to_string(p.n_heads) + " is not a positive multiple of n_kv_heads " +
                      std::to_string(kv.n_kv_heads));
    if (!std::isfinite(p.scale)) bad(what, "scale is not finite");
    if (p.window_floor < 0) bad(what, "window_floor is negative");
}

void check_sparse_args(const PagedKV& bank, const AttnParams& p, const SparseQuery* queries, int32_t n_queries,
                       const char* what) {
    check_attn_params(bank, p, what);
    if (bank.n_kv_heads != 1) bad(what, "the bank must have one KV head");
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

}  // namespace kvrt::kernels
