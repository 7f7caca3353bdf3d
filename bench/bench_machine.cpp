// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// bench_machine: the machine's limits as every other benchmark measures them
// (bench/baselines.hpp): STREAM-style read bandwidth and oneDNN f32/bf16 GEMM
// GFLOP/s at 1 and 2 threads. Run it to see what the ratios elsewhere divide by.
#include "baselines.hpp"

#include <cstring>

using namespace kvrt::bench;

int main(int argc, char** argv) {
    use_passive_omp_wait(argv);
    bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
    int max_t = std::max(1, omp_get_max_threads());
    for (int t = 1; t <= max_t; ++t) {
        emit("machine", "stream_read", stream_read(t, 0, quick ? 2 : 5) / 1e9, "GB/s",
             "\"threads\":" + std::to_string(t) + ",\"buffer_mib\":" +
                 std::to_string(std::max<size_t>(4 * llc_bytes(), size_t(256) << 20) >> 20));
        for (GemmType g : {GemmType::F32, GemmType::BF16}) {
            for (int64_t n : {512, 2048}) {
                if (quick && n > 512) continue;
                double v = gemm(g, n, n, n, t, quick ? 0.05 : 0.2);
                emit("machine", std::string("gemm_") + gemm_type_name(g), v, "GFLOP/s",
                     "\"threads\":" + std::to_string(t) + ",\"M\":" + std::to_string(n) + ",\"N\":" +
                         std::to_string(n) + ",\"K\":" + std::to_string(n));
            }
        }
    }
    return 0;
}
