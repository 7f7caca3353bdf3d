// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Minimal helpers shared by the benchmarks: a monotonic timer and JSON lines
// with the fields every benchmark prints: bench, metric, value, unit and,
// where a baseline was measured in the same run, baseline, baseline_value, ratio.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>

namespace kvrt::bench {

inline double now_seconds() {
    using clock = std::chrono::steady_clock;
    return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

// Extra fields: a preformatted JSON fragment such as "\"threads\":2,\"heads\":\"32/8\"" (may be empty).
inline void emit(const std::string& bench, const std::string& metric, double value, const std::string& unit,
                 const std::string& extra = "") {
    std::printf("{\"bench\":\"%s\",\"metric\":\"%s\",\"value\":%.6g,\"unit\":\"%s\"%s%s}\n", bench.c_str(),
                metric.c_str(), value, unit.c_str(), extra.empty() ? "" : ",", extra.c_str());
    std::fflush(stdout);
}

// ratio = value / baseline_value (for "higher is better" metrics the goal is ratio >= target).
inline void emit_vs(const std::string& bench, const std::string& metric, double value, const std::string& unit,
                    const std::string& baseline, double baseline_value, const std::string& extra = "") {
    std::printf(
        "{\"bench\":\"%s\",\"metric\":\"%s\",\"value\":%.6g,\"unit\":\"%s\",\"baseline\":\"%s\","
        "\"baseline_value\":%.6g,\"ratio\":%.4f%s%s}\n",
        bench.c_str(), metric.c_str(), value, unit.c_str(), baseline.c_str(), baseline_value,
        baseline_value != 0 ? value / baseline_value : 0.0, extra.empty() ? "" : ",", extra.c_str());
    std::fflush(stdout);
}

}  // namespace kvrt::bench
