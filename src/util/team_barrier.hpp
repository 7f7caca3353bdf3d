// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// A barrier for the threads of one parallel region (an OpenMP team) whose waits are a few
// microseconds to a few tens: the phases of one decode step (model/arch/decoder_forward.cpp,
// five per layer). An OpenMP barrier waits as OMP_WAIT_POLICY says, and under `passive` every
// wait is a futex sleep and a wake-up (tens of microseconds in a virtual machine, where the
// sleeping vCPU halts): 150 of them per token cost a SmolLM2 decode 20-30% of its speed.
// TeamBarrier waits in two stages instead, as llama.cpp's thread pool and libgomp's active
// policy do in part:
//   1. spin on the phase word with the CPU's pause hint, for up to a budget of microseconds,
//   2. then sleep on a condition variable until the last thread arrives.
// The budget adapts, like libgomp's throttled spin on an oversubscribed machine: it starts at
// kSpinMicros, halves after each wait that the spin did not end (the thread waited for was
// slow or descheduled: on a loaded machine spinning would only take the CPU from another
// process, or from the very thread waited for) and doubles after each wait that it did, down
// to kMinSpinMicros and up to kSpinMicros. So on a quiet machine a wait within a step never
// sleeps, and on a loaded one the barrier soon sleeps as a passive OpenMP barrier does.
// (std::atomic::wait was tried for stage 2: libstdc++ yields the CPU a few times before it
// sleeps, and a thread that yielded to another process is not woken ahead of it as a sleeper
// is: with one busy process beside a 2-thread decode on 2 CPUs, 15-30% slower.) Between steps
// the team's threads wait as the OpenMP policy says (the region's own fork and join).
//
// Memory order: every write a thread made before wait() happens-before every read another
// thread of the team makes after its wait() returns (acq_rel on the arrival count, release /
// acquire on the phase word), as an OpenMP barrier's flush guarantees.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace kvrt {

class TeamBarrier {
public:
    static constexpr int kSpinMicros = 200;
    static constexpr int kMinSpinMicros = 2;

    // Every thread of the team calls wait with the same n (the team's size; n <= 1 returns
    // at once). A barrier object serves one team at a time.
    void wait(int n) noexcept;

    // The spin budget now (microseconds), and the budget after a wait from budget b that the
    // spin ended (released) or did not.
    static int spin_budget_us() noexcept { return spin_us_.load(std::memory_order_relaxed); }
    static constexpr int next_budget(int b, bool released) noexcept {
        return released ? (2 * b < kSpinMicros ? 2 * b : kSpinMicros) : (b / 2 > kMinSpinMicros ? b / 2 : kMinSpinMicros);
    }

private:
    alignas(64) std::atomic<uint32_t> arrived_{0};
    alignas(64) std::atomic<uint32_t> phase_{0};
    std::mutex mutex_;
    std::condition_variable wake_;
    // The spin budget: one for the process (the machine's load is what it follows), read and
    // written relaxed (a hint; a lost update only delays the adaptation).
    static inline std::atomic<int> spin_us_{kSpinMicros};
};

}  // namespace kvrt
