// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors
#include "fidelity/kl_divergence.hpp"

#include "util/error.hpp"

#include <algorithm>
#include <cmath>
#include <string>

namespace kvrt::fidelity {

double kl_divergence(const LogitsRecord& base, const LogitsRecord& other) {
    KVRT_CHECK(base.q.size() == other.q.size(), KVRT_ERR_MISMATCH,
               "KL: records of " + std::to_string(base.q.size()) + " and " + std::to_string(other.q.size()) +
                   " entries");
    KVRT_CHECK(base.index == other.index && base.target == other.target, KVRT_ERR_MISMATCH,
               "KL: records of positions " + std::to_string(base.index) + " and " + std::to_string(other.index));
    if (base.q == other.q && base.lp_max == other.lp_max && base.lp_floor == other.lp_floor) return 0.0;
    std::vector<double> a, b;
    base.log_probs(a);
    other.log_probs(b);
    double kl = 0;
    for (size_t i = 0; i < a.size(); ++i) kl += std::exp(a[i]) * (a[i] - b[i]);
    return std::max(kl, 0.0);  // rounding of near-equal distributions can go a hair below 0
}

void KlSummary::add(const LogitsRecord& base, const LogitsRecord& other) {
    kl_.push_back(kl_divergence(base, other));
    same_top1_ += base.argmax == other.argmax ? 1 : 0;
    nll_base_ -= base.lp_target;
    nll_other_ -= other.lp_target;
}

double KlSummary::mean() const {
    double s = 0;
    for (double v : kl_) s += v;
    return kl_.empty() ? 0.0 : s / static_cast<double>(kl_.size());
}

double KlSummary::quantile(double q) const {
    if (kl_.empty()) return 0.0;
    std::vector<double> v = kl_;
    std::sort(v.begin(), v.end());
    const size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
    return v[std::min(v.size() - 1, rank == 0 ? 0 : rank - 1)];
}

double KlSummary::median() const {
    if (kl_.empty()) return 0.0;
    std::vector<double> v = kl_;
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
double KlSummary::p99() const { return quantile(0.99); }
double KlSummary::max() const { return kl_.empty() ? 0.0 : *std::max_element(kl_.begin(), kl_.end()); }
double KlSummary::top1_agreement() const {
    return kl_.empty() ? 0.0 : static_cast<double>(same_top1_) / static_cast<double>(kl_.size());
}
double KlSummary::ppl_base() const { return kl_.empty() ? 0.0 : std::exp(nll_base_ / static_cast<double>(kl_.size())); }
double KlSummary::ppl_other() const { return kl_.empty() ? 0.0 : std::exp(nll_other_ / static_cast<double>(kl_.size())); }
double KlSummary::ppl_ratio() const { return kl_.empty() ? 0.0 : std::exp((nll_other_ - nll_base_) / static_cast<double>(kl_.size())); }

}  // namespace kvrt::fidelity
