// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Shared fixtures of the runtime tests: the real models loaded once per test
// process (test_models.hpp), greedy runs through a Context, uncached runs, and
// logit comparisons.
#pragma once

#include "model/arch/decoder_forward.hpp"
#include "model/model.hpp"
#include "model/tokenizer/tokenizer.hpp"
#include "runtime/context.hpp"
#include "runtime/sampler.hpp"
#include "test_models.hpp"
#include "test_support.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

namespace kvrt::test {

// SmolLM2-135M-Instruct Q4_1, loaded once (a missing model fails the test).
inline const std::shared_ptr<const Model>& smollm() { return real_model("llama"); }

// Built when the sanitizers are on: the forward is ~10x slower there.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif
#else
inline constexpr bool kSanitized = false;
#endif

inline runtime::ContextParams small_params(uint32_t n_ctx = 1024, uint32_t n_batch = 512, bool prefix = true) {
    runtime::ContextParams p;
    p.n_ctx = n_ctx;
    p.n_batch = n_batch;
    p.prefix_caching = prefix;
    p.cache_bytes = 64ull << 20;
    // Blocks of 16 (the library's default is 64): the tests' prompts are a few dozen tokens, and
    // their hit and block counts are written for several blocks per prompt.
    p.block_tokens = 16;
    return p;
}

// Greedy steps through the cache: prefill, then `steps` decode steps. Returns the
// logits after the prompt and after each decoded token (steps + 1 rows), and the
// chosen tokens (steps + 1: the last one is chosen but not decoded).
struct GreedyRun {
    std::vector<std::vector<float>> logits;
    std::vector<int32_t> tokens;
};
inline GreedyRun greedy_run(runtime::Context& ctx, int32_t seq, const std::vector<int32_t>& prompt, int steps,
                            runtime::RequestStats* stats = nullptr) {
    GreedyRun r;
    ctx.prefill(seq, prompt.data(), prompt.size(), stats);
    for (int i = 0;; ++i) {
        const std::vector<float>& l = ctx.logits(seq);
        r.logits.push_back(l);
        const int32_t t = runtime::argmax(l.data(), l.size());
        r.tokens.push_back(t);
        if (i == steps) break;
        ctx.decode(&seq, &t, 1);
    }
    return r;
}

// max |a - b| / max(1, max |b|) over a row.
inline double rel_diff(const float* a, const float* b, size_t n) {
    double md = 0, mb = 0;
    for (size_t i = 0; i < n; ++i) {
        md = std::max(md, std::abs(static_cast<double>(a[i]) - b[i]));
        mb = std::max(mb, std::abs(static_cast<double>(b[i])));
    }
    return md / std::max(1.0, mb);
}

// The uncached forward's logits of the LAST of tokens[0, n) only: one pass of the
// fast kernels over a contiguous K/V buffer made for this call (as
// runtime::uncached_forward, without its n x n_vocab logits: Gemma's vocabulary
// makes those 1 MiB per row).
inline std::vector<float> uncached_last(const Model& m, const int32_t* tokens, size_t n, DType kv = DType::F16) {
    const DecoderConfig& c = m.config();
    ContiguousKv kv_store(static_cast<int32_t>(c.n_kv_heads), static_cast<int32_t>(c.head_dim),
                          kv_layer_types(m, kv), static_cast<int64_t>(n));
    std::vector<float> logits(c.n_vocab);
    SeqStep step;
    step.kv = &kv_store;
    step.tokens = tokens;
    step.n_tokens = static_cast<int32_t>(n);
    step.pos0 = 0;
    step.logits = logits.data();
    ForwardScratch scratch;
    decoder_forward(m, std::span<SeqStep>(&step, 1), scratch, KernelSet::Fast);
    return logits;
}

inline bool bit_equal(const float* a, const float* b, size_t n) { return std::memcmp(a, b, n * sizeof(float)) == 0; }

}  // namespace kvrt::test
