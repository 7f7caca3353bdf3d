// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// The process-wide log (kvrt/process.h: kvrt_set_log_callback). Nothing is printed by
// the library: a message goes to the installed callback when its level is at least the
// callback's minimum, else it is not even formatted (log::at(level, [&] { return ...; })).
//
// Delivery: write() queues the message on the calling thread; flush() delivers the
// thread's queue, and the C API boundary (api/boundary.hpp's guard) calls it when each kvrt
// call returns, so the callback never runs while kvrt holds a lock (it may call kvrt).
// Deliveries are serialised by one mutex, which set_callback also takes, so once
// set_callback returns the previous callback is never called again. A message logged from
// inside the callback (the callback called kvrt and that logs) is dropped rather than
// delivered re-entrantly.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace kvrt::log {

enum Level : int { Debug = 0, Info = 1, Warn = 2, Error = 3, None = 4 };

using Fn = void (*)(int32_t level, const char* message, void* user_data);

// min_level in [Debug, None]; fn nullptr or min_level None: nothing is logged.
void set_callback(int min_level, Fn fn, void* user_data);

// True when a callback wants messages of this level (one relaxed atomic load).
bool enabled(int level) noexcept;

// Queues msg when enabled(level). Never throws.
void write(int level, const std::string& msg) noexcept;
// Delivers the calling thread's queued messages. Never throws.
void flush() noexcept;

// Formats (make() returns a std::string) only when the level is wanted.
template <class Make>
inline void at(int level, Make&& make) noexcept {
    if (!enabled(level)) return;
    try {
        write(level, make());
    } catch (...) {
    }
}

const char* level_name(int level) noexcept;

// Seconds on a monotonic clock (durations in messages).
double now_s() noexcept;

}  // namespace kvrt::log
