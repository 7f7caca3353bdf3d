// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

#include "api/decode_traffic.hpp"

#include "api/model_handles.hpp"
#include "cache/cache.hpp"
#include "util/error.hpp"

#include <algorithm>

namespace kvrt::api {

DecodeTraffic decode_traffic(const kvrt_context* ctx, int64_t n_keys) {
    if (n_keys < 1) throw Error(KVRT_ERR_INVALID_ARGUMENT, "decode_traffic: n_keys must be >= 1");
    auto c = context_of(ctx);
    DecodeTraffic t;
    t.weight_bytes = c->model().decode_weight_bytes();
    if (c->model().is_ced()) return t;
    const cache::Cache& kv = *c->cache();
    for (int32_t l = 0; l < kv.n_layers(); ++l) {
        const cache::LayerGeometry& g = kv.geometry(l);
        const int64_t rows = g.kind == cache::LayerKind::Window ? std::min<int64_t>(n_keys, g.window) : n_keys;
        t.kv_bytes += static_cast<uint64_t>(rows) * (g.row_bytes + (g.separate_v ? g.v_row_bytes : 0));
    }
    t.kv_known = true;
    return t;
}

}  // namespace kvrt::api
