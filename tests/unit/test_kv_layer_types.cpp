// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Per-layer K types (model/arch/kv_layer_types.hpp): under a quantised K type, the layers
// whose K bias has outliers keep their K rows in f16; the cache a context makes holds exactly
// those types, reports them, and accounts their bytes.
#include "cache/cache.hpp"
#include "cache/layout.hpp"
#include "model/arch/kv_layer_types.hpp"
#include "runtime/context.hpp"
#include "test_models.hpp"
#include "util/kv_quant.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

using namespace kvrt;

TEST_CASE("kv_layer_types: the outlier rule (largest |b| >= 16 and >= 8 x the median |b|)") {
    CHECK_FALSE(k_bias_has_outliers({}));
    std::vector<float> b(128, 0.5f);
    CHECK_FALSE(k_bias_has_outliers(b));  // flat
    b[7] = -20.0f;
    CHECK(k_bias_has_outliers(b));  // one channel of 20 among 0.5: 40 x the median
    b[7] = 10.0f;
    CHECK_FALSE(k_bias_has_outliers(b));  // 20 x the median but small: int8's step stays fine
    std::vector<float> big(128, 30.0f);
    big[3] = 200.0f;
    CHECK_FALSE(k_bias_has_outliers(big));  // large everywhere: 6.7 x the median
    big[3] = 300.0f;
    CHECK(k_bias_has_outliers(big));
    b[7] = std::numeric_limits<float>::quiet_NaN();
    CHECK(k_bias_has_outliers(b));  // not finite: never trust a quantiser with it
}

TEST_CASE("kv_layer_types: Qwen2.5 keeps K in f16 on layers 0-4 and 8 under int8 and fp8, nothing else changes") {
    if (!test::real_model_available("qwen2")) return;
    const Model& m = *test::real_model("qwen2");
    const uint32_t n = m.config().n_layers;
    const std::vector<uint32_t> outliers = {0, 1, 2, 3, 4, 8};
    for (DType q : {DType::I8, DType::FP8_E4M3}) {
        const KvLayerTypes t = kv_layer_types(m, q);
        REQUIRE(t.k.size() == n);
        REQUIRE(t.v.size() == n);
        for (uint32_t l = 0; l < n; ++l) {
            const bool out = std::find(outliers.begin(), outliers.end(), l) != outliers.end();
            CHECK_MESSAGE(t.k[l] == (out ? DType::F16 : q), "layer " << l);
            CHECK(t.v[l] == q);  // V keeps the asked type everywhere
        }
        const KvLayerTypes off = kv_layer_types(m, q, std::nullopt, /*protect=*/false);
        for (uint32_t l = 0; l < n; ++l) CHECK(off.k[l] == q);
    }
    // Unquantised K types are never changed; nor is V when only V is quantised.
    for (DType t16 : {DType::F16, DType::BF16, DType::F32}) {
        const KvLayerTypes t = kv_layer_types(m, t16, DType::I8);
        for (uint32_t l = 0; l < n; ++l) {
            CHECK(t.k[l] == t16);
            CHECK(t.v[l] == DType::I8);
        }
    }

    // The cache an int8 context makes: those types per layer, bytes accounted per layer.
    runtime::ContextParams p;
    p.n_ctx = 64;
    p.kv_dtype = DType::I8;
    p.cache_bytes = 16u << 20;
    runtime::Context ctx(test::real_model("qwen2"), p);
    const cache::ResolvedLayout& lay = ctx.cache()->layout();
    REQUIRE(lay.geometry.size() == n);
    double bytes = 0;
    for (uint32_t l = 0; l < n; ++l) {
        const bool out = std::find(outliers.begin(), outliers.end(), l) != outliers.end();
        CHECK(lay.geometry[l].dtype == (out ? DType::F16 : DType::I8));
        CHECK(lay.geometry[l].v_dtype == DType::I8);
        bytes += cache::layer_bytes_per_token(lay.geometry[l]);
    }
    const double kv_heads = m.config().n_kv_heads, d = m.config().head_dim;
    const double want = kv_heads * (6 * kv_head_bytes(DType::F16, int32_t(d)) + 18 * kv_head_bytes(DType::I8, int32_t(d)) +
                                    24 * kv_head_bytes(DType::I8, int32_t(d)));
    CHECK(bytes == want);  // 7,248 B per token (12,288 in f16; 6,528 with int8 K everywhere)

    // A shared cache may hold either layout (its creator chose): a context asking for int8
    // takes an int8-everywhere cache too, and writes int8 K on layer 0 there.
    cache::CacheConfig all_int8 = runtime::cache_config_for(m, DType::I8, 16, 16u << 20, std::nullopt, false);
    auto shared = std::make_shared<cache::Cache>(all_int8);
    runtime::Context on_shared(test::real_model("qwen2"), p, shared);
    CHECK(on_shared.params().kv_protect_outlier_layers == false);
    CHECK(shared->layout().geometry[0].dtype == DType::I8);
    const int32_t toks[3] = {1, 2, 3};
    on_shared.prefill(0, toks, 3);
    CHECK(on_shared.logits(0).size() == m.config().n_vocab);
    // Anything else is refused: f16 V on one layer.
    cache::CacheConfig odd = runtime::cache_config_for(m, DType::I8, 16, 16u << 20);
    odd.layers[5].v_dtype = DType::F16;
    try {
        runtime::Context other(test::real_model("qwen2"), p, std::make_shared<cache::Cache>(odd));
        FAIL("a context was given a cache of another per-layer layout");
    } catch (const Error& e) {
        CHECK(e.status() == KVRT_ERR_MISMATCH);
        CHECK(std::string(e.what()).find("each layer's K/V types") != std::string::npos);
    }
}

TEST_CASE("kv_layer_types: SmolLM2 and Gemma 3 (no K bias) keep the asked type on every layer") {
    for (const char* arch : {"llama", "gemma3"}) {
        if (!test::real_model_available(arch)) continue;
        const Model& m = *test::real_model(arch);
        const KvLayerTypes t = kv_layer_types(m, DType::I8);
        for (uint32_t l = 0; l < m.config().n_layers; ++l) {
            CHECK(t.k[l] == DType::I8);
            CHECK(t.v[l] == DType::I8);
        }
    }
}
