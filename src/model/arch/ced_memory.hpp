// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// KV bytes of a CED model by component (CED.md "Bytes per token"), and of a
// dense GQA model of the same width and depth for comparison.
//
//   global KV per token = sum over sources of (main row + indexer row) / r
//   window per sequence = layers x W rows of D, independent of the context length
//   dense GQA reference = 2 (K, V) x L x n_kv x 64 per token, with 64-wide
//                         heads, n_q = E / 64 and n_kv = max(1, n_q / 4)
// elem_bytes: bytes of one stored element (kvrt's CED caches store f32: 4). The typed form
// takes the bank rows' / indexer keys' type and the window rows' type and counts rows as the
// cache stores them, scales included (util/kv_quant.hpp: FP4 bank rows of 512 are 288 bytes,
// FP4 indexer keys of 128 are 68, which gives the public V4.1 configuration's 890 B/token).
// CedRuntime's caches account exactly these figures (tests check it).
#pragma once

#include "model/arch/ced_config.hpp"
#include "util/dtype.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace kvrt::ced {

struct CedMemory {
    struct Source {
        int32_t layer = 0;
        int32_t ratio = 1;
        double main_bytes_per_token = 0;
        double indexer_bytes_per_token = 0;
    };
    std::vector<Source> sources;
    double main_bytes_per_token = 0;     // all banks' main rows
    double indexer_bytes_per_token = 0;  // all banks' indexer keys
    double global_bytes_per_token = 0;   // the two together: what a token costs for ever
    uint64_t window_bytes_per_sequence = 0;  // the per-sequence constant
    int32_t dense_layers = 0, dense_kv_heads = 0, dense_head_dim = 0;
    double dense_bytes_per_token = 0;
};

CedMemory ced_memory(const CedConfig& c, uint32_t elem_bytes);
CedMemory ced_memory(const CedConfig& c, DType bank_dtype, DType window_dtype);

// A human-readable table of m (one component per line).
std::string format_memory(const CedConfig& c, const CedMemory& m);

}  // namespace kvrt::ced
