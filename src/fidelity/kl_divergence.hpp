// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors
// KL divergence between the next-token distributions of two logits records
// (logits_file.hpp) and its summary over a text, as `kvrt perplexity --kl` prints it.
#pragma once

#include "fidelity/logits_file.hpp"

#include <cstddef>
#include <vector>

namespace kvrt::fidelity {

// KL(base || other) = sum_i p_base(i) (log p_base(i) - log p_other(i)) in nats, on the
// records' decoded (renormalised) log-probabilities. 0 for equal records. Throws
// kvrt::Error MISMATCH for records of other sizes or positions.
double kl_divergence(const LogitsRecord& base, const LogitsRecord& other);

// Accumulates per-position comparisons.
class KlSummary {
public:
    void add(const LogitsRecord& base, const LogitsRecord& other);
    size_t count() const noexcept { return kl_.size(); }
    double mean() const;
    double median() const;
    double p99() const;   // the 99th percentile (nearest rank)
    double max() const;
    // Positions where the two argmax ids agree, as a fraction.
    double top1_agreement() const;
    // exp(mean NLL of other) / exp(mean NLL of base), from the exact lp_target fields.
    double ppl_ratio() const;
    double ppl_base() const;
    double ppl_other() const;

private:
    double quantile(double q) const;
    std::vector<double> kl_;
    size_t same_top1_ = 0;
    double nll_base_ = 0, nll_other_ = 0;
};

}  // namespace kvrt::fidelity
