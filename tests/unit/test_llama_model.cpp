// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Loading `llama` models: config from metadata, fingerprint, weights, and every
// kind of bad file (truncated, hostile, wrong architecture, missing or
// misshapen tensors): a kvrt::Error with a status and a message, never a crash.
#include "model/model.hpp"
#include "model/tokenizer/tokenizer.hpp"
#include "runtime/context.hpp"
#include "runtime/reference_forward.hpp"
#include "runtime_test_support.hpp"
#include "tiny_llama.hpp"
#include "util/error.hpp"

#include <doctest/doctest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

using namespace kvrt;

namespace {

// Runs fn; returns the status of the kvrt::Error it throws (KVRT_OK if none) and its message.
template <class Fn>
kvrt_status status_of(Fn&& fn, std::string* msg = nullptr) {
    try {
        fn();
    } catch (const Error& e) {
        if (msg) *msg = e.what();
        return e.status();
    }
    return KVRT_OK;
}

std::string write_bytes(const std::string& name, const std::vector<uint8_t>& bytes) {
    const std::string path = (std::filesystem::temp_directory_path() /
                              ("kvrt_test_" + name + "_" + std::to_string(::getpid()) + ".gguf"))
                                 .string();
    std::ofstream f(path, std::ios::binary);
    f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    return path;
}

}  // namespace

TEST_CASE("llama: SmolLM2's config, tied head and fingerprint come from its GGUF") {
    const auto& m = kvrt::test::smollm();
    const DecoderConfig& c = m->config();
    CHECK(c.n_layers == 30);
    CHECK(c.n_embd == 576);
    CHECK(c.n_ff == 1536);
    CHECK(c.n_heads == 9);
    CHECK(c.n_kv_heads == 3);
    CHECK(c.head_dim == 64);
    CHECK(c.n_rot == 64);
    CHECK(c.n_vocab == 49152);
    CHECK(c.n_ctx_train == 8192);
    CHECK(c.rope_theta == doctest::Approx(100000.0f));
    CHECK(c.rope_type == RopeType::Norm);
    CHECK(c.sliding_window == 0);
    CHECK(m->tied_output());
    CHECK(m->output().type() == TensorType::Q8_0);
    CHECK(m->layer(0).wq->type() == TensorType::Q4_1);
    CHECK(m->kv_bytes_per_token_layer(2) == 2u * 3 * 64 * 2);
    CHECK(m->architecture() == "llama");
    // The fingerprint is a content hash: stable across loads, not zero.
    CHECK((m->fingerprint().lo | m->fingerprint().hi) != 0);
    const auto again = Model::load(kvrt::test::model_path());
    CHECK(again->fingerprint() == m->fingerprint());
    // Embedding rows dequantise the Q8_0 table.
    std::vector<float> e(c.n_embd);
    m->embed(504, e.data());
    double norm = 0;
    for (float x : e) norm += static_cast<double>(x) * x;
    CHECK(norm > 0);
}

TEST_CASE("llama: a tiny generated model loads, a different file has a different fingerprint") {
    const std::string p1 = kvrt::test::write_tiny_llama("fp1");
    kvrt::test::TinyLlamaOptions o;
    o.seed = 2;
    const std::string p2 = kvrt::test::write_tiny_llama("fp2", o);
    const auto m1 = Model::load(p1), m2 = Model::load(p2);
    CHECK(m1->config().n_layers == 2);
    CHECK(m1->config().head_dim == 16);
    CHECK(m1->config().n_vocab == kvrt::test::tiny_vocab_size());
    CHECK_FALSE(m1->fingerprint() == m2->fingerprint());
    // The prefix-cache keys differ too: the two models never share a cached block.
    runtime::Context c1(m1, kvrt::test::small_params(64)), c2(m2, kvrt::test::small_params(64));
    std::vector<int32_t> t(40, 97);
    c1.prefill(0, t.data(), t.size());
    runtime::RequestStats st;
    c2.prefill(0, t.data(), t.size(), &st);
    CHECK(st.reused_from_cache == 0);
    std::remove(p1.c_str());
    std::remove(p2.c_str());
}

TEST_CASE("llama: truncated, hostile and wrong-architecture files fail with a status and a message") {
    std::string msg;
    // Missing file.
    CHECK(status_of([] { Model::load("/nonexistent/kvrt/model.gguf"); }) == KVRT_ERR_NOT_FOUND);
    // Not a GGUF at all.
    const std::string junk = write_bytes("junk", std::vector<uint8_t>(4096, 0x5A));
    CHECK(status_of([&] { Model::load(junk); }, &msg) == KVRT_ERR_BAD_FORMAT);
    CHECK(!msg.empty());
    // Truncated copies of the tiny model: the header, the metadata, the middle of the tensor data.
    const std::vector<uint8_t> full = kvrt::test::tiny_llama_writer({}).to_bytes();
    for (size_t cut : {size_t(3), size_t(24), size_t(200), full.size() / 2, full.size() - 1}) {
        const std::string p = write_bytes("trunc", std::vector<uint8_t>(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(cut)));
        CHECK_MESSAGE(status_of([&] { Model::load(p); }, &msg) == KVRT_ERR_BAD_FORMAT, "cut at " << cut << ": " << msg);
        std::remove(p.c_str());
    }
    // Hostile: flip bytes all over the header and metadata; every outcome is a clean status.
    std::mt19937 rng(7);
    for (int i = 0; i < 40; ++i) {
        std::vector<uint8_t> bad = full;
        for (int k = 0; k < 4; ++k) bad[rng() % 4096] ^= static_cast<uint8_t>(1u << (rng() % 8));
        const std::string p = write_bytes("flip", bad);
        const kvrt_status s = status_of([&] { Model::load(p); });
        CHECK((s == KVRT_OK || s == KVRT_ERR_BAD_FORMAT || s == KVRT_ERR_UNSUPPORTED || s == KVRT_ERR_OUT_OF_RANGE ||
               s == KVRT_ERR_INVALID_ARGUMENT || s == KVRT_ERR_OVERFLOW));
        std::remove(p.c_str());
    }
    // Another architecture.
    kvrt::test::TinyLlamaOptions o;
    o.architecture = "gpt2";
    const std::string arch = kvrt::test::write_tiny_llama("arch", o);
    CHECK(status_of([&] { Model::load(arch); }, &msg) == KVRT_ERR_UNSUPPORTED);
    CHECK(msg.find("gpt2") != std::string::npos);
    // A missing tensor and a misshapen one are named.
    o = {};
    o.drop_q0 = true;
    const std::string missing = kvrt::test::write_tiny_llama("missing", o);
    CHECK(status_of([&] { Model::load(missing); }, &msg) == KVRT_ERR_BAD_FORMAT);
    CHECK(msg.find("blk.0.attn_q.weight") != std::string::npos);
    o = {};
    o.bad_q_shape = true;
    const std::string shape = kvrt::test::write_tiny_llama("shape", o);
    CHECK(status_of([&] { Model::load(shape); }, &msg) == KVRT_ERR_BAD_FORMAT);
    CHECK(msg.find("blk.0.attn_q.weight") != std::string::npos);
    // Heads that do not divide the width.
    o = {};
    o.n_heads = 3;
    const std::string heads = kvrt::test::write_tiny_llama("heads", o);
    CHECK(status_of([&] { Model::load(heads); }, &msg) == KVRT_ERR_BAD_FORMAT);
    for (const std::string& p : {junk, arch, missing, shape, heads}) std::remove(p.c_str());
}

namespace {
// Every packed byte of a decoder model's matmul weights, in order.
bool same_packed(const PackedWeight& a, const PackedWeight& b) {
    return a.type() == b.type() && a.bytes() == b.bytes() && std::memcmp(a.panel(0), b.panel(0), a.bytes()) == 0;
}
bool same_weights(const Model& a, const Model& b) {
    if (!same_packed(a.output(), b.output()) || a.config().n_layers != b.config().n_layers) return false;
    for (uint32_t i = 0; i < a.config().n_layers; ++i) {
        const DecoderLayerWeights &x = a.layer(i), &y = b.layer(i);
        for (auto w : {&DecoderLayerWeights::wq, &DecoderLayerWeights::wk, &DecoderLayerWeights::wv, &DecoderLayerWeights::wo,
                       &DecoderLayerWeights::w_gate, &DecoderLayerWeights::w_up, &DecoderLayerWeights::w_down})
            if (!same_packed(*(x.*w), *(y.*w))) return false;
    }
    return true;
}
}  // namespace

// The load's tasks (model/load_tasks.hpp: the hash, the tokenizer, the weights in slices of
// rows; SmolLM2's 28M-element embedding is 7 slices) give the same model on any thread count.
TEST_CASE("llama: loading on 1, 2 or 5 threads gives the same packed weights, fingerprint and vocabulary") {
    ModelLoadOptions one, two, five;
    one.n_threads = 1;
    two.n_threads = 2;
    five.n_threads = 5;
    const auto a = Model::load(kvrt::test::model_path(), one);
    for (const ModelLoadOptions& o : {two, five}) {
        CAPTURE(o.n_threads);
        const auto b = Model::load(kvrt::test::model_path(), o);
        CHECK(b->fingerprint() == a->fingerprint());
        CHECK(b->tokenizer().n_tokens() == a->tokenizer().n_tokens());
        CHECK(same_weights(*a, *b));
    }
    // Weights dequantised to f32 at load are packed by the same slices.
    const std::string p = kvrt::test::write_tiny_llama("threads");
    one.f32_weights = five.f32_weights = true;
    const auto c = Model::load(p, one), d = Model::load(p, five);
    CHECK(c->output().type() == TensorType::F32);
    CHECK(same_weights(*c, *d));
    std::remove(p.c_str());
}

TEST_CASE("llama: cancelling the load through the progress callback") {
    const std::string p = kvrt::test::write_tiny_llama("cancel");
    ModelLoadOptions o;
    int calls = 0;
    o.progress = [&](float f, const char*) {
        CHECK(f >= 0.0f);
        CHECK(f <= 1.0f);
        return ++calls < 3;
    };
    CHECK(status_of([&] { Model::load(p, o); }) == KVRT_ERR_CANCELLED);
    calls = -1000000;
    CHECK(status_of([&] { Model::load(p, o); }) == KVRT_OK);
    std::remove(p.c_str());
}

TEST_CASE("llama: sliding-window layers: the cached runtime equals the uncached and reference forwards") {
    kvrt::test::TinyLlamaOptions o;
    o.sliding_window = 8;
    o.weight_type = TensorType::F32;
    const std::string p = kvrt::test::write_tiny_llama("swa", o);
    const auto m = Model::load(p);
    REQUIRE(m->config().sliding_window == 8);
    REQUIRE(m->config().layer_is_window(0));
    std::vector<int32_t> toks;
    for (int i = 0; i < 40; ++i) toks.push_back((i * 37 + 11) % 256);
    const size_t V = m->config().n_vocab;
    runtime::ContextParams cp = kvrt::test::small_params(128, 7, false);
    cp.kv_dtype = DType::F32;
    cp.block_tokens = 4;
    runtime::Context ctx(m, cp);
    std::vector<float> all;
    ctx.prefill(0, toks.data(), toks.size(), nullptr, &all);
    const std::vector<float> fast = runtime::uncached_forward(*m, toks.data(), 40, DType::F32);
    const std::vector<float> ref = runtime::reference_forward(*m, toks.data(), 40, DType::F32);
    for (size_t t = 0; t < toks.size(); ++t) {
        CHECK(kvrt::test::bit_equal(all.data() + t * V, fast.data() + t * V, V));
        CHECK(kvrt::test::rel_diff(all.data() + t * V, ref.data() + t * V, V) <= 1e-4);
    }
    // The window changes the result: the same model without it differs from position 8 on.
    o.sliding_window = 0;
    const std::string p2 = kvrt::test::write_tiny_llama("noswa", o);
    const auto full = Model::load(p2);
    const std::vector<float> nowin = runtime::uncached_forward(*full, toks.data(), 40, DType::F32);
    CHECK(kvrt::test::bit_equal(nowin.data(), fast.data(), V * 8));
    CHECK_FALSE(kvrt::test::bit_equal(nowin.data() + 39 * V, fast.data() + 39 * V, V));
    // Decode past the window keeps matching the uncached forward.
    for (int s = 0; s < 6; ++s) {
        const int32_t t = runtime::argmax(ctx.logits(0).data(), V);
        ctx.decode(std::vector<int32_t>{0}.data(), &t, 1);
        toks.push_back(t);
    }
    const std::vector<float> fast2 = runtime::uncached_forward(*m, toks.data(), static_cast<int32_t>(toks.size()), DType::F32);
    CHECK(kvrt::test::bit_equal(ctx.logits(0).data(), fast2.data() + (toks.size() - 1) * V, V));
    std::remove(p.c_str());
    std::remove(p2.c_str());
}

TEST_CASE("runtime: bad requests get a status and leave the context usable") {
    const std::string p = kvrt::test::write_tiny_llama("badreq");
    const auto m = Model::load(p);
    runtime::Context ctx(m, kvrt::test::small_params(32));
    std::string msg;
    std::vector<int32_t> ok = {97, 98, 99};
    // A prompt longer than the context.
    std::vector<int32_t> too_long(33, 97);
    CHECK(status_of([&] { ctx.prefill(0, too_long.data(), too_long.size()); }, &msg) == KVRT_ERR_OUT_OF_RANGE);
    CHECK(msg.find("n_ctx") != std::string::npos);
    // A token id past the vocabulary, and a negative one.
    std::vector<int32_t> bad = {97, static_cast<int32_t>(m->config().n_vocab), 98};
    CHECK(status_of([&] { ctx.prefill(0, bad.data(), bad.size()); }, &msg) == KVRT_ERR_OUT_OF_RANGE);
    CHECK(msg.find(std::to_string(m->config().n_vocab)) != std::string::npos);
    bad[1] = -1;
    CHECK(status_of([&] { ctx.prefill(0, bad.data(), bad.size()); }) == KVRT_ERR_OUT_OF_RANGE);
    // A sequence id past n_seq_max; decode of an empty sequence; logits of an empty sequence.
    CHECK(status_of([&] { ctx.prefill(1, ok.data(), ok.size()); }) == KVRT_ERR_OUT_OF_RANGE);
    int32_t s0 = 0, t = 97;
    CHECK(status_of([&] { ctx.decode(&s0, &t, 1); }) == KVRT_ERR_INVALID_ARGUMENT);
    CHECK(status_of([&] { ctx.logits(0); }) == KVRT_ERR_INVALID_STATE);
    // Still works afterwards; decode up to n_ctx then OUT_OF_RANGE.
    ctx.prefill(0, ok.data(), ok.size());
    CHECK(ctx.has_logits(0));
    for (int i = 3; i < 32; ++i) ctx.decode(&s0, &t, 1);
    CHECK(status_of([&] { ctx.decode(&s0, &t, 1); }) == KVRT_ERR_OUT_OF_RANGE);
    CHECK(ctx.tokens(0).size() == 32);
    // A cache that is too small: CACHE_FULL, nothing half-written.
    runtime::ContextParams tiny = kvrt::test::small_params(512);
    tiny.cache_bytes = 1;
    CHECK(status_of([&] { runtime::Context c(m, tiny); std::vector<int32_t> x(64, 97); c.prefill(0, x.data(), x.size()); }) != KVRT_OK);
    std::remove(p.c_str());
}
