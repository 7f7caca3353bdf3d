// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// The AMX weight-matmul kernel over an emulated tile unit (weight_matmul_amx_emulated.hpp).
#include "kernels/cpu/weight_matmul_amx_emulated.hpp"
#include "kernels/cpu/weight_matmul_layout.hpp"

#if defined(__x86_64__)
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <new>

#pragma GCC push_options
// GCC 12 warns falsely inside its own AVX-512 headers (_mm512_undefined_*).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,fma,f16c")

#include "kernels/cpu/weight_codes_avx512.hpp"

namespace kvrt::kernels {

namespace {

#include "kernels/cpu/weight_matmul_amx_core.inl"

// The same operations in C++ (Intel SDM: TILELOADD, TILEZERO, TDPBSUD / TDPBSSD, TILESTORED).
struct EmulatedTiles {
    struct State {
        TileConfig cfg;
        alignas(64) uint8_t t[8][16 * 64];
    };
    static State& st() {
        thread_local State s;
        return s;
    }
    static void configure(const TileConfig& c) {
        st().cfg = c;
        std::memset(st().t, 0, sizeof(st().t));
    }
    static void release() {}
    template <int T>
    static void zero() { std::memset(st().t[T], 0, sizeof(st().t[T])); }
    template <int T>
    static void load(const void* p, int64_t stride) {
        State& s = st();
        for (int r = 0; r < s.cfg.rows[T]; r++)
            std::memcpy(s.t[T] + 64 * r, static_cast<const uint8_t*>(p) + r * stride, s.cfg.colsb[T]);
    }
    template <int C, int A, int B, bool SignedB>
    static void dot() {
        State& s = st();
        const int m_rows = s.cfg.rows[A], k4 = s.cfg.colsb[A] / 4, n = s.cfg.colsb[C] / 4;
        for (int m = 0; m < m_rows; m++) {
            const int8_t* a = reinterpret_cast<const int8_t*>(s.t[A] + 64 * m);
            for (int j = 0; j < n; j++) {
                int32_t c;
                std::memcpy(&c, s.t[C] + 64 * m + 4 * j, 4);
                for (int kk = 0; kk < k4; kk++)
                    for (int i = 0; i < 4; i++) {
                        const uint8_t b = s.t[B][64 * kk + 4 * j + i];
                        c += int32_t(a[4 * kk + i]) * (SignedB ? int32_t(static_cast<int8_t>(b)) : int32_t(b));
                    }
                std::memcpy(s.t[C] + 64 * m + 4 * j, &c, 4);
            }
        }
    }
    template <int T>
    static void store(void* p, int64_t stride) {
        State& s = st();
        for (int r = 0; r < s.cfg.rows[T]; r++)
            std::memcpy(static_cast<uint8_t*>(p) + r * stride, s.t[T] + 64 * r, s.cfg.colsb[T]);
    }
};


}  // namespace

void matmul_panels_amx_emulated(const MatmulArgs& args, int64_t p0, int64_t p1) { panels<EmulatedTiles>(args, p0, p1); }

}  // namespace kvrt::kernels

#pragma GCC pop_options

#else  // not x86-64: the tests do not call it there

namespace kvrt::kernels {
void matmul_panels_amx_emulated(const MatmulArgs& args, int64_t p0, int64_t p1) { matmul_panels_scalar(args, p0, p1); }
}  // namespace kvrt::kernels

#endif
