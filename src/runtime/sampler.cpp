// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

#include "runtime/sampler.hpp"

#include "runtime/logit_scan.hpp"
#include "runtime/sampler_chain.hpp"
#include "runtime/sampling_weights.hpp"
#include "runtime/sorted_prefix.hpp"

#include "util/error.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <string>

namespace kvrt::runtime {

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
    const NonFinite nf = count_non_finite(logits, n);
    const size_t n_pos_inf = nf.pos_inf, n_drawable = n - nf.nan - nf.neg_inf;
    if (n_drawable == 0)
        fail(KVRT_ERR_INVALID_ARGUMENT,
             "no logit can be sampled: all " + std::to_string(n) + " logits are NaN or -inf");
    if (n_pos_inf > 0) {
        size_t pick = static_cast<size_t>(next_uniform() * static_cast<double>(n_pos_inf));
        if (pick >= n_pos_inf) pick = n_pos_inf - 1;
        for (size_t i = 0; i < n; ++i)
            if (logits[i] == INFINITY && pick-- == 0) return static_cast<int32_t>(i);
    }

    // Every candidate is finite from here on. The rules below read the candidates in the order of
    // their logits (largest first, ties to the lower id), but only as far as a rule looks: a
    // sorted prefix is extended on demand (a partial sort of the rest), so that top-p
    // or a draw over Gemma 3's 262,144 logits sorts the few hundred that carry the mass instead
    // of all of them (a full sort was ~35 ms per token on an Ice Lake-SP core, 3x the decode step).
    // (Built through a plain pointer: push_back's capacity check and stored end, and a running
    // maximum kept in memory, had made this loop ~1.4 ms of a 262,144-logit draw.)
    const float mxf = max_logit(logits, n);  // (no +inf here: the largest finite logit)
    cands_.resize(n_drawable);
    Cand* out = cands_.data();
    size_t front = 0;  // sort_prefix_to's front (runtime/sorted_prefix.hpp)
    if (n_drawable >= 16 * kFrontTarget) {
        // A whole vocabulary is split as it is built: the logits >= t (about kFrontTarget of them)
        // first, the others filled from the end, so that sort_prefix_to needs no pass of its own.
        const float t = front_threshold(logits, n, n_drawable, kFrontTarget);
        Cand* back = out + n_drawable;
        for (size_t i = 0; i < n; ++i) {
            const float x = logits[i];
            if (!std::isfinite(x)) continue;
            if (x >= t) *out++ = {x, static_cast<int32_t>(i)};
            else *--back = {x, static_cast<int32_t>(i)};
        }
        front = static_cast<size_t>(out - cands_.data());
    } else if (n_drawable == n) {
        for (size_t i = 0; i < n; ++i) out[i] = {logits[i], static_cast<int32_t>(i)};
    } else {
        for (size_t i = 0; i < n; ++i)
            if (std::isfinite(logits[i])) *out++ = {logits[i], static_cast<int32_t>(i)};
    }
    const size_t N = n_drawable;
    size_t sorted = 0;  // cands_[0, sorted) are in that order (runtime/sorted_prefix.hpp)
    auto sort_to = [&](size_t k) { sorted = sort_prefix_to(cands_, sorted, k, LogitOrder{}, &front); };
    auto grow = [&](size_t i) {  // makes entry i sorted
        if (i >= sorted) sort_to(sorted_prefix_for(i, sorted));
    };
    // Weights (runtime/sampling_weights.hpp): a sum over every candidate runs in vectors over the
    // logits as given (the candidates are those in their order, NaN and -inf weighing 0).
    auto p1 = [&](size_t i) { return static_cast<double>(softmax_weight(cands_[i].logit - mxf)); };  // temperature 1
    auto weight_sum = [&](size_t keep, float scale, auto&& w) {
        if (keep == N) return softmax_weight_sum(logits, n, mxf, scale);
        double s = 0;
        for (size_t i = 0; i < keep; ++i) s += w(i);
        return s;
    };

    // top-k: the k best.
    size_t keep = N;
    if (p_.top_k > 0 && static_cast<size_t>(p_.top_k) < keep) {
        keep = static_cast<size_t>(p_.top_k);
        sort_to(keep);
    }
    // top-p: the smallest prefix whose mass (softmax at temperature 1, as llama.cpp's chain before
    // temp) reaches top_p. The normaliser sums the kept candidates (all of them: weight_sum's
    // order; after top-k: sorted).
    if (p_.top_p < 1.0f) {
        const double sum = weight_sum(keep, 1.0f, p1);
        double acc = 0;
        size_t cut = keep;
        for (size_t i = 0; i < keep; ++i) {
            grow(i);
            acc += p1(i) / sum;
            if (acc >= p_.top_p) {
                cut = i + 1;
                break;
            }
        }
        keep = cut;
    }
    // min-p: p_i >= min_p * p_max (p_max = exp(0) = 1, the first candidate's).
    if (p_.min_p > 0.0f) {
        size_t cut = 1;
        for (; cut < keep; ++cut) {
            grow(cut);
            if (!(p1(cut) >= p_.min_p * 1.0)) break;
        }
        keep = cut;
    }

    // Temperature over the survivors, then one draw, walking them in order.
    const float inv_t = std::min(1.0f / p_.temperature, FLT_MAX);  // (a denormal temperature: x * inf would be NaN at x = 0)
    auto pt = [&](size_t i) { return static_cast<double>(softmax_weight((cands_[i].logit - mxf) * inv_t)); };
    const double total = weight_sum(keep, inv_t, pt);
    double r = next_uniform() * total;
    size_t last = 0;  // the last survivor with a non-zero weight (rounding may leave r >= 0)
    for (size_t i = 0; i < keep; ++i) {
        grow(i);
        const double w = pt(i);
        if (w > 0) last = i;
        r -= w;
        if (r < 0) return cands_[i].id;
    }
    return cands_[last].id;
}

}  // namespace kvrt::runtime
