// RMSNorm, RoPE and softmax: cpu:: against ref::, RoPE inverse, edges.
#include "kernel_fixtures.hpp"
#include "kernels/rms_norm.hpp"
#include "kernels/rope.hpp"
#include "kernels/softmax.hpp"
#include "util/error.hpp"

#include <doctest/doctest.h>

#include <cmath>

using namespace kvrt;

TEST_CASE("kernels.small.rms_norm") {
    for (int32_t dim : {1, 7, 64, 576}) {
        auto x = test::random_vec(size_t(5) * dim, 1000 + dim, -3.0f, 3.0f);
        auto w = test::random_vec(dim, 1001);
        std::vector<float> a(x.size()), b(x.size());
        ref::rms_norm(x.data(), w.data(), 1e-5f, 5, dim, a.data());
        cpu::rms_norm(x.data(), w.data(), 1e-5f, 5, dim, b.data());
        CHECK(test::max_abs_diff(a, b) < 1e-5f);
        cpu::rms_norm(x.data(), nullptr, 1e-5f, 5, dim, b.data());
        ref::rms_norm(x.data(), nullptr, 1e-5f, 5, dim, a.data());
        CHECK(test::max_abs_diff(a, b) < 1e-5f);
        cpu::rms_norm(x.data(), w.data(), 1e-5f, 5, dim, x.data());  // in place
        ref::rms_norm(test::random_vec(size_t(5) * dim, 1000 + dim, -3.0f, 3.0f).data(), w.data(), 1e-5f, 5, dim,
                      a.data());
        CHECK(test::max_abs_diff(a, x) < 1e-5f);
    }
    CHECK_THROWS_AS(cpu::rms_norm(nullptr, nullptr, 1e-5f, 1, 4, nullptr), Error);
}

TEST_CASE("kernels.small.rope") {
    for (RopeMode mode : {RopeMode::Neox, RopeMode::Interleaved}) {
        for (int32_t R : {64, 16, 0}) {
            RopeParams p;
            p.n_heads = 3;
            p.head_dim = 64;
            p.rope_dims = R;
            p.theta = 100000.0f;
            p.mode = mode;
            const int32_t n = 6;
            int32_t pos[n] = {0, 1, 5, 100, 4095, 70000};
            auto x = test::random_vec(size_t(n) * 3 * 64, 1100 + R);
            auto a = x, b = x;
            ref::rope(a.data(), n, pos, p);
            cpu::rope(b.data(), n, pos, p);
            CHECK(test::max_abs_diff(a, b) < 2e-5f);
            // Only the tail rotates.
            for (int32_t t = 0; t < n; ++t)
                for (int32_t c = 0; c < 64 - R; ++c) CHECK(b[size_t(t) * 192 + c] == x[size_t(t) * 192 + c]);
            // Position 0 is the identity (within rounding of cos 0 = 1, sin 0 = 0: exact).
            for (int32_t c = 0; c < 192; ++c) CHECK(b[c] == x[c]);
            cpu::rope(b.data(), n, pos, p, /*inverse=*/true);
            CHECK(test::max_abs_diff(b, x) < 1e-5f);
            ref::rope(a.data(), n, pos, p, true);
            CHECK(test::max_abs_diff(a, x) < 1e-5f);
        }
    }
    // Neox and interleaved differ (the pairing matters).
    RopeParams p;
    p.n_heads = 1;
    p.head_dim = 8;
    p.rope_dims = 8;
    auto x = test::random_vec(8, 1200);
    auto a = x, b = x;
    int32_t pos = 3;
    p.mode = RopeMode::Neox;
    cpu::rope(a.data(), 1, &pos, p);
    p.mode = RopeMode::Interleaved;
    cpu::rope(b.data(), 1, &pos, p);
    CHECK(test::max_abs_diff(a, b) > 1e-3f);
    p.rope_dims = 7;
    CHECK_THROWS_AS(cpu::rope(a.data(), 1, &pos, p), Error);
}

TEST_CASE("kernels.small.softmax") {
    for (int32_t n : {1, 5, 100, 1000}) {
        auto x = test::random_vec(size_t(3) * n, 1300 + n, -20.0f, 20.0f);
        x[0] = -INFINITY;
        auto a = x, b = x;
        ref::softmax(a.data(), 3, n);
        cpu::softmax(b.data(), 3, n);
        CHECK(test::max_abs_diff(a, b) < 1e-6f);
        CHECK(b[0] == 0.0f);
    }
    std::vector<float> ninf(4, -INFINITY);
    cpu::softmax(ninf.data(), 1, 4);
    CHECK(ninf[2] == 0.0f);
}
