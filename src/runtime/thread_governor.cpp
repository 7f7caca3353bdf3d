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
    if (probe_ < 0 && c_.size() > 1 && steps_ >= next_probe_) {
        // A neighbour of the held count: fewer threads, or more, alternating where both exist.
        const bool can_down = cur_ + 1 < c_.size(), can_up = cur_ > 0;
        const bool down = can_down && (down_next_ || !can_up);
        probe_ = static_cast<int>(down ? cur_ + 1 : cur_ - 1);
        if (can_down && can_up) down_next_ = !down;
        probe_left_ = kProbeSteps + 1;  // + the first step on the new count, not measured
        probe_sum_ = 0;
    }
    return probe_ >= 0 ? c_[static_cast<size_t>(probe_)].threads : c_[cur_].threads;
}

void ThreadGovernor::record(int threads, double seconds, double work) {
    ++steps_;
    // The first step on another count than the last step's pays for the change (threads waking,
    // caches refilled by other cores): not a figure of either count.
    const bool changed = threads != last_threads_;
    last_threads_ = threads;
    if (!(seconds > 0) || !(work > 0)) return;
    const double cost = seconds / work;
    if (probe_ >= 0 && threads == c_[static_cast<size_t>(probe_)].threads) {
        if (!changed && probe_left_ <= kProbeSteps) probe_sum_ += cost;
        if (--probe_left_ > 0) return;
        Candidate& p = c_[static_cast<size_t>(probe_)];
        p.cost = probe_sum_ / kProbeSteps;  // a fresh figure: the old one may be stale
        p.samples = kProbeSteps;
        Candidate& h = c_[cur_];
        if (h.samples == 0 || p.cost < h.cost * kMoveMargin) {
            cur_ = static_cast<size_t>(probe_);
            interval_ = kMinInterval;
        } else {
            interval_ = std::min(kMaxInterval, 8 * interval_);
        }
        next_probe_ = steps_ + interval_;
        decided_ = steps_;
        probe_ = -1;
        return;
    }
    if (threads != c_[cur_].threads || changed) return;  // not the held count, or its first step back
    Candidate& h = c_[cur_];
    h.cost = h.samples == 0 ? cost : 0.75 * h.cost + 0.25 * cost;
    ++h.samples;
    // The held count got slower than a neighbour measured last (another program took a core):
    // probe now, at most once per kMinInterval steps after a decision. (The other way, a core
    // freed, the regular probes find within kMaxInterval steps.)
    if (probe_ < 0 && h.samples >= 4 && steps_ - decided_ >= kMinInterval) {
        for (size_t i = 0; i < c_.size(); ++i)
            if (i != cur_ && c_[i].samples > 0 && (i + 1 == cur_ || i == cur_ + 1) && c_[i].cost < h.cost * kMoveMargin) {
                down_next_ = i > cur_;
                interval_ = kMinInterval;
                next_probe_ = steps_;
                decided_ = steps_;
                break;
            }
    }
}

}  // namespace kvrt::runtime
