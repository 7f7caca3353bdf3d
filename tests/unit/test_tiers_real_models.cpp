// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// The disk tier on Qwen2.5 and Gemma 3 through the C API (what `kvrt demo --cache-dir DIR` run
// twice shows, at test size): one context prefills a document and persists it; a fresh
// context (a fresh cache: RAM empty) on the same directory reuses the document from disk,
// and its logits and the next greedy steps equal a cold run's bit for bit. Gemma 3's window
// layers (W = 512) are covered with a document longer than the window: the resumed window
// layers need the blocks of the last W positions from the tier.
#include <doctest/doctest.h>

#include "kvrt/kvrt.h"
#include "runtime_test_support.hpp"
#include "test_models.hpp"

#include <algorithm>
#include <cstring>
#include <initializer_list>
#include <filesystem>
#include <string>
#include <unistd.h>
#include <vector>

namespace fs = std::filesystem;

namespace {

struct Ctx {
    kvrt_context* c = nullptr;
    ~Ctx() { kvrt_context_destroy(c); }
};

void make(Ctx* out, kvrt_model* m, const char* dir, int prefix_caching) {
    kvrt_context_config cc;
    kvrt_context_config_init(&cc, sizeof cc);
    cc.n_ctx = 1024;
    cc.n_threads = 2;
    cc.block_tokens = 16;  // the block counts below are written for blocks of 16
    cc.prefix_caching = prefix_caching;
    kvrt_tier_config t;
    kvrt_tier_config_init(&t, sizeof t);
    t.kind = KVRT_TIER_DISK;
    t.location = dir;
    if (dir) {
        cc.tiers = &t;
        cc.n_tiers = 1;
    }
    REQUIRE_MESSAGE(kvrt_context_create(&out->c, m, &cc) == KVRT_OK, kvrt_last_error());
}

// The logits now and after each of `steps` greedy decode steps, concatenated.
std::vector<float> run(kvrt_context* ctx, size_t V, int steps) {
    std::vector<float> all;
    std::vector<float> l(V);
    for (int s = 0;; ++s) {
        size_t w = 0;
        REQUIRE(kvrt_context_get_logits(l.data(), V, &w, ctx, 0) == KVRT_OK);
        REQUIRE(w == V);
        all.insert(all.end(), l.begin(), l.end());
        if (s == steps) break;
        int32_t tok = int32_t(std::max_element(l.begin(), l.end()) - l.begin()), seq = 0;
        REQUIRE(kvrt_context_decode(ctx, &seq, &tok, 1) == KVRT_OK);
    }
    return all;
}

// One model: a document of n tokens persisted by one context, reused from disk by a fresh one.
void disk_tier_round_trip(const char* arch, size_t n) {
    {
        CAPTURE(arch);
        REQUIRE_MESSAGE(kvrt::test::real_model_available(arch), "the real model of " << arch << " is missing");
        const std::string path = kvrt::test::real_model_path(arch);
        kvrt_model* m = nullptr;
        REQUIRE_MESSAGE(kvrt_model_load(&m, path.c_str(), nullptr) == KVRT_OK, kvrt_last_error());
        kvrt_model_info info;
        kvrt_model_info_init(&info, sizeof info);
        REQUIRE(kvrt_model_get_info(&info, m) == KVRT_OK);
        const size_t V = size_t(info.n_vocab);
        std::vector<int32_t> doc(n);
        for (size_t i = 0; i < n; ++i) doc[i] = int32_t(i * 37 % 900 + 20);
        const fs::path dir = fs::temp_directory_path() / ("kvrt_tiers_real_" + std::to_string(getpid()) + "_" + arch);
        fs::remove_all(dir);
        const uint64_t full_blocks = n / 16;  // block_tokens 16 (make)
        {
            Ctx w;
            make(&w, m, dir.c_str(), 1);
            REQUIRE(kvrt_context_prefill(nullptr, w.c, 0, doc.data(), n) == KVRT_OK);
            kvrt_cache* cache = nullptr;
            REQUIRE(kvrt_context_get_cache(&cache, w.c) == KVRT_OK);
            uint64_t persisted = 0;
            REQUIRE(kvrt_cache_persist(&persisted, cache) == KVRT_OK);
            CHECK(persisted == full_blocks);
        }
        std::vector<float> tiered, cold;
        {
            Ctx t;
            make(&t, m, dir.c_str(), 1);
            kvrt_request_stats st;
            kvrt_request_stats_init(&st, sizeof st);
            REQUIRE(kvrt_context_prefill(&st, t.c, 0, doc.data(), n) == KVRT_OK);
            // Every block the hit may cover ((n - 1) / 16: the last token is always computed).
            CHECK(st.reused_from_disk == (n - 1) / 16 * 16);
            CHECK(st.reused_from_ram == 0);
            CHECK(st.computed_tokens == n - st.reused_from_disk);
            tiered = run(t.c, V, 2);
        }
        {
            Ctx c;
            make(&c, m, nullptr, 0);
            REQUIRE(kvrt_context_prefill(nullptr, c.c, 0, doc.data(), n) == KVRT_OK);
            cold = run(c.c, V, 2);
        }
        REQUIRE(tiered.size() == cold.size());
        CHECK(std::memcmp(tiered.data(), cold.data(), cold.size() * sizeof(float)) == 0);
        kvrt_model_destroy(m);
        fs::remove_all(dir);
    }
}

}  // namespace

// SmolLM2 (llama) runs the same check in tests/c/test_tiers.c. One test case per model so that
// ctest runs them side by side; sanitized builds (~10x slower) take a shorter Qwen document.
TEST_CASE("disk tier on the real models: a fresh Qwen2.5 context reuses the document from disk, bit-identical to cold") {
    disk_tier_round_trip("qwen2", kvrt::test::kSanitized ? 96 : 200);
}

TEST_CASE("disk tier on the real models: a fresh Gemma 3 context reuses a document past its 512-token window from disk, bit-identical to cold") {
    disk_tier_round_trip("gemma3", 560);  // past the window: the window layers resume from tier blocks
}
