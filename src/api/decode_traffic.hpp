// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// What one decode step reads from memory, for `kvrt bench` (not part of the C API):
// the model's weights as the runtime holds them (Model::decode_weight_bytes) and the KV
// rows the step's attention reads from the context's cache, per layer and per its element
// types (scales included). The bench divides bytes x tokens/s by the STREAM read.
#pragma once

#include "kvrt/context.h"

#include <cstdint>

namespace kvrt::api {

struct DecodeTraffic {
    uint64_t weight_bytes = 0;  // weights read per step
    uint64_t kv_bytes = 0;      // KV rows read per step at n_keys positions
    bool kv_known = false;      // false for CED models (sparse bank reads: not counted)
};

// One decode step of `ctx` attending to n_keys positions (the new token's included): a full
// layer reads n_keys K and V rows, a window layer min(n_keys, W). Throws kvrt::Error
// (BAD_HANDLE for ctx, INVALID_ARGUMENT for n_keys < 1).
DecodeTraffic decode_traffic(const kvrt_context* ctx, int64_t n_keys);

}  // namespace kvrt::api
