// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// bench_onednn_dense: long-prompt dense (GQA) prefill attention, the hand-written kernel
// (cpu::attention_prefill: key tiles built once for up to 384 query rows) against what oneDNN
// can do under kvrt's determinism rule (a row's bits may not depend on which rows share the
// call, so each GEMM is per query token and KV head: M = the G query heads of the group,
// N = the keys of a 128-key tile, K = head_dim), timed through the oneDNN sparse kernel with
// the token's causal keys as its rows (K = V there, so one tile serves both GEMMs: a lower
// bound on a K != V version's time). Same run, same shapes.
//   bench_onednn_dense [--quick]
#include "baselines.hpp"
#include "bench_kv_fixture.hpp"
#include "kernels/attention.hpp"
#include "kernels/onednn/sparse_attention.hpp"
#include "util/isa.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <numeric>
#include <random>
#include <string>

using namespace kvrt;
using namespace kvrt::bench;

namespace {
struct Case {
    const char* name;
    int H, G, D;  // query heads, heads per KV head, head dim
    DType dt;
    int32_t n_q, past;  // queries after `past` cached tokens
};
}  // namespace

int main(int argc, char** argv) {
    use_passive_omp_wait(argv);
    const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
    const int max_t = std::min(2, std::max(1, omp_get_max_threads()));
    const double min_s = quick ? 0.1 : 0.4;
    const std::string cpu = cpu_model();
    std::printf("# CPU: %s, isa %s\n", cpu.c_str(), isa_name(isa_active()));
    const Case cases[] = {
        {"smollm2_9of3_d64_f16_512", 9, 3, 64, DType::F16, 512, 0},
        {"smollm2_9of3_d64_f16_256_after_2048", 9, 3, 64, DType::F16, 256, 2048},
        {"qwen05_14of2_d64_f16_512", 14, 7, 64, DType::F16, 512, 0},
        {"32of8_d128_f32_256", 32, 4, 128, DType::F32, 256, 0},
    };
    for (const Case& c : cases) {
        const int n_kv = c.H / c.G;
        const int32_t n = c.past + c.n_q;
        BenchKV kv(n, n_kv, c.D, c.dt, 16, false, 3);
        // One K = V bank per KV head for the oneDNN bound.
        std::vector<std::unique_ptr<BenchKV>> banks;
        for (int g = 0; g < n_kv; ++g) banks.push_back(std::make_unique<BenchKV>(n, 1, c.D, c.dt, 16, true, 10 + g));
        AttnParams p;
        p.n_heads = c.H;
        p.head_dim = c.D;
        p.scale = 1.0f / std::sqrt(float(c.D));
        AttnParams pg = p;
        pg.n_heads = c.G;
        std::mt19937 rng(4);
        std::normal_distribution<float> nd(0.0f, 1.0f);
        std::vector<float> q(size_t(c.n_q) * c.H * c.D), out(q.size()), out2(q.size()), lse2(size_t(c.n_q) * c.H);
        for (float& x : q) x = nd(rng);
        std::vector<int32_t> all(static_cast<size_t>(n));
        std::iota(all.begin(), all.end(), 0);
        // Per KV head g: query t's G heads are contiguous in q ([t][H][D], heads g*G .. g*G+G-1).
        std::vector<std::vector<SparseQuery>> qs(static_cast<size_t>(n_kv));
        for (int g = 0; g < n_kv; ++g)
            for (int32_t t = 0; t < c.n_q; ++t) {
                const size_t off = (size_t(t) * c.H + size_t(g) * c.G) * c.D;
                qs[size_t(g)].push_back(SparseQuery{q.data() + off, all.data(), c.past + t + 1, out2.data() + off,
                                                    lse2.data() + size_t(t) * c.H + size_t(g) * c.G});
            }
        const bool ok = isa_active() >= Isa::Avx2 && c.dt != DType::I8;
        for (int t = 1; t <= max_t; ++t) {
            omp_set_num_threads(t);
            double th = 1e30, to = 1e30;
            for (int r = 0; r < 3; ++r) {
                th = std::min(th, time_best([&] { cpu::attention_prefill(kv.kv, p, q.data(), c.n_q, c.past, out.data()); },
                                            min_s / 3));
                if (ok)
                    to = std::min(to, time_best([&] {
                        for (int g = 0; g < n_kv; ++g)
                            onednn::attention_sparse(banks[size_t(g)]->kv, pg, qs[size_t(g)].data(), c.n_q);
                    }, min_s / 3));
            }
            double keys = 0;
            for (int32_t i = 0; i < c.n_q; ++i) keys += double(c.past + i + 1);
            const double flops = 4.0 * c.H * c.D * keys;
            char extra[512];
            std::snprintf(extra, sizeof extra,
                          "\"case\":\"%s\",\"threads\":%d,\"isa\":\"%s\",\"cpu\":\"%s\",\"hand_us\":%.1f,"
                          "\"onednn_per_token_us\":%.1f,\"hand_gflops\":%.1f,\"onednn_gflops\":%.1f",
                          c.name, t, isa_name(isa_active()), cpu.c_str(), th * 1e6, ok ? to * 1e6 : 0.0,
                          flops / th / 1e9, ok ? flops / to / 1e9 : 0.0);
            // speedup = hand time / oneDNN time (> 1: oneDNN faster).
            emit("onednn_dense", "speedup", ok ? th / to : 0.0, "x", extra);
        }
    }
    return 0;
}
