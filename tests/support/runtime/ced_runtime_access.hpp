// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Test and benchmark hooks of the CED runtime, kept out of the library (a friend of
// CedRuntime in the internal test-support library).
#pragma once

#include "model/arch/ced_runtime.hpp"

#include <cstdint>
#include <vector>

namespace kvrt::ced {

struct CedRuntimeAccess {
    // Makes an empty sequence hold n positions of random tokens whose cached rows
    // (banks, indexer keys, the last W window rows) are random unit-RMS vectors, as if
    // prefilled, without computing them, so that decode at 1M positions of context can
    // be timed without a 1M prefill.
    static void fill_random(CedRuntime& rt, CedRuntime::SeqId seq, int64_t n, uint64_t seed);
    // Record the rows each layer selects at the last position of every pass (off by default).
    static void record_selections(CedRuntime& rt, bool on);
    // Rows selected by layer l at the last position processed (record_selections first).
    static const std::vector<int32_t>& last_selection(const CedRuntime& rt, int32_t layer);
};

}  // namespace kvrt::ced
