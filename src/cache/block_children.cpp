// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

#include "cache/block_children.hpp"

#include <algorithm>

namespace kvrt::cache {

namespace {
size_t common_prefix(const std::vector<int32_t>& a, const int32_t* q, size_t n) {
    const size_t m = std::min(a.size(), n);
    size_t i = 0;
    while (i < m && a[i] == q[i]) i++;
    return i;
}
}  // namespace

Hash128 BlockChildren::group_key(const Hash128& parent, const Hash128& extra) {
    const int32_t none = 0;
    return hash_block(parent, extra, &none, 0);  // a hash of (parent, extra): no token
}

void BlockChildren::add(const Hash128& parent, const Hash128& extra, const Hash128& h, const int32_t* tokens,
                        size_t n) {
    add_to_group(group_key(parent, extra), h, tokens, n);
}

void BlockChildren::add_to_group(const Hash128& g, const Hash128& h, const int32_t* tokens, size_t n) {
    if (where_.count(h)) return;
    auto group = groups_.try_emplace(g).first;
    Children& kids = group->second;
    try {
        auto [it, fresh] = kids.emplace(std::vector<int32_t>(tokens, tokens + n), h);
        if (!fresh) return;  // the same tokens under the same parent: the same hash, recorded already
        try {
            where_.emplace(h, Where{g, it});
        } catch (...) {
            kids.erase(it);
            throw;
        }
    } catch (...) {
        if (kids.empty()) groups_.erase(group);
        throw;
    }
}

void BlockChildren::remove(const Hash128& h) noexcept {
    auto w = where_.find(h);
    if (w == where_.end()) return;
    auto g = groups_.find(w->second.group);
    if (g != groups_.end()) {
        g->second.erase(w->second.it);
        if (g->second.empty()) groups_.erase(g);
    }
    where_.erase(w);
}

Hash128 BlockChildren::longest(const Hash128& parent, const Hash128& extra, const int32_t* query, size_t n,
                               size_t* c, const std::function<bool(const Hash128&)>& usable) const {
    *c = 0;
    Hash128 best{};
    if (n == 0) return best;
    auto g = groups_.find(group_key(parent, extra));
    if (g == groups_.end()) return best;
    const Children& kids = g->second;
    // Sorted strings: the common prefix with the query shrinks (weakly) moving away from the
    // query's insertion point in either direction, so each walk stops once it cannot beat the best.
    const std::vector<int32_t> q(query, query + n);
    const auto at = kids.lower_bound(q);
    for (auto it = at; it != kids.end(); ++it) {
        const size_t k = common_prefix(it->first, query, n);
        if (k <= *c) break;
        if (usable(it->second)) {
            *c = k;
            best = it->second;
        }
    }
    for (auto it = at; it != kids.begin();) {
        --it;
        const size_t k = common_prefix(it->first, query, n);
        if (k <= *c) break;
        if (usable(it->second)) {
            *c = k;
            best = it->second;
        }
    }
    return best;
}

}  // namespace kvrt::cache
