// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// matmul(): argument checks, ISA choice, activation quantisation and the
// OpenMP split of the output columns (weight_matmul.hpp).
#include "kernels/weight_matmul.hpp"
#include "util/isa.hpp"
#include "util/region_error.hpp"

#include "kernels/cpu/activation_quant.hpp"
#include "kernels/cpu/weight_matmul_fused_residual.hpp"
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

// The calling thread's codes of its MatmulPartInput, and how many times they have been written.
struct PartBuffer {
    QuantizedRowsBuffer rows;
    uint64_t ticket = 0;
};
PartBuffer& part_buffer() {
    thread_local PartBuffer buf;
    return buf;
}

}  // namespace

kernels::WeightPrefetch kernels::weight_prefetch_for(const CpuFeatures& f, int64_t rows) noexcept {
    WeightPrefetch p;
    if (cpu_is_intel_before_avxvnni(f) && rows < kPrefetchPrefillRows) {
        p.ahead = 4096;
    } else if (prefetch_streams_into_l2(f)) {
        p.ahead = 8192;
        p.l2 = true;
    }
    return p;
}

const kernels::WeightPrefetch& kernels::weight_prefetch(int64_t rows) noexcept {
    static const auto policy = [](int64_t m) {
        WeightPrefetch p = weight_prefetch_for(cpu_features(), m);
        // KVRT_WEIGHT_PREFETCH=l1:BYTES / l2:BYTES (BYTES 0..1 MiB, a multiple of 64): measurements.
        if (const char* e = std::getenv("KVRT_WEIGHT_PREFETCH")) {
            const std::string v(e);
            char* end = nullptr;
            const unsigned long n = v.size() > 3 ? std::strtoul(v.c_str() + 3, &end, 10) : 0;
            if ((v.rfind("l1:", 0) == 0 || v.rfind("l2:", 0) == 0) && end && *end == '\0' && n <= (1ul << 20) &&
                n % 64 == 0) {
                p.ahead = n;
                p.l2 = v[1] == '2';
            }
        }
        return p;
    };
    static const WeightPrefetch decode = policy(1), prefill = policy(kPrefetchPrefillRows);
    return rows < kPrefetchPrefillRows ? decode : prefill;
}

// The best matmul path at the process-wide level (util/isa.hpp: KVRT_ISA, isa_set_limit):
// the AVX-512 path needs AVX512_VNNI besides AVX-512; below it AVX-VNNI, then AVX2. AMX
// (tile state granted) at the amx level above it.
KernelIsa kernel_isa_detected() noexcept {
    const CpuFeatures& f = cpu_features();
    const Isa level = isa_active();
    if (level >= Isa::Amx && f.amx) return KernelIsa::Amx;
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
        case KernelIsa::Amx: return f.amx;
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
        case KernelIsa::Amx: return "amx";
    }
    return "?";
}

namespace {
using PanelKernel = void (*)(const MatmulArgs&, int64_t, int64_t);

// The panel kernel of `isa` (Auto: the best this CPU has); resolves isa in place.
// Throws KVRT_ERR_UNSUPPORTED when the CPU cannot run it. 16-bit codes: the ISA's own
// 16-bit kernel (vpdpwssd on AVX-512 and AVX-VNNI, vpmaddwd on AVX2; AMX has no 16-bit
// integer dot: the AVX-512 one).
PanelKernel panel_kernel(KernelIsa& isa, ActBits act) {
    if (isa == KernelIsa::Auto) isa = kernel_isa_detected();
    KVRT_CHECK(kernel_isa_supported(isa), KVRT_ERR_UNSUPPORTED,
               std::string("weight matmul: this CPU cannot run the ") + kernel_isa_name(isa) + " path");
    KVRT_CHECK(act == ActBits::Q8 || act == ActBits::Q8R || act == ActBits::Q16, KVRT_ERR_INVALID_ARGUMENT,
               "weight matmul: activation code kind " + std::to_string(static_cast<int>(act)) +
                   " is not 8, 9 (8 with outlier residuals) or 16");
    if (act == ActBits::Q16)
        return isa == KernelIsa::Scalar    ? matmul_panels16_scalar
               : isa >= KernelIsa::Avx512  ? matmul_panels16_avx512
               : isa == KernelIsa::AvxVnni ? matmul_panels16_avxvnni
                                           : matmul_panels16_avx2;
    if (isa == KernelIsa::Amx) return matmul_panels_amx;
    if (isa == KernelIsa::Avx512) return matmul_panels_avx512;
    if (isa == KernelIsa::AvxVnni) return matmul_panels_avxvnni;
    if (isa == KernelIsa::Avx2) return matmul_panels_avx2;
    return matmul_panels_scalar;
}

// The kernels that compute the outlier residual themselves (weight_matmul_fused_residual.hpp).
bool fuses_residual(PanelKernel kernel) {
    return kernel == matmul_panels_avx512 || kernel == matmul_panels_amx || kernel == matmul_panels_avx2 ||
           kernel == matmul_panels_avxvnni;
}
// Builds the marked rows' lists of args' rows into `lists` when kernel computes their residual
// itself and some row has one; false otherwise (no residual, or the separate pass's kernel).
bool fused_residual_lists(const MatmulArgs& args, PanelKernel kernel, MarkedStepRows& lists) {
    return args.a && args.a->rq && fuses_residual(kernel) &&
           marked_step_rows(*args.a, args.M, panel_step_elems(args.w->type()) / 32, lists);
}
// kernel over panels [p0, p1), then the residual pass where args.a has one; the AVX-512 and AVX2
// kernels compute the residual products themselves instead (the same bits), given the marked
// rows' lists (args.residual_rows when the caller built them once for several calls).
void run_kernel(const MatmulArgs& args, PanelKernel kernel, int64_t p0, int64_t p1) {
    if (args.residual_rows) {
        kernel(args, p0, p1);
        return;
    }
    MarkedStepRows lists;
    if (fused_residual_lists(args, kernel, lists)) {
        MatmulArgs fused = args;
        fused.residual_rows = &lists;
        kernel(fused, p0, p1);
        return;
    }
    kernel(args, p0, p1);
    // (the separate pass: only kernels that do not fuse the residual, the scalar one, come here)
    if (args.a && args.a->rq) matmul_residual(args, kernel, p0, p1);
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
// The task split of a matmul: tasks are (panel pair, row chunk); rows are cut into chunks only
// when there are too few pairs to keep nt threads busy (small N, large M). Tasks run in
// contiguous ranges, pair-major, so a weight stream is read once. The split never changes a
// result: each output element is computed by one thread with the same operations.
struct TaskPlan {
    int64_t M = 0, pairs = 0, row_chunks = 1, tasks = 0;
};
TaskPlan plan_tasks(const PackedWeight& w, int64_t M, int nt) {
    TaskPlan p;
    p.M = M;
    p.pairs = w.panels() / 2;
    if (p.pairs < 4 * nt) p.row_chunks = std::max<int64_t>(1, std::min<int64_t>((4 * nt + p.pairs - 1) / p.pairs, M / 16));
    p.tasks = p.pairs * p.row_chunks;
    return p;
}
// Tasks per chunk that a thread takes at a time (dynamically): ~4 chunks per thread keep each
// weight stream long, but at most kChunkBytes of weights each when there is one row chunk (GEMVs:
// the output head after a prefill, CED's decode steps; the decoder's decode team cuts its own
// tasks, decoder_forward.cpp): the threads of a memory-bound pass end within one chunk of each other,
// and a chunk of a large output head (Gemma 3's 178 MB in 8 chunks on 2 threads: 22 MB, ~1.8 ms)
// could leave the thread that finished first waiting most of that. 1 MiB is ~80 us of one core's
// memory stream; a chunk's first lines start a new prefetch stream. Measured on the head alone
// (Intel Xeon Ice Lake-SP, 2 threads, the two rules alternated call by call in one process, mean
// of 200 calls each): Gemma 3's head 0.8-3.0% faster, Qwen2.5's 0.7-4.9% (bench/README.md, Session 46).
constexpr int64_t kChunkBytes = int64_t(1) << 20;
int64_t chunk_tasks(const PackedWeight& w, const TaskPlan& p, int nth) {
    int64_t chunk = std::max<int64_t>(1, p.tasks / (4 * nth));
    if (p.row_chunks == 1 && p.pairs > 0) {
        const int64_t pair_bytes = std::max<int64_t>(1, static_cast<int64_t>(w.bytes()) / p.pairs);
        chunk = std::min(chunk, std::max<int64_t>(1, kChunkBytes / pair_bytes));
    }
    return chunk;
}
// A thread's tasks of one call run on its rows' lists, built once (in `lists`, which must outlive
// the tasks) where every task covers all rows and the kernel fuses the residual; otherwise each
// task builds its own in run_kernel.
void share_residual_rows(MatmulArgs& targs, PanelKernel kernel, const TaskPlan& plan, MarkedStepRows& lists) {
    if (plan.row_chunks == 1 && fused_residual_lists(targs, kernel, lists)) targs.residual_rows = &lists;
}
// Tasks [t0, t1) of the plan (args.a: all M rows quantised, for the quantised types).
void run_tasks(const MatmulArgs& args, PanelKernel kernel, const TaskPlan& p, int64_t t0, int64_t t1) {
    if (p.row_chunks == 1) {
        run_kernel(args, kernel, 2 * t0, 2 * t1);
        return;
    }
    for (int64_t task = t0; task < t1; task++) {
        const int64_t pair = task / p.row_chunks, rc = task % p.row_chunks;
        const int64_t m0 = p.M * rc / p.row_chunks, m1 = p.M * (rc + 1) / p.row_chunks;
        MatmulArgs sub = args;
        sub.residual_rows = nullptr;  // (lists of all M rows: a row chunk builds its own)
        QuantizedRows rows;
        if (args.a) {
            rows = args.a->from_row(m0);
            sub.a = &rows;
        }
        sub.X = args.X + m0 * args.ldx;
        sub.Y = args.Y + m0 * args.ldy;
        sub.M = m1 - m0;
        run_kernel(sub, kernel, 2 * pair, 2 * pair + 2);
    }
}
}  // namespace

void matmul_part(const PackedWeight& w, const MatmulPartInput& in, float* Y, int64_t ldy, int64_t pair0, int64_t pair1,
                 KernelIsa isa) {
    KVRT_CHECK(in.M_ >= 0, KVRT_ERR_INVALID_ARGUMENT, "weight matmul: M = " + std::to_string(in.M_) + " is negative");
    KVRT_CHECK(pair0 >= 0 && pair0 <= pair1 && pair1 <= matmul_pairs(w), KVRT_ERR_INVALID_ARGUMENT,
               "weight matmul: pair range [" + std::to_string(pair0) + ", " + std::to_string(pair1) +
                   ") is outside [0, " + std::to_string(matmul_pairs(w)) + ")");
    if (in.M_ == 0 || pair0 == pair1) return;
    MatmulArgs args = checked_args(w, in.X_, in.M_, in.ldx_, Y, ldy);
    const PanelKernel kernel = panel_kernel(isa, in.act_);  // resolves Auto before the quantiser sees isa
    QuantizedRows rows;
    if (is_quantized_weight(w.type())) {
        PartBuffer& pb = part_buffer();
        const int64_t nb = w.cols() / 32;
        // (view() returns the same memory for the same size: the codes written last are still there)
        rows = pb.rows.view(in.M_, nb, in.act_);
        if (in.blocks_ != nb || in.ticket_ != pb.ticket) {
            quantize_rows(in.X_, in.ldx_, 0, in.M_, rows, isa);
            in.blocks_ = nb;
            in.ticket_ = ++pb.ticket;
        }
        args.a = &rows;
    }
    run_kernel(args, kernel, 2 * pair0, 2 * pair1);
}

// (a fresh input: X is quantised by this call)
void matmul_part(const PackedWeight& w, const float* X, int64_t M, int64_t ldx, float* Y, int64_t ldy,
                 int64_t pair0, int64_t pair1, KernelIsa isa, ActBits act) {
    matmul_part(w, MatmulPartInput(X, M, ldx, act), Y, ldy, pair0, pair1, isa);
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
    const double work = static_cast<double>(M) * static_cast<double>(w.rows()) * static_cast<double>(w.cols());
    if (work < 65536.0 || nt < 1) nt = 1;

    const TaskPlan plan = plan_tasks(w, M, nt);
    nt = static_cast<int>(std::min<int64_t>(nt, plan.tasks));

    // Few rows (decode): every thread quantises all of them into its own
    // scratch (a few KB) and no barrier is needed. Many rows (prefill): the
    // threads quantise a share each into the caller's scratch, then meet.
    // Either way the bytes are the same (a function of the row alone).
    const bool private_quant = quant && (M <= 16 || nt == 1);
    QuantizedRows shared;
    if (quant && !private_quant) shared = scratch().view(M, nb, act);

    // A thread whose scratch is refused (std::bad_alloc) keeps it here and still goes through the
    // region's loop without running tasks (an exception may not leave an OpenMP region); the
    // call rethrows it after the region.
    RegionError err;
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        const int tid = omp_get_thread_num();
        const int nth = omp_get_num_threads();
        MatmulArgs targs = args;
        QuantizedRows own;
        bool ok = true;
        if (private_quant) {
            try {
                own = scratch().view(M, nb, act);
            } catch (...) {
                err.capture();
                ok = false;
            }
            if (ok) quantize_rows(X, ldx, 0, M, own, isa);
            targs.a = &own;
        } else if (quant) {
            const int64_t m0 = M * tid / nth, m1 = M * (tid + 1) / nth;
            quantize_rows(X, ldx, m0, m1, shared, isa);
            targs.a = &shared;
#pragma omp barrier
        }
        MarkedStepRows lists;
        if (ok) share_residual_rows(targs, kernel, plan, lists);
        // Tasks are handed out in contiguous chunks, dynamically: a thread that
        // is descheduled (a shared machine) or slower (hybrid P/E cores) holds
        // up the call less (chunk_tasks).
        const int64_t chunk = chunk_tasks(w, plan, nth);
        const int64_t n_chunks = (plan.tasks + chunk - 1) / chunk;
#pragma omp for schedule(dynamic, 1) nowait
        for (int64_t c = 0; c < n_chunks; c++)
            if (ok) run_tasks(targs, kernel, plan, c * chunk, std::min(plan.tasks, c * chunk + chunk));
    }
    err.rethrow();
}

struct MatmulTeamBuffer::Impl {
    QuantizedRowsBuffer rows;
    size_t bytes = 0;
};
MatmulTeamBuffer::MatmulTeamBuffer() : impl_(std::make_unique<Impl>()) {}
MatmulTeamBuffer::~MatmulTeamBuffer() = default;
MatmulTeamBuffer::MatmulTeamBuffer(MatmulTeamBuffer&&) noexcept = default;
MatmulTeamBuffer& MatmulTeamBuffer::operator=(MatmulTeamBuffer&&) noexcept = default;
void MatmulTeamBuffer::reserve(int64_t M, int64_t K) {
    KVRT_CHECK(M >= 0 && K >= 0, KVRT_ERR_INVALID_ARGUMENT, "MatmulTeamBuffer::reserve: negative size");
    // Q8R's view is the largest of the three kinds (8-bit codes twice and more sums than Q16's).
    const size_t per_block = QuantizedRows::bytes_per_block(ActBits::Q8R);
    static_assert(32 + 16 + 32 + 16 >= 64 + 16, "Q8R's storage covers Q16's");
    (void)impl_->rows.view(M, (K + 31) / 32, ActBits::Q8R);
    impl_->bytes = std::max(impl_->bytes, static_cast<size_t>(M) * static_cast<size_t>((K + 31) / 32) * per_block);
}
size_t MatmulTeamBuffer::bytes() const noexcept { return impl_->bytes; }

void matmul_team(const PackedWeight& w, const float* X, int64_t M, int64_t ldx, float* Y, int64_t ldy, ActBits act,
                 MatmulTeamBuffer& buf, std::atomic<int64_t>& next, TeamBarrier& barrier) {
    KVRT_CHECK(M >= 0, KVRT_ERR_INVALID_ARGUMENT, "weight matmul: M = " + std::to_string(M) + " is negative");
    if (M == 0) return;
    MatmulArgs args = checked_args(w, X, M, ldx, Y, ldy);
    KernelIsa isa = KernelIsa::Auto;
    const PanelKernel kernel = panel_kernel(isa, act);
    const bool quant = is_quantized_weight(w.type());
    const int64_t nb = w.cols() / 32;
    const size_t need = static_cast<size_t>(M) * static_cast<size_t>(nb) * QuantizedRows::bytes_per_block(act);
    KVRT_CHECK(!quant || need <= buf.bytes(),
               KVRT_ERR_INTERNAL, "matmul_team: the team buffer was not reserved for these rows");
    const int tid = omp_in_parallel() ? omp_get_thread_num() : 0;
    const int nth = omp_in_parallel() ? omp_get_num_threads() : 1;
    MatmulArgs targs = args;
    QuantizedRows shared;
    if (quant) {
        shared = buf.impl_->rows.view(M, nb, act);  // reserved: no allocation, the same view on every thread
        quantize_rows(X, ldx, M * tid / nth, M * (tid + 1) / nth, shared, isa);
        targs.a = &shared;
    }
    barrier.wait(nth);  // every row quantised (float weights: every row of X written)
    const TaskPlan plan = plan_tasks(w, M, nth);
    MarkedStepRows lists;
    share_residual_rows(targs, kernel, plan, lists);
    const int64_t chunk = chunk_tasks(w, plan, nth);
    const int64_t n_chunks = (plan.tasks + chunk - 1) / chunk;
    for (int64_t c; (c = next.fetch_add(1, std::memory_order_relaxed)) < n_chunks;)
        run_tasks(targs, kernel, plan, c * chunk, std::min(plan.tasks, c * chunk + chunk));
    barrier.wait(nth);
}

}  // namespace kvrt
