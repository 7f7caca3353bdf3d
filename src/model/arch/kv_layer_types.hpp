// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// The K and V row types of each layer of a decoder-family model.
//
// A context asks for one K type and one V type. Under a quantised K type (int8, fp8) a
// layer whose K projection carries a bias with outliers keeps its K rows in f16: such a
// bias (Qwen2.5: up to 211 where the median is 0.2-6) puts a few channels of every key
// two orders of magnitude above the rest, the group's scale follows them, and the 1/254
// step of int8 then moves attention scores of 150-570 by several units, enough to flip
// whole attention rows (docs/kv_quantisation.md). V rows keep the asked type on every
// layer (V tolerates int8 everywhere). The choice depends only on the model's weights and
// the asked types, so a cache, a saved sequence and a tier block of the same model and
// types always agree on it; the cache reports each layer's types (kvrt_cache_layer_info).
#pragma once

#include "util/dtype.hpp"

#include <cstdint>
#include <optional>
#include <vector>

namespace kvrt {

class Model;

struct KvLayerTypes {
    std::vector<DType> k, v;  // one per layer
};

// k: the asked K type; v: the asked V type (unset: k). protect = false: the asked types on
// every layer (for measuring what the protection buys).
KvLayerTypes kv_layer_types(const Model& model, DType k, std::optional<DType> v = std::nullopt, bool protect = true);

// Whether a K bias has outliers: its largest magnitude is 16 or more and at least 8 times
// its median magnitude (Qwen2.5-Coder-0.5B: layers 0-4 and 8 of 24, largest 22-211 where the
// median is 0.5-6; the other layers' largest is 2.8-9.6). Empty: no.
bool k_bias_has_outliers(const std::vector<float>& bk);

}  // namespace kvrt
