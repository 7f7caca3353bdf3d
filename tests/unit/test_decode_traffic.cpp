// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// What `kvrt bench` counts as one decode step's memory traffic (api/decode_traffic.hpp):
// the weights as held (Model::decode_weight_bytes) and the KV rows read, per layer kind and
// element type, checked against the public model info and the cache's own row sizes.
#include "api/decode_traffic.hpp"
#include "model/gguf/gguf.hpp"
#include "test_models.hpp"
#include "util/error.hpp"

#include "kvrt/context.h"
#include "kvrt/model.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <string>

namespace {

struct Loaded {
    kvrt_model* m = nullptr;
    kvrt_context* c = nullptr;
    kvrt_model_info info{};
    ~Loaded() {
        kvrt_context_destroy(c);
        kvrt_model_destroy(m);
    }
};

void load(Loaded& l, const std::string& path, int32_t kv_type) {
    kvrt_model_config mp;
    kvrt_model_config_init(&mp, sizeof mp);
    REQUIRE(kvrt_model_load(&l.m, path.c_str(), &mp) == KVRT_OK);
    kvrt_model_info_init(&l.info, sizeof l.info);
    REQUIRE(kvrt_model_get_info(&l.info, l.m) == KVRT_OK);
    kvrt_context_config cc;
    kvrt_context_config_init(&cc, sizeof cc);
    cc.n_ctx = 2048;
    cc.kv_dtype = kv_type;
    REQUIRE(kvrt_context_create(&l.c, l.m, &cc) == KVRT_OK);
}

}  // namespace

TEST_CASE("decode_traffic: f16 KV bytes per layer kind, weights as packed, bad input refused") {
    for (const char* arch : kvrt::test::kRealArchs) {
        CAPTURE(arch);
        if (!kvrt::test::real_model_available(arch)) continue;
        Loaded l;
        load(l, kvrt::test::real_model_path(arch), KVRT_DTYPE_F16);
        const uint64_t W = l.info.sliding_window;
        for (int64_t n : {1, 100, 511, 512, 513, 2000}) {
            const kvrt::api::DecodeTraffic t = kvrt::api::decode_traffic(l.c, n);
            CHECK(t.kv_known);
            const uint64_t win_rows = W ? std::min<uint64_t>(n, W) : uint64_t(n);
            CHECK(t.kv_bytes == l.info.kv_bytes_per_token_full * uint64_t(n) + l.info.kv_bytes_per_token_window * win_rows);
            CHECK(t.weight_bytes > 0);
        }
        // The weights one step reads: the file's tensors as packed (padding and the kernels'
        // scale layout: within 0.95x-1.2x of their file bytes), less the embedding table unless
        // the head is tied to it (Qwen2.5 has its own output.weight).
        const auto& model = kvrt::test::real_model(arch);
        uint64_t expect = l.info.weight_bytes;
        if (!model->tied_output()) expect -= model->file().require_tensor("token_embd.weight").n_bytes;
        const uint64_t wb = kvrt::api::decode_traffic(l.c, 1).weight_bytes;
        CHECK(wb > expect * 95 / 100);
        CHECK(wb < expect * 12 / 10);
        CHECK_THROWS_AS(kvrt::api::decode_traffic(l.c, 0), kvrt::Error);
    }
    CHECK_THROWS_AS(kvrt::api::decode_traffic(nullptr, 1), kvrt::Error);
}

TEST_CASE("decode_traffic: int8 KV counts its scales, and Qwen2.5's f16 K layers at f16") {
    if (!kvrt::test::real_model_available("qwen2")) return;
    Loaded l;
    load(l, kvrt::test::real_model_path("qwen2"), KVRT_DTYPE_I8);
    // docs/kv_quantisation.md: 7,248 bytes per token (K f16 on layers 0-4 and 8, int8 + f16 scale per 32 elsewhere).
    CHECK(kvrt::api::decode_traffic(l.c, 1000).kv_bytes == 7248ull * 1000);
}
