// Top-k row selection and the block-max candidate selection (CED.md "Sparse selection").
#include "kernels/indexer.hpp"
#include "util/error.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace kvrt {

namespace {
// Strict "ranks before": higher score first, NaN last, ties by smaller id.
inline bool better(float sa, int32_t ia, float sb, int32_t ib) {
    const bool na = std::isnan(sa), nb = std::isnan(sb);
    if (na != nb) return nb;
    if (!na && sa != sb) return sa > sb;
    return ia < ib;
}
}  // namespace

int32_t topk_rows(const float* scores, const int32_t* ids, int32_t n, int32_t k, int32_t* out_ids) {
    KVRT_CHECK(n >= 0 && k >= 0, KVRT_ERR_INVALID_ARGUMENT, "topk_rows: negative n or k");
    if (n == 0 || k == 0) return 0;
    KVRT_CHECK(scores && out_ids, KVRT_ERR_INVALID_ARGUMENT, "topk_rows: null scores or out_ids");
    auto id = [&](int32_t i) { return ids ? ids[i] : i; };
    if (n <= k) {
        for (int32_t i = 0; i < n; ++i) out_ids[i] = id(i);
        std::sort(out_ids, out_ids + n);
        return n;
    }
    std::vector<int32_t> idx(static_cast<size_t>(n));
    for (int32_t i = 0; i < n; ++i) idx[i] = i;
    auto cmp = [&](int32_t a, int32_t b) { return better(scores[a], id(a), scores[b], id(b)); };
    std::nth_element(idx.begin(), idx.begin() + (k - 1), idx.end(), cmp);
    for (int32_t i = 0; i < k; ++i) out_ids[i] = id(idx[i]);
    std::sort(out_ids, out_ids + k);
    return k;
}

int32_t block_max_candidates(const float* scores, int32_t n_visible, int32_t block, int32_t max_blocks,
                             int32_t* out_blocks) {
    KVRT_CHECK(n_visible >= 0 && block > 0 && max_blocks >= 1, KVRT_ERR_INVALID_ARGUMENT,
               "block_max_candidates: bad n_visible, block or max_blocks");
    if (n_visible == 0) return 0;
    KVRT_CHECK(scores && out_blocks, KVRT_ERR_INVALID_ARGUMENT, "block_max_candidates: null pointer");
    const int32_t n_blocks = (n_visible + block - 1) / block;
    const int32_t newest = n_blocks - 1;
    if (n_blocks <= max_blocks) {
        for (int32_t b = 0; b < n_blocks; ++b) out_blocks[b] = b;
        return n_blocks;
    }
    // Block maxima over the older blocks; the newest block is always kept.
    std::vector<float> bmax(static_cast<size_t>(newest));
    for (int32_t b = 0; b < newest; ++b) {
        float m = -std::numeric_limits<float>::infinity();
        bool any_nan = false;
        for (int32_t i = b * block; i < (b + 1) * block; ++i) {
            if (std::isnan(scores[i])) any_nan = true;
            else m = std::max(m, scores[i]);
        }
        bmax[b] = (any_nan && std::isinf(m)) ? std::numeric_limits<float>::quiet_NaN() : m;
    }
    int32_t got = topk_rows(bmax.data(), nullptr, newest, max_blocks - 1, out_blocks);
    out_blocks[got++] = newest;  // ascending: newest is the largest id
    return got;
}

int32_t expand_blocks(const int32_t* blocks, int32_t n_blocks, int32_t block, int32_t n_visible, int32_t* out_rows) {
    KVRT_CHECK(n_blocks >= 0 && block > 0 && n_visible >= 0, KVRT_ERR_INVALID_ARGUMENT, "expand_blocks: bad sizes");
    if (n_blocks == 0) return 0;
    KVRT_CHECK(blocks && out_rows, KVRT_ERR_INVALID_ARGUMENT, "expand_blocks: null pointer");
    int32_t n = 0;
    for (int32_t i = 0; i < n_blocks; ++i) {
        KVRT_CHECK(blocks[i] >= 0, KVRT_ERR_INVALID_ARGUMENT, "expand_blocks: negative block id");
        int64_t a = int64_t(blocks[i]) * block, b = std::min<int64_t>(a + block, n_visible);
        for (int64_t p = a; p < b; ++p) out_rows[n++] = static_cast<int32_t>(p);
    }
    return n;
}

}  // namespace kvrt
