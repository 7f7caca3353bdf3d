// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// bench_onednn_sparse: CED sparse K = V attention, the hand-written kernel (cpu::, KVRT_ONEDNN
// off) against the oneDNN path (kernels/onednn/sparse_attention.hpp: two sgemm per query and
// tile of 128 gathered rows), same bank, same rows, same run. Prints each time, GFLOP/s
// (4 H D rows per query) and speedup = hand time / oneDNN time, plus the largest difference
// between the two outputs (both are held to the ref twin by the tests).
//   bench_onednn_sparse [--quick]
#include "baselines.hpp"
#include "bench_kv_fixture.hpp"
#include "kernels/attention.hpp"
#include "kernels/onednn/sparse_attention.hpp"
#include "util/isa.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <string>

using namespace kvrt;
using namespace kvrt::bench;

namespace {

std::vector<int32_t> pick_sorted(int32_t n_bank, int32_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<uint8_t> taken(size_t(n_bank), 0);
    std::vector<int32_t> rows;
    std::uniform_int_distribution<int32_t> u(0, n_bank - 1);
    while (int32_t(rows.size()) < n) {
        int32_t r = u(rng);
        if (!taken[size_t(r)]) {
            taken[size_t(r)] = 1;
            rows.push_back(r);
        }
    }
    std::sort(rows.begin(), rows.end());
    return rows;
}

struct Case {
    const char* name;
    int H, D;
    DType dt;
    int32_t selected, bank_rows, n_queries;
};
}  // namespace

int main(int argc, char** argv) {
    use_passive_omp_wait(argv);
    const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
    const int max_t = std::min(2, std::max(1, omp_get_max_threads()));
    const double min_s = quick ? 0.1 : 0.4;
    const std::string cpu = cpu_model();
    std::printf("# CPU: %s, isa %s, threads up to %d\n", cpu.c_str(), isa_name(isa_active()), max_t);
    const Case cases[] = {
        {"ced_public_decode", 64, 512, DType::BF16, 2048, 65536, 1},
        {"ced_public_prefill8", 64, 512, DType::BF16, 2048, 65536, 8},
        {"ced_public_f32", 64, 512, DType::F32, 2048, 65536, 1},
        {"ced_public_f16", 64, 512, DType::F16, 2048, 65536, 1},
        {"h32_d256", 32, 256, DType::BF16, 2048, 65536, 1},
        {"h16_d128", 16, 128, DType::BF16, 2048, 65536, 1},
        {"h16_d128_512", 16, 128, DType::BF16, 512, 8192, 4},
        {"h8_d128", 8, 128, DType::BF16, 2048, 65536, 1},
        {"h16_d64", 16, 64, DType::BF16, 2048, 65536, 1},
        {"ced_base_decode", 4, 256, DType::BF16, 512, 65536, 1},
        {"ced_base_prefill128", 4, 256, DType::BF16, 512, 65536, 128},
        {"h4_d64_tiny", 4, 64, DType::BF16, 256, 4096, 4},
    };
    for (const Case& c : cases) {
        BenchKV bank(c.bank_rows, 1, c.D, c.dt, 64, /*kv_shared=*/true, 3);
        AttnParams p;
        p.n_heads = c.H;
        p.head_dim = c.D;
        p.scale = 1.0f / std::sqrt(float(c.D));
        std::vector<float> sinks(size_t(c.H), 0.5f);
        p.sinks = sinks.data();
        const size_t qn = size_t(c.H) * c.D;
        std::vector<float> q(qn * c.n_queries), out_h(q.size()), out_o(q.size()), lse_h(size_t(c.H) * c.n_queries),
            lse_o(lse_h.size());
        std::mt19937 rng(11);
        std::normal_distribution<float> nd(0.0f, 1.0f);
        for (float& x : q) x = nd(rng);
        std::vector<std::vector<int32_t>> rows;
        std::vector<SparseQuery> qh, qo;
        for (int i = 0; i < c.n_queries; ++i) rows.push_back(pick_sorted(c.bank_rows, c.selected, 20 + i));
        for (int i = 0; i < c.n_queries; ++i) {
            qh.push_back(SparseQuery{q.data() + qn * i, rows[i].data(), c.selected, out_h.data() + qn * i,
                                     lse_h.data() + size_t(c.H) * i});
            qo.push_back(SparseQuery{q.data() + qn * i, rows[i].data(), c.selected, out_o.data() + qn * i,
                                     lse_o.data() + size_t(c.H) * i});
        }
        const bool ok = onednn::sparse_attention_supported(bank.kv, p);
        for (int t = 1; t <= max_t; ++t) {
            omp_set_num_threads(t);
            onednn::onednn_set_mode(onednn::Mode::Off);
            double th = 1e30, to = 1e30;
            for (int r = 0; r < 3; ++r) {
                th = std::min(th, time_best([&] { cpu::attention_sparse(bank.kv, p, qh.data(), c.n_queries); }, min_s / 3));
                if (ok)
                    to = std::min(to, time_best([&] { onednn::attention_sparse(bank.kv, p, qo.data(), c.n_queries); },
                                                min_s / 3));
            }
            onednn::onednn_set_mode(onednn::Mode::Auto);
            float maxdiff = 0;
            for (size_t i = 0; i < out_h.size(); ++i) maxdiff = std::max(maxdiff, std::fabs(out_h[i] - out_o[i]));
            const double flops = 4.0 * c.H * c.D * double(c.selected) * c.n_queries;
            char extra[512];
            std::snprintf(extra, sizeof extra,
                          "\"case\":\"%s\",\"heads\":%d,\"dim\":%d,\"bank\":\"%s\",\"selected\":%d,\"queries\":%d,"
                          "\"threads\":%d,\"isa\":\"%s\",\"cpu\":\"%s\",\"hand_gflops\":%.1f,\"onednn_gflops\":%.1f,"
                          "\"max_abs_diff\":%.3g,\"auto_picks_onednn\":%s",
                          c.name, c.H, c.D, dtype_name(c.dt), c.selected, c.n_queries, t, isa_name(isa_active()),
                          cpu.c_str(), flops / th / 1e9, ok ? flops / to / 1e9 : 0.0, maxdiff,
                          onednn::sparse_attention_use_onednn(bank.kv, p) ? "true" : "false");
            // speedup = hand-written time / oneDNN time (> 1: oneDNN faster).
            emit("onednn_sparse", "speedup", ok ? th / to : 0.0, "x",
                 std::string(extra) + ",\"hand_us\":" + std::to_string(th * 1e6) +
                     ",\"onednn_us\":" + std::to_string(ok ? to * 1e6 : 0.0));
        }
    }
    return 0;
}
