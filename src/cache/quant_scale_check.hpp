// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Checks of quantised KV rows coming from outside the process (state files, block
// tiers): every scale of an int8 / fp8 row must be finite, else the block is refused
// before it enters a cache (a NaN scale would silently poison every later query).
#pragma once

#include "cache/layout.hpp"

#include <cstdint>
#include <string>

namespace kvrt::cache {

// Throws kvrt::Error (KVRT_ERR_BAD_FORMAT, naming `what`, the layer and the row) when a row of
// a quantised layer of manager `manager` in `block` (one block of that manager,
// managers[manager].block_bytes bytes) has a NaN or infinite scale. Unquantised layers: nothing.
void check_quant_scales(const ResolvedLayout& layout, int32_t manager, const uint8_t* block, const std::string& what);

}  // namespace kvrt::cache
