// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// A vector sorted only as far as it is read: v[0, sorted) are the first `sorted` elements of the
// whole in `less` order, in place, and every later one comes after them. The samplers read their
// candidates largest logit first, but top-p, min-p and a draw stop after the few hundred that carry
// the mass, so sorting a whole vocabulary (262,144 logits for Gemma 3: ~20 ms) was mostly waste.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <functional>
#include <vector>

namespace kvrt::runtime {

// The samplers' candidate order: larger logit first, ties to the lower id (a total order, so
// every partial sort of it agrees). C: any struct with `logit` and `id`.
struct LogitOrder {
    template <class C>
    bool operator()(const C& a, const C& b) const noexcept {
        return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
    }
};

// The value t at which about `target` of n_finite finite values are >= t: the matching rank of
// an even sample of 1,024 of the n values get(i) (non-finite ones skipped); -inf when the sample
// holds none. Both ways of splitting a vocabulary's front below take their t from it.
template <class Get>
double sampled_threshold(size_t n, size_t n_finite, size_t target, Get get) {
    constexpr size_t kSamples = 1024;
    std::array<double, kSamples> s;
    const size_t stride = n / kSamples;
    size_t m = 0;
    for (size_t j = 0; j < kSamples && stride > 0; ++j) {
        const double x = get(j * stride);
        if (std::isfinite(x)) s[m++] = x;
    }
    if (m == 0) return -INFINITY;  // (everything is the front)
    const size_t r = std::clamp<size_t>(target * m / std::max<size_t>(n_finite, 1), 1, m);
    std::nth_element(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(r - 1), s.begin() + static_cast<std::ptrdiff_t>(m),
                     std::greater<double>());
    return s[r - 1];
}

// Splits v (nothing of it sorted, every logit finite) at a logit t such that about `target`
// elements have a logit >= t, those first, and returns their count: every one of them comes
// before every later one (a larger logit). T: a struct with `logit`.
template <class T, class A>
size_t split_front(std::vector<T, A>& v, size_t target) {
    const double t = sampled_threshold(v.size(), v.size(), target, [&](size_t i) { return static_cast<double>(v[i].logit); });
    return static_cast<size_t>(std::partition(v.begin(), v.end(), [t](const T& c) { return static_cast<double>(c.logit) >= t; }) -
                               v.begin());
}

// The logit at which about `target` of a row's n_finite finite logits are >= it. A sampler that
// builds its candidates from the row splits them there as it builds them (no pass of split_front).
inline float front_threshold(const float* x, size_t n, size_t n_finite, size_t target) {
    return static_cast<float>(sampled_threshold(n, n_finite, target, [x](size_t i) { return static_cast<double>(x[i]); }));
}

// Extends the sorted prefix of v from `sorted` to k elements (at most v.size()); returns its new
// length. A short extension is a partial sort of the rest (a heap of the few: one comparison for
// most elements), a long one a selection and a sort of what it selected.
//
// front (optional): v[0, *front) all come before the rest when *front > 0, which the caller resets
// to 0 whenever it changes the logits or the order. A whole vocabulary (16 x target or more) is
// split once, at its first extension (split_front, ~target elements), unless the caller split it
// already; extensions inside the front read only the front. Each extension over the whole had
// been a pass over it (~0.3-0.5 ms over Gemma 3's 262,144 candidates), and the nucleus of a real
// draw's top-p takes 2-4 of them.
inline constexpr size_t kFrontTarget = 8192;
template <class T, class A, class Less>
size_t sort_prefix_to(std::vector<T, A>& v, size_t sorted, size_t k, Less less, size_t* front = nullptr,
                      size_t target = kFrontTarget) {
    k = std::min(k, v.size());
    if (k <= sorted) return sorted;
    size_t end = v.size();
    if (front) {
        if (*front < sorted || *front > v.size()) *front = 0;  // (not a front of this prefix)
        if (*front == 0 && sorted == 0 && v.size() >= 16 * target) *front = split_front(v, target);
        if (*front >= k) {
            end = *front;
        } else if (*front > sorted) {  // the whole front first, then the rest after it
            std::sort(v.begin() + static_cast<std::ptrdiff_t>(sorted), v.begin() + static_cast<std::ptrdiff_t>(*front), less);
            sorted = *front;
        }
    }
    const auto b = v.begin() + static_cast<std::ptrdiff_t>(sorted), m = v.begin() + static_cast<std::ptrdiff_t>(k),
               e = v.begin() + static_cast<std::ptrdiff_t>(end);
    if ((k - sorted) * 16 < end - sorted) {
        std::partial_sort(b, m, e, less);
    } else {
        if (k < end) std::nth_element(b, m, e, less);
        std::sort(b, m, less);
    }
    return k;
}

// The prefix length that makes element i sorted: past i, in chunks growing 4x from 64.
inline size_t sorted_prefix_for(size_t i, size_t sorted) { return std::max<size_t>({i + 1, 4 * sorted, 64}); }

}  // namespace kvrt::runtime
