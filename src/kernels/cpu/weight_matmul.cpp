// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// matmul(): argument checks, ISA choice, activation quantisation and the
// OpenMP split of the output columns (weight_matmul.hpp).
#include "kernels/weight_matmul.hpp"
#include "util/isa.hpp"

#include "kernels/cpu/activation_quant.hpp"
#include "kernels/cpu/weight_matmul_kernels.hpp"
#include "kernels/cpu/weight_matmul_layout.hpp"
#include "util/error.hpp"

#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

namespace kvrt {

using namespace kernels;

namespace {

// Per-thread scratch for the quantised activations of the calling thread.
QuantizedRowsBuffer& scratch() {
    thread_local QuantizedRowsBuffer buf;
    return buf;
}

}  // namespace

// The best matmul path at the process-wide level (util/isa.hpp: KVRT_ISA, isa_set_limit):
// the AVX-512 path needs AVX512_VNNI besides AVX-512; below it AVX-VNNI, then AVX2.
KernelIsa kernel_isa_detected() noexcept {
    const CpuFeatures& f = cpu_features();
    const Isa level = isa_active();
    if (level >= Isa::Avx512 && f.avx512vnni) return KernelIsa::Avx512;
    if (level >= Isa::AvxVnni && f.avxvnni) return KernelIsa::AvxVnni;
    if (level >= Isa::Avx2 && f.avx2) return KernelIsa::Avx2;
    return KernelIsa::Scalar;
}

bool kernel_isa_supported(KernelIsa isa) noexcept {
    const CpuFeatures& f = cpu_features();
    switch (isa) {
        case KernelIsa::Auto:
        case KernelIsa::Scalar: return true;
        case KernelIsa::Avx2: return f.avx2;
        case KernelIsa::AvxVnni: return f.avxvnni;
        case KernelIsa::Avx512: return f.avx512vnni;
    }
    return false;
}

const char* kernel_isa_name(KernelIsa isa) noexcept {
    switch (isa) {
        case KernelIsa::Auto: return "auto";
        case KernelIsa::Scalar: return "scalar";
        case KernelIsa::Avx2: return "avx2";
        case KernelIsa::AvxVnni: return "avxvnni";
        case KernelIsa::Avx512: return "avx512";
    }
    return "?";
}

namespace {
using PanelKernel = void (*)(const MatmulArgs&, int64_t, int64_t);

// The panel kernel of `isa` (Auto: the best this CPU has); resolves isa in place.
// Throws KVRT_ERR_UNSUPPORTED when the CPU cannot run it. 16-bit codes: the ISA's own
// 16-bit kernel (vpdpwssd on AVX-512 and AVX-VNNI, vpmaddwd on AVX2).
PanelKernel panel_kernel(KernelIsa& isa, ActBits act) {
    if (isa == KernelIsa::Auto) isa = kernel_isa_detected();
    KVRT_CHECK(kernel_isa_supported(isa), KVRT_ERR_UNSUPPORTED,
               std::string("weight matmul: this CPU cannot run the ") + kernel_isa_name(isa) + " path");
    KVRT_CHECK(act == ActBits::Q8 || act == ActBits::Q16, KVRT_ERR_INVALID_ARGUMENT,
               "weight matmul: activation bits " + std::to_string(static_cast<int>(act)) + " is not 8 or 16");
    if (act == ActBits::Q16)
        return isa == KernelIsa::Scalar    ? matmul_panels16_scalar
               : isa == KernelIsa::Avx512  ? matmul_panels16_avx512
               : isa == KernelIsa::AvxVnni ? matmul_panels16_avxvnni
                                           : matmul_panels16_avx2;
    if (isa == KernelIsa::Avx512) return matmul_panels_avx512;
    if (isa == KernelIsa::AvxVnni) return matmul_panels_avxvnni;
    if (isa == KernelIsa::Avx2) return matmul_panels_avx2;
    return matmul_panels_scalar;
}

// The call's operands, checked (non-null X and Y, strides that hold a row), for M >= 1.
MatmulArgs checked_args(const PackedWeight& w, const float* X, int64_t M, int64_t ldx, float* Y, int64_t ldy) {
    KVRT_CHECK(X != nullptr && Y != nullptr, KVRT_ERR_INVALID_ARGUMENT, "weight matmul: X or Y is NULL");
    KVRT_CHECK(ldx >= w.cols(), KVRT_ERR_INVALID_ARGUMENT,
               "weight matmul: ldx = " + std::to_string(ldx) + " < K = " + std::to_string(w.cols()));
    KVRT_CHECK(ldy >= w.rows(), KVRT_ERR_INVALID_ARGUMENT,
               "weight matmul: ldy = " + std::to_string(ldy) + " < N = " + std::to_string(w.rows()));
    MatmulArgs args;
    args.w = &w;
    args.X = X;
    args.ldx = ldx;
    args.Y = Y;
    args.ldy = ldy;
    args.M = M;
    return args;
}
}  // namespace

void matmul_part(const PackedWeight& w, const float* X, int64_t M, int64_t ldx, float* Y, int64_t ldy,
                 int64_t pair0, int64_t pair1, KernelIsa isa, ActBits act) {
    KVRT_CHECK(M >= 0, KVRT_ERR_INVALID_ARGUMENT, "weight matmul: M = " + std::to_string(M) + " is negative");
    KVRT_CHECK(pair0 >= 0 && pair0 <= pair1 && pair1 <= matmul_pairs(w), KVRT_ERR_INVALID_ARGUMENT,
               "weight matmul: pair range [" + std::to_string(pair0) + ", " + std::to_string(pair1) +
                   ") is outside [0, " + std::to_string(matmul_pairs(w)) + ")");
    if (M == 0 || pair0 == pair1) return;
    MatmulArgs args = checked_args(w, X, M, ldx, Y, ldy);
    const PanelKernel kernel = panel_kernel(isa, act);
    QuantizedRows own;
    if (is_quantized_weight(w.type())) {
        own = scratch().view(M, w.cols() / 32, act);
        quantize_rows(X, ldx, 0, M, own, isa);
        args.a = &own;
    }
    kernel(args, 2 * pair0, 2 * pair1);
}

void matmul(const PackedWeight& w, const float* X, int64_t M, int64_t ldx, float* Y, int64_t ldy, int n_threads,
            KernelIsa isa, ActBits act) {
    KVRT_CHECK(M >= 0, KVRT_ERR_INVALID_ARGUMENT, "weight matmul: M = " + std::to_string(M) + " is negative");
    if (M == 0) return;
    MatmulArgs args = checked_args(w, X, M, ldx, Y, ldy);
    const PanelKernel kernel = panel_kernel(isa, act);

    const bool quant = is_quantized_weight(w.type());
    const int64_t nb = w.cols() / 32;

    int nt = n_threads > 0 ? n_threads : omp_get_max_threads();
    const int64_t pairs = w.panels() / 2;
    const double work = static_cast<double>(M) * static_cast<double>(w.rows()) * static_cast<double>(w.cols());
    if (work < 65536.0 || nt < 1) nt = 1;

    // Work split: tasks are (panel pair, row chunk); rows are cut into chunks
    // only when there are too few pairs to keep every thread busy (small N,
    // large M). A thread takes a contiguous range of tasks, pair-major, so its
    // weights stream once. The split never changes a result: each output
    // element is computed by one thread with the same operations.
    int64_t row_chunks = 1;
    if (pairs < 4 * nt) row_chunks = std::max<int64_t>(1, std::min<int64_t>((4 * nt + pairs - 1) / pairs, M / 16));
    const int64_t tasks = pairs * row_chunks;
    nt = static_cast<int>(std::min<int64_t>(nt, tasks));

    // Few rows (decode): every thread quantises all of them into its own
    // scratch (a few KB) and no barrier is needed. Many rows (prefill): the
    // threads quantise a share each into the caller's scratch, then meet.
    // Either way the bytes are the same (a function of the row alone).
    const bool private_quant = quant && (M <= 16 || nt == 1);
    QuantizedRows shared;
    if (quant && !private_quant) shared = scratch().view(M, nb, act);

#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        const int tid = omp_get_thread_num();
        const int nth = omp_get_num_threads();
        MatmulArgs targs = args;
        QuantizedRows own;
        if (private_quant) {
            own = scratch().view(M, nb, act);
            quantize_rows(X, ldx, 0, M, own, isa);
            targs.a = &own;
        } else if (quant) {
            const int64_t m0 = M * tid / nth, m1 = M * (tid + 1) / nth;
            quantize_rows(X, ldx, m0, m1, shared, isa);
            targs.a = &shared;
#pragma omp barrier
        }
        // Tasks are handed out in contiguous chunks, dynamically: a thread that
        // is descheduled (a shared machine) or slower (hybrid P/E cores) holds
        // up the call less. ~4 chunks per thread keep each weight stream long.
        const int64_t chunk = std::max<int64_t>(1, tasks / (4 * nth));
        const int64_t n_chunks = (tasks + chunk - 1) / chunk;
#pragma omp for schedule(dynamic, 1) nowait
        for (int64_t c = 0; c < n_chunks; c++) {
            const int64_t t0 = c * chunk, t1 = std::min(tasks, t0 + chunk);
            if (row_chunks == 1) {
                kernel(targs, 2 * t0, 2 * t1);
                continue;
            }
            for (int64_t task = t0; task < t1; task++) {
                const int64_t pair = task / row_chunks, rc = task % row_chunks;
                const int64_t m0 = M * rc / row_chunks, m1 = M * (rc + 1) / row_chunks;
                MatmulArgs sub = targs;
                QuantizedRows rows;
                if (quant) {
                    rows = targs.a->from_row(m0);
                    sub.a = &rows;
                }
                sub.X = X + m0 * ldx;
                sub.Y = Y + m0 * ldy;
                sub.M = m1 - m0;
                kernel(sub, 2 * pair, 2 * pair + 2);
            }
        }
    }
}

}  // namespace kvrt
