// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

#include "cache/quant_scale_check.hpp"

#include "util/error.hpp"
#include "util/kv_quant.hpp"

#include <cmath>
#include <cstring>

namespace kvrt::cache {

namespace {
void check_rows(const LayerGeometry& g, DType t, const uint8_t* region, int32_t layer, const char* kv,
                const std::string& what) {
    if (!dtype_quantized(t)) return;
    const size_t hb = kv_head_bytes(t, g.head_dim);
    const size_t rb = size_t(g.n_kv_heads) * hb;
    const int32_t ng = g.head_dim / kv_scale_group(t, g.head_dim);
    for (int32_t r = 0; r < g.rows_per_block; ++r)
        for (int32_t h = 0; h < g.n_kv_heads; ++h) {
            const uint8_t* sc = region + size_t(r) * rb + size_t(h) * hb + kv_elem_bytes(t, g.head_dim);
            for (int32_t i = 0; i < ng; ++i) {
                const char* bad = nullptr;
                if (t == DType::FP4_E8) {  // e8m0: 0xff is NaN (every other byte a power of two)
                    if (sc[i] == 0xffu) bad = "NaN";
                } else {
                    uint16_t s;
                    std::memcpy(&s, sc + 2 * i, 2);
                    if ((s & 0x7c00u) == 0x7c00u) bad = (s & 0x3ffu) ? "NaN" : "infinite";  // f16 exponent all ones
                }
                if (bad)
                    fail(KVRT_ERR_BAD_FORMAT, what + ": layer " + std::to_string(layer) + " " + kv + " row " +
                                                  std::to_string(r) + " of a block has a " + bad + " " +
                                                  dtype_name(t) + " scale; the rows are refused");
            }
        }
}
}  // namespace

void check_quant_scales(const ResolvedLayout& layout, int32_t manager, const uint8_t* block, const std::string& what) {
    for (int32_t i = 0; i < static_cast<int32_t>(layout.geometry.size()); ++i) {
        const LayerGeometry& g = layout.geometry[i];
        if (g.manager != manager || g.kind == LayerKind::BankReader) continue;
        check_rows(g, g.dtype, block + g.k_offset, i, "K", what);
        if (g.separate_v) check_rows(g, g.v_dtype, block + g.v_offset, i, "V", what);
    }
}

}  // namespace kvrt::cache
