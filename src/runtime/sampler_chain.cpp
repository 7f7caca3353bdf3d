// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

#include "runtime/sampler_chain.hpp"
#include "runtime/logit_scan.hpp"
#include "runtime/sampling_weights.hpp"
#include "runtime/sorted_prefix.hpp"

#include "util/error.hpp"

#include <algorithm>
#include <cmath>
#include <string>

namespace kvrt::runtime {

namespace {
[[noreturn]] void bad(const std::string& m) { fail(KVRT_ERR_INVALID_ARGUMENT, m); }
constexpr size_t kMaxBias = size_t{1} << 24;
}  // namespace

void SamplerChain::add(SamplerStage st) {
    if (!stages_.empty() && (stages_.back().type == StageType::Dist || stages_.back().type == StageType::Greedy))
        fail(KVRT_ERR_INVALID_STATE, "the chain already ends in a dist or greedy stage; no stage may follow it");
    switch (st.type) {
        case StageType::Penalties:
            if (st.last_n < -1) bad("penalty_last_n must be -1 (the whole history), 0 (off) or positive, got " + std::to_string(st.last_n));
            if (!std::isfinite(st.repeat) || st.repeat <= 0.0f)
                bad("repeat_penalty must be finite and > 0 (1 = off), got " + std::to_string(st.repeat));
            if (!std::isfinite(st.frequency)) bad("frequency_penalty is not finite");
            if (!std::isfinite(st.presence)) bad("presence_penalty is not finite");
            if (st.last_n == -1) whole_history_ = true;
            else max_window_ = std::max(max_window_, static_cast<size_t>(st.last_n));
            break;
        case StageType::LogitBias:
            if (st.bias.size() > kMaxBias) bad("n_bias above 2^24");
            for (size_t i = 0; i < st.bias.size(); ++i) {
                if (st.bias[i].first < 0)
                    bad("bias_tokens[" + std::to_string(i) + "] is negative (" + std::to_string(st.bias[i].first) + ")");
                if (std::isnan(st.bias[i].second)) bad("bias_values[" + std::to_string(i) + "] is NaN");
            }
            break;
        case StageType::TopK:
            if (st.top_k < 0) bad("top_k is negative (" + std::to_string(st.top_k) + "); 0 = off");
            break;
        case StageType::TopP:
            if (!(st.p > 0.0f && st.p <= 1.0f)) bad("p of a top-p stage must be in (0, 1], got " + std::to_string(st.p));
            break;
        case StageType::MinP:
            if (!(st.p >= 0.0f && st.p <= 1.0f)) bad("p of a min-p stage must be in [0, 1], got " + std::to_string(st.p));
            break;
        case StageType::Temperature:
            if (!std::isfinite(st.temperature)) bad("temperature is not finite");
            break;
        case StageType::Dist:
        case StageType::Greedy:
            break;
        default:
            bad("stage type " + std::to_string(static_cast<int32_t>(st.type)) + " is not a kvrt_sampler_stage_type");
    }
    stages_.push_back(std::move(st));
}

void SamplerChain::begin(const int32_t* prompt, size_t n) {
    history_.clear();
    if (!whole_history_ && n > max_window_) {
        prompt += n - max_window_;
        n = max_window_;
    }
    if (n) history_.assign(prompt, prompt + n);
}

void SamplerChain::accept(int32_t token) {
    history_.push_back(token);
    trim_history();
}

void SamplerChain::trim_history() {
    // Keep at most twice the window so the erase is amortised O(1).
    if (!whole_history_ && history_.size() > 2 * max_window_ + 64)
        history_.erase(history_.begin(), history_.end() - static_cast<std::ptrdiff_t>(max_window_));
}

double SamplerChain::next_uniform() noexcept {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);  // splitmix64, as Sampler
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return static_cast<double>(z >> 11) * 0x1.0p-53;
}

bool SamplerChain::normalize() {
    // One counting pass (no branch per candidate), then a second only where something is not finite.
    size_t n_inf = 0, n_bad = 0;  // +inf; NaN or -inf
    for (const Cand& c : cands_) {
        n_inf += c.logit == INFINITY;
        n_bad += !(c.logit <= INFINITY) | (c.logit == -INFINITY);
    }
    if (n_bad == 0 && n_inf == 0) return false;
    if (n_inf > 0) {
        std::erase_if(cands_, [](const Cand& c) { return c.logit != INFINITY; });
        for (Cand& c : cands_) c.logit = 0.0;
        std::sort(cands_.begin(), cands_.end(), [](const Cand& a, const Cand& b) { return a.id < b.id; });
        sorted_ = cands_.size();  // all equal: id order is logit order
        front_ = 0;
        return true;
    }
    std::erase_if(cands_, [](const Cand& c) { return std::isnan(c.logit) || c.logit == -INFINITY; });
    if (cands_.empty()) bad("no logit can be sampled: every candidate is NaN or -inf after the chain's stages");
    return false;
}

void SamplerChain::sort_to(size_t k) {
    id_order_ = false;
    sorted_ = sort_prefix_to(cands_, sorted_, k, LogitOrder{}, &front_);
}

double SamplerChain::softmax_sum(double& mx) {
    // One pass over the candidates: their logits as floats (contiguous, for the vector sum) and
    // the largest (float rounding is monotone: the largest float is the largest rounded). Where
    // the largest is beyond float's range (a temperature of 1e-39, a bias of 3e38: chain logits are
    // doubles), the floats are taken of logit - max instead, in a second pass.
    mx = -INFINITY;
    logits_.resize(cands_.size());
    for (size_t i = 0; i < cands_.size(); ++i) {
        logits_[i] = static_cast<float>(cands_[i].logit);
        mx = std::max(mx, cands_[i].logit);
    }
    shifted_ = !std::isfinite(static_cast<float>(mx));
    if (shifted_)
        for (size_t i = 0; i < cands_.size(); ++i) logits_[i] = static_cast<float>(cands_[i].logit - mx);
    return softmax_weight_sum(logits_.data(), logits_.size(), shifted_ ? 0.0f : static_cast<float>(mx), 1.0f);
}

double SamplerChain::weight(size_t i, double mx) const noexcept {  // softmax_sum's term ((x - 0) * 1 is x)
    return softmax_weight(shifted_ ? static_cast<float>(cands_[i].logit - mx)
                                   : static_cast<float>(cands_[i].logit) - static_cast<float>(mx));
}

// The stages keep at least one candidate (the non-finite rule refuses a row with none; top-p and
// min-p keep the most probable): an empty list here is a bug, reported instead of read.
void SamplerChain::require_candidates() const {
    if (cands_.empty()) fail(KVRT_ERR_INTERNAL, "sampler chain: no candidate is left for the last stage");
}

int32_t SamplerChain::argmax_cand() const {
    require_candidates();
    size_t best = 0;
    for (size_t i = 1; i < cands_.size(); ++i)
        if (LogitOrder{}(cands_[i], cands_[best])) best = i;
    return cands_[best].id;
}

// One draw from the softmax of the candidates, walking them in logit order.
int32_t SamplerChain::draw() {
    require_candidates();
    double mx = 0;
    const double sum = softmax_sum(mx);
    double r = next_uniform();
    size_t last = 0;
    for (size_t i = 0; i < cands_.size(); ++i) {
        grow(i);
        const double p = weight(i, mx) / sum;
        if (p > 0) last = i;
        r -= p;
        if (r < 0) return cands_[i].id;
    }
    return cands_[last].id;
}

int32_t SamplerChain::sample(const float* logits, size_t n) {
    // The candidates: the finite logits (the non-finite rule of normalize(), decided by vector
    // counts over the row instead of passes over 16-byte candidates: a whole vocabulary of them
    // is 4 MiB, and each pass over it ~0.2 ms).
    const NonFinite nf = count_non_finite(logits, n);
    bool forced = nf.pos_inf > 0;
    id_order_ = false;
    cands_.resize(forced ? nf.pos_inf : n - nf.nan - nf.neg_inf);
    Cand* out = cands_.data();
    if (forced) {  // the +inf ids in id order, all equal (id order is logit order)
        for (size_t i = 0; i < n; ++i)
            if (logits[i] == INFINITY) *out++ = {0.0, static_cast<int32_t>(i)};
        sorted_ = cands_.size();
        front_ = 0;
    } else {
        if (cands_.empty()) bad("no logit can be sampled: every candidate is NaN or -inf after the chain's stages");
        id_order_ = cands_.size() == n;
        if (id_order_) {
            for (size_t i = 0; i < n; ++i) out[i] = {static_cast<double>(logits[i]), static_cast<int32_t>(i)};
        } else {
            for (size_t i = 0; i < n; ++i)
                if (std::isfinite(logits[i])) *out++ = {static_cast<double>(logits[i]), static_cast<int32_t>(i)};
        }
        sorted_ = 0;
        front_ = 0;
    }
    for (const SamplerStage& st : stages_) {
        switch (st.type) {
            case StageType::Penalties: {
                if (forced || st.last_n == 0 || history_.empty()) break;
                const size_t w = st.last_n < 0 ? history_.size() : std::min(history_.size(), static_cast<size_t>(st.last_n));
                // Counts per id in a dense table (a hash lookup per candidate was ~1.7 ms per token
                // over 262,144 logits); ids of the history outside the logits are never candidates.
                if (counts_.size() < n) counts_.assign(n, 0);
                for (size_t i = history_.size() - w; i < history_.size(); ++i)
                    if (history_[i] >= 0 && static_cast<size_t>(history_[i]) < n) counts_[static_cast<size_t>(history_[i])]++;
                bool overflow = false;  // (finite stays finite unless earlier stages took it near 1e308)
                auto penalise = [&](Cand& c, int32_t k) {
                    if (c.logit <= 0) c.logit *= st.repeat;
                    else c.logit /= st.repeat;
                    c.logit -= k * static_cast<double>(st.frequency) + static_cast<double>(st.presence);
                    overflow |= !std::isfinite(c.logit);
                };
                if (id_order_ && cands_.size() == n) {
                    // Candidate id is at index id (as built, every logit finite, nothing reordered):
                    // visit the window's ids, not every candidate.
                    for (size_t i = history_.size() - w; i < history_.size(); ++i) {
                        const int32_t t = history_[i];
                        if (t < 0 || static_cast<size_t>(t) >= n || counts_[static_cast<size_t>(t)] == 0) continue;
                        penalise(cands_[static_cast<size_t>(t)], counts_[static_cast<size_t>(t)]);
                        counts_[static_cast<size_t>(t)] = 0;  // (once per id)
                    }
                } else {
                    for (Cand& c : cands_)
                        if (const int32_t k = counts_[static_cast<size_t>(c.id)]; k != 0) penalise(c, k);
                    for (size_t i = history_.size() - w; i < history_.size(); ++i)
                        if (history_[i] >= 0 && static_cast<size_t>(history_[i]) < n) counts_[static_cast<size_t>(history_[i])] = 0;
                }
                sorted_ = 0;
                front_ = 0;
                // (normalize() only where a logit overflowed: the only way a penalty makes one
                // non-finite; a pass over every candidate is ~0.2 ms at 262,144 of them.)
                if (overflow) forced = normalize();
                break;
            }
            case StageType::LogitBias: {
                if (forced) break;
                for (const auto& [t, b] : st.bias)
                    if (static_cast<size_t>(t) >= n)
                        bad("a logit bias names token " + std::to_string(t) + ", outside the " + std::to_string(n) +
                            " logits sampled");
                if (bias_.size() < n) bias_.assign(n, 0.0), biased_.assign(n, 0);
                for (const auto& [t, b] : st.bias) {
                    bias_[static_cast<size_t>(t)] += b;
                    biased_[static_cast<size_t>(t)] = 1;
                }
                for (Cand& c : cands_)
                    if (biased_[static_cast<size_t>(c.id)]) c.logit += bias_[static_cast<size_t>(c.id)];
                for (const auto& [t, b] : st.bias) bias_[static_cast<size_t>(t)] = 0.0, biased_[static_cast<size_t>(t)] = 0;
                sorted_ = 0;
                front_ = 0;
                forced = normalize();
                break;
            }
            case StageType::TopK:
                if (st.top_k > 0 && static_cast<size_t>(st.top_k) < cands_.size()) {
                    sort_to(static_cast<size_t>(st.top_k));
                    cands_.resize(static_cast<size_t>(st.top_k));
                    sorted_ = cands_.size();
                    front_ = 0;
                }
                break;
            case StageType::TopP: {
                if (st.p >= 1.0f) break;
                double mx = 0;
                const double sum = softmax_sum(mx);
                double acc = 0;
                size_t cut = cands_.size();
                for (size_t i = 0; i < cands_.size(); ++i) {
                    grow(i);
                    acc += weight(i, mx) / sum;
                    if (acc >= st.p) {
                        cut = i + 1;
                        break;
                    }
                }
                cands_.resize(cut);
                sorted_ = std::min(sorted_, cut);
                front_ = std::min(front_, cut);  // (the front still comes first)
                break;
            }
            case StageType::MinP: {
                if (st.p <= 0.0f) break;
                double mx = 0;
                const double sum = softmax_sum(mx);
                probs_.resize(cands_.size());
                double pmax = 0;
                for (size_t i = 0; i < cands_.size(); ++i) pmax = std::max(pmax, probs_[i] = weight(i, mx) / sum);
                const double floor = static_cast<double>(st.p) * pmax;
                // (an order-keeping filter: the sorted prefix's survivors stay first and in order)
                size_t k = 0, kept_sorted = 0;
                for (size_t i = 0; i < cands_.size(); ++i)
                    if (probs_[i] >= floor) {
                        kept_sorted += i < sorted_;
                        cands_[k++] = cands_[i];
                    }
                cands_.resize(k);
                sorted_ = kept_sorted;
                front_ = 0;
                break;
            }
            case StageType::Temperature:
                if (st.temperature <= 0.0f) {
                    const int32_t best = argmax_cand();
                    std::erase_if(cands_, [best](const Cand& c) { return c.id != best; });
                    sorted_ = cands_.size();
                    front_ = 0;
                } else {
                    bool overflow = false;  // (stacked stages of denormal temperatures can pass 1e308)
                    for (Cand& c : cands_) overflow |= std::isinf(c.logit /= static_cast<double>(st.temperature));
                    sorted_ = 0;  // (division keeps the order up to ties that rounding may create)
                    front_ = 0;
                    if (overflow) forced = normalize();
                }
                break;
            case StageType::Dist:
                return draw();
            case StageType::Greedy:
                return argmax_cand();
        }
    }
    return argmax_cand();
}

}  // namespace kvrt::runtime
