// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// The second pass of ActBits::Q8R (weight_matmul.hpp): the residual codes of the rows' outlier
// blocks times W, added to Y. Per panel step of W (a 32-element block, or a K-quant's 256-element
// super-block) the rows with a marked block there are gathered into a small QuantizedRows of that
// step alone (their residual codes, scales and sums; s = 0: the main pass's s covers the min
// terms), the ISA's 8-bit panel kernel computes their products from 0 into a scratch tile
// (MatmulArgs::step0 / col0), and each is added to its row of Y. Per output element that is one
// addition per step with a marked block, in increasing step order: a function of the row alone,
// the same on every path (unmarked blocks of a gathered K-quant step have zero codes and scale,
// which add exactly nothing).
#include "kernels/cpu/weight_matmul_kernels.hpp"
#include "kernels/cpu/weight_matmul_layout.hpp"

#include <algorithm>
#include <cstring>

namespace kvrt::kernels {

namespace {

constexpr int kGroupRows = 16;       // gathered rows per kernel call
constexpr int64_t kChunkPanels = 64;  // output columns per kernel call: 64 panels (1,024)
constexpr int kMaxSubs = 8;           // blocks per panel step (K-quants)

// Per thread, never freed: a gathered group and its products (fixed size, so that a pass never
// allocates inside a team's region).
struct ResidualScratch {
    alignas(64) int8_t qs[kGroupRows * kMaxSubs * 32];
    float d[kGroupRows * kMaxSubs];
    int32_t sum[kGroupRows * kMaxSubs];
    float s[kGroupRows * kMaxSubs];
    int32_t sum_lo[kGroupRows * kMaxSubs];
    int64_t row[kGroupRows];
    alignas(64) float y[kGroupRows * kChunkPanels * kPanel];
};

ResidualScratch& residual_scratch() {
    thread_local ResidualScratch s;
    return s;
}

bool marked(const QuantizedRows& a, int64_t m, int64_t b0, int64_t subs) {
    for (int64_t j = 0; j < subs; j++)
        if (a.rd[m * a.blocks + b0 + j] != 0.0f) return true;
    return false;
}

// The gathered group's products over panels [p0, p1), added to Y.
void run_group(const MatmulArgs& args, PanelKernel8 kernel, ResidualScratch& sc, int rows, int64_t step,
               int64_t subs, int64_t p0, int64_t p1) {
    const PackedWeight& w = *args.w;
    QuantizedRows g;
    g.rows = rows;
    g.blocks = subs;
    g.qs = sc.qs;
    g.d = sc.d;
    g.sum = sc.sum;
    g.s = sc.s;
    g.sum_lo = sc.sum_lo;
    for (int64_t c0 = p0; c0 < p1; c0 += kChunkPanels) {
        const int64_t c1 = std::min(p1, c0 + kChunkPanels);
        const int64_t n0 = c0 * kPanel, n1 = std::min(c1 * kPanel, w.rows());
        if (n1 <= n0) break;
        const int64_t width = (c1 - c0) * kPanel;
        MatmulArgs ra = args;
        ra.a = &g;
        ra.X = nullptr;
        ra.M = rows;
        ra.Y = sc.y;
        ra.ldy = width;
        ra.step0 = step;
        ra.col0 = n0;
        kernel(ra, c0, c1);
        for (int i = 0; i < rows; i++) {
            float* y = args.Y + sc.row[i] * args.ldy;
            const float* t = sc.y + i * width;
            for (int64_t n = 0; n < n1 - n0; n++) y[n0 + n] += t[n];
        }
    }
}

}  // namespace

void matmul_residual(const MatmulArgs& args, PanelKernel8 kernel, int64_t p0, int64_t p1) {
    const QuantizedRows& a = *args.a;
    if (!a.rq || p0 >= p1) return;
    const PackedWeight& w = *args.w;
    const int64_t subs = panel_step_elems(w.type()) / 32;  // blocks per panel step
    ResidualScratch& sc = residual_scratch();
    for (int64_t st = 0; st < a.blocks / subs; st++) {
        const int64_t b0 = st * subs;
        int rows = 0;
        for (int64_t m = 0; m < args.M; m++) {
            if (!marked(a, m, b0, subs)) continue;
            for (int64_t j = 0; j < subs; j++) {
                const int64_t src = m * a.blocks + b0 + j, dst = rows * subs + j;
                std::memcpy(sc.qs + dst * 32, a.rq + src * 32, 32);
                sc.d[dst] = a.rd[src];
                sc.sum[dst] = a.rsum[src];
                sc.sum_lo[dst] = a.rsum_lo[src];
                sc.s[dst] = 0.0f;
            }
            sc.row[rows++] = m;
            if (rows == kGroupRows) {
                run_group(args, kernel, sc, rows, st, subs, p0, p1);
                rows = 0;
            }
        }
        if (rows > 0) run_group(args, kernel, sc, rows, st, subs, p0, p1);
    }
}

}  // namespace kvrt::kernels
