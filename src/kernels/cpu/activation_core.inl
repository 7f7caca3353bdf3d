// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Included once per ISA path inside a namespace that defines Ops (W lanes).
// gate = act(x) * up over whole vectors; the caller runs the tail on the scalar path.

// e^y = 2^n e^r, n = round(y log2 e), r = y - n ln2 (two-constant Cody-Waite; FMA makes
// each step exact up to one rounding), e^r by its degree-7 Taylor polynomial (|r| <= 0.347:
// truncation < 1e-8 relative). y is clamped to [-87.3, 88.3] so 2^n stays a normal float
// (n in [-126, 127]); the activations never need e^y outside it (kernels/activation.hpp).
inline Ops::V exp_v(Ops::V y) {
    using V = Ops::V;
    y = Ops::min(Ops::max(y, Ops::set1(kExpLo)), Ops::set1(kExpHi));
    const V n = Ops::round(Ops::mul(y, Ops::set1(kLog2e)));
    V r = Ops::fma(n, Ops::set1(-kLn2Hi), y);
    r = Ops::fma(n, Ops::set1(-kLn2Lo), r);
    V p = Ops::set1(kC[0]);
    for (int k = 1; k < 8; ++k) p = Ops::fma(p, r, Ops::set1(kC[k]));
    return Ops::mul(p, Ops::pow2(n));
}

// gate = x / (1 + e^(-x)) * up
inline void silu_one(float* gate, const float* up) {
    const auto x = Ops::load(gate);
    const auto e = exp_v(Ops::mul(x, Ops::set1(-1.0f)));
    Ops::store(gate, Ops::mul(Ops::div(x, Ops::add(Ops::set1(1.0f), e)), Ops::load(up)));
}

// gate = x / (1 + e^(-2u)) * up  (= 0.5 x (1 + tanh u)), -2u = x (kG1 + kG3 x^2)
inline void gelu_one(float* gate, const float* up) {
    const auto x = Ops::load(gate);
    const auto t = Ops::fma(Ops::mul(x, x), Ops::set1(kG3), Ops::set1(kG1));
    const auto e = exp_v(Ops::mul(x, t));
    Ops::store(gate, Ops::mul(Ops::div(x, Ops::add(Ops::set1(1.0f), e)), Ops::load(up)));
}

// Whole vectors of [0, n); returns how many elements it did.
template <bool Gelu>
int64_t run_vectors(float* gate, const float* up, int64_t n) {
    int64_t i = 0;
    for (; i + Ops::W <= n; i += Ops::W) {
        if constexpr (Gelu)
            gelu_one(gate + i, up + i);
        else
            silu_one(gate + i, up + i);
    }
    return i;
}
