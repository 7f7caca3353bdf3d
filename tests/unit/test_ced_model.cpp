// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// CED config, generator, loader and the no-cache reference.
#include "ced_test_util.hpp"
#include "runtime/ced_reference.hpp"
#include "util/error.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <string>

using namespace kvrt;
using namespace kvrt::ced;

namespace {

// Loads a GGUF that holds only cfg's metadata (no tensors): metadata is checked first.
kvrt::Error load_error(const CedConfig& cfg, void (*edit)(GgufWriter&) = nullptr) {
    GgufWriter w;
    config_to_gguf(cfg, w);
    if (edit) edit(w);
    std::vector<uint8_t> bytes = w.to_bytes();
    GgufFile f = GgufFile::from_buffer(bytes.data(), bytes.size(), "bad-ced");
    try {
        CedWeights::load(f);
    } catch (const kvrt::Error& e) {
        return e;
    }
    FAIL("loading a CED model with bad metadata succeeded");
    return kvrt::Error(KVRT_OK, "");
}

void expect_bad(const CedConfig& cfg, const char* key, kvrt_status st = KVRT_ERR_BAD_FORMAT,
                void (*edit)(GgufWriter&) = nullptr) {
    kvrt::Error e = load_error(cfg, edit);
    CHECK(e.status() == st);
    INFO(e.what());
    CHECK(std::string(e.what()).find(key) != std::string::npos);
}

}  // namespace

TEST_CASE("ced config: presets validate and count their parameters like the file") {
    for (const char* name : {"tiny", "base"}) {
        CedConfig c = preset(name);
        CHECK(c.n_encoder == c.n_layers / 2);
        CHECK(c.source_layers.back() == c.n_encoder);
        CHECK(c.source_ratios.back() == 1);
    }
    CHECK(preset("base").n_params() > 90'000'000ull);
    CHECK(preset("base").n_params() < 130'000'000ull);
    test::CedModel m = test::make_ced_model(preset("tiny"));
    uint64_t elems = 0;
    for (const GgufTensor& t : m.file->tensors()) elems += t.n_elements;
    CHECK(elems == preset("tiny").n_params());
    CHECK_THROWS_AS(preset("huge"), kvrt::Error);
}

TEST_CASE("ced config: layer roles of the tiny preset") {
    CedConfig c = preset("tiny");
    CHECK(c.bank_of[0] == -1);  // window only
    CHECK(c.bank_of[1] == 0);   // r = 2 source
    CHECK(c.bank_of[2] == 0);   // reuse
    CHECK(c.bank_of[3] == 1);   // decoder source, r = 1
    CHECK(c.bank_of[5] == 1);
    CHECK(c.ratio_of_layer(1) == 2);
    CHECK(c.ratio_of_layer(4) == 1);
    CHECK(c.is_index[5]);
    CHECK_FALSE(c.is_index[4]);
}

TEST_CASE("ced generator: deterministic per seed, per-tensor streams") {
    test::CedModel a = test::make_ced_model(preset("tiny"), 11);
    test::CedModel b = test::make_ced_model(preset("tiny"), 11);
    test::CedModel c = test::make_ced_model(preset("tiny"), 12);
    CHECK(a.bytes == b.bytes);
    CHECK(a.bytes != c.bytes);
    test::CedModel q = test::make_ced_model(preset("tiny"), 11, TensorType::Q8_0);
    CHECK(q.file->find_tensor("blk.0.attn_q.weight")->type == TensorType::Q8_0);
    CHECK(q.file->find_tensor("blk.0.attn_norm.weight")->type == TensorType::F32);
}

TEST_CASE("ced loader: bad ced.* metadata is rejected with a message naming the key") {
    CedConfig c = preset("tiny");
    {
        CedConfig b = c;
        b.n_layers = 7;
        expect_bad(b, "ced.block_count");
    }
    {
        CedConfig b = c;
        b.source_ratios = {2, 2};
        expect_bad(b, "ced.kv_source.ratios");
    }
    {
        CedConfig b = c;
        b.source_ratios = {2};
        expect_bad(b, "ced.kv_source.ratios");
    }
    {
        CedConfig b = c;
        b.source_layers = {1, 2};  // the last source must be the first decoder layer (3)
        expect_bad(b, "ced.kv_source.layers");
    }
    {
        CedConfig b = c;
        b.index_layers = {3, 5};  // source 1 missing
        expect_bad(b, "ced.index_source.layers");
    }
    {
        CedConfig b = c;
        b.index_layers = {0, 1, 3};  // layer 0 has no bank
        expect_bad(b, "ced.index_source.layers");
    }
    {
        CedConfig b = c;
        b.rope_dims = 64;
        expect_bad(b, "ced.rope.dimension_count");
    }
    {
        CedConfig b = c;
        b.entry_dim = 40;
        expect_bad(b, "ced.attention.entry_length");
    }
    {
        CedConfig b = c;
        b.top_k = 0;
        expect_bad(b, "ced.indexer.top_k");
    }
    {
        CedConfig b = c;
        b.window = -3;
        expect_bad(b, "ced.attention.sliding_window");
    }
    expect_bad(c, "ced.indexer.key_length", KVRT_ERR_BAD_FORMAT,
               [](GgufWriter& w) { w.set_string("ced.indexer.key_length", "sixteen"); });
    expect_bad(c, "general.architecture", KVRT_ERR_UNSUPPORTED,
               [](GgufWriter& w) { w.set_string("general.architecture", "llama"); });
    // Metadata fine, tensors absent: the first missing tensor is named.
    expect_bad(c, "token_embd.weight");
}

TEST_CASE("ced loader: a tensor of the wrong shape is named") {
    CedConfig c = preset("tiny");
    GgufWriter w;
    GeneratorOptions opt;
    opt.cfg = c;
    fill_random_gguf(w, opt);
    CedConfig wider = c;
    wider.n_ff = 160;  // metadata now disagrees with the ffn tensors
    config_to_gguf(wider, w);
    std::vector<uint8_t> bytes = w.to_bytes();
    GgufFile f = GgufFile::from_buffer(bytes.data(), bytes.size(), "bad-ced");
    try {
        CedWeights::load(f);
        FAIL("loaded");
    } catch (const kvrt::Error& e) {
        CHECK(e.status() == KVRT_ERR_BAD_FORMAT);
        CHECK(std::string(e.what()).find("blk.0.ffn_gate.weight") != std::string::npos);
    }
}

TEST_CASE("ced reference: activations stay healthy through every layer") {
    for (const char* name : {"tiny"}) {
        test::CedModel m = test::make_ced_model(preset(name), 3, TensorType::F16);
        CedReference ref(m.weights);
        std::vector<int32_t> toks = test::random_tokens(40, m.weights->cfg.n_vocab, 5);
        std::vector<float> lg = ref.prefill(toks.data(), int64_t(toks.size()), PrefillMode::Exact);
        const std::vector<double>& rms = ref.layer_rms();
        REQUIRE(rms.size() == size_t(m.weights->cfg.n_layers + 1));
        for (size_t l = 0; l < rms.size(); l++) {
            INFO("layer " << l << " rms " << rms[l]);
            CHECK(rms[l] > 0.5);
            CHECK(rms[l] < 2.5);
        }
        double ss = 0;
        for (float v : lg) ss += double(v) * v;
        const double lrms = std::sqrt(ss / double(lg.size()));
        CHECK(lrms > 0.5);
        CHECK(lrms < 5.0);
        // Every selection is within the visible groups and of size min(k, visible).
        const CedConfig& c = m.weights->cfg;
        for (int32_t l = 0; l < c.n_layers; l++) {
            const std::vector<int32_t>& sel = ref.selection(l);
            if (c.bank_of[l] < 0) {
                CHECK(sel.empty());
                continue;
            }
            const int32_t vis = 40 / c.ratio_of_layer(l);
            CHECK(sel.size() == size_t(std::min(c.top_k, vis)));
            for (int32_t g : sel) CHECK((g >= 0 && g < vis));
        }
    }
}

TEST_CASE("ced reference: CED prefill equals exact mode while the prompt fits in the window") {
    test::CedModel m = test::make_ced_model(preset("tiny"), 4);
    const int64_t W = m.weights->cfg.window;
    std::vector<int32_t> toks = test::random_tokens(W, 256, 9);
    CedReference a(m.weights), b(m.weights);
    CHECK(a.prefill(toks.data(), W, PrefillMode::Exact) == b.prefill(toks.data(), W, PrefillMode::CedPrefill));
    // Past the window they differ (the decoder saw fewer positions).
    toks = test::random_tokens(3 * W, 256, 9);
    CHECK(a.prefill(toks.data(), 3 * W, PrefillMode::Exact) != b.prefill(toks.data(), 3 * W, PrefillMode::CedPrefill));
}
