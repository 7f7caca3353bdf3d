// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Sampler: greedy, top-k / top-p / min-p truncation, temperature, seeding.
#include <doctest/doctest.h>

#include "runtime/sampler.hpp"
#include "runtime/sampler_chain.hpp"
#include "runtime/sampling_weights.hpp"
#include "runtime/sorted_prefix.hpp"
#include "util/isa.hpp"
#include "util/error.hpp"

#include <algorithm>
#include <array>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

using kvrt::runtime::argmax;
using kvrt::runtime::Sampler;
using kvrt::runtime::SamplerParams;
using kvrt::runtime::softmax_weight;
using kvrt::runtime::softmax_weight_sum;

TEST_CASE("sampling: greedy is argmax with ties to the lowest id") {
    std::vector<float> l = {0.5f, 2.0f, -1.0f, 2.0f, 1.9f};
    CHECK(argmax(l.data(), l.size()) == 1);
    Sampler s(SamplerParams{});
    CHECK(s.greedy());
    CHECK(s.sample(l.data(), l.size()) == 1);
    std::vector<float> nan_first = {NAN, 1.0f, 3.0f};
    CHECK(argmax(nan_first.data(), nan_first.size()) == 2);
}

// The left-to-right scan that keeps the first maximum (argmax's definition).
static size_t scan_argmax(const std::vector<float>& l) {
    size_t best = 0;
    for (size_t i = 1; i < l.size(); ++i)
        if (l[i] > l[best] || (std::isnan(l[best]) && !std::isnan(l[i]))) best = i;
    return best;
}

TEST_CASE("sampling: greedy picks what a first-maximum scan picks, NaN, infinities, signed zeros and ties included") {
    // Lengths around the scan's 16-wide blocks, values drawn from a small set so that ties,
    // NaN, +-inf and +-0 land anywhere (also in the tail after the last whole block).
    const float pool[] = {NAN, -INFINITY, INFINITY, 0.0f, -0.0f, 1.0f, -1.0f, 2.5f, 2.5f, -3.0f};
    std::mt19937 rng(11);
    int checked = 0, refused = 0;
    for (size_t n : {1, 2, 15, 16, 17, 31, 32, 33, 47, 100, 257, 4099}) {
        for (int trial = 0; trial < 60; ++trial) {
            std::vector<float> l(n);
            // Some rows mostly NaN / -inf (nothing or little drawable), the rest from the pool.
            const int mode = trial % 4;
            for (float& x : l) {
                const uint32_t r = rng();
                if (mode == 0) x = r % 8 ? NAN : pool[r % 10];
                else if (mode == 1) x = r % 6 ? -INFINITY : pool[r % 10];
                else if (mode == 2) x = pool[r % 10];
                else x = static_cast<float>(static_cast<int>(r % 7)) - 3.0f;  // many ties, no specials
            }
            const size_t want = scan_argmax(l);
            CHECK(static_cast<size_t>(argmax(l.data(), n)) == want);
            bool drawable = false;
            for (float x : l) drawable |= !std::isnan(x) && x != -INFINITY;
            Sampler s(SamplerParams{});
            if (drawable) {
                CHECK(static_cast<size_t>(s.sample(l.data(), n)) == want);
                ++checked;
            } else {
                CHECK_THROWS_AS(s.sample(l.data(), n), kvrt::Error);
                ++refused;
            }
        }
    }
    CHECK(checked > 500);  // both branches were exercised
    CHECK(refused > 10);
    std::vector<float> all_nan(40, NAN);
    CHECK(argmax(all_nan.data(), all_nan.size()) == 0);
    std::vector<float> zeros = {-0.0f, 0.0f, -1.0f};
    CHECK(argmax(zeros.data(), zeros.size()) == 0);  // +0 and -0 tie: the lowest id
}

TEST_CASE("sampling: a candidate's weight is exp within 1e-7, 1 at the largest logit, 0 below float's range and for NaN") {
    // Every 61st float from -0 down to -87 (about 17 million of them), against exp in double.
    double worst = 0;
    float worst_at = 0;
    int checked = 0;
    for (uint32_t b = 0x80000000u; b <= 0xC2AE0000u; b += 61) {  // 0xC2AE0000 = -87
        float x;
        std::memcpy(&x, &b, 4);
        const double e = std::exp(static_cast<double>(x));
        const double rel = std::fabs(static_cast<double>(softmax_weight(x)) - e) / e;
        if (rel > worst) worst = rel, worst_at = x;
        ++checked;
    }
    CAPTURE(worst_at);
    CHECK(checked > 1000000);
    CHECK(worst <= 1e-7);
    CHECK(worst > 0);  // (a float, not the double exp)
    CHECK(softmax_weight(0.0f) == 1.0f);
    CHECK(softmax_weight(-0.0f) == 1.0f);
    CHECK(softmax_weight(-87.5f) == 0.0f);
    CHECK(softmax_weight(-1e30f) == 0.0f);
    CHECK(softmax_weight(-INFINITY) == 0.0f);
    CHECK(softmax_weight(NAN) == 0.0f);
    // Monotone over a dense stretch (a draw walks the weights in logit order).
    float prev = softmax_weight(-20.0f);
    for (float x = nextafterf(-20.0f, 0.0f); x < -19.0f; x = nextafterf(x, 0.0f)) {
        const float w = softmax_weight(x);
        CHECK(w >= prev);
        if (w < prev) break;
        prev = w;
    }
}

// softmax_weight_sum's documented order, in scalars: element i into partial sum i % 16 for the
// whole groups of 16, the 16 folded as a tree (j += j + 8, then + 4, + 2, + 1), the tail in order.
static double ordered_sum(const std::vector<float>& x, float shift, float scale) {
    double slot[16] = {};
    size_t i = 0;
    for (; i + 16 <= x.size(); i += 16)
        for (size_t j = 0; j < 16; ++j) slot[j] += softmax_weight((x[i + j] - shift) * scale);
    for (int h = 8; h >= 1; h /= 2)
        for (int j = 0; j < h; ++j) slot[j] += slot[j + h];
    double t = slot[0];
    for (; i < x.size(); ++i) t += softmax_weight((x[i] - shift) * scale);
    return t;
}

TEST_CASE("sampling: the weight sum gives the same bits on every vector path, in its documented order") {
    const kvrt::Isa active = kvrt::isa_active();
    std::vector<int> paths = {0, 1};
    if (active >= kvrt::Isa::Avx2) paths.push_back(2);
    if (active >= kvrt::Isa::Avx512) paths.push_back(3);
    std::mt19937 rng(3);
    std::normal_distribution<float> nd(0.0f, 4.0f);
    int compared = 0;
    for (size_t n : {0, 1, 15, 16, 17, 31, 32, 33, 100, 4099, 262144}) {
        std::vector<float> x(n);
        for (float& v : x) v = nd(rng);
        if (n > 20) x[3] = NAN, x[17] = -INFINITY, x[n - 1] = -INFINITY;
        float mx = -INFINITY;
        for (float v : x) mx = v > mx ? v : mx;
        for (float scale : {1.0f, 1.25f, 0.01f, 40.0f}) {
            CAPTURE(n);
            CAPTURE(scale);
            const double want = ordered_sum(x, mx, scale);
            double plain = 0;  // in index order, in double: the same terms
            for (float v : x) plain += softmax_weight((v - mx) * scale);
            for (int isa : paths) {
                CAPTURE(isa);
                const double got = softmax_weight_sum(x.data(), n, mx, scale, isa);
                CHECK(std::memcmp(&got, &want, sizeof got) == 0);
                CHECK(std::fabs(got - plain) <= 1e-12 * std::max(1.0, plain));
                ++compared;
            }
        }
    }
    CHECK(compared >= 11 * 4 * 2);
    INFO("vector paths compared on this CPU: ", paths.size() - 1);
}

// The sampler's rules over a fully sorted copy (as the sampler computed them before it sorted
// only the prefix its rules read), drawing with the uniform u.
static int32_t full_sort_sample(const std::vector<float>& l, const SamplerParams& p, double u) {
    std::vector<std::pair<float, int32_t>> c;
    for (size_t i = 0; i < l.size(); ++i)
        if (std::isfinite(l[i])) c.push_back({l[i], static_cast<int32_t>(i)});
    std::sort(c.begin(), c.end(), [](auto& a, auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); });
    size_t keep = c.size();
    if (p.top_k > 0 && static_cast<size_t>(p.top_k) < keep) keep = static_cast<size_t>(p.top_k);
    const float mx = c[0].first;
    std::vector<double> pr(keep);
    double sum = 0;
    for (size_t i = 0; i < keep; ++i) sum += (pr[i] = softmax_weight(c[i].first - mx));
    if (p.top_p < 1.0f) {
        double acc = 0;
        size_t cut = keep;
        for (size_t i = 0; i < keep; ++i)
            if ((acc += pr[i] / sum) >= p.top_p) {
                cut = i + 1;
                break;
            }
        keep = cut;
    }
    if (p.min_p > 0.0f) {
        size_t cut = 1;
        while (cut < keep && pr[cut] >= p.min_p * pr[0]) ++cut;
        keep = cut;
    }
    double total = 0;
    const float inv_t = std::min(1.0f / p.temperature, FLT_MAX);
    for (size_t i = 0; i < keep; ++i) total += (pr[i] = softmax_weight((c[i].first - mx) * inv_t));
    double r = u * total;
    size_t last = 0;
    for (size_t i = 0; i < keep; ++i) {
        if (pr[i] > 0) last = i;
        if ((r -= pr[i]) < 0) return c[i].second;
    }
    return c[last].second;
}

TEST_CASE("sampling: the rules over a prefix sorted on demand draw what they draw over a full sort") {
    // Vocabularies from 1 to 5,000 logits (spread, peaked, with ties and non-finite values) under
    // every truncation rule, alone and together, at low and high temperatures: the same token as
    // the full sort for the same uniform, draw after draw. (The two may differ only where a sum over
    // every candidate, taken in another order, rounds across a draw's boundary: ~1e-16 per draw.)
    std::mt19937 rng(5);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    const SamplerParams cfgs[] = {
        {0.8f, 0, 1.0f, 0.0f, 1},     {1.0f, 40, 1.0f, 0.0f, 2},      {0.7f, 0, 0.95f, 0.0f, 3},
        {1.3f, 0, 1.0f, 0.05f, 4},    {0.8f, 40, 0.95f, 0.05f, 5},    {3.0f, 0, 0.5f, 0.0f, 6},
        {0.2f, 0, 0.999f, 0.0f, 7},   {100.0f, 0, 1.0f, 0.0f, 8},     {1.0f, 1000, 0.9f, 0.01f, 9},
    };
    int draws = 0, far = 0;
    for (size_t n : {1, 2, 7, 64, 65, 300, 5000}) {
        for (float spread : {0.5f, 3.0f, 12.0f}) {
            std::vector<float> l(n);
            for (float& x : l) x = std::round(nd(rng) * spread * 4.0f) / 4.0f;  // quarter steps: ties
            if (n > 10) l[3] = NAN, l[5] = -INFINITY;
            for (const SamplerParams& p : cfgs) {
                CAPTURE(n);
                CAPTURE(spread);
                CAPTURE(p.seed);
                Sampler s(p), u(p);  // u: the same PRNG stream, read by the reference
                for (int d = 0; d < 20; ++d) {
                    const int32_t got = s.sample(l.data(), n);
                    CHECK(got == full_sort_sample(l, p, u.next_uniform()));
                    ++draws;
                    int rank = 0;  // how deep in the order the draw went
                    for (float x : l) rank += x > l[static_cast<size_t>(got)];
                    far += rank >= 64;
                }
            }
        }
    }
    CHECK(draws == 7 * 3 * 9 * 20);
    CHECK(far > 0);  // some draws walked past the first chunk of the sorted prefix
}

TEST_CASE("sampling: a sorted prefix extended inside a split-off front is the full sort's prefix") {
    using kvrt::runtime::LogitOrder;
    using kvrt::runtime::sort_prefix_to;
    struct C {
        float logit;
        int32_t id;
    };
    std::mt19937 rng(13);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    int splits = 0, past_front = 0;
    for (size_t n : {1100, 5000, 20000}) {
        for (size_t target : {64, 256}) {
            for (float spread : {0.25f, 4.0f}) {  // (0.25: quarter steps of a narrow normal, many ties)
                std::vector<C> v(n);
                for (size_t i = 0; i < n; ++i) v[i] = {std::round(nd(rng) * spread * 4.0f) / 4.0f, static_cast<int32_t>(i)};
                std::vector<C> full = v;
                std::sort(full.begin(), full.end(), LogitOrder{});
                size_t sorted = 0, front = 0;
                for (size_t k : {1, 64, 65, 300, 1000, 4000, 20000}) {
                    CAPTURE(n);
                    CAPTURE(target);
                    CAPTURE(k);
                    const size_t front_before = front;
                    sorted = sort_prefix_to(v, sorted, k, LogitOrder{}, &front, target);
                    REQUIRE(sorted == std::min(k, n));
                    bool same = true;
                    for (size_t i = 0; i < sorted; ++i) same &= v[i].id == full[i].id;
                    CHECK(same);
                    if (k == 1 && n >= 16 * target) CHECK(front > 0);  // split at the first extension
                    splits += k == 1 && front > 0;
                    past_front += front_before > 0 && k > front_before;  // (then the front is part of the prefix)
                    if (front > 0 && front < n) {  // the front comes first
                        float lo = INFINITY, hi = -INFINITY;
                        for (size_t i = 0; i < front; ++i) lo = std::min(lo, v[i].logit);
                        for (size_t i = front; i < n; ++i) hi = std::max(hi, v[i].logit);
                        CHECK(lo > hi);
                    }
                }
                std::vector<int32_t> ids;  // still a permutation
                for (const C& c : v) ids.push_back(c.id);
                std::sort(ids.begin(), ids.end());
                for (size_t i = 0; i < n; ++i) REQUIRE(ids[i] == static_cast<int32_t>(i));
            }
        }
    }
    CHECK(splits > 0);
    CHECK(past_front > 0);  // prefixes longer than the front were extended over the rest
}

TEST_CASE("sampling: draws over a vocabulary large enough to split draw what a full sort draws") {
    // 140,000 logits: the samplers split a front off at the first extension (kFrontTarget).
    std::mt19937 rng(17);
    std::normal_distribution<float> nd(0.0f, 2.5f);
    const size_t n = 140000;
    std::vector<float> l(n);
    for (float& x : l) x = std::round(nd(rng) * 8.0f) / 8.0f;
    for (size_t i = 0; i < 20; ++i) l[(i * 6007) % n] += 9.0f;
    l[11] = NAN;
    const SamplerParams cfgs[] = {{0.8f, 0, 1.0f, 0.0f, 21}, {1.0f, 0, 0.95f, 0.0f, 22}, {2.0f, 0, 0.99f, 0.0f, 23}};
    int draws = 0;
    for (const SamplerParams& p : cfgs) {
        CAPTURE(p.seed);
        Sampler s(p), u(p);
        for (int d = 0; d < 4; ++d, ++draws) CHECK(s.sample(l.data(), n) == full_sort_sample(l, p, u.next_uniform()));
    }
    CHECK(draws == 12);
}

// A chain's stages over a fully sorted copy (as the chain ran them before it sorted only the
// prefix a stage reads): penalties over `hist`, then top-k, top-p, min-p, temperature and a draw
// with the uniform u; a stage is off where its parameter says so.
static int32_t full_sort_chain(const std::vector<float>& l, const std::vector<int32_t>& hist, float repeat, int top_k,
                               float top_p, float min_p, float temp, double u) {
    std::vector<std::pair<double, int32_t>> c;
    for (size_t i = 0; i < l.size(); ++i) c.push_back({l[i], static_cast<int32_t>(i)});
    std::erase_if(c, [](auto& x) { return std::isnan(x.first) || x.first == -INFINITY; });
    std::map<int32_t, int> count;
    for (int32_t t : hist) count[t]++;
    for (auto& x : c)
        if (count.count(x.second)) x.first = x.first <= 0 ? x.first * repeat : x.first / repeat;
    auto by = [](auto& a, auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); };
    auto softmax = [&](std::vector<double>& p) {
        double mx = -INFINITY, sum = 0;
        for (auto& x : c) mx = std::max(mx, x.first);
        p.resize(c.size());
        for (size_t i = 0; i < c.size(); ++i) sum += (p[i] = softmax_weight(static_cast<float>(c[i].first) - static_cast<float>(mx)));
        for (double& v : p) v /= sum;
    };
    std::vector<double> p;
    if (top_k > 0 && static_cast<size_t>(top_k) < c.size()) {
        std::partial_sort(c.begin(), c.begin() + top_k, c.end(), by);
        c.resize(static_cast<size_t>(top_k));
    }
    if (top_p < 1.0f) {
        std::sort(c.begin(), c.end(), by);
        softmax(p);
        double acc = 0;
        size_t cut = c.size();
        for (size_t i = 0; i < c.size(); ++i)
            if ((acc += p[i]) >= top_p) {
                cut = i + 1;
                break;
            }
        c.resize(cut);
    }
    if (min_p > 0.0f) {
        softmax(p);
        const double floor = static_cast<double>(min_p) * *std::max_element(p.begin(), p.end());
        std::vector<std::pair<double, int32_t>> k;
        for (size_t i = 0; i < c.size(); ++i)
            if (p[i] >= floor) k.push_back(c[i]);
        c = k;
    }
    for (auto& x : c) x.first /= static_cast<double>(temp);
    std::sort(c.begin(), c.end(), by);
    softmax(p);
    size_t last = 0;
    for (size_t i = 0; i < c.size(); ++i) {
        if (p[i] > 0) last = i;
        if ((u -= p[i]) < 0) return c[i].second;
    }
    return c[last].second;
}

TEST_CASE("sampling: a chain's stages over a prefix sorted on demand draw what they draw over a full sort") {
    using kvrt::runtime::SamplerChain;
    using kvrt::runtime::SamplerStage;
    using kvrt::runtime::StageType;
    std::mt19937 rng(9);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    struct Cfg {
        float repeat;
        int top_k;
        float top_p, min_p, temp;
    };
    const Cfg cfgs[] = {{1.0f, 0, 1.0f, 0.0f, 0.8f}, {1.3f, 0, 1.0f, 0.0f, 1.0f},  {1.1f, 40, 1.0f, 0.0f, 0.7f},
                        {1.1f, 0, 0.9f, 0.0f, 1.2f}, {1.0f, 0, 1.0f, 0.05f, 0.8f}, {1.2f, 50, 0.95f, 0.02f, 2.0f},
                        {1.0f, 0, 0.6f, 0.1f, 5.0f}};
    int draws = 0;
    for (size_t n : {3, 64, 65, 700, 4000}) {
        std::vector<float> l(n);
        for (float& x : l) x = std::round(nd(rng) * 8.0f) / 4.0f;  // ties
        if (n > 10) l[2] = NAN;
        std::vector<int32_t> hist;
        for (size_t i = 0; i < std::min<size_t>(n, 12); ++i) hist.push_back(static_cast<int32_t>(rng() % n));
        for (size_t ci = 0; ci < std::size(cfgs); ++ci) {
            const Cfg& f = cfgs[ci];
            CAPTURE(n);
            CAPTURE(ci);
            SamplerChain chain(100 + ci);
            SamplerStage st;
            st.type = StageType::Penalties;
            st.last_n = -1;
            st.repeat = f.repeat;
            chain.add(st);
            if (f.top_k > 0) chain.add(SamplerStage{StageType::TopK, f.top_k});
            if (f.top_p < 1.0f) chain.add(SamplerStage{StageType::TopP, 0, f.top_p});
            if (f.min_p > 0.0f) chain.add(SamplerStage{StageType::MinP, 0, f.min_p});
            chain.add(SamplerStage{StageType::Temperature, 0, 1.0f, f.temp});
            chain.add(SamplerStage{StageType::Dist});
            chain.begin(hist.data(), hist.size());
            Sampler u(SamplerParams{1.0f, 0, 1.0f, 0.0f, 100 + ci});  // the same splitmix64 stream
            for (int d = 0; d < 15; ++d) {
                CHECK(chain.sample(l.data(), n) == full_sort_chain(l, hist, f.repeat, f.top_k, f.top_p, f.min_p, f.temp, u.next_uniform()));
                ++draws;
            }
        }
    }
    CHECK(draws == 5 * 7 * 15);
}

TEST_CASE("sampling: a chain whose logits outgrow float (a tiny temperature, a huge bias) still weighs them") {
    // Chain logits are doubles: a temperature of 1e-39 takes logits of ~1..3 past float's range
    // (3.4e38), as does a logit bias of 3e38 on a logit near 1e38. The weights (floats) must be
    // taken of logit - max, or the largest would weigh inf - inf = NaN and min-p keep nothing.
    using kvrt::runtime::SamplerChain;
    using kvrt::runtime::SamplerStage;
    using kvrt::runtime::StageType;
    std::vector<float> l(300);
    for (size_t i = 0; i < l.size(); ++i) l[i] = 1.0f + 2.0f * std::sin(static_cast<float>(i) * 0.7f);
    const int32_t best = argmax(l.data(), l.size());
    for (int order = 0; order < 2; ++order) {
        CAPTURE(order);
        SamplerChain chain(3);
        SamplerStage temp{StageType::Temperature, 0, 1.0f, 1e-39f};  // (logits 1..3 become 1e39..3e39)
        if (order == 0) chain.add(temp);
        chain.add(SamplerStage{StageType::MinP, 0, 0.05f});
        chain.add(SamplerStage{StageType::TopP, 0, 0.9f});
        if (order == 1) chain.add(temp);
        chain.add(SamplerStage{StageType::Dist});
        for (int d = 0; d < 20; ++d) CHECK(chain.sample(l.data(), l.size()) == best);
    }
    std::vector<float> big(l);
    big[7] = 1e38f;
    SamplerChain biased(4);
    SamplerStage bias;
    bias.type = StageType::LogitBias;
    bias.bias = {{7, 3e38f}, {8, 3e38f}};
    biased.add(bias);
    biased.add(SamplerStage{StageType::MinP, 0, 0.05f});
    biased.add(SamplerStage{StageType::Dist});
    for (int d = 0; d < 20; ++d) CHECK(biased.sample(big.data(), big.size()) == 7);  // 4e38 against 3e38 + ~3
    // Seven stages of a temperature of 1e-40 take a logit of 3e38 past double's range (3e318) and
    // leave the others (<= 3e280) in it: +inf, the non-finite rule, which draws the +inf ids only.
    SamplerChain stacked(5);
    for (int k = 0; k < 7; ++k) stacked.add(SamplerStage{StageType::Temperature, 0, 1.0f, 1e-40f});
    stacked.add(SamplerStage{StageType::MinP, 0, 0.05f});
    stacked.add(SamplerStage{StageType::Dist});
    std::vector<float> one_big(l);
    one_big[5] = 3e38f;
    for (int d = 0; d < 20; ++d) CHECK(stacked.sample(one_big.data(), one_big.size()) == 5);
}

TEST_CASE("sampling: random chains over extreme logits draw a drawable token or refuse with a message") {
    // Every stage with values at the edges of their domains (temperatures down to 1e-40 and up to
    // 1e30, penalties of 1e-30 and 1e30, +-inf biases), over rows of NaN, +-inf, denormals, +-3e38
    // and ordinary values: the token drawn is one the non-finite rule allows (after the biases'
    // bans), or the call throws kvrt::Error INVALID_ARGUMENT, never anything else.
    using kvrt::runtime::SamplerChain;
    using kvrt::runtime::SamplerStage;
    using kvrt::runtime::StageType;
    std::mt19937 rng(23);
    auto pick = [&](auto const& pool) { return pool[rng() % std::size(pool)]; };
    const float logit_pool[] = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1e-45f, -1e-45f, 3e38f, -3e38f, 1e30f, 2.5f, -7.0f};
    const float temps[] = {0.0f, 1e-40f, 1e-3f, 0.8f, 1.0f, 50.0f, 1e30f};
    const float repeats[] = {1.0f, 1.3f, 1e-30f, 1e30f};
    const float extras[] = {0.0f, 1.0f, -1.0f, 1e30f, -1e30f};
    const float biases[] = {-INFINITY, INFINITY, 3e38f, -3e38f, 4.0f};
    int drawn = 0, refused = 0;
    for (int trial = 0; trial < 3000; ++trial) {
        const size_t n = pick(std::array<size_t, 6>{1, 2, 17, 100, 1000, 5000});
        std::normal_distribution<float> nd(0.0f, 3.0f);
        std::vector<float> l(n);
        const int mode = trial % 3;  // mostly ordinary, mixed, or mostly extreme
        for (float& x : l) x = (mode == 0 || (mode == 1 && rng() % 2)) ? nd(rng) : pick(logit_pool);
        SamplerChain chain(static_cast<uint64_t>(trial));
        std::vector<std::pair<int32_t, float>> bias;
        const int n_stages = static_cast<int>(rng() % 6);
        for (int k = 0; k < n_stages; ++k) {
            SamplerStage st;
            switch (rng() % 6) {
                case 0:
                    st.type = StageType::Penalties;
                    st.last_n = -1;
                    st.repeat = pick(repeats);
                    st.frequency = pick(extras);
                    st.presence = pick(extras);
                    break;
                case 1:
                    st.type = StageType::LogitBias;
                    for (int b = 0; b < 3; ++b) st.bias.push_back({static_cast<int32_t>(rng() % n), pick(biases)});
                    bias.insert(bias.end(), st.bias.begin(), st.bias.end());
                    break;
                case 2: st.type = StageType::TopK, st.top_k = static_cast<int32_t>(rng() % 50); break;
                case 3: st.type = StageType::TopP, st.p = pick(std::array<float, 4>{1e-6f, 0.5f, 0.95f, 1.0f}); break;
                case 4: st.type = StageType::MinP, st.p = pick(std::array<float, 4>{0.0f, 0.05f, 0.9f, 1.0f}); break;
                default: st.type = StageType::Temperature, st.temperature = pick(temps); break;
            }
            chain.add(st);
        }
        chain.add(SamplerStage{rng() % 4 ? StageType::Dist : StageType::Greedy});
        std::vector<int32_t> hist;
        for (int h = 0; h < 8; ++h) hist.push_back(static_cast<int32_t>(rng() % n));
        chain.begin(hist.data(), hist.size());
        // What the non-finite rule allows: +inf ids if the row has any (stages skipped), else
        // the finite ones; a token given a -inf bias (and no +inf one) is banned.
        bool any_pos_inf = false;
        for (float x : l) any_pos_inf |= x == INFINITY;
        for (int d = 0; d < 3; ++d) {
            CAPTURE(trial);
            try {
                const int32_t t = chain.sample(l.data(), n);
                REQUIRE(t >= 0);
                REQUIRE(static_cast<size_t>(t) < n);
                const float x = l[static_cast<size_t>(t)];
                CHECK(!std::isnan(x));
                CHECK(x != -INFINITY);
                if (any_pos_inf) CHECK(x == INFINITY);
                bool banned = false, forced = false;
                for (const auto& [id, b] : bias) {
                    banned |= id == t && b == -INFINITY;
                    forced |= id == t && b == INFINITY;
                }
                if (!any_pos_inf && banned && !forced) CHECK(false);  // a banned token was drawn
                ++drawn;
            } catch (const kvrt::Error& e) {
                CHECK(e.status() == KVRT_ERR_INVALID_ARGUMENT);
                CHECK(std::string(e.what()).find("sampled") != std::string::npos);
                ++refused;
            }
        }
    }
    CHECK(drawn > 5000);
    CHECK(refused > 10);
}

TEST_CASE("sampling: top-k 1 and min-p 1 are greedy whatever the temperature") {
    std::vector<float> l = {0.1f, 0.3f, 3.0f, 0.2f};
    SamplerParams p;
    p.temperature = 5.0f;
    p.top_k = 1;
    p.seed = 42;
    Sampler a(p);
    for (int i = 0; i < 50; ++i) CHECK(a.sample(l.data(), l.size()) == 2);
    p.top_k = 0;
    p.min_p = 1.0f;
    Sampler b(p);
    for (int i = 0; i < 50; ++i) CHECK(b.sample(l.data(), l.size()) == 2);
    // A temperature so small that 1 / t overflows float still draws the largest logit.
    p.min_p = 0.0f;
    p.temperature = 1e-40f;
    Sampler c(p);
    std::vector<float> big(1000);
    for (size_t i = 0; i < big.size(); ++i) big[i] = std::sin(static_cast<float>(i));
    const int32_t best = argmax(big.data(), big.size());
    for (int i = 0; i < 50; ++i) CHECK(c.sample(big.data(), big.size()) == best);
}

TEST_CASE("sampling: top-p keeps the smallest prefix reaching the mass") {
    // probabilities ~ 0.665, 0.245, 0.09: top_p 0.7 keeps two tokens, never the third.
    std::vector<float> l = {2.0f, 1.0f, 0.0f};
    SamplerParams p;
    p.temperature = 1.0f;
    p.top_p = 0.7f;
    p.seed = 7;
    Sampler s(p);
    std::map<int, int> seen;
    for (int i = 0; i < 2000; ++i) seen[s.sample(l.data(), l.size())]++;
    CHECK(seen[2] == 0);
    CHECK(seen[0] > 0);
    CHECK(seen[1] > 0);
    // Renormalised over the two kept: p0 = e^2/(e^2+e) ~ 0.731.
    CHECK(std::abs(seen[0] / 2000.0 - 0.731) < 0.05);
}

TEST_CASE("sampling: temperature sharpens and flattens, draws follow the softmax") {
    std::vector<float> l = {1.0f, 0.0f};
    auto freq0 = [&](float t) {
        SamplerParams p;
        p.temperature = t;
        p.seed = 123;
        Sampler s(p);
        int n0 = 0;
        for (int i = 0; i < 4000; ++i) n0 += s.sample(l.data(), l.size()) == 0;
        return n0 / 4000.0;
    };
    const double expect1 = 1.0 / (1.0 + std::exp(-1.0));  // 0.731
    CHECK(std::abs(freq0(1.0f) - expect1) < 0.03);
    CHECK(freq0(0.25f) > 0.95);
    CHECK(std::abs(freq0(100.0f) - 0.5) < 0.04);
}

TEST_CASE("sampling: same seed, same tokens, another seed, another stream") {
    std::vector<float> l(100);
    for (int i = 0; i < 100; ++i) l[i] = std::sin(i * 0.37f);
    SamplerParams p;
    p.temperature = 1.0f;
    p.seed = 99;
    Sampler a(p), b(p);
    std::vector<int> ta, tb, tc;
    for (int i = 0; i < 64; ++i) {
        ta.push_back(a.sample(l.data(), l.size()));
        tb.push_back(b.sample(l.data(), l.size()));
    }
    CHECK(ta == tb);
    p.seed = 100;
    Sampler c(p);
    for (int i = 0; i < 64; ++i) tc.push_back(c.sample(l.data(), l.size()));
    CHECK(ta != tc);
}

TEST_CASE("sampling: out-of-domain parameters are rejected with a message") {
    auto status_of = [](SamplerParams p) {
        try {
            Sampler s(p);
        } catch (const kvrt::Error& e) {
            return e.status();
        }
        return KVRT_OK;
    };
    SamplerParams p;
    p.top_k = -1;
    CHECK(status_of(p) == KVRT_ERR_INVALID_ARGUMENT);
    p = {};
    p.top_p = 0.0f;
    CHECK(status_of(p) == KVRT_ERR_INVALID_ARGUMENT);
    p = {};
    p.min_p = 1.5f;
    CHECK(status_of(p) == KVRT_ERR_INVALID_ARGUMENT);
    p = {};
    p.temperature = NAN;
    CHECK(status_of(p) == KVRT_ERR_INVALID_ARGUMENT);
    CHECK(status_of(SamplerParams{}) == KVRT_OK);
}
