// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

#include "runtime/thread_governor.hpp"

#include <algorithm>

namespace kvrt::runtime {

ThreadGovernor::ThreadGovernor(int max_threads) {
    for (int t = std::max(1, max_threads);; t /= 2) {
        c_.push_back(Candidate{t});
        if (t == 1) break;
    }
}

int ThreadGovernor::pick() {
    if (phase_ == Phase::Hold && c_.size() > 1 && steps_ >= next_probe_) {
        // A neighbour of the held count: fewer threads, or more, alternating where both exist.
        const bool can_down = cur_ + 1 < c_.size(), can_up = cur_ > 0;
        const bool down = can_down && (down_next_ || !can_up);
        probe_ = down ? cur_ + 1 : cur_ - 1;
        if (can_down && can_up) down_next_ = !down;
        phase_ = Phase::Probe;
        left_ = kProbeSteps + 1;  // + the first step on the new count, not measured
        probe_sum_ = held_sum_ = 0;
        probe_n_ = held_n_ = 0;
    }
    return phase_ == Phase::Probe ? c_[probe_].threads : c_[cur_].threads;
}

void ThreadGovernor::interrupt() { last_threads_ = 0; }

void ThreadGovernor::record(int threads, double seconds, double work) {
    ++steps_;
    // The first step on another count than the last step's pays for the change (threads waking,
    // caches refilled by other cores), and the first after other work (a prefill) for that:
    // neither is a figure of its count.
    const bool changed = threads != last_threads_;
    last_threads_ = threads;
    const bool ok = seconds > 0 && work > 0 && !changed;
    const double cost = ok ? seconds / work : 0;
    if (phase_ == Phase::Probe) {
        if (threads != c_[probe_].threads) return;
        if (ok) probe_sum_ += cost, ++probe_n_;
        if (--left_ == 0) {
            phase_ = Phase::Back;
            left_ = kProbeSteps + 1;
        }
        return;
    }
    if (threads != c_[cur_].threads) return;  // not the held count (the caller's own choice)
    Candidate& h = c_[cur_];
    if (ok) {
        h.cost = h.samples == 0 ? cost : 0.75 * h.cost + 0.25 * cost;
        ++h.samples;
    }
    if (phase_ == Phase::Back) {
        // The held count's steps right after the probe: the probe is judged against these, not
        // against older figures (a machine's speed drifts; a shared one's jumps).
        if (ok) held_sum_ += cost, ++held_n_;
        if (--left_ > 0) return;
        phase_ = Phase::Hold;
        decided_ = steps_;
        if (probe_n_ > 0 && held_n_ > 0) {
            const double pc = probe_sum_ / probe_n_, hc = held_sum_ / held_n_;
            c_[probe_].cost = pc;
            c_[probe_].samples = probe_n_;
            if (pc < hc * kMoveMargin) {
                c_[cur_].cost = hc;  // the figure the neighbour is held against from now on
                cur_ = probe_;
                interval_ = kMinInterval;
                next_probe_ = steps_ + interval_;
                return;
            }
        }
        interval_ = std::min(kMaxInterval, 8 * interval_);
        next_probe_ = steps_ + interval_;
        return;
    }
    // The held count got slower than a neighbour measured last (another program took a core):
    // probe now, at most once per kMinInterval steps after a decision. (The other way, a core
    // freed, the regular probes find within kMaxInterval steps.)
    if (ok && h.samples >= 4 && steps_ - decided_ >= kMinInterval) {
        for (size_t i = 0; i < c_.size(); ++i)
            if (c_[i].samples > 0 && (i + 1 == cur_ || i == cur_ + 1) && c_[i].cost < h.cost * kMoveMargin) {
                down_next_ = i > cur_;
                interval_ = kMinInterval;
                next_probe_ = steps_;
                decided_ = steps_;
                break;
            }
    }
}

}  // namespace kvrt::runtime
