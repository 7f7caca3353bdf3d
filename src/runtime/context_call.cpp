// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Context::Call (one public call at a time, cancel flag cleared on entry), cancellation
// checks and the activity snapshot other threads read while a context works.
#include "runtime/context.hpp"

#include "util/error.hpp"

namespace kvrt::runtime {

namespace {
std::atomic<int>& running() noexcept {
    static std::atomic<int> n{0};
    return n;
}
}  // namespace

Context::Call::Call(Context& c, const char* what) : c_(c) {
    bool idle = false;
    if (!c.busy_.compare_exchange_strong(idle, true, std::memory_order_acquire))
        fail(KVRT_ERR_INVALID_STATE,
             std::string(what) +
                 ": another call is running on this context (a call from inside one of its callbacks, or "
                 "from a second thread); a context runs one call at a time");
    c.cancel_.store(false, std::memory_order_relaxed);
    c.phase_.store(0, std::memory_order_relaxed);
    c.act_total_.store(0, std::memory_order_relaxed);
    c.act_done_.store(0, std::memory_order_relaxed);
    c.act_generated_.store(0, std::memory_order_relaxed);
    c.act_calls_.fetch_add(1, std::memory_order_relaxed);
    running().fetch_add(1, std::memory_order_acq_rel);
}

Context::Call::~Call() {
    c_.phase_.store(0, std::memory_order_relaxed);
    running().fetch_sub(1, std::memory_order_acq_rel);
    c_.busy_.store(false, std::memory_order_release);
}

int Context::running_calls() noexcept { return running().load(std::memory_order_acquire); }

Activity Context::activity() const noexcept {
    Activity a;
    a.phase = phase_.load(std::memory_order_relaxed);
    a.cancel_pending = cancel_.load(std::memory_order_relaxed) && busy_.load(std::memory_order_relaxed);
    a.prefill_total = act_total_.load(std::memory_order_relaxed);
    a.prefill_done = act_done_.load(std::memory_order_relaxed);
    a.generated = act_generated_.load(std::memory_order_relaxed);
    a.calls = act_calls_.load(std::memory_order_relaxed);
    return a;
}

void Context::check_cancel(const char* where) const {
    if (cancel_.load(std::memory_order_relaxed))
        fail(KVRT_ERR_CANCELLED, std::string(where) + " cancelled by kvrt_context_cancel");
}

}  // namespace kvrt::runtime
