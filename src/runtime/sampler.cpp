// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

#include "runtime/sampler.hpp"

#include "runtime/sampler_chain.hpp"

#include "util/error.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

namespace kvrt::runtime {

namespace {

// Greedy decoding scans a whole vocabulary per token (262,144 logits for Gemma 3). A scan that
// compares each logit with the best one so far carries a dependency through every element (and a
// branch on NaN): 0.6 ms per token on Gemma 3 [Intel Xeon @ 2.80GHz, Ice Lake-SP], 5% of its
// decode step. Two passes without one, in vectors of 4 (GCC / Clang vector extensions: the
// baseline ISA's registers, SSE2 on x86-64), 16 logits per step: the largest value over 16
// independent running maxima, then the first block of 16 holding it, then its index there.
typedef float F4 __attribute__((vector_size(16)));
typedef int32_t I4 __attribute__((vector_size(16)));
constexpr size_t kLanes = 16;

inline F4 load4(const float* p) noexcept {
    F4 v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

// The largest logit, NaN ignored (x > m is false for NaN); -inf when there is none.
float max_logit(const float* x, size_t n) noexcept {
    const F4 ninf = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
    F4 m[4] = {ninf, ninf, ninf, ninf};
    size_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
        for (int j = 0; j < 4; ++j) {
            const F4 v = load4(x + i + 4 * j);
            m[j] = v > m[j] ? v : m[j];
        }
    float best = -INFINITY;
    for (int j = 0; j < 4; ++j)
        for (int l = 0; l < 4; ++l) best = m[j][l] > best ? m[j][l] : best;
    for (; i < n; ++i) best = x[i] > best ? x[i] : best;
    return best;
}

// The first index whose logit equals v (+0 and -0 are equal), or n.
size_t first_equal(const float* x, size_t n, float v) noexcept {
    const F4 vv = {v, v, v, v};
    size_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
        I4 any = (load4(x + i) == vv) | (load4(x + i + 4) == vv) | (load4(x + i + 8) == vv) | (load4(x + i + 12) == vv);
        if (any[0] | any[1] | any[2] | any[3]) break;
    }
    for (; i < n; ++i)
        if (x[i] == v) return i;
    return n;
}

}  // namespace

// The lowest index of the largest non-NaN value: the same as a left-to-right scan keeping the
// first maximum (every value equal to the maximum compares equal to it, signed zeros included).
int32_t argmax(const float* logits, size_t n) noexcept {
    const size_t i = first_equal(logits, n, max_logit(logits, n));
    return static_cast<int32_t>(i < n ? i : 0);  // (all NaN: 0)
}

Sampler::Sampler(const SamplerParams& p) : p_(p), state_(p.seed) {
    auto bad = [](const std::string& m) { fail(KVRT_ERR_INVALID_ARGUMENT, m); };
    if (std::isnan(p.temperature)) bad("temperature is NaN");
    if (std::isnan(p.top_p)) bad("top_p is NaN; it must be in (0, 1]");
    if (std::isnan(p.min_p)) bad("min_p is NaN; it must be in [0, 1]");
    if (p.top_k < 0) bad("top_k is negative (" + std::to_string(p.top_k) + ")");
    if (!(p.top_p > 0.0f && p.top_p <= 1.0f)) bad("top_p must be in (0, 1], got " + std::to_string(p.top_p));
    if (!(p.min_p >= 0.0f && p.min_p <= 1.0f)) bad("min_p must be in [0, 1], got " + std::to_string(p.min_p));
    if (std::isinf(p.temperature)) bad("temperature is infinite");
}

Sampler::Sampler(std::unique_ptr<SamplerChain> chain) : chain_(std::move(chain)), state_(0) {}
Sampler::~Sampler() = default;

void Sampler::begin(const int32_t* prompt, size_t n) {
    if (chain_) chain_->begin(prompt, n);
}
void Sampler::accept(int32_t token) {
    if (chain_) chain_->accept(token);
}
void Sampler::reset() noexcept {
    if (chain_) chain_->reset();
}

double Sampler::next_uniform() noexcept {
    // splitmix64: passes BigCrush, one state word, trivially seedable.
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return static_cast<double>(z >> 11) * 0x1.0p-53;
}

int32_t Sampler::sample(const float* logits, size_t n) {
    if (chain_) return chain_->sample(logits, n);
    // Non-finite logits, the same rule greedy or not: NaN and -inf are never
    // drawn, +inf always wins (greedy: the lowest such id; otherwise one draw
    // picks uniformly among the +inf ids), and a row with nothing drawable
    // (all NaN / -inf) is an error rather than an arbitrary token. Greedy: something is drawable
    // exactly when the largest non-NaN logit exceeds -inf, and the pick is its lowest id.
    if (greedy() || n == 1) {
        const float m = max_logit(logits, n);
        if (!(m > -INFINITY))
            fail(KVRT_ERR_INVALID_ARGUMENT,
                 "no logit can be sampled: all " + std::to_string(n) + " logits are NaN or -inf");
        return static_cast<int32_t>(first_equal(logits, n, m));
    }
    size_t n_drawable = 0, n_pos_inf = 0;
    for (size_t i = 0; i < n; ++i) {
        const float x = logits[i];
        if (std::isnan(x) || x == -INFINITY) continue;
        ++n_drawable;
        if (x == INFINITY) ++n_pos_inf;
    }
    if (n_drawable == 0)
        fail(KVRT_ERR_INVALID_ARGUMENT,
             "no logit can be sampled: all " + std::to_string(n) + " logits are NaN or -inf");
    if (n_pos_inf > 0) {
        size_t pick = static_cast<size_t>(next_uniform() * static_cast<double>(n_pos_inf));
        if (pick >= n_pos_inf) pick = n_pos_inf - 1;
        for (size_t i = 0; i < n; ++i)
            if (logits[i] == INFINITY && pick-- == 0) return static_cast<int32_t>(i);
    }

    // Every candidate is finite from here on.
    cands_.clear();
    cands_.reserve(n_drawable);
    for (size_t i = 0; i < n; ++i)
        if (std::isfinite(logits[i])) cands_.push_back({logits[i], static_cast<int32_t>(i)});
    auto by_logit = [](const Cand& a, const Cand& b) { return a.logit > b.logit || (a.logit == b.logit && a.id < b.id); };

    // top-k: keep the k best (sorted), else sort all (needed for top-p anyway).
    size_t keep = cands_.size();
    if (p_.top_k > 0 && static_cast<size_t>(p_.top_k) < keep) keep = static_cast<size_t>(p_.top_k);
    std::partial_sort(cands_.begin(), cands_.begin() + static_cast<std::ptrdiff_t>(keep), cands_.end(), by_logit);
    cands_.resize(keep);

    // Softmax at temperature 1 for the truncation rules (as llama.cpp's chain does before temp).
    const double mx = cands_[0].logit;
    probs_.resize(keep);
    double sum = 0;
    for (size_t i = 0; i < keep; ++i) sum += (probs_[i] = std::exp(static_cast<double>(cands_[i].logit) - mx));

    // top-p: smallest prefix whose mass reaches top_p.
    if (p_.top_p < 1.0f) {
        double acc = 0;
        size_t cut = keep;
        for (size_t i = 0; i < keep; ++i) {
            acc += probs_[i] / sum;
            if (acc >= p_.top_p) {
                cut = i + 1;
                break;
            }
        }
        keep = cut;
    }
    // min-p: p_i >= min_p * p_max (p_max is probs_[0]).
    if (p_.min_p > 0.0f) {
        size_t cut = 1;
        while (cut < keep && probs_[cut] >= p_.min_p * probs_[0]) ++cut;
        keep = cut;
    }

    // Temperature over the survivors, then one draw.
    const double inv_t = 1.0 / static_cast<double>(p_.temperature);
    double total = 0;
    for (size_t i = 0; i < keep; ++i)
        total += (probs_[i] = std::exp((static_cast<double>(cands_[i].logit) - mx) * inv_t));
    double r = next_uniform() * total;
    size_t last = 0;  // the last survivor with a non-zero weight (rounding may leave r >= 0)
    for (size_t i = 0; i < keep; ++i) {
        if (probs_[i] > 0) last = i;
        r -= probs_[i];
        if (r < 0) return cands_[i].id;
    }
    return cands_[last].id;
}

}  // namespace kvrt::runtime
