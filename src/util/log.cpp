// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

#include "util/log.hpp"

#include <chrono>
#include <mutex>
#include <utility>
#include <vector>

namespace kvrt::log {

namespace {
struct Sink {
    std::recursive_mutex mu;
    Fn fn = nullptr;
    void* user_data = nullptr;
    std::atomic<int> min_level{None};
};
Sink& sink() {
    static Sink s;
    return s;
}
thread_local int t_depth = 0;  // > 0 while this thread runs the callback
// Messages of the running kvrt call, delivered by flush() when it returns (no lock held).
thread_local std::vector<std::pair<int, std::string>> t_pending;
}  // namespace

void set_callback(int min_level, Fn fn, void* user_data) {
    Sink& s = sink();
    std::lock_guard<std::recursive_mutex> lock(s.mu);
    s.fn = fn;
    s.user_data = user_data;
    s.min_level.store(fn ? min_level : None, std::memory_order_release);
}

bool enabled(int level) noexcept {
    const int m = sink().min_level.load(std::memory_order_acquire);
    return m < None && level >= m;
}

void write(int level, const std::string& msg) noexcept {
    if (!enabled(level) || t_depth > 0) return;
    try {
        t_pending.emplace_back(level, msg);
    } catch (...) {
    }
}

void flush() noexcept {
    if (t_pending.empty() || t_depth > 0) return;
    std::vector<std::pair<int, std::string>> msgs;
    msgs.swap(t_pending);
    Sink& s = sink();
    try {
        std::lock_guard<std::recursive_mutex> lock(s.mu);
        for (const auto& [level, msg] : msgs) {
            if (!s.fn || level < s.min_level.load(std::memory_order_relaxed)) continue;
            ++t_depth;
            s.fn(level, msg.c_str(), s.user_data);
            --t_depth;
        }
    } catch (...) {
        t_depth = 0;
    }
}

const char* level_name(int level) noexcept {
    switch (level) {
        case Debug: return "debug";
        case Info: return "info";
        case Warn: return "warn";
        case Error: return "error";
        case None: return "none";
    }
    return "?";
}

double now_s() noexcept {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace kvrt::log
