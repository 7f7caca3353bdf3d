// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// bench_onednn_matmul: float-weight prefill GEMMs (F32 / F16 / BF16 weights, Y = X W^T), the
// hand-written kernel (kvrt::matmul on a PackedWeight: one FMA chain over K per output, the
// same bits for any M, thread count and ISA) against oneDNN's sgemm on the weights widened to
// f32 once, same run. Two oneDNN variants:
//   - whole: one sgemm over all M rows with the run's threads (oneDNN's own blocking; whether a
//     row's bits then depend on M is checked and printed: "row_bits_depend_on_m");
//   - tiled: one single-threaded sgemm per fixed tile of 16 rows (padded), tiles spread over
//     the OpenMP threads: the only form whose bits cannot depend on M or on the thread count.
// oneDNN 2.6 has no AVX2 kernel for f16 or bf16 weights, so F16 / BF16 pay the widened copy's
// memory (2x the weight bytes) on that path.
//   bench_onednn_matmul [--quick]
#include "baselines.hpp"
#include "bench_kv_fixture.hpp"
#include "kernels/weight_matmul.hpp"
#include "util/dtype.hpp"
#include "util/isa.hpp"

#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

using namespace kvrt;
using namespace kvrt::bench;

namespace {

constexpr int kTile = 16;

// Y[M][N] = X[M][K] . W[N][K]^T by one sgemm per 16-row tile, each on one thread.
void sgemm_tiled(const float* X, int64_t M, const float* W, int64_t N, int64_t K, float* Y) {
    const int64_t tiles = (M + kTile - 1) / kTile;
#pragma omp parallel
    {
        std::vector<float> xt(size_t(kTile) * K), yt(size_t(kTile) * N);
        const int saved = omp_in_parallel() ? 0 : omp_get_max_threads();
        if (saved) omp_set_num_threads(1);
#pragma omp for schedule(static)
        for (int64_t t = 0; t < tiles; ++t) {
            const int64_t m0 = t * kTile, n = std::min<int64_t>(kTile, M - m0);
            const float* xs = X + size_t(m0) * K;
            float* ys = Y + size_t(m0) * N;
            if (n < kTile) {
                std::fill(xt.begin(), xt.end(), 0.0f);
                std::memcpy(xt.data(), xs, sizeof(float) * size_t(n) * K);
                xs = xt.data();
                ys = yt.data();
            }
            dnnl_sgemm('N', 'T', kTile, N, K, 1.0f, xs, K, W, K, 0.0f, ys, N);
            if (n < kTile) std::memcpy(Y + size_t(m0) * N, yt.data(), sizeof(float) * size_t(n) * N);
        }
        if (saved) omp_set_num_threads(saved);
    }
}

struct Shape {
    const char* name;
    int64_t N, K;
};
}  // namespace

int main(int argc, char** argv) {
    use_passive_omp_wait(argv);
    kvrt::onednn::follow_isa_limit();  // before oneDNN's first kernel (onednn_isa.hpp)
    const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
    const int max_t = std::min(2, std::max(1, omp_get_max_threads()));
    const double min_s = quick ? 0.1 : 0.4;
    const std::string cpu = cpu_model();
    std::printf("# CPU: %s, isa %s\n", cpu.c_str(), isa_name(isa_active()));
    const int64_t M = 512;
    const Shape shapes[] = {{"smollm2_ffn_up_576x1536", 1536, 576}, {"qwen05_ffn_down_4864x896", 896, 4864}};
    for (const Shape& s : shapes) {
        std::mt19937 rng(5);
        std::uniform_real_distribution<float> u(-1.0f, 1.0f);
        std::vector<float> x(size_t(M) * s.K), wf(size_t(s.N) * s.K);
        for (float& v : x) v = u(rng);
        for (float& v : wf) v = u(rng) * 0.05f;
        for (TensorType tt : {TensorType::F32, TensorType::F16, TensorType::BF16}) {
            // The weights in their type, and widened to f32 (exactly) for oneDNN.
            std::vector<uint16_t> w16(wf.size());
            std::vector<float> w32(wf.size());
            const void* src = wf.data();
            for (size_t i = 0; i < wf.size(); ++i) {
                if (tt == TensorType::F16) {
                    w16[i] = f32_to_f16(wf[i]);
                    w32[i] = f16_to_f32(w16[i]);
                } else if (tt == TensorType::BF16) {
                    w16[i] = f32_to_bf16(wf[i]);
                    w32[i] = bf16_to_f32(w16[i]);
                } else {
                    w32[i] = wf[i];
                }
            }
            if (tt != TensorType::F32) src = w16.data();
            PackedWeight pw(tt, src, s.N, s.K);
            std::vector<float> yh(size_t(M) * s.N), yw(yh.size()), yt(yh.size());
            // Does a row's result from one whole-M sgemm depend on M? Row 0 of M = 1, 7, 64 vs 512.
            bool depends = false;
            {
                dnnl_sgemm('N', 'T', M, s.N, s.K, 1.0f, x.data(), s.K, w32.data(), s.K, 0.0f, yw.data(), s.N);
                for (int64_t m : {1, 7, 64}) {
                    std::vector<float> y1(size_t(m) * s.N);
                    dnnl_sgemm('N', 'T', m, s.N, s.K, 1.0f, x.data(), s.K, w32.data(), s.K, 0.0f, y1.data(), s.N);
                    if (std::memcmp(y1.data(), yw.data(), sizeof(float) * y1.size()) != 0) depends = true;
                }
            }
            for (int t = 1; t <= max_t; ++t) {
                omp_set_num_threads(t);
                double th = 1e30, tw = 1e30, tl = 1e30;
                for (int r = 0; r < 3; ++r) {
                    th = std::min(th, time_best([&] { matmul(pw, x.data(), M, s.K, yh.data(), s.N, t); }, min_s / 3));
                    tw = std::min(tw, time_best([&] {
                        dnnl_sgemm('N', 'T', M, s.N, s.K, 1.0f, x.data(), s.K, w32.data(), s.K, 0.0f, yw.data(), s.N);
                    }, min_s / 3));
                    tl = std::min(tl, time_best([&] { sgemm_tiled(x.data(), M, w32.data(), s.N, s.K, yt.data()); },
                                                min_s / 3));
                }
                double maxdiff = 0;
                for (size_t i = 0; i < yh.size(); ++i) maxdiff = std::max(maxdiff, double(std::fabs(yh[i] - yt[i])));
                const double flops = 2.0 * double(M) * double(s.N) * double(s.K);
                char extra[600];
                std::snprintf(extra, sizeof extra,
                              "\"shape\":\"%s\",\"weights\":\"%s\",\"M\":%lld,\"threads\":%d,\"isa\":\"%s\",\"cpu\":\"%s\","
                              "\"hand_gflops\":%.1f,\"onednn_whole_gflops\":%.1f,\"onednn_tiled16_gflops\":%.1f,"
                              "\"whole_over_hand\":%.2f,\"row_bits_depend_on_m\":%s,\"max_abs_diff_tiled\":%.3g",
                              s.name, tensor_type_name(tt), (long long)M, t, isa_name(isa_active()), cpu.c_str(),
                              flops / th / 1e9, flops / tw / 1e9, flops / tl / 1e9, th / tw, depends ? "true" : "false",
                              maxdiff);
                // speedup = hand time / tiled oneDNN time (> 1: oneDNN's deterministic form faster).
                emit("onednn_matmul", "speedup_tiled", th / tl, "x", extra);
            }
        }
    }
    return 0;
}
