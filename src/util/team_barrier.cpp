// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

#include "util/team_barrier.hpp"

#include <chrono>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace kvrt {

namespace {

inline void cpu_pause() {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

}  // namespace

void TeamBarrier::wait(int n) noexcept {
    if (n <= 1) return;
    // The phase is read before arriving: it cannot move until this thread has arrived.
    const uint32_t phase = phase_.load(std::memory_order_acquire);
    if (arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 == static_cast<uint32_t>(n)) {
        arrived_.store(0, std::memory_order_relaxed);  // ordered before the release below
        {
            // Under the mutex, so that a thread between its check and its sleep is not missed.
            std::lock_guard<std::mutex> lock(mutex_);
            phase_.store(phase + 1, std::memory_order_release);
        }
        wake_.notify_all();
        return;
    }
    using Clock = std::chrono::steady_clock;
    const Clock::time_point t0 = Clock::now();
    const auto budget = std::chrono::microseconds(spin_us_.load(std::memory_order_relaxed));
    // Stage 1: spin. The clock is read every 64 pauses (a pause is ~10-150 cycles by CPU).
    bool released = false;
    while (!released) {
        for (int i = 0; i < 64 && !released; ++i) {
            released = phase_.load(std::memory_order_acquire) != phase;
            if (!released) cpu_pause();
        }
        if (Clock::now() - t0 >= budget) break;
    }
    // Stage 2: block until the phase moves on.
    if (!released) {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return phase_.load(std::memory_order_acquire) != phase; });
    }
    // The budget for the next waits.
    spin_us_.store(next_budget(spin_us_.load(std::memory_order_relaxed), released), std::memory_order_relaxed);
}

}  // namespace kvrt
