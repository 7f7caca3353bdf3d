// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// The per-sequence state of the CED runtime (private to ced_runtime.cpp and the
// test-support hooks of tests/support/runtime/ced_runtime_access.cpp).
#pragma once

#include "cache/cache.hpp"
#include "model/arch/ced_runtime.hpp"

#include <cstdint>
#include <vector>

namespace kvrt::ced {

struct CedRuntime::Seq {
    cache::SeqId bank = 0, win = 0;
    int64_t bank_len = 0, win_len = 0;  // lengths of the two cache sequences (mirrored: seq_info is O(blocks))
    std::vector<int32_t> tokens;
    int64_t dec_start = 0;  // the decoder runs for positions >= dec_start
    int64_t dec_next = 0;   // first position the decoder has not run yet
    int64_t enc_floor = 0, dec_floor = 0;
    std::vector<int64_t> fixed;                   // per source: cached groups never rewritten
    std::vector<std::vector<float>> tail_kv;      // per source: raw rows of the open group
    std::vector<std::vector<float>> tail_gate;
};

}  // namespace kvrt::ced
