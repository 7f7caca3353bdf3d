// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Helpers of the CED tests: tiny models built in memory.
#pragma once

#include "model/arch/ced_generator.hpp"
#include "model/arch/ced_weights.hpp"
#include "model/gguf/gguf.hpp"
#include "model/gguf/gguf_writer.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <vector>

namespace kvrt::test {

// A GGUF held in memory with the model loaded from it (the file outlives the weights' use).
struct CedModel {
    std::vector<uint8_t> bytes;
    std::unique_ptr<GgufFile> file;
    std::shared_ptr<const ced::CedWeights> weights;
};

inline CedModel make_ced_model(const ced::CedConfig& cfg, uint64_t seed = 7,
                               TensorType type = TensorType::F32) {
    CedModel m;
    GgufWriter w;
    ced::GeneratorOptions opt;
    opt.cfg = cfg;
    opt.seed = seed;
    opt.weight_type = type;
    ced::fill_random_gguf(w, opt);
    m.bytes = w.to_bytes();
    m.file = std::make_unique<GgufFile>(GgufFile::from_buffer(m.bytes.data(), m.bytes.size(), "ced-test"));
    m.weights = ced::CedWeights::load(*m.file);
    return m;
}

inline std::vector<int32_t> random_tokens(int64_t n, int32_t vocab, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<int32_t> t(n);
    for (auto& x : t) x = static_cast<int32_t>(rng() % static_cast<uint32_t>(vocab));
    return t;
}

inline int32_t argmax(const std::vector<float>& v) {
    int32_t best = 0;
    for (size_t i = 1; i < v.size(); i++)
        if (v[i] > v[best]) best = static_cast<int32_t>(i);
    return best;
}

// Largest |a[i] - b[i]| of two logit vectors of the same size (in double).
inline double logits_max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
    REQUIRE(a.size() == b.size());
    double m = 0;
    for (size_t i = 0; i < a.size(); i++) m = std::max(m, std::fabs(double(a[i]) - double(b[i])));
    return m;
}

}  // namespace kvrt::test
