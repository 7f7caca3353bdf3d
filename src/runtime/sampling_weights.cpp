// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Compiled with -ffp-contract=off (CMakeLists.txt): see sampling_weights.hpp.
#include "runtime/sampling_weights.hpp"

#include "util/isa.hpp"

#include <cstdint>
#include <cstring>

namespace kvrt::runtime {

namespace {

// GCC / Clang vector extensions of W floats: every operation is the scalar one per lane.
template <int W>
struct Vec {
    typedef float F __attribute__((vector_size(4 * W)));
    typedef int32_t I __attribute__((vector_size(4 * W)));
};
template <int W>
struct Half {  // W / 2 floats and as many doubles (the widening of one half)
    typedef float F __attribute__((vector_size(2 * W)));
    typedef double D __attribute__((vector_size(4 * W)));
};

template <class To, class From>
inline To bits(const From& v) noexcept {
    static_assert(sizeof(To) == sizeof(From));
    To t;
    std::memcpy(&t, &v, sizeof t);
    return t;
}

// exp per lane (sampling_weights.hpp). n = round(x / ln 2) by the 1.5 * 2^23 trick (round to
// nearest, exact for |x / ln 2| < 2^22), r = x - n ln 2 in two parts, exp(r) by Cephes' expf
// polynomial, 2^n put into the exponent field: n in [-126, 0], so a normal scale.
template <class F, class I>
[[gnu::always_inline]] inline F weight(F x) noexcept {
    const I valid = x >= -87.0f;  // (false for NaN)
    const F xc = bits<F>(bits<I>(x) & valid);  // x, or 0
    const F nf = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
    F r = xc - nf * 0.693359375f;
    r = r - nf * -2.12194440e-4f;
    F p = r * 1.9875691500e-4f + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    const F y = p * (r * r) + r + 1.0f;
    const I scale = (__builtin_convertvector(nf, I) + 127) << 23;
    return bits<F>(bits<I>(y * bits<F>(scale)) & valid);
}

constexpr int kSlots = 16;  // partial sums: element i goes to slot i % 16

template <int W>
[[gnu::always_inline]] inline double weight_sum(const float* x, size_t n, float shift, float scale) noexcept {
    using F = typename Vec<W>::F;
    using I = typename Vec<W>::I;
    using H = typename Half<W>::F;
    using D = typename Half<W>::D;
    constexpr int NV = kSlots / W;
    D acc[2 * NV] = {};  // acc[2k] slots kW .. kW + W/2 - 1, acc[2k + 1] the next W/2
    size_t i = 0;
    for (; i + kSlots <= n; i += kSlots)
        for (int k = 0; k < NV; ++k) {
            F v;
            std::memcpy(&v, x + i + k * W, sizeof v);
            const F w = weight<F, I>((v - shift) * scale);
            H lo, hi;
            std::memcpy(&lo, &w, sizeof lo);
            std::memcpy(&hi, reinterpret_cast<const char*>(&w) + sizeof lo, sizeof hi);
            acc[2 * k] += __builtin_convertvector(lo, D);
            acc[2 * k + 1] += __builtin_convertvector(hi, D);
        }
    double slot[kSlots];
    static_assert(sizeof slot == sizeof acc);
    std::memcpy(slot, acc, sizeof slot);
    for (int h = kSlots / 2; h >= 1; h /= 2)
        for (int j = 0; j < h; ++j) slot[j] += slot[j + h];
    double t = slot[0];
    for (; i < n; ++i) t += softmax_weight((x[i] - shift) * scale);
    return t;
}

double sum_baseline(const float* x, size_t n, float shift, float scale) noexcept {
    return weight_sum<4>(x, n, shift, scale);
}
#if defined(__x86_64__) || defined(__i386__)
[[gnu::target("avx2")]] double sum_avx2(const float* x, size_t n, float shift, float scale) noexcept {
    return weight_sum<8>(x, n, shift, scale);
}
[[gnu::target("avx512f")]] double sum_avx512(const float* x, size_t n, float shift, float scale) noexcept {
    return weight_sum<16>(x, n, shift, scale);
}
#endif

}  // namespace

float softmax_weight(float x) noexcept {
    typedef float F1 __attribute__((vector_size(4)));
    typedef int32_t I1 __attribute__((vector_size(4)));
    const F1 v = {x};
    return weight<F1, I1>(v)[0];
}

double softmax_weight_sum(const float* x, size_t n, float shift, float scale, int isa) noexcept {
#if defined(__x86_64__) || defined(__i386__)
    if (isa == 0) {
        const Isa a = isa_active();
        isa = a >= Isa::Avx512 ? 3 : a >= Isa::Avx2 ? 2 : 1;
    }
    if (isa == 3) return sum_avx512(x, n, shift, scale);
    if (isa == 2) return sum_avx2(x, n, shift, scale);
#endif
    (void)isa;
    return sum_baseline(x, n, shift, scale);
}

}  // namespace kvrt::runtime
