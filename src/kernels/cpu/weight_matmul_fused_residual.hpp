// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// ActBits::Q8R's residual products computed by the kernel itself (MatmulArgs::residual_rows: the
// AVX-512, AVX2 and AVX-VNNI kernels, and AMX through the AVX-512 one) instead of by the separate
// pass (weight_matmul_residual.cpp), with that pass's bits.
//
// The separate pass adds, per output element, each marked panel step's residual product (its
// float operations from 0, over the step's marked blocks) to the finished 8-bit chain, in
// increasing step order; it gathers the rows' codes per step and runs the 8-bit kernel on them
// over a chunk of panels, reading those weights a second time from wherever they are by then. The
// fused form does the same right after a panel pair's row tiles have stored their chains, while
// the pair's weights are in L1/L2: per step in increasing order, the rows marked there (the lists
// below) in groups of up to kFusedResidualGroup, each group's products from its residual codes in
// place, added to its rows of Y. Same operations, same order. (AVX-512: per panel pair, groups of
// up to kFusedResidualGroup; AVX2: per panel, the row tiles themselves on the group's residual
// codes, kMaxRows = 2 rows at a time: weight_matmul_avx2_impl.hpp, ResidualRows.)
#pragma once

#include "kernels/cpu/activation_quant.hpp"

#include <cstdint>

namespace kvrt::kernels {

// Rows per residual group on AVX-512: each group unpacks the step's weight codes once. 8 (one dot chain per
// row and panel above 4 rows) measured slower on Gemma 3's Q5_0 and Q4_K matmuls (AMD EPYC Zen 4).
constexpr int kFusedResidualGroup = 4;

// The rows of each panel step (of `subs` blocks) with a marked block there, rows[start[st] ..
// start[st + 1]), ordered by their first marked block in the step, then by row (so that a group
// of neighbours shares its blocks in a K-quant step); and the steps that have any, marked[0 ..
// n_marked), in increasing order, which the kernels walk per panel (pair) instead of every step:
// a decode row has at most 1 / kOutlierBlockShare marked blocks among K / 32, and the walk over
// every step of every panel was most of the residual's cost there (plain AVX2, in cache, a 4864 x
// 896 Q5_0 GEMV with three marked blocks: +27% time for its residual, +9% with the list).
struct MarkedStepRows {
    const int64_t* start = nullptr;
    const int64_t* rows = nullptr;
    int64_t steps = 0;
    const int64_t* marked = nullptr;
    int64_t n_marked = 0;
};
// The lists of rows [0, M) of `a` in per-thread storage (valid until the thread's next call); false
// when that storage cannot grow.
bool marked_step_rows(const QuantizedRows& a, int64_t M, int64_t subs, MarkedStepRows& out) noexcept;

}  // namespace kvrt::kernels
