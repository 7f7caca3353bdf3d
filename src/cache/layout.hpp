// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// The cache layout: which layers the cache holds rows for, and how they are
// grouped into managers (one block pool shared by all).
//
// Layer kinds (values match kvrt_layer_kind in include/kvrt/cache.h):
//   Full        every position; separate K and V rows of n_kv_heads x head_dim.
//   Window(W)   like Full, but a query at p only reads [p-W+1, p]; blocks wholly
//               before the window return to the pool (their table entry becomes
//               the null block).
//   BankSource  a global bank with compression ratio r: one row per group
//               g = p / r, a single vector of width n_kv_heads x head_dim used as
//               both K and V (K = V). Requires block_tokens % r == 0.
//   BankReader  reads the bank of `source` (a BankSource layer); owns no rows.
//   IndexerKeys indexer keys of the bank `source`: one row per group of that
//               bank (its ratio), width n_kv_heads x head_dim, K only.
// A model layer with both a private window and a bank uses two layout layers.
//
// Managers: layers of the same kind and shape parameter (W or r) form one
// manager; a manager's block holds block_tokens positions of all its layers,
// each layer's K region (then V region) 64-byte aligned inside the block.
#pragma once

#include "util/dtype.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kvrt::cache {

enum class LayerKind : uint8_t { Full = 0, Window = 1, BankSource = 2, BankReader = 3, IndexerKeys = 4 };
inline constexpr int kNumLayerKinds = 5;
const char* layer_kind_name(LayerKind k);

struct LayerSpec {
    LayerKind kind = LayerKind::Full;
    int32_t n_kv_heads = 0;  // BankSource: usually 1 (the single K = V vector)
    int32_t head_dim = 0;    // BankSource: the entry width D (with n_kv_heads = 1)
    DType dtype = DType::F32;
    int32_t window = 0;  // Window: W > 0
    int32_t ratio = 1;   // BankSource: r > 0 (IndexerKeys inherit their source's)
    int32_t source = -1; // BankReader / IndexerKeys: index of a BankSource layer
    bool shared_kv = false;  // Full / Window: one row serves as both K and V (CED windows)
    // Full / Window with separate K and V: the V rows' type when it differs from K's (`dtype`);
    // unset: V rows are of `dtype`. Quantised types (int8, fp8: util/kv_quant.hpp) only on full
    // and window layers.
    std::optional<DType> v_dtype;
};

struct CacheConfig {
    std::vector<LayerSpec> layers;
    int32_t block_tokens = 16;
    uint64_t budget_bytes = 0;  // the pool never holds more block bytes than this
    bool large_pages = false;   // 2 MiB pages for the arena
};

// Where a layer's rows live inside its manager's block.
struct LayerGeometry {
    LayerKind kind = LayerKind::Full;
    int32_t manager = -1;         // the manager holding the rows (the source's for a BankReader)
    int32_t row_layer = 0;        // the layer that owns the rows (source for a BankReader)
    int32_t ratio = 1;            // positions per row
    int32_t rows_per_block = 0;   // block_tokens / ratio
    size_t row_bytes = 0;         // K rows: n_kv_heads x kv_head_bytes(dtype, head_dim) (scales included)
    size_t k_offset = 0;          // byte offset of the K rows in the block
    size_t v_offset = 0;          // == k_offset when K = V (bank, indexer keys)
    bool separate_v = true;
    int32_t n_kv_heads = 0;
    int32_t head_dim = 0;
    DType dtype = DType::F32;     // K rows (and K = V rows)
    int32_t window = 0;
    DType v_dtype = DType::F32;   // V rows (== dtype unless the spec set v_dtype)
    size_t v_row_bytes = 0;       // V rows (== row_bytes when K = V)
};

struct ManagerSpec {
    LayerKind kind = LayerKind::Full;
    int32_t window = 0;
    int32_t ratio = 1;
    size_t block_bytes = 0;    // exact bytes of one block, padding included
    size_t padding_bytes = 0;  // alignment padding inside one block
    std::vector<int32_t> layers;
};

// Validates the config and derives managers and geometries. Throws
// kvrt::Error (INVALID_ARGUMENT / OVERFLOW / UNSUPPORTED) naming the problem.
struct ResolvedLayout {
    std::vector<LayerSpec> layers;
    std::vector<LayerGeometry> geometry;
    std::vector<ManagerSpec> managers;
    int32_t block_tokens = 0;
};
ResolvedLayout resolve_layout(const CacheConfig& cfg);

// Bytes one position adds to a layer (fractional for banks with ratio > 1), scales included.
double layer_bytes_per_token(const LayerGeometry& g);

// The element types of a layout, in a fixed order (layer by layer: K type, V type): what a
// prefix hash, a tier key or a state file must carry so that rows of another type never match.
std::string layout_dtype_signature(const ResolvedLayout& l);

}  // namespace kvrt::cache
