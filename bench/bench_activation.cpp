// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// bench_activation: the gated FFN activations (kernels/activation.hpp), elements/s of
// cpu::silu_mul and cpu::gelu_tanh_mul on one thread, each beside the scalar libm loop
// kvrt used before (f32 std::exp / std::tanh per element), measured in the same run, on
// one prefill chunk of SmolLM2 (512 x 1536) and Gemma 3 270M (512 x 2048) elements.
//   bench_activation [--quick]
#include "baselines.hpp"

#include "kernels/activation.hpp"
#include "util/isa.hpp"

#include <cmath>
#include <random>

using namespace kvrt;
using namespace kvrt::bench;

namespace {

__attribute__((noinline)) void libm_silu(float* g, const float* u, int64_t n) {
    for (int64_t i = 0; i < n; ++i) g[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
}

__attribute__((noinline)) void libm_gelu(float* g, const float* u, int64_t n) {
    constexpr float k = 0.79788456080286535588f;
    for (int64_t i = 0; i < n; ++i) g[i] = 0.5f * g[i] * (1.0f + std::tanh(k * g[i] * (1.0f + 0.044715f * g[i] * g[i]))) * u[i];
}

double best_seconds(void (*fn)(float*, const float*, int64_t), const std::vector<float>& x, const std::vector<float>& up,
                    int reps) {
    std::vector<float> g(x.size());
    double best = 1e30;
    for (int r = 0; r < reps; ++r) {
        std::copy(x.begin(), x.end(), g.begin());
        const double t0 = now_seconds();
        fn(g.data(), up.data(), static_cast<int64_t>(g.size()));
        best = std::min(best, now_seconds() - t0);
    }
    return best;
}

}  // namespace

int main(int argc, char** argv) {
    use_passive_omp_wait(argv);
    const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
    const int reps = quick ? 5 : 30;
    omp_set_num_threads(1);
    std::mt19937 rng(1);
    std::normal_distribution<float> d(0.0f, 2.0f);
    struct Shape { const char* model; int64_t n; };
    for (Shape s : {Shape{"smollm2", 512 * 1536}, Shape{"gemma3", 512 * 2048}}) {
        std::vector<float> x(static_cast<size_t>(s.n)), up(x.size());
        for (auto& v : x) v = d(rng);
        for (auto& v : up) v = d(rng);
        const std::string extra = std::string("\"shape\":\"") + s.model + "\",\"isa\":\"" + isa_name(isa_active()) +
                                  "\",\"elements\":" + std::to_string(s.n);
        const double a = best_seconds(&cpu::silu_mul, x, up, reps), b = best_seconds(&libm_silu, x, up, reps);
        emit_vs("activation", "silu_mul", s.n / a / 1e9, "Gelem/s", "libm_f32", s.n / b / 1e9, extra);
        const double c = best_seconds(&cpu::gelu_tanh_mul, x, up, reps), e = best_seconds(&libm_gelu, x, up, reps);
        emit_vs("activation", "gelu_tanh_mul", s.n / c / 1e9, "Gelem/s", "libm_f32", s.n / e / 1e9, extra);
    }
    return 0;
}
