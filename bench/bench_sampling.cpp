// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Sampling one token from a vocabulary's logits, per rule set, beside a full sort of the same
// logits in the same run (what the samplers did before they sorted only the prefix their rules
// read; ratio = sampler time / full-sort time, lower is better). Vocabularies of SmolLM2 (49,152),
// Qwen2.5 (151,936) and Gemma 3 (262,144); logits "peaked" (a few dozen plausible tokens above a
// normal background, as a language model's usually are) and "flat" (a plain normal, whose
// top-p 0.95 nucleus holds ~8% of the vocabulary: the prefix the rules read is long).
// Usage: bench_sampling [--quick]
#include "bench_json.hpp"
#include "runtime/sampler.hpp"
#include "runtime/sampler_chain.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

using namespace kvrt::runtime;
using kvrt::bench::emit_vs;

namespace {

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// Best time per call of f over `reps` rounds of at least min_s seconds each.
template <class F>
double per_call(F&& f, int reps, double min_s) {
    double best = 1e30;
    f();
    for (int r = 0; r < reps; ++r) {
        int it = 0;
        const double t0 = now();
        double t = 0;
        do {
            f();
            ++it;
        } while ((t = now() - t0) < min_s);
        best = std::min(best, t / it);
    }
    return best;
}

std::vector<float> make_logits(size_t n, bool peaked) {
    std::mt19937 rng(7);
    std::normal_distribution<float> nd(0.0f, peaked ? 2.0f : 3.0f);
    std::vector<float> l(n);
    for (float& x : l) x = nd(rng);
    if (peaked)
        for (size_t i = 0; i < 30; ++i) l[(i * 7919) % n] += 12.0f + 0.3f * static_cast<float>(i);
    return l;
}

int run(bool quick) {
    const int reps = quick ? 2 : 5;
    const double min_s = quick ? 0.02 : 0.2;
    for (size_t n : {size_t{49152}, size_t{151936}, size_t{262144}}) {
        for (bool peaked : {true, false}) {
            const std::vector<float> l = make_logits(n, peaked);
            // The baseline: the candidates (logit, id) sorted whole, largest first.
            std::vector<std::pair<float, int32_t>> c(n);
            const double sort_s = per_call(
                [&] {
                    for (size_t i = 0; i < n; ++i) c[i] = {l[i], static_cast<int32_t>(i)};
                    std::sort(c.begin(), c.end(),
                              [](auto& a, auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); });
                },
                reps, min_s);
            struct Rule {
                const char* name;
                SamplerParams p;
            } rules[] = {
                {"greedy", {0.0f, 0, 1.0f, 0.0f, 1}},
                {"temp 0.8", {0.8f, 0, 1.0f, 0.0f, 1}},
                {"temp 0.8, top-k 40", {0.8f, 40, 1.0f, 0.0f, 1}},
                {"temp 0.8, top-p 0.95", {0.8f, 0, 0.95f, 0.0f, 1}},
                {"temp 0.8, min-p 0.05", {0.8f, 0, 1.0f, 0.05f, 1}},
            };
            const std::string extra = "\"vocab\":" + std::to_string(n) + ",\"logits\":\"" + (peaked ? "peaked" : "flat") + "\"";
            for (const Rule& r : rules) {
                Sampler s(r.p);
                const double t = per_call([&] { (void)s.sample(l.data(), n); }, reps, min_s);
                emit_vs("sampling", "sample_us", t * 1e6, "us", "full_sort_us", sort_s * 1e6,
                        extra + ",\"rules\":\"" + r.name + "\"");
            }
            // A chain as `kvrt run --temp 0.8 --top-p 0.95 --repeat-penalty 1.1` builds it.
            SamplerChain chain(1);
            SamplerStage st;
            st.type = StageType::Penalties;
            st.repeat = 1.1f;
            chain.add(st);
            chain.add(SamplerStage{StageType::TopP, 0, 0.95f});
            chain.add(SamplerStage{StageType::Temperature, 0, 1.0f, 0.8f});
            chain.add(SamplerStage{StageType::Dist});
            std::vector<int32_t> hist;
            for (size_t i = 0; i < 64; ++i) hist.push_back(static_cast<int32_t>((i * 104729) % n));
            chain.begin(hist.data(), hist.size());
            const double t = per_call([&] { (void)chain.sample(l.data(), n); }, reps, min_s);
            emit_vs("sampling", "sample_us", t * 1e6, "us", "full_sort_us", sort_s * 1e6,
                    extra + ",\"rules\":\"chain: penalties 1.1, top-p 0.95, temp 0.8, dist\"");
        }
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    bool quick = false;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--quick") == 0) quick = true;
        else {
            std::fprintf(stderr, "usage: bench_sampling [--quick]\n");
            return 2;
        }
    }
    return run(quick);
}
