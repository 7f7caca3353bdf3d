// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// cpu:: gated FFN activations (kernels/activation.hpp): one f32 exp of our own, written
// once over a tiny vector interface and instantiated for scalar, AVX2+FMA and AVX-512; every
// operation is an IEEE operation with one rounding (fma, mul, add, div, round-to-nearest-
// even), in the same order on every path, so all give the same bits. fp-contract is off
// so the compiler fuses nothing on its own. Elements are independent: splitting a call
// over threads or over column ranges never changes a bit.
#include "kernels/activation.hpp"
#include "util/isa.hpp"

#include <immintrin.h>
#include <omp.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#pragma GCC optimize("fp-contract=off")

namespace kvrt::cpu {
namespace {

// The exp and the activations: activation_core.inl.
constexpr float kLog2e = 1.44269504088896341f;
constexpr float kLn2Hi = 0.693145751953125f;
constexpr float kLn2Lo = 1.428606765330187045e-06f;
constexpr float kExpLo = -87.3f, kExpHi = 88.3f;
constexpr float kC[8] = {1.0f / 5040, 1.0f / 720, 1.0f / 120, 1.0f / 24, 1.0f / 6, 0.5f, 1.0f, 1.0f};
// gelu: -2u = x (kG1 + kG3 x^2), kG1 = -2 sqrt(2/pi), kG3 = kG1 * 0.044715.
constexpr float kG1 = -1.59576912160573071176f;
constexpr float kG3 = -0.07135481627260025f;


namespace scalar_path {
struct Ops {
    static constexpr int W = 1;
    using V = float;
    static V set1(float x) { return x; }
    static V load(const float* p) { return *p; }
    static void store(float* p, V v) { *p = v; }
    static V fma(V a, V b, V c) { return __builtin_fmaf(a, b, c); }
    static V mul(V a, V b) { return a * b; }
    static V add(V a, V b) { return a + b; }
    static V div(V a, V b) { return a / b; }
    // max/min as the x86 instructions: the second operand when either is NaN.
    static V max(V a, V b) { return a > b ? a : b; }
    static V min(V a, V b) { return a < b ? a : b; }
    static V round(V a) { return std::nearbyint(a); }  // default rounding mode: ties to even
    static V pow2(V n) {                                // 2^n for integral n in [-126, 127]
        const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
        float f;
        std::memcpy(&f, &bits, 4);
        return f;
    }
};

#include "kernels/cpu/activation_core.inl"
}  // namespace scalar_path

#pragma GCC push_options
#pragma GCC target("avx2,fma")
namespace avx2_path {
struct Ops {
    static constexpr int W = 8;
    using V = __m256;
    static V set1(float x) { return _mm256_set1_ps(x); }
    static V load(const float* p) { return _mm256_loadu_ps(p); }
    static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
    static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
    static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
    static V add(V a, V b) { return _mm256_add_ps(a, b); }
    static V div(V a, V b) { return _mm256_div_ps(a, b); }
    static V max(V a, V b) { return _mm256_max_ps(a, b); }
    static V min(V a, V b) { return _mm256_min_ps(a, b); }
    static V round(V a) { return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
    static V pow2(V n) {
        return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23));
    }
};

#include "kernels/cpu/activation_core.inl"
}  // namespace avx2_path
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx512f,avx512dq,avx2,fma")
// GCC 12's AVX-512 intrinsics pass an undefined vector as the unused merge source, which its
// -Wmaybe-uninitialized reports once they are inlined here (GCC bug 105593, fixed in 13).
#pragma GCC diagnostic push
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
namespace avx512_path {
struct Ops {
    static constexpr int W = 16;
    using V = __m512;
    static V set1(float x) { return _mm512_set1_ps(x); }
    static V load(const float* p) { return _mm512_loadu_ps(p); }
    static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
    static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
    static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
    static V add(V a, V b) { return _mm512_add_ps(a, b); }
    static V div(V a, V b) { return _mm512_div_ps(a, b); }
    static V max(V a, V b) { return _mm512_max_ps(a, b); }
    static V min(V a, V b) { return _mm512_min_ps(a, b); }
    static V round(V a) { return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
    static V pow2(V n) {
        return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23));
    }
};

#include "kernels/cpu/activation_core.inl"
}  // namespace avx512_path
#pragma GCC diagnostic pop
#pragma GCC pop_options

// The widest path the active ISA level allows, then narrower ones for the tail: the same
// operations on every path, so where an element lands changes no bit.
template <bool Gelu>
void run_piece(Isa isa, float* gate, const float* up, int64_t n) {
    int64_t done = isa >= Isa::Avx512 ? avx512_path::run_vectors<Gelu>(gate, up, n) : 0;
    if (isa >= Isa::Avx2) done += avx2_path::run_vectors<Gelu>(gate + done, up + done, n - done);
    scalar_path::run_vectors<Gelu>(gate + done, up + done, n - done);  // the same operations, one lane at a time
}

template <bool Gelu>
void run(float* gate, const float* up, int64_t n) {
    const Isa isa = isa_active();
    constexpr int64_t kChunk = 4096;  // elements per task; large calls (chunked prefill) go parallel
    if (n > 4 * kChunk && !omp_in_parallel()) {
#pragma omp parallel for schedule(static)
        for (int64_t c = 0; c < (n + kChunk - 1) / kChunk; ++c) {
            const int64_t i0 = c * kChunk, len = n - i0 < kChunk ? n - i0 : kChunk;
            run_piece<Gelu>(isa, gate + i0, up + i0, len);
        }
        return;
    }
    run_piece<Gelu>(isa, gate, up, n);
}

}  // namespace

float exp_f32(float x) { return scalar_path::exp_v(x); }

void silu_mul(float* gate, const float* up, int64_t n) { run<false>(gate, up, n); }
void gelu_tanh_mul(float* gate, const float* up, int64_t n) { run<true>(gate, up, n); }

}  // namespace kvrt::cpu
