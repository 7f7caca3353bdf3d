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
// which add exactly nothing). Since 0.3.3 only the scalar path comes here: the AVX-512, AVX2,
// AVX-VNNI and AMX kernels make the same additions themselves (weight_matmul_fused_residual.hpp),
// with the rows' lists of marked_step_rows below.
#include "kernels/cpu/weight_matmul_fused_residual.hpp"
#include "kernels/cpu/weight_matmul_kernels.hpp"
#include "kernels/cpu/weight_matmul_layout.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

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
        ra.sparse_blocks = subs > 1;
        kernel(ra, c0, c1);
        for (int i = 0; i < rows; i++) {
            float* y = args.Y + sc.row[i] * args.ldy;
            const float* t = sc.y + i * width;
            for (int64_t n = 0; n < n1 - n0; n++) y[n0 + n] += t[n];
        }
    }
}

// Row m's codes, scales and sums of step st into slot `slot` of the group (a K-quant step's
// unmarked blocks: zero codes and scale, which add exactly nothing).
void gather(const QuantizedRows& a, int64_t m, int64_t st, int64_t subs, ResidualScratch& sc, int slot) {
    for (int64_t j = 0; j < subs; j++) {
        const int64_t src = m * a.blocks + st * subs + j, dst = slot * subs + j;
        const bool mark = a.rd[src] != 0.0f;
        if (mark) std::memcpy(sc.qs + dst * 32, a.rq + src * 32, 32);
        else std::memset(sc.qs + dst * 32, 0, 32);
        sc.d[dst] = a.rd[src];
        sc.sum[dst] = mark ? a.rsum[src] : 0;
        sc.sum_lo[dst] = mark ? a.rsum_lo[src] : 0;
        sc.s[dst] = 0.0f;
    }
    sc.row[slot] = m;
}

// Per thread: the storage of marked_step_rows.
struct StepRows {
    std::vector<int64_t> start;
    std::vector<int64_t> rows;
    std::vector<int64_t> marked;
};
// fn(st, b) per step st of row m with a marked block, b its first marked block there.
template <class Fn>
void for_each_marked_step(const QuantizedRows& a, int64_t m, int64_t subs, Fn&& fn) {
    int64_t last = -1;
    for (int32_t i = 0; i < a.rcount[m]; i++) {
        const int64_t b = a.rlist[m * a.blocks + i], st = b / subs;
        if (st != last) fn(st, b), last = st;
    }
}
}  // namespace

// A counting sort of the rows' marked steps on their first marked block there: a step's rows come
// ordered by it (then by row), so that in a K-quant step the rows marked at the same block are
// neighbours and a group of them (the fused residual's, or the separate pass's row tiles) unpacks
// that block's weights once for all of them. (The order of a step's rows changes no bit: each
// row's products go to its own row of Y. On Qwen2.5's Q4_K and Q6_K matmuls, AMD EPYC Zen 4, the
// fused residual took 20-27% fewer samples than with the rows in increasing order.)
bool marked_step_rows(const QuantizedRows& a, int64_t M, int64_t subs, MarkedStepRows& view) noexcept {
    thread_local StepRows out;
    const int64_t nsteps = a.blocks / subs, nb = nsteps * subs;
    std::vector<int64_t>& start = out.start;  // per block while sorting, then per step
    try {
        start.assign(static_cast<size_t>(nb + 1), 0);
        out.marked.resize(static_cast<size_t>(nsteps));
        int64_t total = 0;
        for (int64_t m = 0; m < M; m++)
            for_each_marked_step(a, m, subs, [&](int64_t, int64_t b) { start[static_cast<size_t>(b + 1)]++, total++; });
        for (int64_t b = 0; b < nb; b++) start[static_cast<size_t>(b + 1)] += start[static_cast<size_t>(b)];
        if (out.rows.size() < static_cast<size_t>(total)) out.rows.resize(static_cast<size_t>(total));
    } catch (...) {
        return false;
    }
    std::vector<int64_t>& fill = start;  // (restored below: fill[b] walks from start[b])
    for (int64_t m = 0; m < M; m++)
        for_each_marked_step(a, m, subs, [&](int64_t, int64_t b) { out.rows[static_cast<size_t>(fill[static_cast<size_t>(b)]++)] = m; });
    for (int64_t b = nb; b > 0; b--) fill[static_cast<size_t>(b)] = fill[static_cast<size_t>(b - 1)];
    fill[0] = 0;
    for (int64_t st = 1; st <= nsteps; st++) start[static_cast<size_t>(st)] = start[static_cast<size_t>(st * subs)];  // (st * subs >= st: not yet overwritten)
    int64_t n_marked = 0;
    for (int64_t st = 0; st < nsteps; st++)
        if (start[static_cast<size_t>(st + 1)] > start[static_cast<size_t>(st)]) out.marked[static_cast<size_t>(n_marked++)] = st;
    view.start = out.start.data();
    view.rows = out.rows.data();
    view.steps = nsteps;
    view.marked = out.marked.data();
    view.n_marked = n_marked;
    return true;
}

void matmul_residual(const MatmulArgs& args, PanelKernel8 kernel, int64_t p0, int64_t p1) {
    const QuantizedRows& a = *args.a;
    if (!a.rq || p0 >= p1) return;
    bool any = false;
    for (int64_t m = 0; m < args.M && !any; m++) any = a.rcount[m] != 0;
    if (!any) return;
    const PackedWeight& w = *args.w;
    const int64_t subs = panel_step_elems(w.type()) / 32;  // blocks per panel step
    const int64_t nsteps = a.blocks / subs;
    ResidualScratch& sc = residual_scratch();
    if (args.M == 1) {  // decode: the row's own list, one kernel call per marked step
        for_each_marked_step(a, 0, subs, [&](int64_t st, int64_t) {
            gather(a, 0, st, subs, sc, 0);
            run_group(args, kernel, sc, 1, st, subs, p0, p1);
        });
        return;
    }
    MarkedStepRows lists;
    const bool listed = marked_step_rows(a, args.M, subs, lists);
    for (int64_t st = 0; st < nsteps; st++) {
        int rows = 0;
        auto add = [&](int64_t m) {
            gather(a, m, st, subs, sc, rows++);
            if (rows == kGroupRows) {
                run_group(args, kernel, sc, rows, st, subs, p0, p1);
                rows = 0;
            }
        };
        if (listed) {
            for (int64_t i = lists.start[st]; i < lists.start[st + 1]; i++) add(lists.rows[i]);
        } else {
            for (int64_t m = 0; m < args.M; m++)
                if (a.rcount[m] != 0 && marked(a, m, st * subs, subs)) add(m);
        }
        if (rows > 0) run_group(args, kernel, sc, rows, st, subs, p0, p1);
    }
}

}  // namespace kvrt::kernels
