// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// cpu::silu_mul / gelu_tanh_mul against their ref/ twins (double, libm), and the
// scalar path against the AVX2 path bit for bit (both forward paths and every ISA rely
// on it).
#include "kernels/activation.hpp"
#include "util/isa.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

using namespace kvrt;

namespace {
struct Limit {
    explicit Limit(Isa isa) : prev(isa_set_limit(isa)) {}
    ~Limit() { isa_set_limit(prev); }
    Isa prev;
};

// Distance in units in the last place between two finite floats of the same sign.
int64_t ulps(float a, float b) {
    int32_t ia, ib;
    std::memcpy(&ia, &a, 4);
    std::memcpy(&ib, &b, 4);
    return std::llabs(int64_t(ia) - int64_t(ib));
}

std::vector<float> inputs(size_t n, uint32_t seed, bool edges = true) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> d(0.0f, 3.0f);
    std::vector<float> v(n);
    for (auto& x : v) x = d(rng);
    // Edges: zero, both signs of large values, values near the exp clamp.
    const float kEdges[] = {0.0f, -0.0f, 1e-30f, -1e-30f, 20.0f, -20.0f, 60.0f, -60.0f, 87.0f, -87.0f, 200.0f, -200.0f, 1e20f, -1e20f};
    for (size_t i = 0; edges && i < sizeof kEdges / sizeof kEdges[0] && i < n; ++i) v[i * 7 % n] = kEdges[i];
    return v;
}

using Fn = void (*)(float*, const float*, int64_t);

void check_against_ref(Fn fast, Fn slow, const char* name) {
    const size_t n = 10007;  // odd: the vector path's scalar tail runs too
    const std::vector<float> x = inputs(n, 7), up = inputs(n, 8, false);
    std::vector<float> a = x, b = x;
    fast(a.data(), up.data(), int64_t(n));
    slow(b.data(), up.data(), int64_t(n));
    double worst = 0;
    for (size_t i = 0; i < n; ++i) {
        REQUIRE(std::isfinite(a[i]));
        // Relative to the product's scale (|x up|): the activation is bounded by |x|.
        const double scale = std::max(1e-30, std::fabs(double(x[i]) * double(up[i])));
        worst = std::max(worst, std::fabs(double(a[i]) - double(b[i])) / scale);
    }
    INFO(name << ": worst error relative to |x up| = " << worst);
    CHECK(worst < 4e-7);
}
}  // namespace

TEST_CASE("activation: the kernel's exp is within 2 ulp of the correctly rounded e^x over [-87, 88]") {
    int64_t worst = 0;
    for (float x = -87.0f; x <= 88.0f; x += 0.00731f) {
        const float want = static_cast<float>(std::exp(double(x)));
        worst = std::max(worst, ulps(cpu::exp_f32(x), want));
    }
    INFO("worst ulp error " << worst);
    CHECK(worst <= 2);
    CHECK(cpu::exp_f32(0.0f) == 1.0f);
}

TEST_CASE("activation: silu_mul and gelu_tanh_mul agree with the double ref twins") {
    for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512}) {
        if (isa > isa_detected()) continue;  // a path needs its CPU
        Limit l(isa);
        const std::string isa_used = isa_name(isa_active());
        CAPTURE(isa_used);
        check_against_ref(&cpu::silu_mul, &ref::silu_mul, "silu");
        check_against_ref(&cpu::gelu_tanh_mul, &ref::gelu_tanh_mul, "gelu_tanh");
    }
}

TEST_CASE("activation: every ISA path and every split give the same bits") {
    const size_t n = 3 * 65536 + 13;  // above the parallel threshold
    const std::vector<float> x = inputs(n, 11), up = inputs(n, 12, false);
    for (Fn fn : {&cpu::silu_mul, &cpu::gelu_tanh_mul}) {
        std::vector<float> scalar = x, whole = x, pieces = x, avx2 = x;
        {
            Limit l(Isa::Scalar);
            fn(scalar.data(), up.data(), int64_t(n));
        }
        if (isa_detected() >= Isa::Avx2) {  // the AVX2 path where the CPU's best is AVX-512
            Limit l(Isa::Avx2);
            fn(avx2.data(), up.data(), int64_t(n));
            CHECK(std::memcmp(scalar.data(), avx2.data(), n * 4) == 0);
        }
        fn(whole.data(), up.data(), int64_t(n));  // the CPU's best path, parallel
        for (size_t i = 0; i < n;) {              // small uneven pieces, serial
            const size_t len = std::min<size_t>(n - i, 1 + (i * 31) % 45);
            fn(pieces.data() + i, up.data() + i, int64_t(len));
            i += len;
        }
        CHECK(std::memcmp(scalar.data(), whole.data(), n * 4) == 0);
        CHECK(std::memcmp(whole.data(), pieces.data(), n * 4) == 0);
    }
}

TEST_CASE("activation: limits and NaN") {
    const float inf = std::numeric_limits<float>::infinity();
    float g[4] = {inf, std::nanf(""), 1e30f, -1e30f};
    const float up[4] = {1, 1, 1, 1};
    cpu::silu_mul(g, up, 4);
    CHECK(g[0] == inf);
    CHECK(std::isnan(g[1]));
    CHECK(g[2] == 1e30f);
    CHECK(std::fabs(g[3]) < 1e-7f);
    float h[3] = {std::nanf(""), 1e30f, -1e30f};
    cpu::gelu_tanh_mul(h, up, 3);
    CHECK(std::isnan(h[0]));
    CHECK(h[1] == 1e30f);
    CHECK(std::fabs(h[2]) < 1e-7f);
}
