// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// A vector sorted only as far as it is read: v[0, sorted) are the first `sorted` elements of the
// whole in `less` order, in place, and every later one comes after them. The samplers read their
// candidates largest logit first, but top-p, min-p and a draw stop after the few hundred that carry
// the mass, so sorting a whole vocabulary (262,144 logits for Gemma 3: ~20 ms) was mostly waste.
#pragma once

#include <algorithm>
#include <cstddef>
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

// Extends the sorted prefix of v from `sorted` to k elements (at most v.size()); returns its new
// length. A short extension is a partial sort of the rest (a heap of the few: one comparison for
// most elements), a long one a selection and a sort of what it selected.
template <class T, class A, class Less>
size_t sort_prefix_to(std::vector<T, A>& v, size_t sorted, size_t k, Less less) {
    k = std::min(k, v.size());
    if (k <= sorted) return sorted;
    const auto b = v.begin() + static_cast<std::ptrdiff_t>(sorted), m = v.begin() + static_cast<std::ptrdiff_t>(k);
    if ((k - sorted) * 16 < v.size() - sorted) {
        std::partial_sort(b, m, v.end(), less);
    } else {
        if (k < v.size()) std::nth_element(b, m, v.end(), less);
        std::sort(b, m, less);
    }
    return k;
}

// The prefix length that makes element i sorted: past i, in chunks growing 4x from 64.
inline size_t sorted_prefix_for(size_t i, size_t sorted) { return std::max<size_t>({i + 1, 4 * sorted, 64}); }

}  // namespace kvrt::runtime
