// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// util/team_barrier.hpp: the barrier of the decode step's team. Named *concurrent* so that the
// ThreadSanitizer run (scripts/test.sh) checks its memory ordering too; std::thread rather than
// OpenMP for that reason (libgomp is not instrumented).
#include "util/team_barrier.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

using kvrt::TeamBarrier;

namespace {

// n threads run `phases` phases; in each, thread i writes its slot (plain memory, no atomics),
// meets the others, reads every slot, and meets them again before the next writes. `slow`:
// thread 0 sleeps before arriving on the first `slow` phases. Returns the number of wrong reads.
int run_phases(int n, int phases, int slow) {
    TeamBarrier bar;
    std::vector<int> slot(static_cast<size_t>(n), -1);
    std::atomic<int> wrong{0};
    std::vector<std::thread> team;
    for (int t = 0; t < n; ++t)
        team.emplace_back([&, t] {
            for (int ph = 0; ph < phases; ++ph) {
                slot[static_cast<size_t>(t)] = ph;
                if (t == 0 && ph < slow) std::this_thread::sleep_for(std::chrono::milliseconds(20));
                bar.wait(n);
                for (int u = 0; u < n; ++u)
                    if (slot[static_cast<size_t>(u)] != ph) wrong.fetch_add(1, std::memory_order_relaxed);
                bar.wait(n);
            }
        });
    for (auto& th : team) th.join();
    return wrong.load();
}

}  // namespace

TEST_CASE("team_barrier.concurrent_phases_see_each_others_writes") {
    // Quick phases (the spin ends most waits) with 2, 3 and 4 threads: every write made before a
    // wait is seen after it, and no thread runs ahead into the next phase.
    for (int n : {2, 3, 4}) {
        CAPTURE(n);
        CHECK(run_phases(n, 3000, 0) == 0);
    }
}

TEST_CASE("team_barrier.concurrent_slow_thread_sleep_path_and_budget") {
    // Thread 0 arrives 20 ms late on three phases: the others' spins (at most kSpinMicros) run
    // out and they sleep; they are woken (the test would hang otherwise) and see the writes.
    CHECK(run_phases(2, 3, 3) == 0);
    CHECK(run_phases(3, 20, 3) == 0);
    // One wait that the spin cannot end (the partner arrives 50 ms late, and as the last to
    // arrive it leaves the budget alone): the waiting thread halves the budget.
    const int before = TeamBarrier::spin_budget_us();
    TeamBarrier bar;
    std::thread late([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        bar.wait(2);
    });
    bar.wait(2);
    late.join();
    CHECK(TeamBarrier::spin_budget_us() == TeamBarrier::next_budget(before, false));
}

TEST_CASE("team_barrier.concurrent_budget_rule_and_teams_of_one") {
    // The adaptation: halves to the floor after waits the spin did not end, doubles back to the
    // ceiling after waits it did.
    int b = TeamBarrier::kSpinMicros;
    for (int i = 0; i < 20; ++i) b = TeamBarrier::next_budget(b, false);
    CHECK(b == TeamBarrier::kMinSpinMicros);
    CHECK(TeamBarrier::next_budget(TeamBarrier::kSpinMicros, false) == TeamBarrier::kSpinMicros / 2);
    for (int i = 0; i < 20; ++i) b = TeamBarrier::next_budget(b, true);
    CHECK(b == TeamBarrier::kSpinMicros);
    CHECK(TeamBarrier::next_budget(TeamBarrier::kMinSpinMicros, true) == 2 * TeamBarrier::kMinSpinMicros);
    // A team of one (or a call outside a region, n = 0) does not wait, nor touch the budget.
    const int before = TeamBarrier::spin_budget_us();
    TeamBarrier bar;
    for (int i = 0; i < 1000; ++i) {
        bar.wait(1);
        bar.wait(0);
    }
    CHECK(TeamBarrier::spin_budget_us() == before);
}
