// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Baselines measured in the same run as the figure they are compared with.
//
// Every benchmark prints its kernel's figure beside one of these (bench_json.hpp
// emit_vs), so a ratio means the same thing on any machine:
//   - stream_read(): STREAM-style read bandwidth (bytes/s) of a buffer larger
//     than the last-level cache, with a given number of OpenMP threads. The
//     machine's limit for memory-bound kernels (decode attention, weight matmul).
//   - gemm(): oneDNN matmul GFLOP/s for C[M,N] = A[M,K] x B[K,N] in f32, bf16
//     (f32 output) or bf16 with f32 accumulation, with a given thread count:
//     the compute limit for prefill kernels.
// Both take the best of several repetitions, each timed by run_seconds() (the machine
// is shared; the best, least disturbed run is the figure). Header-only; benchmark programs link
// kvrt_internal, which brings oneDNN and OpenMP.
#pragma once

#include "bench_json.hpp"
#include "kernels/onednn/onednn_isa.hpp"

#include <oneapi/dnnl/dnnl.hpp>
#include <omp.h>

#include <algorithm>
#include <ctime>
#include <unistd.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace kvrt::bench {

// Benchmarks call this first thing in main(): OpenMP reads OMP_WAIT_POLICY when the runtime
// loads, so when it is unset the program re-executes itself with OMP_WAIT_POLICY=passive
// (idle threads sleep rather than spin; see run_seconds). Returns only in the final process.
inline void use_passive_omp_wait(char** argv) {
    if (std::getenv("OMP_WAIT_POLICY")) return;
    setenv("OMP_WAIT_POLICY", "passive", 1);
    execv("/proc/self/exe", argv);  // on failure, carry on with the default policy
}

// The CPU's model name with its family and model numbers (/proc/cpuinfo), printed beside every
// figure: a VM often shows only "AMD EPYC" or "Intel(R) Xeon(R) Processor", and the numbers tell
// the generations apart (AMD family 25 = Zen 3 / Zen 4, 26 = Zen 5).
inline std::string cpu_model() {
    std::ifstream f("/proc/cpuinfo");
    std::string line, name = "unknown", family, model;
    auto value = [&line] {
        const auto p = line.find(':');
        return p == std::string::npos || p + 2 > line.size() ? std::string() : line.substr(p + 2);
    };
    while (std::getline(f, line)) {
        if (line.rfind("model name", 0) == 0) name = value();
        else if (family.empty() && line.rfind("cpu family", 0) == 0) family = value();
        else if (model.empty() && line.rfind("model", 0) == 0 && line.rfind("model name", 0) != 0) model = value();
        if (line.empty() && name != "unknown") break;  // the first processor's block
    }
    if (!family.empty() && !model.empty()) name += " (family " + family + ", model " + model + ")";
    return name;
}

inline double thread_cpu_seconds() {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

// Seconds one run of fn() took with a team of `threads` OpenMP threads:
// min(wall time, CPU time of the busiest thread of the team). On a machine shared with
// other work, wall time also counts the slices the scheduler gave to others; the busiest
// thread's CPU time is what the run costs undisturbed (threads left idle by fn, e.g. a
// oneDNN primitive that uses fewer threads, do not lower it; run benchmarks with
// OMP_WAIT_POLICY=passive so waiting threads sleep instead of spinning). Every figure and
// baseline uses this clock.
template <class Fn>
double run_seconds(int threads, Fn&& fn) {
    if (threads < 1) threads = 1;
    double c0[256] = {}, c1[256] = {};
    if (threads > 256) threads = 256;
#pragma omp parallel num_threads(threads)
    c0[omp_get_thread_num()] = thread_cpu_seconds();
    const double w0 = now_seconds();
    fn();
    const double wall = now_seconds() - w0;
#pragma omp parallel num_threads(threads)
    c1[omp_get_thread_num()] = thread_cpu_seconds();
    double busiest = 0;
    for (int i = 0; i < threads; ++i) busiest = std::max(busiest, c1[i] - c0[i]);
    return busiest > 0 && busiest < wall ? busiest : wall;
}

// Last-level cache size in bytes (sysfs; 32 MiB if unknown).
inline size_t llc_bytes() {
    size_t best = 0;
    for (int idx = 0; idx < 8; ++idx) {
        std::ifstream f("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(idx) + "/size");
        if (!f) continue;
        std::string s;
        f >> s;
        if (s.empty()) continue;
        size_t v = std::strtoull(s.c_str(), nullptr, 10);
        char unit = s.back();
        if (unit == 'K') v <<= 10;
        else if (unit == 'M') v <<= 20;
        best = std::max(best, v);
    }
    return best ? best : (size_t(32) << 20);
}

namespace detail {
typedef uint64_t u64x8 __attribute__((vector_size(64)));

// Sums 64-byte lines of [p, p + n_lines): the read side of STREAM, nothing written.
__attribute__((target_clones("avx512f", "avx2", "default"))) inline uint64_t read_lines(const u64x8* p,
                                                                                         size_t n_lines) {
    u64x8 a0 = {}, a1 = {}, a2 = {}, a3 = {};
    size_t i = 0;
    for (; i + 4 <= n_lines; i += 4) {
        a0 += p[i];
        a1 += p[i + 1];
        a2 += p[i + 2];
        a3 += p[i + 3];
    }
    for (; i < n_lines; ++i) a0 += p[i];
    u64x8 s = (a0 + a1) + (a2 + a3);
    uint64_t r = 0;
    for (int k = 0; k < 8; ++k) r += s[k];
    return r;
}
}  // namespace detail

// STREAM-style read bandwidth (bytes/s) with `threads` OpenMP threads over a
// buffer of `bytes` (default: 4 x LLC, at least 256 MiB). Each thread reads its
// own contiguous slice, first-touched by that thread. Best of `reps`.
inline double stream_read(int threads, size_t bytes = 0, int reps = 5) {
    if (bytes == 0) bytes = std::max<size_t>(4 * llc_bytes(), size_t(256) << 20);
    bytes &= ~size_t(4095);
    const size_t lines = bytes / 64;
    auto* buf = static_cast<detail::u64x8*>(std::aligned_alloc(4096, bytes));
    if (!buf) return 0;
#pragma omp parallel num_threads(threads)
    {
        int t = omp_get_thread_num(), n = omp_get_num_threads();
        size_t a = lines * t / n, b = lines * (t + 1) / n;
        std::memset(static_cast<void*>(buf + a), t + 1, (b - a) * 64);
    }
    double best = 0;
    volatile uint64_t sink = 0;
    for (int r = 0; r < reps; ++r) {
        uint64_t acc = 0;
        double dt = run_seconds(threads, [&] {
#pragma omp parallel num_threads(threads) reduction(+ : acc)
            {
                int t = omp_get_thread_num(), n = omp_get_num_threads();
                size_t a = lines * t / n, b = lines * (t + 1) / n;
                acc += detail::read_lines(buf + a, b - a);
            }
        });
        sink = sink + acc;
        best = std::max(best, double(bytes) / dt);
    }
    std::free(buf);
    return best;
}

enum class GemmType { F32, BF16 };

inline const char* gemm_type_name(GemmType t) { return t == GemmType::F32 ? "f32" : "bf16"; }

// oneDNN matmul throughput in GFLOP/s (2*M*N*K per run) for A[M,K] x B[K,N] ->
// C[M,N] f32, A and B in `type`, with `threads` OpenMP threads. The primitive
// is created once; the timed loop runs it until ~min_seconds have passed, best
// of `reps` such loops. Returns 0 if oneDNN cannot build the primitive.
inline double gemm(GemmType type, int64_t M, int64_t N, int64_t K, int threads, double min_seconds = 0.1,
                   int reps = 3) {
    using namespace dnnl;
    kvrt::onednn::follow_isa_limit();  // under KVRT_ISA, oneDNN at kvrt's level: a like-for-like baseline
    int saved = omp_get_max_threads();
    omp_set_num_threads(threads);
    double best = 0;
    try {
        engine eng(engine::kind::cpu, 0);
        stream s(eng);
        auto dt = type == GemmType::F32 ? memory::data_type::f32 : memory::data_type::bf16;
        memory::desc a_md({M, K}, dt, memory::format_tag::ab);
        memory::desc b_md({K, N}, dt, memory::format_tag::ab);
        memory::desc c_md({M, N}, memory::data_type::f32, memory::format_tag::ab);
        matmul::primitive_desc pd(matmul::desc(a_md, b_md, c_md), eng);
        matmul mm(pd);
        memory a(a_md, eng), b(b_md, eng), c(c_md, eng);
        // Fill with small values (any bit pattern of the right type is fine for timing;
        // avoid denormals and NaNs).
        auto fill = [](memory& m, memory::data_type t) {
            size_t n = m.get_desc().get_size();
            auto* p = static_cast<uint8_t*>(m.get_data_handle());
            if (t == memory::data_type::f32) {
                auto* f = reinterpret_cast<float*>(p);
                for (size_t i = 0; i < n / 4; ++i) f[i] = 0.001f * float(i % 97);
            } else {
                auto* h = reinterpret_cast<uint16_t*>(p);
                for (size_t i = 0; i < n / 2; ++i) h[i] = 0x3c00 + uint16_t(i % 97);  // ~0.0078..
            }
        };
        fill(a, dt);
        fill(b, dt);
        std::unordered_map<int, memory> args{{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}};
        mm.execute(s, args);  // warm-up (JIT, pages)
        s.wait();
        for (int r = 0; r < reps; ++r) {
            double t0 = now_seconds();
            do {
                double dt = run_seconds(threads, [&] {
                    mm.execute(s, args);
                    s.wait();
                });
                best = std::max(best, 2.0 * double(M) * double(N) * double(K) / dt / 1e9);
            } while (now_seconds() - t0 < min_seconds);
        }
    } catch (const dnnl::error&) {
        best = 0;
    }
    omp_set_num_threads(saved);
    return best;
}

// Machine limits printed once per benchmark program (JSON lines, metric "baseline").
inline void emit_machine_baselines(const std::string& bench, int max_threads) {
    for (int t = 1; t <= max_threads; ++t) {
        emit(bench, "stream_read", stream_read(t) / 1e9, "GB/s", "\"threads\":" + std::to_string(t));
    }
}

}  // namespace kvrt::bench
