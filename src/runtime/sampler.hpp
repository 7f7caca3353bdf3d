// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Sampler: turns a row of logits into a token id.
//
// Greedy (temperature <= 0): argmax, ties to the lowest id. Otherwise the
// chain top-k -> top-p -> min-p -> temperature -> one draw from a seeded
// 64-bit PRNG (splitmix64 state, xoshiro-free: one multiply-xorshift per
// draw), so the same seed and the same logits give the same tokens on every
// machine. A candidate's weight is exp(logit - max) (times 1 / temperature) in float, one
// polynomial on every machine (runtime/sampling_weights.hpp); sums and probabilities in double.
//
// Non-finite logits: NaN and -inf are never picked; +inf wins (greedy: the
// lowest +inf id; sampling: one draw, uniform among the +inf ids); a row
// with no finite or +inf logit throws KVRT_ERR_INVALID_ARGUMENT.
//
// Thread safety: one thread at a time (the PRNG state changes per draw).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace kvrt::runtime {

struct SamplerParams {
    float temperature = 0.0f;  // <= 0: greedy
    int32_t top_k = 0;         // 0: off
    float top_p = 1.0f;        // 1: off
    float min_p = 0.0f;        // 0: off
    uint64_t seed = 0;
};

// Index of the largest value (lowest index on ties; NaN never wins unless all are NaN).
int32_t argmax(const float* logits, size_t n) noexcept;

class SamplerChain;  // runtime/sampler_chain.hpp

class Sampler {
public:
    // Throws kvrt::Error(KVRT_ERR_INVALID_ARGUMENT) for out-of-domain parameters.
    explicit Sampler(const SamplerParams& p);
    // A chain sampler (kvrt_sampler_chain_create): sample() runs the chain's stages.
    explicit Sampler(std::unique_ptr<SamplerChain> chain);
    ~Sampler();

    SamplerChain* chain() noexcept { return chain_.get(); }
    // History for penalty stages (no-ops for a plain sampler): begin() = the prompt,
    // accept() = a token sampled, reset() = empty.
    void begin(const int32_t* prompt, size_t n);
    void accept(int32_t token);
    void reset() noexcept;

    const SamplerParams& params() const noexcept { return p_; }
    bool greedy() const noexcept { return p_.temperature <= 0.0f; }

    // Picks a token from logits[0, n). n >= 1. Throws kvrt::Error
    // (KVRT_ERR_INVALID_ARGUMENT) when every logit is NaN or -inf.
    int32_t sample(const float* logits, size_t n);

    // Uniform double in [0, 1) from the PRNG (exposed for tests).
    double next_uniform() noexcept;

private:
    std::unique_ptr<SamplerChain> chain_;
    SamplerParams p_;
    uint64_t state_;
    struct Cand {
        float logit;
        int32_t id;
    };
    std::vector<Cand> cands_;
};

}  // namespace kvrt::runtime
