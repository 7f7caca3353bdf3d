// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

#include "model/arch/kv_layer_types.hpp"

#include "model/model.hpp"
#include "util/kv_quant.hpp"

#include <algorithm>
#include <cmath>

namespace kvrt {

namespace {
// A K row's channels are RMS-normalised inputs times weights, of magnitude well under 10
// without a bias (the models kvrt runs); a bias channel of 16 or more dominates its group's
// int8 scale.
constexpr float kKBiasOutlier = 16.0f;
}  // namespace

bool k_bias_has_outliers(const std::vector<float>& bk) {
    if (bk.empty()) return false;
    std::vector<float> mag(bk.size());
    for (size_t i = 0; i < bk.size(); ++i) {
        if (!std::isfinite(bk[i])) return true;  // never hand such a layer to a quantiser
        mag[i] = std::fabs(bk[i]);
    }
    const auto mid = mag.begin() + static_cast<std::ptrdiff_t>(mag.size() / 2);
    std::nth_element(mag.begin(), mid, mag.end());
    const float median = *mid;
    const float largest = *std::max_element(mag.begin(), mag.end());
    return largest >= kKBiasOutlier && largest >= 8.0f * median;
}

KvLayerTypes kv_layer_types(const Model& model, DType k, std::optional<DType> v, bool protect) {
    const uint32_t n = model.config().n_layers;
    KvLayerTypes t;
    t.k.assign(n, k);
    t.v.assign(n, v.value_or(k));
    if (protect && dtype_quantized(k) && !model.is_ced())
        for (uint32_t l = 0; l < n; ++l)
            if (k_bias_has_outliers(model.layer(l).bk)) t.k[l] = DType::F16;
    return t;
}

}  // namespace kvrt
