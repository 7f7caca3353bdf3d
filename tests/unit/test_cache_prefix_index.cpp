// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

#include <doctest/doctest.h>

#include "cache/prefix_index.hpp"

#include <random>
#include <unordered_map>

using namespace kvrt::cache;

TEST_CASE("cache prefix index: the flat map agrees with std::unordered_map under random churn") {
    // Keys with few distinct low bits cluster in long probe runs, so erasing
    // exercises the backward shift (including runs that wrap around the table).
    std::mt19937_64 rng(7);
    PrefixIndex idx;
    std::unordered_map<Hash128, uint32_t, Hash128Hasher> ref;
    auto key = [&] {
        Hash128 h;
        h.lo = (rng() % 3 == 0) ? (rng() % 200) : (rng() % 64) | 0xffffffffffffffc0ull;  // homes near the ends
        h.hi = rng() % 50;
        return h;
    };
    for (int step = 0; step < 100000; step++) {
        Hash128 h = key();
        int op = int(rng() % 3);
        if (op == 0) {
            uint32_t id = 1 + uint32_t(rng() % 1000);
            bool inserted = idx.try_emplace(h, id);
            bool want = ref.emplace(h, id).second;
            if (inserted != want) REQUIRE(inserted == want);
        } else if (op == 1) {
            bool got = idx.erase(h), want = ref.erase(h) == 1;
            if (got != want) REQUIRE(got == want);
        } else {
            auto it = ref.find(h);
            uint32_t got = idx.find(h), want = it == ref.end() ? PrefixIndex::kEmpty : it->second;
            if (got != want) REQUIRE(got == want);
        }
        if (step % 1000 == 0) {
            REQUIRE(idx.size() == ref.size());
            size_t n = 0;
            size_t wrong = 0;
            idx.for_each([&](const Hash128& k, uint32_t id) {
                n++;
                auto it = ref.find(k);
                wrong += (it == ref.end() || it->second != id) ? 1 : 0;
            });
            REQUIRE(n == ref.size());
            for (const auto& [k, id] : ref) wrong += idx.find(k) == id ? 0 : 1;
            REQUIRE(wrong == 0);
        }
    }
    CHECK(idx.size() == ref.size());
}
