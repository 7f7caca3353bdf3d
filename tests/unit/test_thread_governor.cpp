// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// The decode steps' thread governor (runtime/thread_governor.hpp) on synthetic step times: it
// finds the faster count, stays put (with few probes) when it holds it, and follows a change of
// load. (That the count never changes a bit: test_runtime_exactness.cpp, "thread count".)
#include "runtime/thread_governor.hpp"

#include <doctest/doctest.h>

#include <functional>
#include <map>
#include <random>

using kvrt::runtime::ThreadGovernor;

namespace {

// Runs `steps` steps whose time per unit of work is cost(threads, step); returns how many ran on
// each count.
std::map<int, int> run(ThreadGovernor& g, int steps, const std::function<double(int, int)>& cost, int step0 = 0) {
    std::map<int, int> used;
    for (int s = step0; s < step0 + steps; ++s) {
        const int t = g.pick();
        ++used[t];
        g.record(t, cost(t, s), 1.0);
    }
    return used;
}

}  // namespace

TEST_CASE("thread governor: candidates halve from the maximum down to 1") {
    ThreadGovernor one(1), zero(0), three(3);
    for (int i = 0; i < 50; ++i) {
        CHECK(one.pick() == 1);
        one.record(1, 1.0, 1.0);
        CHECK(zero.pick() == 1);
        zero.record(1, 1.0, 1.0);
    }
    // 3 -> {3, 1}: a probe never asks for 2
    auto used = run(three, 200, [](int t, int) { return t == 3 ? 1.0 : 2.0; });
    CHECK(used.count(2) == 0);
    CHECK(used[1] > 0);
    CHECK(three.held() == 3);
}

TEST_CASE("thread governor: moves to the faster count within a few steps") {
    ThreadGovernor g(2);
    run(g, 12, [](int t, int) { return t == 2 ? 1.0 : 0.6; });  // one core busy elsewhere
    CHECK(g.held() == 1);
    ThreadGovernor g8(8);  // 4 is best of {8, 4, 2, 1}
    run(g8, 200, [](int t, int) { return t == 8 ? 1.0 : t == 4 ? 0.6 : t == 2 ? 0.8 : 1.2; });
    CHECK(g8.held() == 4);
}

TEST_CASE("thread governor: holds the faster count with under 2.5% of the steps probing") {
    ThreadGovernor g(2);
    const auto used = run(g, 2000, [](int t, int) { return t == 2 ? 0.7 : 1.0; });
    CHECK(g.held() == 2);
    CHECK(used.at(1) > 0);                    // it did probe
    CHECK(used.at(1) < 0.025 * 2000);         // rarely
    // With +-20% noise on every step it still holds 2 for >= 95% of the steps.
    std::mt19937 rng(5);
    std::uniform_real_distribution<double> u(0.8, 1.2);
    ThreadGovernor n(2);
    const auto noisy = run(n, 2000, [&](int t, int) { return (t == 2 ? 0.7 : 1.0) * u(rng); });
    CHECK(noisy.at(2) >= 0.95 * 2000);
}

TEST_CASE("thread governor: follows a core taken and given back") {
    ThreadGovernor g(2);
    auto cost = [](int t, int s) {
        const bool busy = s >= 300 && s < 900;  // another program holds a core in [300, 900)
        return t == 2 ? (busy ? 2.0 : 0.7) : 1.0;
    };
    run(g, 300, cost);
    CHECK(g.held() == 2);
    run(g, 20, cost, 300);  // the held count got slower than 1 thread measured: probed at once
    CHECK(g.held() == 1);
    run(g, 580, cost, 320);
    CHECK(g.held() == 1);
    run(g, ThreadGovernor::kMaxInterval + 20, cost, 900);  // freed: found by the regular probes
    CHECK(g.held() == 2);
}

TEST_CASE("thread governor: steps of another count, zero times and zero work are ignored") {
    ThreadGovernor g(2);
    for (int i = 0; i < 100; ++i) {
        const int t = g.pick();
        g.record(t, 0.0, 1.0);  // a clock that did not move
        g.record(t, 1.0, 0.0);
    }
    CHECK(g.held() == 2);
    g.record(7, 1e-9, 1.0);  // a count it never picked
    CHECK(g.held() == 2);
}

TEST_CASE("thread governor: the first step after other work (a prefill) is not measured") {
    ThreadGovernor g(2);
    auto cost = [](int t, int) { return t == 2 ? 0.7 : 1.0; };
    run(g, 40, cost);
    REQUIRE(g.held() == 2);
    // A step slowed 100x by what ran before it (caches refilled after a long prefill): without
    // interrupt() it would pull the held count's average above 1 thread's and start a probe.
    g.interrupt();
    const int t = g.pick();
    g.record(t, 100.0 * cost(t, 0), 1.0);
    const auto used = run(g, 6, cost, 41);
    CHECK(used.count(1) == 0);
    // The same step without interrupt() does start one.
    ThreadGovernor h(2);
    run(h, 40, cost);
    const int u = h.pick();
    h.record(u, 100.0 * cost(u, 0), 1.0);
    CHECK(run(h, 12, cost, 41).count(1) == 1);
}
