// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// CED models through the one Context (runtime/context.hpp): the exactness
// contract the decoder architectures keep holds for CED too, bit for bit:
// prefill in any chunking == token-by-token decode, 1 thread == 2 threads,
// an edited prompt == a cold run, a prefix-cache hit (checkpoint resume) ==
// a cold run, a batch decode == each sequence alone.
#include "ced_test_util.hpp"
#include "model/model.hpp"
#include "runtime/context.hpp"
#include "test_support.hpp"

#include <doctest/doctest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <unistd.h>

using namespace kvrt;

namespace {

// The tiny preset written to a temp file and loaded as a Model (once per process).
const std::shared_ptr<const Model>& ced_model() {
    static std::shared_ptr<const Model> m = [] {
        const std::string path = (std::filesystem::temp_directory_path() /
                                  ("kvrt_ced_ctx_" + std::to_string(::getpid()) + ".gguf")).string();
        ced::GeneratorOptions o;
        o.cfg = ced::preset("tiny");
        o.seed = 11;
        ced::write_random_gguf(path, o);
        auto model = Model::load(path);
        std::filesystem::remove(path);
        return model;
    }();
    return m;
}

runtime::ContextParams params(uint32_t n_batch, bool prefix, int threads = 0) {
    runtime::ContextParams p;
    p.n_ctx = 512;
    p.n_seq_max = 2;
    p.n_batch = n_batch;
    p.block_tokens = 4;
    p.prefix_caching = prefix;
    p.kv_dtype = DType::F32;
    p.n_threads = threads;
    return p;
}

bool same(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("ced context: loads through Model::load, exact prefill in chunks of 1, 5, 512 == decode, bit for bit") {
    const auto& m = ced_model();
    REQUIRE(m->is_ced());
    CHECK(m->architecture() == "ced");
    CHECK_FALSE(m->has_tokenizer());
    const std::vector<int32_t> toks = test::random_tokens(40, static_cast<int32_t>(m->config().n_vocab), 5);
    runtime::Context dec(m, params(512, false));
    dec.prefill(0, toks.data(), 1);
    for (size_t i = 1; i < toks.size(); ++i) {
        const int32_t seq = 0;
        dec.decode(&seq, &toks[i], 1);
    }
    for (uint32_t chunk : {1u, 5u, 512u}) {
        runtime::Context ctx(m, params(chunk, false));
        ctx.prefill(0, toks.data(), toks.size());
        CHECK_MESSAGE(same(ctx.logits(0), dec.logits(0)), "chunk " << chunk);
    }
    // 1 thread == 2 threads
    runtime::Context one(m, params(512, false, 1)), two(m, params(512, false, 2));
    one.prefill(0, toks.data(), toks.size());
    two.prefill(0, toks.data(), toks.size());
    CHECK(same(one.logits(0), two.logits(0)));
    CHECK(same(one.logits(0), dec.logits(0)));
}

TEST_CASE("ced context: an edit and a prefix-cache hit give the cold run's logits, bit for bit") {
    const auto& m = ced_model();
    std::vector<int32_t> a = test::random_tokens(48, static_cast<int32_t>(m->config().n_vocab), 9);
    std::vector<int32_t> b = a;
    b[30] = (b[30] + 1) % static_cast<int32_t>(m->config().n_vocab);  // an edit at an even position (r = 2 groups)
    runtime::Context cold(m, params(512, false));
    cold.prefill(0, b.data(), b.size());

    runtime::Context ctx(m, params(512, true));
    runtime::RequestStats st;
    ctx.prefill(0, a.data(), a.size(), &st);
    CHECK(st.computed_tokens == a.size());
    ctx.prefill(0, b.data(), b.size(), &st);  // same sequence: cut at 30, recompute the rest
    CHECK(st.reused_tokens == 30);
    CHECK(st.computed_tokens == b.size() - 30);
    CHECK(same(ctx.logits(0), cold.logits(0)));
    // Another sequence with b: the prefix cache resumes exactly from a window checkpoint.
    ctx.prefill(1, b.data(), b.size(), &st);
    CHECK(st.reused_from_cache >= 40);
    CHECK(same(ctx.logits(1), cold.logits(0)));
    // A batch decode of both == each alone.
    const int32_t seqs[2] = {0, 1}, next[2] = {3, 3};
    ctx.decode(seqs, next, 2);
    CHECK(same(ctx.logits(0), ctx.logits(1)));
    const int32_t s0 = 0;
    cold.decode(&s0, &next[0], 1);
    CHECK(same(ctx.logits(0), cold.logits(0)));
}

TEST_CASE("ced context: generate on token ids, stats and bad input") {
    const auto& m = ced_model();
    const std::vector<int32_t> p = test::random_tokens(20, static_cast<int32_t>(m->config().n_vocab), 3);
    runtime::Context ctx(m, params(512, true));
    runtime::GenerateParams gp;
    gp.max_tokens = 5;
    std::vector<int32_t> out;
    runtime::RequestStats st;
    ctx.generate(0, p.data(), p.size(), gp, &st, &out);
    CHECK(out.size() == 5);
    CHECK(st.generated_tokens == 5);
    CHECK(ctx.tokens(0).size() == p.size() + 4);
    CHECK(ctx.kv_bytes(0) > 0);
    const int32_t bad = static_cast<int32_t>(m->config().n_vocab);
    CHECK(test::status_of([&] { ctx.prefill(0, &bad, 1); }) == KVRT_ERR_OUT_OF_RANGE);
    CHECK(test::status_of([&] { ctx.logits(0); }) == KVRT_ERR_INVALID_STATE);
    CHECK(ctx.tokens(0).size() == p.size() + 4);  // the sequence is as it was
    std::vector<float> all;
    CHECK(test::status_of([&] { ctx.prefill(0, p.data(), p.size(), nullptr, &all); }) == KVRT_ERR_UNSUPPORTED);
    runtime::ContextParams shared = params(512, true);
    CHECK(test::status_of([&] { runtime::Context c2(m, shared, ctx.cache()); }) == KVRT_ERR_UNSUPPORTED);
    CHECK(test::status_of([&] { m->tokenizer(); }) == KVRT_ERR_UNSUPPORTED);
}
