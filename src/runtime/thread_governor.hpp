// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// The thread count of a context's decode steps when its n_threads is 0 ("kvrt chooses").
//
// A decode step is a few hundred short phases, and every thread of the team meets the others at
// the end of each (decoder_forward's team region). When another process keeps one of the cores
// busy, the thread that shares it runs only part of the time, and every phase waits for it: on a
// 2-vCPU machine with one core busy elsewhere, SmolLM2 decoded at 53 tokens/s on 2 threads against
// 89 on 1 (152 and 110 with both cores free). No fixed count is right for both cases, and a
// desktop application cannot know which case it is in, so the governor measures: it runs the
// steps on the count it holds, now and then runs a few steps on a neighbouring count (half or
// twice) and a few on its own again, and moves when the neighbour's time per byte read is clearly
// lower than those steps' (measured side by side: a shared machine's speed jumps). Probes grow
// rarer while the held count keeps winning (after 8, 64, then every 256 steps; 3 steps on the
// neighbour, the first on a new count never measured) and come back at once when the held count
// becomes slower than a neighbour measured last (another program took a core). The thread count
// never changes a result: every kernel gives the same bits on any number of threads
// (tests/unit/test_runtime_exactness.cpp).
//
// Pure bookkeeping over the times it is given (no clock, no threads): tests feed it timings.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kvrt::runtime {

class ThreadGovernor {
public:
    // Candidates: max_threads, max_threads / 2, ..., 1 (max_threads < 1 is taken as 1).
    explicit ThreadGovernor(int max_threads = 1);

    // The thread count for the next step.
    int pick();
    // What the step picked last ran: its thread count, wall seconds and the bytes it read (any
    // positive measure of its work; steps of one context are compared per unit of it).
    void record(int threads, double seconds, double work);
    // Other work ran since the last step (a prefill): the next step is not measured.
    void interrupt();

    int held() const { return c_[cur_].threads; }  // the count the governor holds now
    int max_threads() const { return c_.front().threads; }

    static constexpr int kMinInterval = 8;    // steps between probes after a move
    static constexpr int kMaxInterval = 256;  // at most this many while the held count wins
    static constexpr int kProbeSteps = 2;     // measured steps of a probe, and of the held count after it
    static constexpr double kMoveMargin = 0.92;  // move when the probe costs < 92% of the held

private:
    struct Candidate {
        int threads;
        double cost = 0;  // seconds per unit of work (the held count: moving average)
        int samples = 0;
    };
    // Hold: steps on the held count. Probe: kProbeSteps + 1 steps on the neighbour (the first
    // not measured). Back: kProbeSteps + 1 on the held count again, then the decision: the
    // probe's mean cost against these steps' mean.
    enum class Phase { Hold, Probe, Back };
    std::vector<Candidate> c_;  // threads in decreasing order
    size_t cur_ = 0;            // the held candidate
    size_t probe_ = 0;          // the probed candidate (Probe, Back)
    Phase phase_ = Phase::Hold;
    int left_ = 0;              // steps left in the phase
    int64_t steps_ = 0;         // steps recorded
    int64_t next_probe_ = 4;    // the step at which the next probe starts
    int64_t decided_ = 0;       // the step of the last decision (probe or shift)
    int interval_ = kMinInterval;
    bool down_next_ = true;     // the next probe tries fewer threads (alternates where both exist)
    double probe_sum_ = 0, held_sum_ = 0;
    int probe_n_ = 0, held_n_ = 0;
    int last_threads_ = 0;      // the count of the last step recorded (0: other work since)
};

}  // namespace kvrt::runtime
