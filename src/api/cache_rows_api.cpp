// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// kvrt_cache_write_rows_v2 / kvrt_cache_read_rows_v2: the row copies of
// kvrt/cache.h with (buffer, size) pairs. The sizes are checked against the
// layer's geometry before the cache is touched; the copy itself is
// Cache::write_rows / read_rows, as for the deprecated unsized calls.
#include "api/boundary.hpp"
#include "api/cache_handles.hpp"
#include "cache/cache.hpp"
#include "kvrt/cache.h"

#include <cstdint>
#include <limits>
#include <string>

using kvrt::Error;
using kvrt::api::cache_from_handle;
using kvrt::api::guard;

namespace {

void check_rows(int64_t first_row, int64_t n_rows) {
    if (first_row < 0 || n_rows < 0)
        throw Error(KVRT_ERR_OUT_OF_RANGE, "rows [" + std::to_string(first_row) + ", +" + std::to_string(n_rows) +
                                               ") are negative");
    if (n_rows > std::numeric_limits<int64_t>::max() - first_row)
        throw Error(KVRT_ERR_OUT_OF_RANGE, "rows [" + std::to_string(first_row) + ", +" + std::to_string(n_rows) +
                                               ") end past INT64_MAX");
}

// Bytes of n_rows rows of row_bytes each, saturated at SIZE_MAX (more than any buffer).
size_t rows_bytes(int64_t n_rows, uint64_t row_bytes) {
    const uint64_t n = static_cast<uint64_t>(n_rows);
    if (row_bytes != 0 && n > std::numeric_limits<size_t>::max() / row_bytes) return std::numeric_limits<size_t>::max();
    return static_cast<size_t>(n * row_bytes);
}

std::string bytes_text(size_t b) {
    return b == std::numeric_limits<size_t>::max() ? std::string("more than SIZE_MAX") : std::to_string(b);
}

}  // namespace

KVRT_API kvrt_status kvrt_cache_write_rows_v2(kvrt_cache* cache, uint64_t seq, int32_t layer, int64_t first_row,
                                              int64_t n_rows, const void* k, size_t k_bytes, const void* v,
                                              size_t v_bytes) {
    return guard("kvrt_cache_write_rows_v2", [&] {
        auto c = cache_from_handle(cache);
        if (k == nullptr) throw Error(KVRT_ERR_INVALID_ARGUMENT, "k is NULL");
        if (v == nullptr && v_bytes > 0)
            throw Error(KVRT_ERR_INVALID_ARGUMENT, "v is NULL with v_bytes = " + std::to_string(v_bytes));
        const kvrt::cache::LayerGeometry& g = c->geometry(layer);  // OUT_OF_RANGE for a bad layer
        check_rows(first_row, n_rows);
        const size_t need_k = rows_bytes(n_rows, g.row_bytes);
        if (k_bytes < need_k)
            throw Error(KVRT_ERR_INVALID_ARGUMENT, "k holds " + std::to_string(k_bytes) + " bytes; " +
                                                       std::to_string(n_rows) + " rows of layer " + std::to_string(layer) +
                                                       " need " + bytes_text(need_k));
        if (v != nullptr && g.separate_v) {
            const size_t need_v = rows_bytes(n_rows, g.v_row_bytes);
            if (v_bytes < need_v)
                throw Error(KVRT_ERR_INVALID_ARGUMENT, "v holds " + std::to_string(v_bytes) + " bytes; " +
                                                           std::to_string(n_rows) + " rows of layer " +
                                                           std::to_string(layer) + " need " + bytes_text(need_v));
        }
        c->write_rows(seq, layer, first_row, n_rows, k, v);  // v present/absent vs the layer, seq, rows
    });
}

KVRT_API kvrt_status kvrt_cache_read_rows_v2(void* k_dst, size_t k_capacity, void* v_dst, size_t v_capacity,
                                             const kvrt_cache* cache, uint64_t seq, int32_t layer,
                                             int64_t first_row, int64_t n_rows) {
    return guard("kvrt_cache_read_rows_v2", [&] {
        auto c = cache_from_handle(cache);
        if (k_dst == nullptr) throw Error(KVRT_ERR_INVALID_ARGUMENT, "k_dst is NULL");
        if (v_dst == nullptr && v_capacity > 0)
            throw Error(KVRT_ERR_INVALID_ARGUMENT, "v_dst is NULL with v_capacity = " + std::to_string(v_capacity));
        const kvrt::cache::LayerGeometry& g = c->geometry(layer);
        check_rows(first_row, n_rows);
        if (v_dst != nullptr && !g.separate_v)
            throw Error(KVRT_ERR_INVALID_ARGUMENT,
                        "v_dst must be NULL: layer " + std::to_string(layer) + " stores one row as both K and V");
        const size_t need_k = rows_bytes(n_rows, g.row_bytes);
        if (k_capacity < need_k)
            throw Error(KVRT_ERR_BUFFER_TOO_SMALL, "k_capacity is " + std::to_string(k_capacity) + " bytes; " +
                                                       std::to_string(n_rows) + " rows of layer " +
                                                       std::to_string(layer) + " need " + bytes_text(need_k));
        if (v_dst != nullptr) {
            const size_t need_v = rows_bytes(n_rows, g.v_row_bytes);
            if (v_capacity < need_v)
                throw Error(KVRT_ERR_BUFFER_TOO_SMALL, "v_capacity is " + std::to_string(v_capacity) + " bytes; " +
                                                           std::to_string(n_rows) + " rows of layer " +
                                                           std::to_string(layer) + " need " + bytes_text(need_v));
        }
        c->read_rows(seq, layer, first_row, n_rows, k_dst, v_dst);  // checks seq and rows before copying
    });
}
