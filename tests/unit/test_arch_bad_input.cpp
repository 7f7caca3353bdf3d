// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Bad input at load, per architecture: every malformed file fails Model::load
// (and the C kvrt_model_load) with a status and a message naming the key or
// tensor, and nothing crashes. Files are tiny synthetic models written with
// GgufWriter (tiny_llama.hpp: 2 layers, width 64), given the real models'
// per-architecture metadata and tensors: qwen2's Q/K/V biases, gemma3's Q/K
// norms, sandwich norms and sliding window (6 layers, so layer 5 is global).
// Each architecture's valid file loads and runs a short prefill first, so each
// failure below is caused by the one thing the case breaks.
#include "kvrt/kvrt.h"
#include "model/arch/ced_config.hpp"
#include "model/arch/ced_generator.hpp"
#include "model/model.hpp"
#include "runtime/context.hpp"
#include "test_support.hpp"
#include "tiny_llama.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <limits>
#include <string>

using namespace kvrt;

namespace {

struct TinyArch {
    std::string arch = "llama";
    uint32_t n_layers = 2;
    uint32_t n_heads = 4, n_kv_heads = 2;
    uint32_t n_ctx = 512;
    uint32_t window = 0;              // attention.sliding_window (0: not written)
    bool write_key_length = false;    // attention.key_length / value_length (= n_embd / n_heads)
    std::string omit_tensor;          // a tensor left out ("" = none)
};

// A tiny model of o.arch with every tensor that architecture needs (minus o.omit_tensor).
GgufWriter tiny_writer(const TinyArch& o) {
    test::TinyLlamaOptions t;
    t.architecture = o.arch;
    t.n_layers = o.n_layers;
    t.n_heads = o.n_heads;
    t.n_kv_heads = o.n_kv_heads;
    t.n_ctx = o.n_ctx;
    t.sliding_window = o.window;
    t.weight_type = TensorType::F32;
    // tiny_llama_writer derives the head width as n_embd / n_heads; with heads that do
    // not divide the width the tensors are only placeholders (the config check comes first).
    GgufWriter w = test::tiny_llama_writer(t);
    const uint64_t E = t.n_embd, hd = E / o.n_heads, Q = hd * o.n_heads, KV = hd * o.n_kv_heads;
    if (o.write_key_length) {
        w.set_u32(o.arch + ".attention.key_length", static_cast<uint32_t>(hd));
        w.set_u32(o.arch + ".attention.value_length", static_cast<uint32_t>(hd));
    }
    auto vec = [&](const std::string& name, uint64_t n, float base) {
        if (name == o.omit_tensor) return;
        std::vector<float> v(n);
        for (uint64_t i = 0; i < n; ++i) v[i] = base + 0.01f * static_cast<float>(i % 5);
        w.add_tensor(name, TensorType::F32, {n}, v.data(), n * 4);
    };
    for (uint32_t l = 0; l < o.n_layers; ++l) {
        const std::string p = "blk." + std::to_string(l) + ".";
        if (o.arch == "qwen2") {
            vec(p + "attn_q.bias", Q, 0.0f);
            vec(p + "attn_k.bias", KV, 0.0f);
            vec(p + "attn_v.bias", KV, 0.0f);
        }
        if (o.arch == "gemma3") {
            vec(p + "attn_q_norm.weight", hd, 1.0f);
            vec(p + "attn_k_norm.weight", hd, 1.0f);
            vec(p + "post_attention_norm.weight", E, 1.0f);
            vec(p + "post_ffw_norm.weight", E, 1.0f);
        }
    }
    return w;
}

TinyArch valid(const std::string& arch) {
    TinyArch o;
    o.arch = arch;
    if (arch == "gemma3") {
        o.n_layers = 6;
        o.window = 8;
        o.write_key_length = true;
    }
    return o;
}

struct TempFile {
    std::string path;
    explicit TempFile(const std::string& name)
        : path((std::filesystem::temp_directory_path() /
                ("kvrt_arch_bad_" + name + "_" + std::to_string(::getpid()) + ".gguf"))
                   .string()) {}
    ~TempFile() { std::remove(path.c_str()); }
};

// Loads `path`: must fail with `want`, the message naming every string of `names`; the C
// API must return the same status with the same message.
void expect_rejected(const std::string& path, kvrt_status want, std::initializer_list<const char*> names) {
    std::string msg;
    kvrt_status got = KVRT_OK;
    try {
        Model::load(path);
    } catch (const Error& e) {
        got = e.status();
        msg = e.what();
    }
    CHECK_MESSAGE(got == want, "status " << got << " (" << msg << ")");
    for (const char* n : names) CHECK_MESSAGE(msg.find(n) != std::string::npos, "message '" << msg << "' does not name " << n);
    kvrt_model* m = nullptr;
    CHECK(kvrt_model_load(&m, path.c_str(), nullptr) == want);
    CHECK(m == nullptr);
    for (const char* n : names) CHECK(std::string(kvrt_last_error()).find(n) != std::string::npos);
    kvrt_clear_error();
}

void expect_rejected(const std::string& name, const TinyArch& o, kvrt_status want, std::initializer_list<const char*> names) {
    TempFile f(name);
    tiny_writer(o).write(f.path);
    expect_rejected(f.path, want, names);
}

}  // namespace

TEST_CASE("arch bad input: the tiny llama, qwen2 and gemma3 files are valid (the baseline of the cases below)") {
    for (const char* arch : {"llama", "qwen2", "gemma3"}) {
        CAPTURE(arch);
        TempFile f(std::string("valid_") + arch);
        tiny_writer(valid(arch)).write(f.path);
        std::shared_ptr<const Model> m = Model::load(f.path);
        REQUIRE(m->architecture() == arch);
        const DecoderConfig& c = m->config();
        CHECK(c.qkv_bias == (std::string(arch) == "qwen2"));
        CHECK(c.qk_norm == (std::string(arch) == "gemma3"));
        if (std::string(arch) == "gemma3") {
            CHECK(c.sliding_window == 8);
            CHECK(c.layer_is_window(0));
            CHECK_FALSE(c.layer_is_window(5));
        }
        runtime::ContextParams p;
        p.n_ctx = 64;
        p.cache_bytes = 8u << 20;
        runtime::Context ctx(m, p);
        std::vector<int32_t> toks(20);
        for (size_t i = 0; i < toks.size(); ++i) toks[i] = static_cast<int32_t>(i * 7 % 256);
        ctx.prefill(0, toks.data(), toks.size());
        for (float x : ctx.logits(0)) REQUIRE(std::isfinite(x));
    }
}

TEST_CASE("arch bad input: an unknown architecture is UNSUPPORTED, naming it and the key") {
    TinyArch o;
    o.arch = "mamba";
    expect_rejected("unknown", o, KVRT_ERR_UNSUPPORTED, {"general.architecture", "mamba"});
}

TEST_CASE("arch bad input: a sliding window larger than the context length") {
    for (const char* arch : {"llama", "gemma3"}) {
        CAPTURE(arch);
        TinyArch o = valid(arch);
        o.window = o.n_ctx + 1;
        const std::string key = std::string(arch) + ".attention.sliding_window";
        expect_rejected(std::string("window_") + arch, o, KVRT_ERR_BAD_FORMAT, {key.c_str(), "context length"});
    }
    // gemma3 needs the key at all.
    TinyArch o = valid("gemma3");
    o.window = 0;
    expect_rejected("window_missing", o, KVRT_ERR_BAD_FORMAT, {"gemma3.attention.sliding_window"});
}

TEST_CASE("arch bad input: key_length absent and a width the head count does not divide") {
    for (const char* arch : {"llama", "qwen2", "gemma3"}) {
        CAPTURE(arch);
        TinyArch o = valid(arch);
        o.write_key_length = false;
        o.n_heads = 6;  // 64 % 6 != 0
        o.n_kv_heads = 2;
        const std::string key = std::string(arch) + ".embedding_length";
        expect_rejected(std::string("width_") + arch, o, KVRT_ERR_BAD_FORMAT,
                        {key.c_str(), "attention.head_count", "key_length"});
    }
}

TEST_CASE("arch bad input: head_count_kv that does not divide head_count (or exceeds it, or is 0)") {
    for (const char* arch : {"llama", "qwen2", "gemma3"}) {
        const std::string key = std::string(arch) + ".attention.head_count_kv";
        for (uint32_t kv : {3u, 8u}) {
            CAPTURE(arch);
            CAPTURE(kv);
            TinyArch o = valid(arch);
            o.n_kv_heads = kv;
            expect_rejected(std::string("kv_") + arch, o, KVRT_ERR_BAD_FORMAT, {key.c_str()});
        }
        // 0 (the tensors shaped for 2).
        GgufWriter w = tiny_writer(valid(arch));
        w.set_u32(key, 0);
        TempFile f(std::string("kv0_") + arch);
        w.write(f.path);
        expect_rejected(f.path, KVRT_ERR_BAD_FORMAT, {key.c_str()});
    }
}

TEST_CASE("arch bad input: a qwen2 file missing a Q/K/V bias") {
    for (const char* t : {"blk.0.attn_q.bias", "blk.1.attn_q.bias", "blk.1.attn_v.bias"}) {
        CAPTURE(t);
        TinyArch o = valid("qwen2");
        o.omit_tensor = t;
        expect_rejected("qwen2_bias", o, KVRT_ERR_BAD_FORMAT, {t});
    }
}

TEST_CASE("arch bad input: a gemma3 file missing a Q/K norm or a sandwich norm") {
    for (const char* t : {"blk.0.attn_q_norm.weight", "blk.3.attn_k_norm.weight", "blk.5.post_ffw_norm.weight"}) {
        CAPTURE(t);
        TinyArch o = valid("gemma3");
        o.omit_tensor = t;
        expect_rejected("gemma3_norm", o, KVRT_ERR_BAD_FORMAT, {t});
    }
}

TEST_CASE("arch bad input: a ced file with a source ratio of 0") {
    GgufWriter w;
    ced::GeneratorOptions g;
    g.cfg = ced::preset("tiny");
    ced::fill_random_gguf(w, g);
    TempFile f("ced_ratio");
    w.set_i32_array(ced::key::kSrcRatios, {0, 1});
    w.write(f.path);
    expect_rejected(f.path, KVRT_ERR_BAD_FORMAT, {ced::key::kSrcRatios});
    // The decoder source's ratio must be 1, not 0 either.
    w.set_i32_array(ced::key::kSrcRatios, {2, 0});
    w.write(f.path);
    expect_rejected(f.path, KVRT_ERR_BAD_FORMAT, {ced::key::kSrcRatios});
}

TEST_CASE("arch bad input: a RoPE base that is not a positive finite number") {
    for (float theta : {0.0f, -1.0f, std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
        CAPTURE(theta);
        GgufWriter w = tiny_writer(valid("qwen2"));
        w.set_f32("qwen2.rope.freq_base", theta);
        TempFile f("rope");
        w.write(f.path);
        expect_rejected(f.path, KVRT_ERR_BAD_FORMAT, {"qwen2.rope.freq_base"});
    }
}
