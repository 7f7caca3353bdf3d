// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// SamplerChain: a composable sampler (as llama.cpp's llama_sampler_chain): stages applied
// in the order they were added to the candidates of one row of logits, the last one
// usually picking the token (dist: a seeded draw; greedy: argmax).
//
// Stages (kvrt_sampler_stage in kvrt/context.h):
//   penalties   over the last `last_n` tokens of the history (-1: all of it, 0: off), for
//               every token t seen c > 0 times there: logit /= repeat when logit > 0, else
//               logit *= repeat (repeat = 1: off); then logit -= c x frequency + presence
//               (llama.cpp's llama_sampler_penalties);
//   logit bias  logit[t] += bias[t] for the listed tokens (-inf bans a token);
//   top-k       keeps the k largest (k <= 0: off);
//   top-p       keeps the smallest most-probable set whose probability reaches p (at the
//               current logits; at least one);
//   min-p       keeps the tokens with probability >= p x the largest probability;
//   temperature logits /= t; t <= 0 keeps only the largest (ties: lowest id);
//   dist        draws from the softmax of what is left with the chain's splitmix64 PRNG,
//               walking the candidates from the most probable (same seed, same logits,
//               same history => same token);
//   greedy      argmax of what is left (ties: lowest id).
// No stage may follow dist or greedy; a chain without either picks the argmax.
//
// History: the tokens penalties look at. begin(prompt) sets it to the prompt (generate calls
// it), accept(token) appends the token sampled (generate calls it after each sample; a caller
// running its own loop calls kvrt_sampler_accept), reset() empties it.
//
// Non-finite logits follow kvrt_sampler_sample's rule: NaN and -inf are never picked; +inf
// wins (dist: uniformly among the +inf ids; greedy: the lowest); nothing pickable throws
// KVRT_ERR_INVALID_ARGUMENT. The rule is applied to the input row and again after every
// stage that changes logits (a -inf bias removes a token; a +inf bias forces it).
//
// Thread safety: one thread at a time (history and PRNG change).
#pragma once

#include "runtime/sorted_prefix.hpp"
#include "util/default_init_allocator.hpp"

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace kvrt::runtime {

enum class StageType : int32_t {
    Penalties = 1,
    LogitBias = 2,
    TopK = 3,
    TopP = 4,
    MinP = 5,
    Temperature = 6,
    Dist = 7,
    Greedy = 8,
};

struct SamplerStage {
    StageType type = StageType::Greedy;
    int32_t top_k = 0;
    float p = 1.0f;            // top-p, min-p
    float temperature = 1.0f;
    int32_t last_n = 64;       // penalties: window (-1: whole history, 0: off)
    float repeat = 1.0f;
    float frequency = 0.0f;
    float presence = 0.0f;
    std::vector<std::pair<int32_t, float>> bias;  // logit bias: (token, bias)
};

class SamplerChain {
public:
    explicit SamplerChain(uint64_t seed) : state_(seed) {}

    // Validates and appends a stage. INVALID_ARGUMENT (the message names the field) for a
    // value outside its domain; INVALID_STATE after dist or greedy.
    void add(SamplerStage stage);
    size_t n_stages() const noexcept { return stages_.size(); }

    // Picks a token from logits[0, n) (n >= 1) after running the stages.
    int32_t sample(const float* logits, size_t n);

    void begin(const int32_t* prompt, size_t n);
    void accept(int32_t token);
    void reset() noexcept { history_.clear(); }
    const std::vector<int32_t>& history() const noexcept { return history_; }

private:
    struct Cand {
        double logit;
        int32_t id;
    };
    bool normalize();  // the non-finite rule; true when a +inf forced the candidates
    // Candidates in logit order (largest first, ties to the lower id) only as far as a stage reads
    // them (runtime/sorted_prefix.hpp): cands_[0, sorted_) are in that order. sort_to(k) extends
    // the prefix to k, grow(i) past i: top-p and the draw sort the few hundred candidates that
    // carry the mass, not a whole vocabulary (~25 ms per token over Gemma 3's 262,144 logits).
    void sort_to(size_t k);
    void grow(size_t i) {
        if (i >= sorted_) sort_to(sorted_prefix_for(i, sorted_));
    }
    // The sum of the candidates' weights exp(logit - max) (runtime/sampling_weights.hpp), their
    // largest logit in mx; weight(i, mx) is candidate i's term of it (until the next sum).
    double softmax_sum(double& mx);
    double weight(size_t i, double mx) const noexcept;
    bool shifted_ = false;  // the last sum took logit - max in double (max beyond float's range)
    void trim_history();
    double next_uniform() noexcept;
    void require_candidates() const;
    int32_t argmax_cand() const;
    int32_t draw();

    std::vector<SamplerStage> stages_;
    std::vector<int32_t> history_;
    size_t max_window_ = 0;   // the largest last_n of the penalty stages
    bool whole_history_ = false;
    uint64_t state_;
    std::vector<Cand, DefaultInitAllocator<Cand>> cands_;  // (resized per token: not zeroed)
    std::vector<double> probs_;
    std::vector<float, DefaultInitAllocator<float>> logits_;  // softmax_sum: the candidates' logits as floats, for the vector sum
    std::vector<int32_t> counts_;  // penalties: per token id, of the current window (zero between calls)
    std::vector<double> bias_;     // logit bias: per token id (zero between calls)
    std::vector<uint8_t> biased_;  // ... and whether the id has one
    size_t sorted_ = 0;
    bool id_order_ = false;  // cands_[i].id == i for every i < n (as built); sort_to clears it
    size_t front_ = 0;  // sort_prefix_to's front: reset with every change to the logits or the order
};

}  // namespace kvrt::runtime
