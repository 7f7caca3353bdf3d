// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// PagedKV: how a kernel sees one layer's cached rows of one sequence.
//
// The cache manager (src/cache/) owns blocks; a block holds `block_tokens`
// consecutive positions. Inside a block, this layer's K rows start at
// `k_offset` and its V rows at `v_offset` (equal when one vector serves as both
// key and value, K = V); consecutive positions are `row_bytes` apart; a row
// holds n_kv_heads heads of head_dim elements of `dtype`, head-major:
//
//   K(pos, head, d) = blocks[pos / block_tokens] + k_offset
//                     + (pos % block_tokens) * row_bytes
//                     + head * kv_head_bytes(dtype, head_dim) + d * dtype_size(dtype)
//
// (quantised types carry their scales after each head's elements: util/kv_quant.hpp).
// A null entry in `blocks` marks a block that no longer holds rows (a sliding
// window dropped it); kernels never read it. Kernels read these rows in place:
// no copy into a contiguous buffer on the hot path.
#pragma once

#include "util/dtype.hpp"

#include <cstddef>
#include <cstdint>

namespace kvrt {

struct PagedKV {
    const uint8_t* const* blocks = nullptr;  // one pointer per logical block, nullptr = dropped
    int32_t n_blocks = 0;
    int32_t block_tokens = 0;
    size_t k_offset = 0;
    size_t v_offset = 0;
    size_t row_bytes = 0;
    int32_t n_kv_heads = 0;
    int32_t head_dim = 0;
    DType dtype = DType::F32;
    int32_t n_tokens = 0;  // rows valid for positions [0, n_tokens)
    // V rows of another type than K's (llama.cpp's type_k / type_v): v_row_bytes > 0 says so, and
    // v_dtype and v_row_bytes then describe the V rows. v_row_bytes == 0: V rows are like K's.
    DType v_dtype = DType::F32;
    size_t v_row_bytes = 0;

    DType vdt() const { return v_row_bytes ? v_dtype : dtype; }
    size_t vrb() const { return v_row_bytes ? v_row_bytes : row_bytes; }
    const uint8_t* k_row(int64_t pos) const {
        return blocks[pos / block_tokens] + k_offset + static_cast<size_t>(pos % block_tokens) * row_bytes;
    }
    const uint8_t* v_row(int64_t pos) const {
        return blocks[pos / block_tokens] + v_offset + static_cast<size_t>(pos % block_tokens) * vrb();
    }
};

}  // namespace kvrt
