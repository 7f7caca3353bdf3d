// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

#include "kernels/cpu/activation_quant.hpp"

#include "util/error.hpp"

#include <cmath>
#include <cstdlib>
#include <new>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace kvrt::kernels {

void QuantizedRowsBuffer::Free::operator()(uint8_t* p) const noexcept { std::free(p); }

QuantizedRows QuantizedRowsBuffer::view(int64_t rows, int64_t blocks, ActBits act) {
    const size_t n = static_cast<size_t>(rows) * static_cast<size_t>(blocks);
    auto round64 = [](size_t b) { return (b + 63) & ~size_t{63}; };
    const bool wide = act == ActBits::Q16, residual = act == ActBits::Q8R;
    const size_t qs_bytes = round64(n * 32 * (wide ? 2 : 1));
    const size_t f_bytes = round64(n * 4);
    const size_t rq_bytes = residual ? round64(n * 32) : 0;
    const size_t row_bytes = round64(static_cast<size_t>(rows) * 4);
    const size_t need = qs_bytes + 4 * f_bytes + (residual ? rq_bytes + 4 * f_bytes + row_bytes : 0);
    if (need > capacity_) {
        void* p = std::aligned_alloc(64, need);
        if (!p) throw std::bad_alloc();
        mem_.reset(static_cast<uint8_t*>(p));
        capacity_ = need;
    }
    QuantizedRows q;
    q.rows = rows;
    q.blocks = blocks;
    uint8_t* base = mem_.get();
    if (wide) q.q16 = reinterpret_cast<int16_t*>(base);
    else q.qs = reinterpret_cast<int8_t*>(base);
    q.d = reinterpret_cast<float*>(base + qs_bytes);
    q.sum = reinterpret_cast<int32_t*>(base + qs_bytes + f_bytes);
    q.s = reinterpret_cast<float*>(base + qs_bytes + 2 * f_bytes);
    q.sum_lo = reinterpret_cast<int32_t*>(base + qs_bytes + 3 * f_bytes);
    if (residual) {
        uint8_t* r = base + qs_bytes + 4 * f_bytes;
        q.rq = reinterpret_cast<int8_t*>(r);
        q.rd = reinterpret_cast<float*>(r + rq_bytes);
        q.rsum = reinterpret_cast<int32_t*>(r + rq_bytes + f_bytes);
        q.rsum_lo = reinterpret_cast<int32_t*>(r + rq_bytes + 2 * f_bytes);
        q.rlist = reinterpret_cast<int32_t*>(r + rq_bytes + 3 * f_bytes);
        q.rcount = reinterpret_cast<int32_t*>(r + rq_bytes + 4 * f_bytes);
    }
    return q;
}

namespace {

// Both code widths: q = round-half-even(x / d) clamped to [lo, hi]; NaN -> lo (as the AVX2
// conversion's INT_MIN clamps): lo = -128, hi = 127 for 8-bit codes, -32767 and 32767 for 16.
template <class Q>
void quantize_row_portable(const float* x, int64_t nb, Q* qs, float* d, int32_t* sum, float* s) {
    constexpr bool kWide = sizeof(Q) == 2;
    constexpr float hi = kWide ? 32767.0f : 127.0f, lo = kWide ? -32767.0f : -128.0f;
    for (int64_t b = 0; b < nb; b++) {
        const float* xb = x + b * 32;
        float amax = 0.0f;
        for (int j = 0; j < 32; j++) {
            const float a = std::fabs(xb[j]);
            amax = a > amax ? a : amax;
        }
        const auto [db, id] = kWide ? block_scale16(amax) : block_scale(amax);
        int32_t total = 0;
        for (int j = 0; j < 32; j++) {
            const float r = std::nearbyint(xb[j] * id);  // round half to even (default FP environment)
            const int32_t q = r >= hi ? int32_t(hi) : r <= lo ? int32_t(lo) : r == r ? static_cast<int32_t>(r) : int32_t(lo);
            qs[b * 32 + j] = static_cast<Q>(q);
            total += q;
        }
        store_block_stats(b, db, total, d, sum, s);
    }
}

// The sums of the first 16 codes of each block (the same integers on every path). On x86-64
// with SSE2 (the baseline): 8-bit codes by psadbw of the codes + 128 (minus 16 * 128), 16-bit
// ones by pmaddwd against ones; exact integer sums either way (a scalar loop here was ~1.5% of
// a prefill).
template <class Q>
void half_sums(const Q* qs, int64_t nb, int32_t* lo) {
#if defined(__SSE2__)
    if constexpr (sizeof(Q) == 1) {
        const __m128i flip = _mm_set1_epi8(static_cast<char>(0x80)), zero = _mm_setzero_si128();
        for (int64_t b = 0; b < nb; b++) {
            const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs + b * 32));
            const __m128i sad = _mm_sad_epu8(_mm_xor_si128(v, flip), zero);
            lo[b] = _mm_cvtsi128_si32(sad) + _mm_cvtsi128_si32(_mm_unpackhi_epi64(sad, sad)) - 16 * 128;
        }
    } else {
        const __m128i ones = _mm_set1_epi16(1);
        for (int64_t b = 0; b < nb; b++) {
            const __m128i* p = reinterpret_cast<const __m128i*>(qs + b * 32);
            __m128i t = _mm_add_epi32(_mm_madd_epi16(_mm_loadu_si128(p), ones), _mm_madd_epi16(_mm_loadu_si128(p + 1), ones));
            t = _mm_add_epi32(t, _mm_unpackhi_epi64(t, t));
            t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 1));
            lo[b] = _mm_cvtsi128_si32(t);
        }
    }
#else
    for (int64_t b = 0; b < nb; b++) {
        int32_t t = 0;
        for (int j = 0; j < 16; j++) t += qs[b * 32 + j];
        lo[b] = t;
    }
#endif
}

}  // namespace

#include "kernels/cpu/activation_residual_core.inl"

int32_t quantize_row_residual(const float* x, int64_t nb, const int8_t* qs, const float* d, float* s, int8_t* rq,
                              float* rd, int32_t* rsum, int32_t* rsum_lo, int32_t* rlist) {
    return residual_row_core(x, nb, qs, d, s, rq, rd, rsum, rsum_lo, rlist, residual_block_portable);
}

void quantize_row_scalar(const float* x, int64_t nb, int8_t* qs, float* d, int32_t* sum, float* s) {
    quantize_row_portable(x, nb, qs, d, sum, s);
}

void quantize_row16_scalar(const float* x, int64_t nb, int16_t* qs, float* d, int32_t* sum, float* s) {
    quantize_row_portable(x, nb, qs, d, sum, s);
}

void quantize_rows(const float* X, int64_t ldx, int64_t m0, int64_t m1, const QuantizedRows& out, KernelIsa isa) {
    // Auto is the CPU's best path (as the panel kernels take it), never the scalar loop.
    if (isa == KernelIsa::Auto) isa = kernel_isa_detected();
    const int64_t nb = out.blocks;
    if (out.q16) {
        using Fn16 = void (*)(const float*, int64_t, int16_t*, float*, int32_t*, float*);
        // AVX-VNNI machines have AVX2: the 16-bit codes take its path (same bytes).
        const Fn16 fn16 = isa == KernelIsa::Scalar   ? quantize_row16_scalar
                          : isa >= KernelIsa::Avx512 ? quantize_row16_avx512
                                                     : quantize_row16_avx2;
        for (int64_t m = m0; m < m1; m++) {
            int16_t* qs = out.q16 + m * nb * 32;
            fn16(X + m * ldx, nb, qs, out.d + m * nb, out.sum + m * nb, out.s + m * nb);
            half_sums(qs, nb, out.sum_lo + m * nb);
        }
        return;
    }
    using Fn = void (*)(const float*, int64_t, int8_t*, float*, int32_t*, float*);
    Fn fn = quantize_row_scalar;
    if (isa >= KernelIsa::Avx512) fn = quantize_row_avx512;  // Amx: the AVX-512 quantiser
    else if (isa == KernelIsa::Avx2 || isa == KernelIsa::AvxVnni) fn = quantize_row_avx2;
    // (AVX2 machines: the same function with fma and round instructions, the same bytes)
    const auto residual = isa >= KernelIsa::Avx2 ? quantize_row_residual_avx2 : quantize_row_residual;
    for (int64_t m = m0; m < m1; m++) {
        int8_t* qs = out.qs + m * nb * 32;
        fn(X + m * ldx, nb, qs, out.d + m * nb, out.sum + m * nb, out.s + m * nb);
        half_sums(qs, nb, out.sum_lo + m * nb);
        if (out.rq)
            out.rcount[m] = residual(X + m * ldx, nb, qs, out.d + m * nb, out.s + m * nb, out.rq + m * nb * 32,
                                     out.rd + m * nb, out.rsum + m * nb, out.rsum_lo + m * nb, out.rlist + m * nb);
    }
}

}  // namespace kvrt::kernels
