// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Weight matmul (src/kernels/weight_matmul.hpp): packing, activation
// quantisation, fast kernels of every ISA path against the ref/ twin, the
// determinism contract bit for bit, and the quantisation error of the chain.
#include <doctest/doctest.h>
#include <omp.h>

#include <cstdlib>
#include <utility>

#include "formats/tensor_type_dequant.hpp"
#include "kernels/cpu/activation_quant.hpp"
#include "kernels/cpu/weight_matmul_amx_emulated.hpp"
#include "kernels/cpu/weight_matmul_fused_residual.hpp"
#include "kernels/cpu/weight_matmul_kernels.hpp"
#include "kernels/cpu/weight_matmul_layout.hpp"
#include "kernels/ref/weight_matmul_ref.hpp"
#include "kernels/weight_matmul.hpp"
#include "model/gguf/gguf.hpp"
#include "test_support.hpp"
#include "util/isa.hpp"
#include "util/dtype.hpp"
#include "util/error.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

using namespace kvrt;
using kvrt::test::status_of;

namespace {

// ggml's reference quantisers (quantize_row_*_ref), to make realistic weights.
std::vector<uint8_t> quantize_rows(TensorType t, const std::vector<float>& w, int64_t n, int64_t k) {
    std::vector<uint8_t> out;
    const int64_t nb = k / 32;
    for (int64_t r = 0; r < n; r++) {
        for (int64_t b = 0; b < nb || (b == 0 && t != TensorType::Q4_0 && t != TensorType::Q4_1 && t != TensorType::Q8_0);
             b++) {
            const float* x = w.data() + r * k + b * 32;
            if (t == TensorType::Q4_1) {
                float mn = x[0], mx = x[0];
                for (int j = 1; j < 32; j++) mn = std::min(mn, x[j]), mx = std::max(mx, x[j]);
                const float d = (mx - mn) / 15.0f, id = d ? 1.0f / d : 0.0f;
                BlockQ4_1 blk;
                blk.d = f32_to_f16(d);
                blk.m = f32_to_f16(mn);
                for (int j = 0; j < 16; j++) {
                    const int q0 = std::min(15, static_cast<int>((x[j] - mn) * id + 0.5f));
                    const int q1 = std::min(15, static_cast<int>((x[j + 16] - mn) * id + 0.5f));
                    blk.qs[j] = static_cast<uint8_t>(q0 | q1 << 4);
                }
                const auto* p = reinterpret_cast<const uint8_t*>(&blk);
                out.insert(out.end(), p, p + sizeof blk);
            } else if (t == TensorType::Q4_0) {
                float amax = 0, mx = 0;
                for (int j = 0; j < 32; j++)
                    if (std::fabs(x[j]) > amax) amax = std::fabs(x[j]), mx = x[j];
                const float d = mx / -8.0f, id = d ? 1.0f / d : 0.0f;
                BlockQ4_0 blk;
                blk.d = f32_to_f16(d);
                for (int j = 0; j < 16; j++) {
                    const int q0 = std::min(15, static_cast<int>(x[j] * id + 8.5f));
                    const int q1 = std::min(15, static_cast<int>(x[j + 16] * id + 8.5f));
                    blk.qs[j] = static_cast<uint8_t>(q0 | q1 << 4);
                }
                const auto* p = reinterpret_cast<const uint8_t*>(&blk);
                out.insert(out.end(), p, p + sizeof blk);
            } else if (t == TensorType::Q8_0) {
                float amax = 0;
                for (int j = 0; j < 32; j++) amax = std::max(amax, std::fabs(x[j]));
                const float d = amax / 127.0f, id = d ? 1.0f / d : 0.0f;
                BlockQ8_0 blk;
                blk.d = f32_to_f16(d);
                for (int j = 0; j < 32; j++) blk.qs[j] = static_cast<int8_t>(std::lround(x[j] * id));
                const auto* p = reinterpret_cast<const uint8_t*>(&blk);
                out.insert(out.end(), p, p + sizeof blk);
            } else {
                const float* xr = w.data() + r * k;
                for (int64_t i = 0; i < k; i++) {
                    if (t == TensorType::F32) {
                        const auto* p = reinterpret_cast<const uint8_t*>(&xr[i]);
                        out.insert(out.end(), p, p + 4);
                    } else {
                        const uint16_t h = t == TensorType::F16 ? f32_to_f16(xr[i]) : f32_to_bf16(xr[i]);
                        const auto* p = reinterpret_cast<const uint8_t*>(&h);
                        out.insert(out.end(), p, p + 2);
                    }
                }
                break;
            }
        }
    }
    return out;
}

bool is_new_type(TensorType t) {
    return t == TensorType::Q5_0 || t == TensorType::Q4_K || t == TensorType::Q5_K || t == TensorType::Q6_K;
}

// Random Q5_0 / Q4_K / Q5_K / Q6_K rows: every code, scale and min byte random,
// the f16 super-scales random in magnitude 2^-12 .. 2^-6 with either sign (d) or
// positive (dmin), so that a weight is ~1e-3 .. 1e-1 as in real models.
std::vector<uint8_t> random_rows(TensorType t, int64_t n, int64_t k, uint32_t seed) {
    const auto& tr = tensor_type_traits(t);
    const int64_t blocks = n * k / tr.block_elems;
    std::vector<uint8_t> v(static_cast<size_t>(blocks) * tr.block_bytes);
    std::mt19937 rng(seed);
    for (auto& b : v) b = static_cast<uint8_t>(rng());
    std::uniform_real_distribution<float> mag(-12.0f, -6.0f);
    auto half = [&](bool positive) {
        const float x = std::exp2(mag(rng));
        return f32_to_f16(positive || (rng() & 1) ? x : -x);
    };
    for (int64_t b = 0; b < blocks; b++) {
        uint8_t* p = v.data() + b * tr.block_bytes;
        uint16_t h;
        if (t == TensorType::Q6_K) {
            h = half(false);
            std::memcpy(p + offsetof(BlockQ6_K, d), &h, 2);
        } else {
            h = half(false);
            std::memcpy(p, &h, 2);
            if (t != TensorType::Q5_0) {
                h = half(true);
                std::memcpy(p + 2, &h, 2);
            }
        }
    }
    return v;
}

std::vector<float> randn(size_t n, uint32_t seed, float scale = 1.0f) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(0.0f, scale);
    std::vector<float> v(n);
    for (auto& x : v) x = dist(rng);
    return v;
}

// Rows with outlier blocks (ActBits::Q8R): in rows m % 3 != 0, block (5m + 1) % nb scaled by 25
// (and, where there is room, block (3m + 2) % nb by 9), so that most rows have one or two marked
// blocks at places that vary from row to row, and a third of the rows none.
void add_outlier_blocks(std::vector<float>& X, int64_t M, int64_t K, int64_t ldx) {
    const int64_t nb = K / 32;
    if (nb < 4) return;
    for (int64_t m = 0; m < M; m++) {
        if (m % 3 == 0) continue;
        for (int64_t e = 0; e < 32; e++) X[m * ldx + ((5 * m + 1) % nb) * 32 + e] *= 25.0f;
        if ((3 * m + 2) % nb != (5 * m + 1) % nb)
            for (int64_t e = 0; e < 32; e++) X[m * ldx + ((3 * m + 2) % nb) * 32 + e] *= 9.0f;
    }
}

struct Weight {
    TensorType type;
    int64_t n, k;
    std::vector<uint8_t> raw;
    PackedWeight packed;
};

Weight make_weight(TensorType t, int64_t n, int64_t k, uint32_t seed) {
    std::vector<uint8_t> raw;
    if (is_new_type(t)) {
        raw = random_rows(t, n, k, seed);
    } else {
        auto w = randn(static_cast<size_t>(n * k), seed, 0.05f);
        raw = quantize_rows(t, w, n, k);
    }
    PackedWeight p(t, raw.data(), n, k);
    return Weight{t, n, k, std::move(raw), std::move(p)};
}

const TensorType kTypes[] = {TensorType::Q4_1, TensorType::Q4_0, TensorType::Q8_0,
                             TensorType::F32,  TensorType::F16,  TensorType::BF16};
// Types packed from random blocks (the K-quants need K % 256 == 0).
const TensorType kNewTypes[] = {TensorType::Q5_0, TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K};

std::vector<KernelIsa> isas() {
    std::vector<KernelIsa> v{KernelIsa::Scalar};
    if (kernel_isa_supported(KernelIsa::Avx2)) v.push_back(KernelIsa::Avx2);
    if (kernel_isa_supported(KernelIsa::AvxVnni)) v.push_back(KernelIsa::AvxVnni);
    if (kernel_isa_supported(KernelIsa::Avx512)) v.push_back(KernelIsa::Avx512);
    if (kernel_isa_supported(KernelIsa::Amx)) v.push_back(KernelIsa::Amx);
    return v;
}

bool same_bits(const float* a, const float* b, size_t n) { return std::memcmp(a, b, n * sizeof(float)) == 0; }

// |min term| of each element of W row n: |m| (Q4_1), |dmin * m_s| (Q4_K, Q5_K), else 0.
std::vector<double> min_terms(TensorType t, const void* raw, int64_t n, int64_t K) {
    std::vector<double> v(static_cast<size_t>(K), 0.0);
    const size_t rb = static_cast<size_t>(tensor_row_bytes(t, static_cast<uint64_t>(K)));
    const uint8_t* row = static_cast<const uint8_t*>(raw) + static_cast<size_t>(n) * rb;
    if (t == TensorType::Q4_1) {
        for (int64_t b = 0; b < K / 32; b++) {
            BlockQ4_1 blk;
            std::memcpy(&blk, row + b * sizeof blk, sizeof blk);
            for (int e = 0; e < 32; e++) v[b * 32 + e] = std::fabs(f16_to_f32(blk.m));
        }
    } else if (t == TensorType::Q4_K || t == TensorType::Q5_K) {
        const size_t bb = tensor_type_traits(t).block_bytes;
        for (int64_t sb = 0; sb < K / 256; sb++) {
            const uint8_t* p = row + sb * bb;
            uint16_t hm;
            std::memcpy(&hm, p + 2, 2);
            const uint8_t* q = p + 4;
            for (int j = 0; j < 8; j++) {
                const int m = j < 4 ? q[j + 4] & 63 : (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
                for (int e = 0; e < 32; e++) v[sb * 256 + j * 32 + e] = std::fabs(f16_to_f32(hm) * m);
            }
        }
    }
    return v;
}

// Outputs of the fast path outside the stated tolerance of ref: the fast path adds the
// `steps` block partials (K/32, or K products for float weights) in f32 where ref adds
// them in double, so |fast - ref| <= (steps + 4) * 2^-23 * B, where B bounds the sum of
// the magnitudes of the terms added: sum_k |w_k x_k| for float weights; for quantised
// weights, whose terms are scale * isum and min * s_a per block, sum_k (|w_k| + 2|min_k|)
// * (|x_k| + amax_b / 254) (the activation code times its scale is within amax_b / 254 of x).
int outside_ref_tolerance(TensorType t, const void* raw, int64_t N, int64_t K, const float* X, int64_t M, int64_t ldx,
                          const float* Y, const float* Yref, int64_t ldy) {
    const bool quant = t != TensorType::F32 && t != TensorType::F16 && t != TensorType::BF16;
    const double steps = quant ? static_cast<double>(K / 32) : static_cast<double>(K);
    std::vector<float> wf(static_cast<size_t>(K));
    int bad = 0;
    for (int64_t n = 0; n < N; n++) {
        ref::dequantize_row(t, raw, n, K, wf.data());
        const std::vector<double> mn = min_terms(t, raw, n, K);
        for (int64_t m = 0; m < M; m++) {
            double absdot = 0;
            const float* x = X + m * ldx;
            if (!quant) {
                for (int64_t i = 0; i < K; i++) absdot += std::fabs(double(wf[i]) * x[i]);
            } else {
                for (int64_t b = 0; b < K / 32; b++) {
                    double amax = 0;
                    for (int e = 0; e < 32; e++) amax = std::max(amax, std::fabs(double(x[b * 32 + e])));
                    for (int e = 0; e < 32; e++) {
                        const int64_t i = b * 32 + e;
                        absdot += (std::fabs(double(wf[i])) + 2 * mn[i]) * (std::fabs(double(x[i])) + amax / 254);
                    }
                }
            }
            const double tol = (steps + 4) * std::ldexp(1.0, -23) * absdot * 1.01 + 1e-30;
            if (!(std::fabs(double(Y[m * ldy + n]) - Yref[m * ldy + n]) <= tol)) bad++;
        }
    }
    return bad;
}

}  // namespace

TEST_CASE("weight_matmul: the weight prefetch follows the CPU kind and call shape unless KVRT_WEIGHT_PREFETCH sets it") {
    for (int64_t rows : {int64_t(1), kernels::kPrefetchPrefillRows - 1, kernels::kPrefetchPrefillRows, int64_t(512)}) {
        CAPTURE(rows);
        const kernels::WeightPrefetch& pf = kernels::weight_prefetch(rows);
        CHECK(pf.ahead % 64 == 0);
        CHECK(pf.ahead <= (size_t(1) << 20));
        if (std::getenv("KVRT_WEIGHT_PREFETCH") == nullptr) {
            const kernels::WeightPrefetch rule = kernels::weight_prefetch_for(cpu_features(), rows);
            CHECK(pf.l2 == rule.l2);
            CHECK(pf.ahead == rule.ahead);
        }
    }
    // Into L2 8 KiB ahead: the CPUs of prefetch_streams_into_l2 (test_isa.cpp) but Intel cores
    // without AVX-VNNI (before Alder Lake / Sapphire Rapids), which take L1 4 KiB ahead in decode
    // (fewer than kPrefetchPrefillRows rows); other CPUs L1 2 KiB ahead.
    CpuFeatures icelake;
    icelake.intel = true;
    icelake.family = 6;
    icelake.avx2 = icelake.avx512 = icelake.avx512vnni = true;
    CpuFeatures sapphire = icelake;
    sapphire.avxvnni = sapphire.avx512bf16 = sapphire.amx = true;
    CpuFeatures alderlake = icelake;
    alderlake.avx512 = alderlake.avx512vnni = false;
    alderlake.avxvnni = true;
    CpuFeatures skylake = alderlake;
    skylake.avxvnni = false;
    CpuFeatures zen4;
    zen4.amd = true;
    zen4.family = 0x19;
    zen4.avx2 = zen4.avx512 = true;
    CpuFeatures zen3 = zen4;
    zen3.avx512 = false;
    struct Want {
        CpuFeatures f;
        bool l2;
        size_t ahead;
        bool l2_prefill;
        size_t ahead_prefill;
    };
    for (const Want& w : {Want{sapphire, true, 8192, true, 8192}, Want{alderlake, true, 8192, true, 8192},
                          Want{zen4, true, 8192, true, 8192}, Want{icelake, false, 4096, true, 8192},
                          Want{skylake, false, 4096, true, 8192}, Want{zen3, false, 2048, false, 2048}}) {
        const kernels::WeightPrefetch d = kernels::weight_prefetch_for(w.f, kernels::kPrefetchPrefillRows - 1);
        CHECK(d.l2 == w.l2);
        CHECK(d.ahead == w.ahead);
        const kernels::WeightPrefetch p = kernels::weight_prefetch_for(w.f, kernels::kPrefetchPrefillRows);
        CHECK(p.l2 == w.l2_prefill);
        CHECK(p.ahead == w.ahead_prefill);
    }
}

TEST_CASE("weight_matmul: packing is lossless and dequantisation matches ggml's formulas") {
    for (TensorType t : kTypes) {
        CAPTURE(static_cast<int>(t));
        const int64_t n = 37, k = 96;
        Weight w = make_weight(t, n, k, 1);
        REQUIRE(w.packed.row_bytes() * n == w.raw.size());
        std::vector<uint8_t> row(w.packed.row_bytes());
        std::vector<float> f(k), g(k);
        for (int64_t r = 0; r < n; r++) {
            w.packed.unpack_row(r, row.data());
            CHECK(std::memcmp(row.data(), w.raw.data() + r * row.size(), row.size()) == 0);
            w.packed.dequantize_row(r, f.data());
            ref::dequantize_row(t, w.raw.data(), r, k, g.data());
            CHECK(same_bits(f.data(), g.data(), k));
        }
        CHECK(w.packed.panels() == 4);  // 37 rows: 3 panels, padded to a pair
    }
    for (TensorType t : kNewTypes) {
        CAPTURE(tensor_type_name(t));
        const int64_t n = 37, k = 512;
        Weight w = make_weight(t, n, k, 2);
        REQUIRE(w.packed.row_bytes() * n == w.raw.size());
        std::vector<uint8_t> row(w.packed.row_bytes());
        std::vector<float> f(k), g(k);
        int lossy = 0, mismatched = 0;
        for (int64_t r = 0; r < n; r++) {
            w.packed.unpack_row(r, row.data());
            lossy += std::memcmp(row.data(), w.raw.data() + r * row.size(), row.size()) != 0;
            w.packed.dequantize_row(r, f.data());
            kvrt::dequantize_f32(t, w.raw.data() + r * row.size(), g.data(), k, DequantIsa::Scalar);
            mismatched += !same_bits(f.data(), g.data(), k);
        }
        CHECK(lossy == 0);
        CHECK(mismatched == 0);
        CHECK(w.packed.panels() == 4);
    }
    // Q4_1 element order of ggml: element j is the low nibble of qs[j], j+16 the high one.
    BlockQ4_1 blk{};
    blk.d = f32_to_f16(1.0f);
    blk.m = f32_to_f16(0.5f);
    blk.qs[0] = 0x73;  // element 0 = 3, element 16 = 7
    PackedWeight p(TensorType::Q4_1, &blk, 1, 32);
    float out[32];
    p.dequantize_row(0, out);
    CHECK(out[0] == 3.5f);
    CHECK(out[16] == 7.5f);
    CHECK(out[1] == 0.5f);
}

TEST_CASE("weight_matmul: activation quantisation is the same bytes on every path and matches ref") {
    const int64_t nb = 18;
    auto x = randn(static_cast<size_t>(nb * 32), 7, 3.0f);
    for (int j = 0; j < 32; j++) x[32 + j] = 0.0f;           // an all-zero block
    x[64] = 1e30f;                                           // a huge outlier
    for (int j = 0; j < 32; j++) x[96 + j] = (j - 16) * 0.5f; // exact halves: round-half-even ties
    x[200] = std::numeric_limits<float>::quiet_NaN();        // a NaN: -128 on every path
    std::vector<int8_t> q_ref(nb * 32);
    std::vector<float> d_ref(nb);
    std::vector<int32_t> s_ref(nb);
    ref::quantize_row_q8(x.data(), nb, q_ref.data(), d_ref.data(), s_ref.data());
    CHECK(s_ref[1] == 0);
    CHECK(d_ref[1] == 0.0f);
    CHECK(q_ref[200] == -128);
    for (KernelIsa isa : isas()) {
        CAPTURE(kernel_isa_name(isa));
        kernels::QuantizedRowsBuffer buf;
        kernels::QuantizedRows q = buf.view(1, nb);
        kernels::quantize_rows(x.data(), nb * 32, 0, 1, q, isa);
        CHECK(std::memcmp(q.qs, q_ref.data(), q_ref.size()) == 0);
        CHECK(same_bits(q.d, d_ref.data(), nb));
        CHECK(std::memcmp(q.sum, s_ref.data(), nb * 4) == 0);
        for (int64_t b = 0; b < nb; b++) CHECK(q.s[b] == d_ref[b] * static_cast<float>(s_ref[b]));
        for (int64_t b = 0; b < nb; b++) {
            int32_t lo = 0;
            for (int j = 0; j < 16; j++) lo += q_ref[b * 32 + j];
            CHECK(q.sum_lo[b] == lo);
        }
    }
}

TEST_CASE("weight_matmul: every ISA path agrees with the ref twin and gives the same bits") {
    std::string paths;
    for (KernelIsa isa : isas()) paths += std::string(" ") + kernel_isa_name(isa);
    MESSAGE("ISA paths tested on this CPU:", paths);
    // Shapes: a panel tail (N % 16 != 0), an odd panel count, K of 1 to 18 blocks, row tails;
    // M = 19 and 14: full tiles of the widest row counts (8 for 16-bit float weights on AVX-512)
    // followed by tails of 3 and 6 rows.
    const int64_t shapes[][3] = {{1, 1, 32}, {3, 17, 64}, {5, 45, 96}, {7, 64, 576}, {2, 48, 160}, {19, 33, 64}, {14, 20, 32}};
    for (TensorType t : kTypes) {
        for (auto& s : shapes) {
            const int64_t M = s[0], N = s[1], K = s[2];
            CAPTURE(static_cast<int>(t));
            CAPTURE(M);
            CAPTURE(N);
            CAPTURE(K);
            Weight w = make_weight(t, N, K, static_cast<uint32_t>(N * 31 + K));
            const int64_t ldx = K + 3, ldy = N + 5;
            auto X = randn(static_cast<size_t>(M * ldx), static_cast<uint32_t>(M + K));
            std::vector<float> Yref(M * ldy, -1.0f), Yscalar;
            matmul_ref(w.packed, X.data(), M, ldx, Yref.data(), ldy);
            for (KernelIsa isa : isas()) {
                CAPTURE(kernel_isa_name(isa));
                std::vector<float> Y(M * ldy, -7.0f);
                matmul(w.packed, X.data(), M, ldx, Y.data(), ldy, 2, isa);
                CHECK(outside_ref_tolerance(t, w.raw.data(), N, K, X.data(), M, ldx, Y.data(), Yref.data(), ldy) == 0);
                for (int64_t m = 0; m < M; m++)
                    for (int64_t n = N; n < ldy; n++) CHECK(Y[m * ldy + n] == -7.0f);  // padding untouched
                if (isa == KernelIsa::Scalar) Yscalar = Y;
                else CHECK(same_bits(Y.data(), Yscalar.data(), Y.size()));
            }
        }
    }
}

TEST_CASE("weight_matmul: a row's output does not depend on M, its neighbours or the thread count") {
    const int64_t N = 80, K = 576, M = 300;
    for (TensorType t : {TensorType::Q4_1, TensorType::Q8_0, TensorType::Q4_0, TensorType::BF16}) {
        CAPTURE(static_cast<int>(t));
        Weight w = make_weight(t, N, K, 11);
        auto X = randn(static_cast<size_t>(M * K), 12);
        std::vector<float> Y2(M * N), Y1(M * N);
        matmul(w.packed, X.data(), M, K, Y2.data(), N, 2);
        matmul(w.packed, X.data(), M, K, Y1.data(), N, 1);
        CHECK(same_bits(Y1.data(), Y2.data(), Y1.size()));
        // Rows alone (M = 1) and in small batches at other offsets.
        for (int64_t m : {int64_t{0}, int64_t{1}, int64_t{137}, int64_t{299}}) {
            std::vector<float> y(N);
            matmul(w.packed, X.data() + m * K, 1, K, y.data(), N, 2);
            CHECK(same_bits(y.data(), Y2.data() + m * N, N));
            if (m + 5 <= M) {
                std::vector<float> y5(5 * N);
                matmul(w.packed, X.data() + m * K, 5, K, y5.data(), N, 1);
                CHECK(same_bits(y5.data(), Y2.data() + m * N, 5 * N));
            }
        }
        // Rows permuted.
        std::vector<int64_t> perm(M);
        std::iota(perm.begin(), perm.end(), 0);
        std::shuffle(perm.begin(), perm.end(), std::mt19937(5));
        std::vector<float> Xp(M * K), Yp(M * N);
        for (int64_t m = 0; m < M; m++) std::memcpy(&Xp[m * K], &X[perm[m] * K], K * sizeof(float));
        matmul(w.packed, Xp.data(), M, K, Yp.data(), N, 2);
        int diff = 0;
        for (int64_t m = 0; m < M; m++) diff += !same_bits(&Yp[m * N], &Y2[perm[m] * N], N);
        CHECK(diff == 0);
    }
}

TEST_CASE("weight_matmul: a GEMV over a head-sized weight, in chunks of at most 1 MiB per thread, keeps the bits") {
    // 12,288 x 1,024 Q8_0 (13 MiB, 384 panel pairs): on 2 threads 48 pairs a chunk by the ~4 per
    // thread rule, 30 (1 MiB) by the byte cap; every output is written once, by one thread, with
    // the same operations as on 1 thread.
    const int64_t N = 12288, K = 1024;
    Weight w = make_weight(TensorType::Q8_0, N, K, 21);
    REQUIRE(w.packed.bytes() > (size_t{12} << 20));
    auto X = randn(static_cast<size_t>(K), 22);
    std::vector<float> Y1(N, NAN);
    matmul(w.packed, X.data(), 1, K, Y1.data(), N, 1);
    int unset = 0;
    for (float y : Y1) unset += std::isnan(y);
    CHECK(unset == 0);
    for (int nt : {2, 3}) {
        CAPTURE(nt);
        std::vector<float> Y(N, NAN);
        matmul(w.packed, X.data(), 1, K, Y.data(), N, nt);
        CHECK(same_bits(Y.data(), Y1.data(), Y1.size()));
    }
}

TEST_CASE("weight_matmul: few columns and many rows (rows split across threads) keep the bits") {
    const int64_t N = 20, K = 64, M = 203;  // one panel pair: the rows are cut into chunks
    for (TensorType t : {TensorType::Q4_1, TensorType::F16}) {
        CAPTURE(static_cast<int>(t));
        Weight w = make_weight(t, N, K, 41);
        auto X = randn(static_cast<size_t>(M * K), 42);
        std::vector<float> Y1(M * N), Y3(M * N), Yr(M * N);
        matmul(w.packed, X.data(), M, K, Y1.data(), N, 1);
        matmul(w.packed, X.data(), M, K, Y3.data(), N, 3);
        CHECK(same_bits(Y1.data(), Y3.data(), Y1.size()));
        matmul_ref(w.packed, X.data(), M, K, Yr.data(), N);
        CHECK(outside_ref_tolerance(t, w.raw.data(), N, K, X.data(), M, K, Y3.data(), Yr.data(), N) == 0);
    }
}

TEST_CASE("weight_matmul: quantisation error of the chain against f32 math") {
    // Q4_1 weights x Q8 activations vs the same dequantised weights x f32 activations:
    // the only difference is the 8-bit activation quantisation.
    const int64_t M = 8, N = 64, K = 576;
    for (TensorType t : {TensorType::Q4_1, TensorType::Q4_0, TensorType::Q8_0}) {
        CAPTURE(static_cast<int>(t));
        Weight w = make_weight(t, N, K, 21);
        auto X = randn(static_cast<size_t>(M * K), 22);
        std::vector<float> Y(M * N), Yf(M * N);
        matmul(w.packed, X.data(), M, K, Y.data(), N);
        ref::weight_matmul_dequant_f32(t, w.raw.data(), N, K, X.data(), M, K, Yf.data(), N);
        double num = 0, den = 0;
        for (size_t i = 0; i < Y.size(); i++) num += (Y[i] - Yf[i]) * double(Y[i] - Yf[i]), den += double(Yf[i]) * Yf[i];
        const double rel = std::sqrt(num / den);
        MESSAGE("relative L2 error vs f32 dequantised math: ", rel);
        CHECK(rel < 1e-2);
        CHECK(rel > 0.0);
    }
}

TEST_CASE("weight_matmul: stacked tensors give the bits of separate calls") {
    const int64_t K = 96, M = 6;
    Weight a = make_weight(TensorType::Q4_1, 40, K, 31), b = make_weight(TensorType::Q4_1, 9, K, 32);
    const WeightRows parts[] = {{a.raw.data(), a.n}, {b.raw.data(), b.n}};
    PackedWeight ab(TensorType::Q4_1, parts, K);
    REQUIRE(ab.rows() == 49);
    auto X = randn(static_cast<size_t>(M * K), 33);
    std::vector<float> Y(M * 49), Ya(M * 40), Yb(M * 9);
    matmul(ab, X.data(), M, K, Y.data(), 49);
    matmul(a.packed, X.data(), M, K, Ya.data(), 40);
    matmul(b.packed, X.data(), M, K, Yb.data(), 9);
    for (int64_t m = 0; m < M; m++) {
        CHECK(same_bits(&Y[m * 49], &Ya[m * 40], 40));
        CHECK(same_bits(&Y[m * 49 + 40], &Yb[m * 9], 9));
    }
}

TEST_CASE("weight_matmul: matmul_part over disjoint column pairs gives the bits of one matmul") {
    const int64_t N = 150, K = 128, M = 3;  // 5 pairs, the last one partial
    for (TensorType t : kTypes) {
        CAPTURE(static_cast<int>(t));
        Weight w = make_weight(t, N, K, 51);
        REQUIRE(matmul_pairs(w.packed) == 5);
        auto X = randn(static_cast<size_t>(M * K), 52);
        for (KernelIsa isa : isas()) {
            CAPTURE(static_cast<int>(isa));
            std::vector<float> Y(M * N), Yp(M * (N + 7), -1.0f);
            matmul(w.packed, X.data(), M, K, Y.data(), N, 2, isa);
            // Uneven pieces, out of order, into a wider Y: every column written exactly once.
            matmul_part(w.packed, X.data(), M, K, Yp.data(), N + 7, 3, 5, isa);
            matmul_part(w.packed, X.data(), M, K, Yp.data(), N + 7, 0, 1, isa);
            matmul_part(w.packed, X.data(), M, K, Yp.data(), N + 7, 1, 3, isa);
            matmul_part(w.packed, X.data(), M, K, Yp.data(), N + 7, 2, 2, isa);  // empty range: no-op
            for (int64_t m = 0; m < M; m++) {
                CHECK(same_bits(&Yp[m * (N + 7)], &Y[m * N], N));
                for (int64_t n = N; n < N + 7; n++) CHECK(Yp[m * (N + 7) + n] == -1.0f);  // padding untouched
            }
        }
    }
    Weight w = make_weight(TensorType::Q4_1, 64, 64, 53);
    std::vector<float> x(64), y(64);
    CHECK(status_of([&] { matmul_part(w.packed, x.data(), 1, 64, y.data(), 64, 1, 3); }) == KVRT_ERR_INVALID_ARGUMENT);
    CHECK(status_of([&] { matmul_part(w.packed, x.data(), 1, 64, y.data(), 64, 2, 1); }) == KVRT_ERR_INVALID_ARGUMENT);
    CHECK(status_of([&] { matmul_part(w.packed, x.data(), 1, 64, y.data(), 63, 0, 1); }) == KVRT_ERR_INVALID_ARGUMENT);
    CHECK(status_of([&] { matmul_part(w.packed, nullptr, 1, 64, y.data(), 64, 0, 1); }) == KVRT_ERR_INVALID_ARGUMENT);
    CHECK(status_of([&] { matmul_part(w.packed, x.data(), 1, 64, y.data(), 64, 0, 2); }) == KVRT_OK);
}

TEST_CASE("weight_matmul: a MatmulPartInput quantises once per thread and gives the bits of matmul_part") {
    // Two weights over one X (a decode layer's gate and up), a second input of another K on the
    // same thread between their calls (its quantisation replaces the first's codes: the first must
    // quantise again), both code widths, every type and path, against matmul() of each.
    const int64_t K = 256, K2 = 512, M = 3;
    std::vector<TensorType> types(std::begin(kTypes), std::end(kTypes));
    types.insert(types.end(), std::begin(kNewTypes), std::end(kNewTypes));
    auto X = randn(static_cast<size_t>(M * K), 61), X2 = randn(static_cast<size_t>(M * K2), 62);
    add_outlier_blocks(X, M, K, K);
    add_outlier_blocks(X2, M, K2, K2);
    for (TensorType t : types) {
        CAPTURE(static_cast<int>(t));
        Weight a = make_weight(t, 150, K, 63), b = make_weight(t, 40, K, 64), c = make_weight(t, 70, K2, 65);
        for (ActBits act : {ActBits::Q8, ActBits::Q8R, ActBits::Q16}) {
            CAPTURE(static_cast<int>(act));
            for (KernelIsa isa : isas()) {
                CAPTURE(static_cast<int>(isa));
                std::vector<float> Ya(M * 150), Yb(M * 40), Yc(M * 70);
                matmul(a.packed, X.data(), M, K, Ya.data(), 150, 1, isa, act);
                matmul(b.packed, X.data(), M, K, Yb.data(), 40, 1, isa, act);
                matmul(c.packed, X2.data(), M, K2, Yc.data(), 70, 1, isa, act);
                std::vector<float> Pa(M * 150, -1.0f), Pb(M * 40, -1.0f), Pc(M * 70, -1.0f);
                const MatmulPartInput in(X.data(), M, K, act), in2(X2.data(), M, K2, act);
                matmul_part(a.packed, in, Pa.data(), 150, 3, 5, isa);
                matmul_part(b.packed, in, Pb.data(), 40, 0, 1, isa);
                matmul_part(c.packed, in2, Pc.data(), 70, 1, 3, isa);  // in's codes are gone now
                matmul_part(a.packed, in, Pa.data(), 150, 0, 3, isa);
                matmul_part(c.packed, in2, Pc.data(), 70, 0, 1, isa);
                matmul_part(b.packed, in, Pb.data(), 40, 1, 2, isa);
                matmul_part(b.packed, in, Pb.data(), 40, 2, 2, isa);  // empty range: no-op
                CHECK(same_bits(Pa.data(), Ya.data(), Ya.size()));
                CHECK(same_bits(Pb.data(), Yb.data(), Yb.size()));
                CHECK(same_bits(Pc.data(), Yc.data(), Yc.size()));
            }
        }
    }
    // A new input over the same memory with new contents quantises them (nothing is kept by address).
    Weight w = make_weight(TensorType::Q4_0, 64, K, 66);
    std::vector<float> x = randn(static_cast<size_t>(K), 67), y(64), yr(64);
    {
        const MatmulPartInput in(x.data(), 1, K);
        matmul_part(w.packed, in, y.data(), 64, 0, 2);
    }
    for (auto& v : x) v = -2.0f * v;
    const MatmulPartInput in(x.data(), 1, K);
    matmul_part(w.packed, in, y.data(), 64, 0, 2);
    matmul(w.packed, x.data(), 1, K, yr.data(), 64);
    CHECK(same_bits(y.data(), yr.data(), 64));
    // Bad input: a status, as matmul_part.
    CHECK(status_of([&] { matmul_part(w.packed, in, y.data(), 64, 1, 3); }) == KVRT_ERR_INVALID_ARGUMENT);
    CHECK(status_of([&] { matmul_part(w.packed, in, y.data(), 63, 0, 1); }) == KVRT_ERR_INVALID_ARGUMENT);
    CHECK(status_of([&] { matmul_part(w.packed, in, nullptr, 64, 0, 1); }) == KVRT_ERR_INVALID_ARGUMENT);
    CHECK(status_of([&] { matmul_part(w.packed, MatmulPartInput(nullptr, 1, K), y.data(), 64, 0, 1); }) ==
          KVRT_ERR_INVALID_ARGUMENT);
    CHECK(status_of([&] { matmul_part(w.packed, MatmulPartInput(x.data(), -1, K), y.data(), 64, 0, 1); }) ==
          KVRT_ERR_INVALID_ARGUMENT);
    CHECK(status_of([&] { matmul_part(w.packed, MatmulPartInput(x.data(), 1, K - 1), y.data(), 64, 0, 1); }) ==
          KVRT_ERR_INVALID_ARGUMENT);
}

TEST_CASE("weight_matmul: matmul_team (every thread of a region calls it) gives the bits of one matmul") {
    // Teams of 1, 2 and 3 threads and a call outside any region; few rows and many (row
    // chunks: N = 150 is 5 pairs, fewer than 4 per thread); 8- and 16-bit codes; every type.
    const int64_t N = 150, K = 256;
    MatmulTeamBuffer buf;
    buf.reserve(70, K);
    uint32_t seed = 60;
    std::vector<TensorType> types(std::begin(kTypes), std::end(kTypes));
    types.insert(types.end(), std::begin(kNewTypes), std::end(kNewTypes));
    for (TensorType t : types) {
        CAPTURE(tensor_type_name(t));
        Weight w = make_weight(t, N, K, seed++);
        for (int64_t M : {int64_t(1), int64_t(20), int64_t(70)})
            for (ActBits act : {ActBits::Q8, ActBits::Q8R, ActBits::Q16}) {
                CAPTURE(M);
                CAPTURE(static_cast<int>(act));
                auto X = randn(static_cast<size_t>(M * K), seed++);
                add_outlier_blocks(X, M, K, K);
                std::vector<float> want(static_cast<size_t>(M * N));
                matmul(w.packed, X.data(), M, K, want.data(), N, 2, KernelIsa::Auto, act);
                std::vector<float> got(static_cast<size_t>(M * (N + 3)), -1.0f);
                TeamBarrier bar;
                std::atomic<int64_t> next{0};
                matmul_team(w.packed, X.data(), M, K, got.data(), N + 3, act, buf, next, bar);  // outside a region
                for (int64_t m = 0; m < M; ++m) CHECK(same_bits(&got[static_cast<size_t>(m * (N + 3))], &want[static_cast<size_t>(m * N)], N));
                for (int nt : {1, 2, 3}) {
                    CAPTURE(nt);
                    std::fill(got.begin(), got.end(), -1.0f);
                    next = 0;
                    CHECK(test::run_team(nt, [&](int) {
                              matmul_team(w.packed, X.data(), M, K, got.data(), N + 3, act, buf, next, bar);
                          }) == 0);
                    for (int64_t m = 0; m < M; ++m) {
                        CHECK(same_bits(&got[static_cast<size_t>(m * (N + 3))], &want[static_cast<size_t>(m * N)], N));
                        for (int64_t n = N; n < N + 3; ++n) CHECK(got[static_cast<size_t>(m * (N + 3) + n)] == -1.0f);
                    }
                }
            }
    }
    // Bad input, refused on every thread alike before any wait: a buffer not reserved for the
    // rows, a short output stride, a null input.
    Weight w = make_weight(TensorType::Q4_1, 64, 64, 61);
    std::vector<float> x(static_cast<size_t>(100 * 64)), y(static_cast<size_t>(100 * 64));
    MatmulTeamBuffer small;
    small.reserve(4, 64);
    TeamBarrier bar;
    std::atomic<int64_t> next{0};
    CHECK(status_of([&] { matmul_team(w.packed, x.data(), 100, 64, y.data(), 64, ActBits::Q8, small, next, bar); }) == KVRT_ERR_INTERNAL);
    CHECK(status_of([&] { matmul_team(w.packed, x.data(), 4, 64, y.data(), 63, ActBits::Q8, small, next, bar); }) == KVRT_ERR_INVALID_ARGUMENT);
    CHECK(status_of([&] { matmul_team(w.packed, nullptr, 4, 64, y.data(), 64, ActBits::Q8, small, next, bar); }) == KVRT_ERR_INVALID_ARGUMENT);
    CHECK(status_of([&] { small.reserve(-1, 64); }) == KVRT_ERR_INVALID_ARGUMENT);
    CHECK(status_of([&] { matmul_team(w.packed, x.data(), 4, 64, y.data(), 64, ActBits::Q8, small, next, bar); }) == KVRT_OK);
}

TEST_CASE("weight_matmul: bad input is rejected with a status") {
    std::vector<uint8_t> data(1024);
    CHECK(status_of([&] { PackedWeight(TensorType::Q2_K, data.data(), 1, 256); }) == KVRT_ERR_UNSUPPORTED);
    for (TensorType t : kTypes) CHECK(PackedWeight::supports(t));
    for (TensorType t : kNewTypes) CHECK(PackedWeight::supports(t));
    CHECK_FALSE(PackedWeight::supports(TensorType::Q2_K));
    CHECK_FALSE(PackedWeight::supports(TensorType::Q5_1));
    CHECK(status_of([&] { PackedWeight(TensorType::Q5_1, data.data(), 1, 32); }) == KVRT_ERR_UNSUPPORTED);
    // K-quant rows are whole 256-element super-blocks (GGUF forbids other widths).
    for (TensorType t : {TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K}) {
        CAPTURE(tensor_type_name(t));
        CHECK(status_of([&] { PackedWeight(t, data.data(), 1, 128); }) == KVRT_ERR_INVALID_ARGUMENT);
        CHECK(status_of([&] { PackedWeight(t, data.data(), 1, 640); }) == KVRT_ERR_INVALID_ARGUMENT);
        CHECK(status_of([&] { PackedWeight(t, data.data(), 1, 256); }) == KVRT_OK);
    }
    CHECK(status_of([&] { PackedWeight(TensorType::Q5_0, data.data(), 1, 48); }) == KVRT_ERR_INVALID_ARGUMENT);
    CHECK(status_of([&] { PackedWeight(TensorType::Q4_1, data.data(), 1, 33); }) == KVRT_ERR_INVALID_ARGUMENT);
    CHECK(status_of([&] { PackedWeight(TensorType::Q4_1, nullptr, 1, 32); }) == KVRT_ERR_INVALID_ARGUMENT);
    CHECK(status_of([&] { PackedWeight(TensorType::F32, data.data(), 0, 32); }) == KVRT_ERR_INVALID_ARGUMENT);
    const WeightRows bad_parts[] = {{data.data(), 2}, {nullptr, 1}};
    CHECK(status_of([&] { PackedWeight(TensorType::F32, bad_parts, 32); }) == KVRT_ERR_INVALID_ARGUMENT);
    CHECK(status_of([&] { PackedWeight(TensorType::F32, std::span<const WeightRows>(), 32); }) == KVRT_ERR_INVALID_ARGUMENT);
    PackedWeight w(TensorType::F32, data.data(), 4, 7);  // float types take any K
    float x[16] = {}, y[8] = {};
    CHECK(status_of([&] { matmul(w, x, 1, 6, y, 4); }) == KVRT_ERR_INVALID_ARGUMENT);
    CHECK(status_of([&] { matmul(w, x, 1, 7, y, 3); }) == KVRT_ERR_INVALID_ARGUMENT);
    CHECK(status_of([&] { matmul(w, nullptr, 1, 7, y, 4); }) == KVRT_ERR_INVALID_ARGUMENT);
    CHECK(status_of([&] { matmul(w, x, -1, 7, y, 4); }) == KVRT_ERR_INVALID_ARGUMENT);
    CHECK(status_of([&] { matmul(w, x, 0, 7, y, 4); }) == KVRT_OK);
    CHECK(status_of([&] { w.unpack_row(4, data.data()); }) == KVRT_ERR_OUT_OF_RANGE);
    CHECK(status_of([&] { matmul(w, x, 2, 7, y, 4, 1, KernelIsa::Scalar); }) == KVRT_OK);
}

// The loader's two-step packing (model/model.cpp packs a large tensor in slices of rows on
// several threads): the slices, packed in any order and concurrently, give the constructor's
// bytes; every byte but the padding's is written by packing (memory filled with 0x00 or 0xFF
// first ends the same); and bad ranges are refused with a status.
TEST_CASE("weight_matmul: rows packed in slices, in any order and on several threads, equal one pass") {
    const int64_t align = PackedWeight::kPackRowAlign;
    for (int pass = 0; pass < 2; pass++) {
        const bool k_quants = pass == 1;
        for (TensorType t : k_quants ? std::vector<TensorType>(std::begin(kNewTypes), std::end(kNewTypes))
                                     : std::vector<TensorType>(std::begin(kTypes), std::end(kTypes))) {
            for (int64_t n : {int64_t{1}, align, 3 * align + 5}) {
                CAPTURE(tensor_type_name(t));
                CAPTURE(n);
                const int64_t k = k_quants ? 512 : 96;
                const Weight w = make_weight(t, n, k, 11u + static_cast<uint32_t>(n));
                const size_t rb = w.packed.row_bytes();
                // Slices of one pair each, packed last to first on as many threads as there are.
                auto sliced = [&](int fill) {
                    PackedWeight p(t, n, k, PackedWeight::Unpacked{fill});
                    const int64_t slices = (n + align - 1) / align;
#pragma omp parallel for schedule(dynamic, 1)
                    for (int64_t s = slices - 1; s >= 0; s--) {
                        const int64_t first = s * align, rows = std::min(align, n - first);
                        p.pack_rows(first, rows, w.raw.data() + static_cast<size_t>(first) * rb);
                    }
                    return p;
                };
                const PackedWeight zeros = sliced(0), ones = sliced(0xFF), unset = sliced(-1);
                REQUIRE(zeros.bytes() == w.packed.bytes());
                const auto* ref = w.packed.panel(0);
                CHECK(std::memcmp(zeros.panel(0), ref, w.packed.bytes()) == 0);
                CHECK(std::memcmp(ones.panel(0), ref, w.packed.bytes()) == 0);
                CHECK(std::memcmp(unset.panel(0), ref, w.packed.bytes()) == 0);
            }
        }
    }
    std::vector<uint8_t> data(64 * 1024);
    PackedWeight p(TensorType::Q8_0, 3 * align + 5, 64, PackedWeight::Unpacked{});
    CHECK(status_of([&] { p.pack_rows(1, 4, data.data()); }) == KVRT_ERR_OUT_OF_RANGE);          // not on a pair
    CHECK(status_of([&] { p.pack_rows(-align, 4, data.data()); }) == KVRT_ERR_OUT_OF_RANGE);
    CHECK(status_of([&] { p.pack_rows(3 * align, 6, data.data()); }) == KVRT_ERR_OUT_OF_RANGE);  // past the end
    CHECK(status_of([&] { p.pack_rows(0, -1, data.data()); }) == KVRT_ERR_OUT_OF_RANGE);
    CHECK(status_of([&] { p.pack_rows(0, 4, nullptr); }) == KVRT_ERR_INVALID_ARGUMENT);
    CHECK(status_of([&] { p.pack_rows(3 * align, 5, data.data()); }) == KVRT_OK);
    CHECK(status_of([&] { p.pack_rows(0, 0, data.data()); }) == KVRT_OK);
    CHECK(status_of([&] { PackedWeight(TensorType::Q8_0, 4, 64, PackedWeight::Unpacked{256}); }) == KVRT_ERR_INVALID_ARGUMENT);
    CHECK(status_of([&] { PackedWeight(TensorType::Q8_0, 0, 64, PackedWeight::Unpacked{}); }) == KVRT_ERR_INVALID_ARGUMENT);
    CHECK(status_of([&] { PackedWeight(TensorType::Q2_K, 4, 256, PackedWeight::Unpacked{}); }) == KVRT_ERR_UNSUPPORTED);
}

TEST_CASE("weight_matmul: the real model's Q4_1 and Q8_0 tensors agree with ref and f32 math") {
    GgufFile f = GgufFile::open(test::model_path());
    struct Case {
        const char* name;
        TensorType type;
        int64_t rows;  // leading rows used (the head has 49152; ref is slow under sanitizers)
    };
    const Case cases[] = {{"blk.0.ffn_down.weight", TensorType::Q4_1, 576},
                          {"blk.3.attn_k.weight", TensorType::Q4_1, 192},
                          {"token_embd.weight", TensorType::Q8_0, 256}};
    for (const Case& c : cases) {
        CAPTURE(c.name);
        const GgufTensor& t = f.require_tensor(c.name);
        REQUIRE(t.type == c.type);
        const int64_t K = static_cast<int64_t>(t.row_elems()), N = std::min<int64_t>(c.rows, t.n_rows());
        PackedWeight w(t.type, t.data, N, K);
        const int64_t M = 3;
        auto X = randn(static_cast<size_t>(M * K), 99);
        std::vector<float> Y(M * N), Yr(M * N), Yf(M * N);
        matmul(w, X.data(), M, K, Y.data(), N);
        ref::weight_matmul(t.type, t.data, N, K, X.data(), M, K, Yr.data(), N);
        ref::weight_matmul_dequant_f32(t.type, t.data, N, K, X.data(), M, K, Yf.data(), N);
        double num = 0, den = 0;
        for (size_t i = 0; i < Y.size(); i++) {
            num += (Y[i] - Yf[i]) * double(Y[i] - Yf[i]);
            den += double(Yf[i]) * Yf[i];
        }
        MESSAGE(std::string(c.name), ": relative L2 error vs f32 math ", std::sqrt(num / den));
        CHECK(std::sqrt(num / den) < 1e-2);
        CHECK(outside_ref_tolerance(t.type, t.data, N, K, X.data(), M, K, Y.data(), Yr.data(), N) == 0);
    }
}

TEST_CASE("weight_matmul: Q5_0 and K-quants on every ISA path agree with the ref twin and give the same bits") {
    // Odd M (register-block tails), N not a multiple of 16 or 32, K of 1 to 5 super-blocks
    // (and Q5_0 at widths that are not multiples of 256, as Gemma 3's 640).
    const int64_t shapes[][3] = {{1, 1, 256}, {3, 17, 512}, {5, 45, 256}, {7, 70, 768}, {2, 48, 1280}, {9, 33, 256}};
    for (TensorType t : kNewTypes) {
        for (auto& s : shapes) {
            for (int64_t K : {s[2], t == TensorType::Q5_0 ? s[2] + 128 : s[2]}) {
                const int64_t M = s[0], N = s[1];
                CAPTURE(tensor_type_name(t));
                CAPTURE(M);
                CAPTURE(N);
                CAPTURE(K);
                Weight w = make_weight(t, N, K, static_cast<uint32_t>(N * 31 + K + static_cast<int>(t)));
                const int64_t ldx = K + 3, ldy = N + 5;
                auto X = randn(static_cast<size_t>(M * ldx), static_cast<uint32_t>(M + K));
                std::vector<float> Yref(M * ldy, -1.0f), Yscalar;
                matmul_ref(w.packed, X.data(), M, ldx, Yref.data(), ldy);
                std::vector<float> Yraw(M * ldy, -1.0f);  // ref straight from the GGUF bytes
                ref::weight_matmul(t, w.raw.data(), N, K, X.data(), M, ldx, Yraw.data(), ldy);
                CHECK(same_bits(Yraw.data(), Yref.data(), Yraw.size()));
                for (KernelIsa isa : isas()) {
                    CAPTURE(kernel_isa_name(isa));
                    std::vector<float> Y(M * ldy, -7.0f);
                    matmul(w.packed, X.data(), M, ldx, Y.data(), ldy, 2, isa);
                    CHECK(outside_ref_tolerance(t, w.raw.data(), N, K, X.data(), M, ldx, Y.data(), Yref.data(), ldy) == 0);
                    int touched = 0;
                    for (int64_t m = 0; m < M; m++)
                        for (int64_t n = N; n < ldy; n++) touched += Y[m * ldy + n] != -7.0f;
                    CHECK(touched == 0);  // padding untouched
                    if (isa == KernelIsa::Scalar) Yscalar = Y;
                    else CHECK(same_bits(Y.data(), Yscalar.data(), Y.size()));
                }
            }
        }
    }
}

TEST_CASE("weight_matmul: Q5_0 and K-quant rows do not depend on M, neighbours, threads or column splits") {
    const int64_t N = 80, K = 768, M = 67;
    for (TensorType t : kNewTypes) {
        CAPTURE(tensor_type_name(t));
        Weight w = make_weight(t, N, K, 61);
        auto X = randn(static_cast<size_t>(M * K), 62);
        for (KernelIsa isa : isas()) {
            CAPTURE(kernel_isa_name(isa));
            std::vector<float> Y2(M * N), Y1(M * N);
            matmul(w.packed, X.data(), M, K, Y2.data(), N, 2, isa);
            matmul(w.packed, X.data(), M, K, Y1.data(), N, 1, isa);
            CHECK(same_bits(Y1.data(), Y2.data(), Y1.size()));
            for (int64_t m : {int64_t{0}, int64_t{1}, int64_t{37}, int64_t{66}}) {
                std::vector<float> y(N);
                matmul(w.packed, X.data() + m * K, 1, K, y.data(), N, 2, isa);
                CHECK(same_bits(y.data(), Y2.data() + m * N, N));
                if (m + 3 <= M) {
                    std::vector<float> y3(3 * N);
                    matmul(w.packed, X.data() + m * K, 3, K, y3.data(), N, 1, isa);
                    CHECK(same_bits(y3.data(), Y2.data() + m * N, 3 * N));
                }
            }
            // matmul_part over uneven pair ranges (3 pairs: 80 columns).
            REQUIRE(matmul_pairs(w.packed) == 3);
            std::vector<float> Yp(3 * N, -1.0f);
            matmul_part(w.packed, X.data(), 3, K, Yp.data(), N, 1, 3, isa);
            matmul_part(w.packed, X.data(), 3, K, Yp.data(), N, 0, 1, isa);
            CHECK(same_bits(Yp.data(), Y2.data(), 3 * N));
        }
        // Many rows, few columns: rows split across threads.
        Weight narrow = make_weight(t, 20, 256, 63);
        const int64_t Mn = 203;
        auto Xn = randn(static_cast<size_t>(Mn * 256), 64);
        std::vector<float> A(Mn * 20), B(Mn * 20);
        matmul(narrow.packed, Xn.data(), Mn, 256, A.data(), 20, 1);
        matmul(narrow.packed, Xn.data(), Mn, 256, B.data(), 20, 3);
        CHECK(same_bits(A.data(), B.data(), A.size()));
    }
}

TEST_CASE("weight_matmul: Q5_0 and K-quants, quantisation error of the chain against f32 math") {
    const int64_t M = 8, N = 64, K = 768;
    for (TensorType t : kNewTypes) {
        CAPTURE(tensor_type_name(t));
        Weight w = make_weight(t, N, K, 71);
        auto X = randn(static_cast<size_t>(M * K), 72);
        std::vector<float> Y(M * N), Yf(M * N);
        matmul(w.packed, X.data(), M, K, Y.data(), N);
        ref::weight_matmul_dequant_f32(t, w.raw.data(), N, K, X.data(), M, K, Yf.data(), N);
        double num = 0, den = 0;
        for (size_t i = 0; i < Y.size(); i++) num += (Y[i] - Yf[i]) * double(Y[i] - Yf[i]), den += double(Yf[i]) * Yf[i];
        const double rel = std::sqrt(num / den);
        MESSAGE(std::string(tensor_type_name(t)), ": relative L2 error vs f32 dequantised math: ", rel);
        CHECK(rel < 2e-2);
        CHECK(rel > 0.0);
    }
}

namespace {
// w (N x K) holds one weight value everywhere; M rows of activations all +1 (even rows) or all -1
// (odd ones): on every ISA path every output must be +-weight * K (within 1e-5, the activations'
// 8-bit scale being 1/127), with the scalar path's bits.
void check_constant_weights(const PackedWeight& w, int64_t M, double weight) {
    const int64_t N = w.rows(), K = w.cols();
    std::vector<float> X(static_cast<size_t>(M * K));
    for (int64_t m = 0; m < M; m++)
        for (int64_t k = 0; k < K; k++) X[m * K + k] = m % 2 ? -1.0f : 1.0f;
    std::vector<float> Ys;
    for (KernelIsa isa : isas()) {
        CAPTURE(kernel_isa_name(isa));
        std::vector<float> Y(static_cast<size_t>(M * N));
        matmul(w, X.data(), M, K, Y.data(), N, 1, isa);
        for (int64_t m = 0; m < M; m++)
            for (int64_t n = 0; n < N; n++)
                CHECK(std::fabs(Y[m * N + n] - (m % 2 ? -1.0 : 1.0) * weight * K) < 1e-5 * weight * K);
        if (isa == KernelIsa::Scalar) Ys = Y;
        else CHECK(same_bits(Y.data(), Ys.data(), Y.size()));
    }
}
}  // namespace

TEST_CASE("weight_matmul: Q6_K at the largest integer sums gives the same bits on every path") {
    // The AVX-VNNI / AVX-512 kernels compute Q6_K's sc_lo * Ilo + sc_hi * Ihi in f32, exact because
    // every term and the sum stay within 2^24 (8-bit codes). Take the extremes: every code 0
    // (q - 32 = -32), every scale -128, d = 1, activations all +1 or all -1 (codes +-127):
    // I = 2 * (-128) * (16 * -32 * +-127) = +-16,646,144 per 32 elements, just below 2^24.
    const int64_t N = 40, K = 512, M = 9;
    std::vector<uint8_t> raw(static_cast<size_t>(N * (K / 256) * 210), 0);
    for (size_t o = 0; o < raw.size(); o += 210) {
        for (int i = 0; i < 16; i++) raw[o + 192 + i] = 0x80;  // scales: int8 -128
        raw[o + 208] = 0x00, raw[o + 209] = 0x3C;                 // d = f16 1.0
    }
    PackedWeight w(TensorType::Q6_K, raw.data(), N, K);
    // each element: 4096 * K = 2^21 (d * sc * (q - 32) = 4096), rounded through da = 1/127
    check_constant_weights(w, M, 4096.0);
}

TEST_CASE("weight_matmul: Q5_0, Q4_K and Q5_K at their largest codes give the same bits on every path") {
    // The AVX2 kernels add four vpmaddubsw pair sums of these types in int16 before widening
    // (weight_matmul_avx2_impl.hpp, kSteps). Take the extremes: every code its type's largest
    // (31, 15, 31), scales 63, d = 1, dmin = 0, activations all +1 or all -1 (codes +-127):
    // 4 * 2 * 31 * 127 = 31,496 per int16 lane, near its 32,767 (eight sums of 5-bit codes
    // would overflow, and this test then fails).
    struct Case {
        TensorType t;
        size_t block;  // bytes per 256 elements
        double w;      // each weight
    };
    const Case cases[] = {{TensorType::Q5_0, 8 * 22, 15.0}, {TensorType::Q4_K, 144, 63.0 * 15}, {TensorType::Q5_K, 176, 63.0 * 31}};
    const int64_t N = 40, K = 512, M = 9;
    for (const Case& c : cases) {
        CAPTURE(tensor_type_name(c.t));
        std::vector<uint8_t> raw(static_cast<size_t>(N * (K / 256)) * c.block, 0xFF);
        if (c.t == TensorType::Q5_0) {
            for (size_t o = 0; o < raw.size(); o += 22) raw[o] = 0x00, raw[o + 1] = 0x3C;  // d = 1
        } else {
            for (size_t o = 0; o < raw.size(); o += c.block)
                raw[o] = 0x00, raw[o + 1] = 0x3C, raw[o + 2] = raw[o + 3] = 0x00;  // d = 1, dmin = 0
        }
        check_constant_weights(PackedWeight(c.t, raw.data(), N, K), M, c.w);
    }
}

namespace {
std::string model_file(const char* name) {
    if (const char* d = std::getenv("KVRT_MODEL_DIR"); d && *d) return std::string(d) + "/" + name;
    const char* h = std::getenv("HOME");
    return std::string(h && *h ? h : "/root") + "/.cache/kvrt/models/" + name;
}
}  // namespace

TEST_CASE("weight_matmul: real Q5_0, Q4_K and Q6_K tensors (Gemma 3 270M, Qwen2.5-Coder 0.5B)") {
    for (const char* file : {"gemma-3-270m-Q4_K_M.gguf", "qwen2.5-coder-0.5b-instruct-Q4_K_M.gguf"}) {
        const std::string path = model_file(file);
        if (!std::filesystem::exists(path)) {
            MESSAGE("skipped: ", path, " is missing (scripts/setup.sh fetches it)");
            continue;
        }
        CAPTURE(file);
        GgufFile f = GgufFile::open(path);
        // The first two 2-D tensors of each type: names differ between the two files.
        int found[64] = {};
        for (const GgufTensor& t : f.tensors()) {
            if (t.n_dims != 2 || !is_new_type(t.type) || found[static_cast<int>(t.type)] >= 2) continue;
            found[static_cast<int>(t.type)]++;
            const std::string tname(t.name), ttype(tensor_type_name(t.type));
            CAPTURE(tname);
            CAPTURE(ttype);
            const int64_t K = static_cast<int64_t>(t.row_elems()), N = std::min<int64_t>(160, t.n_rows());
            PackedWeight w(t.type, t.data, N, K);
            std::vector<uint8_t> row(w.row_bytes());
            int lossy = 0;
            for (int64_t r = 0; r < N; r++) {
                w.unpack_row(r, row.data());
                lossy += std::memcmp(row.data(), t.row(static_cast<uint64_t>(r)), row.size()) != 0;
            }
            CHECK(lossy == 0);
            const int64_t M = 3;
            auto X = randn(static_cast<size_t>(M * K), 99);
            std::vector<float> Yr(M * N), Yf(M * N), Yscalar;
            ref::weight_matmul(t.type, t.data, N, K, X.data(), M, K, Yr.data(), N);
            ref::weight_matmul_dequant_f32(t.type, t.data, N, K, X.data(), M, K, Yf.data(), N);
            for (KernelIsa isa : isas()) {
                CAPTURE(kernel_isa_name(isa));
                std::vector<float> Y(M * N);
                matmul(w, X.data(), M, K, Y.data(), N, 2, isa);
                CHECK(outside_ref_tolerance(t.type, t.data, N, K, X.data(), M, K, Y.data(), Yr.data(), N) == 0);
                if (isa == KernelIsa::Scalar) {
                    Yscalar = Y;
                    double num = 0, den = 0;
                    for (size_t i = 0; i < Y.size(); i++) {
                        num += (Y[i] - Yf[i]) * double(Y[i] - Yf[i]);
                        den += double(Yf[i]) * Yf[i];
                    }
                    MESSAGE(std::string(file), " ", std::string(t.name), " (", std::string(tensor_type_name(t.type)), ", K = ", K,
                            "): relative L2 error vs f32 math ", std::sqrt(num / den));
                    CHECK(std::sqrt(num / den) < 2e-2);
                } else {
                    CHECK(same_bits(Y.data(), Yscalar.data(), Y.size()));
                }
            }
        }
        for (TensorType t : {TensorType::Q5_0, TensorType::Q4_K, TensorType::Q6_K}) {
            CAPTURE(tensor_type_name(t));
            CHECK(found[static_cast<int>(t)] > 0);  // the files hold all three
        }
    }
}

// ---------------------------------------------------------------------------
// 16-bit activation codes (ActBits::Q16): the same contract.

TEST_CASE("weight_matmul Q16: 16-bit activation codes are the same bytes on every path and match ref") {
    const int64_t nb = 18;
    auto x = randn(static_cast<size_t>(nb * 32), 8, 3.0f);
    for (int j = 0; j < 32; j++) x[32 + j] = 0.0f;             // an all-zero block
    x[64] = 1e30f;                                             // a huge outlier
    for (int j = 0; j < 32; j++) x[96 + j] = (j - 16) * 0.5f;  // round-half-even ties
    x[130] = -x[129] * 4.0f;                                   // amax at a negative value
    x[200] = std::numeric_limits<float>::quiet_NaN();          // a NaN: -32767 on every path
    std::vector<int16_t> q_ref(nb * 32);
    std::vector<float> d_ref(nb);
    std::vector<int32_t> s_ref(nb);
    ref::quantize_row_q16(x.data(), nb, q_ref.data(), d_ref.data(), s_ref.data());
    CHECK(d_ref[1] == 0.0f);
    CHECK(s_ref[1] == 0);
    int at_limit = 0;
    for (int16_t q : q_ref) {
        CHECK(q >= -32767);
        at_limit += q == 32767 || q == -32767;
    }
    CHECK(at_limit >= nb - 1);  // every non-zero block reaches +-32767 at its amax
    CHECK(q_ref[200] == -32767);
    for (KernelIsa isa : isas()) {
        CAPTURE(kernel_isa_name(isa));
        kernels::QuantizedRowsBuffer buf;
        kernels::QuantizedRows q = buf.view(1, nb, ActBits::Q16);
        REQUIRE(q.q16 != nullptr);
        CHECK(q.qs == nullptr);
        kernels::quantize_rows(x.data(), nb * 32, 0, 1, q, isa);
        CHECK(std::memcmp(q.q16, q_ref.data(), q_ref.size() * 2) == 0);
        CHECK(same_bits(q.d, d_ref.data(), nb));
        CHECK(std::memcmp(q.sum, s_ref.data(), nb * 4) == 0);
        for (int64_t b = 0; b < nb; b++) {
            CHECK(q.s[b] == d_ref[b] * static_cast<float>(s_ref[b]));
            int32_t lo = 0;
            for (int j = 0; j < 16; j++) lo += q_ref[b * 32 + j];
            CHECK(q.sum_lo[b] == lo);
        }
    }
}

// fn(t, M, N, K, w) for every quantised type and each shape {M, N, K}, W seeded by seed_mul.
template <size_t S, class Fn>
void each_quantised_case(const int64_t (&shapes)[S][3], uint32_t seed_mul, Fn&& fn) {
    std::vector<TensorType> types{TensorType::Q4_1, TensorType::Q4_0, TensorType::Q8_0};
    types.insert(types.end(), std::begin(kNewTypes), std::end(kNewTypes));
    for (TensorType t : types) {
        for (auto& s : shapes) {
            const int64_t M = s[0], N = s[1], K = s[2];
            CAPTURE(tensor_type_name(t));
            CAPTURE(M);
            CAPTURE(N);
            CAPTURE(K);
            const Weight w = make_weight(t, N, K, static_cast<uint32_t>(N * seed_mul + K + static_cast<int>(t)));
            fn(t, M, N, K, w);
        }
    }
}

TEST_CASE("weight_matmul Q16: every quantised type on every ISA path agrees with ref and gives the same bits") {
    const int64_t shapes[][3] = {{1, 1, 256}, {3, 17, 512}, {5, 45, 256}, {2, 48, 768}, {9, 33, 256}};
    each_quantised_case(shapes, 37, [](TensorType t, int64_t M, int64_t N, int64_t K, const Weight& w) {
        const int64_t ldx = K + 3, ldy = N + 5;
        auto X = randn(static_cast<size_t>(M * ldx), static_cast<uint32_t>(M + 3 * K));
        std::vector<float> Yref(M * ldy, -1.0f), Y8(M * ldy, -1.0f), Yscalar;
        matmul_ref(w.packed, X.data(), M, ldx, Yref.data(), ldy, ActBits::Q16);
        matmul_ref(w.packed, X.data(), M, ldx, Y8.data(), ldy, ActBits::Q8);
        CHECK_FALSE(same_bits(Yref.data(), Y8.data(), Yref.size()));  // the mode is applied
        std::vector<float> Yraw(M * ldy, -1.0f);
        ref::weight_matmul(t, w.raw.data(), N, K, X.data(), M, ldx, Yraw.data(), ldy, ActBits::Q16);
        CHECK(same_bits(Yraw.data(), Yref.data(), Yraw.size()));
        for (KernelIsa isa : isas()) {
            CAPTURE(kernel_isa_name(isa));
            std::vector<float> Y(M * ldy, -7.0f);
            matmul(w.packed, X.data(), M, ldx, Y.data(), ldy, 2, isa, ActBits::Q16);
            CHECK(outside_ref_tolerance(t, w.raw.data(), N, K, X.data(), M, ldx, Y.data(), Yref.data(), ldy) == 0);
            int touched = 0;
            for (int64_t m = 0; m < M; m++)
                for (int64_t n = N; n < ldy; n++) touched += Y[m * ldy + n] != -7.0f;
            CHECK(touched == 0);
            if (isa == KernelIsa::Scalar) Yscalar = Y;
            else CHECK(same_bits(Y.data(), Yscalar.data(), Y.size()));
        }
    });
}

// The row-independence contract under activation codes `act` (rows with outlier blocks when
// `outliers`): a row's output does not depend on M, its neighbours, the thread count or the column
// split (matmul_part), nor on the rows split across threads.
static void rows_do_not_depend(ActBits act, bool outliers) {
    const int64_t N = 80, K = 512, M = 41;
    for (TensorType t : {TensorType::Q4_1, TensorType::Q8_0, TensorType::Q5_0, TensorType::Q4_K, TensorType::Q6_K}) {
        CAPTURE(tensor_type_name(t));
        Weight w = make_weight(t, N, K, 81);
        auto X = randn(static_cast<size_t>(M * K), 82);
        if (outliers) add_outlier_blocks(X, M, K, K);
        for (KernelIsa isa : isas()) {
            CAPTURE(kernel_isa_name(isa));
            std::vector<float> Y2(M * N), Y1(M * N);
            matmul(w.packed, X.data(), M, K, Y2.data(), N, 2, isa, act);
            matmul(w.packed, X.data(), M, K, Y1.data(), N, 1, isa, act);
            CHECK(same_bits(Y1.data(), Y2.data(), Y1.size()));
            for (int64_t m : {int64_t{0}, int64_t{1}, int64_t{22}, int64_t{40}}) {
                std::vector<float> y(N);
                matmul(w.packed, X.data() + m * K, 1, K, y.data(), N, 2, isa, act);
                CHECK(same_bits(y.data(), Y2.data() + m * N, N));
            }
            REQUIRE(matmul_pairs(w.packed) == 3);
            std::vector<float> Yp(3 * N, -1.0f);
            matmul_part(w.packed, X.data(), 3, K, Yp.data(), N, 1, 3, isa, act);
            matmul_part(w.packed, X.data(), 3, K, Yp.data(), N, 0, 1, isa, act);
            CHECK(same_bits(Yp.data(), Y2.data(), 3 * N));
        }
        // Many rows, few columns: rows split across threads.
        Weight narrow = make_weight(t, 20, 256, 83);
        const int64_t Mn = 203;
        auto Xn = randn(static_cast<size_t>(Mn * 256), 84);
        if (outliers) add_outlier_blocks(Xn, Mn, 256, 256);
        std::vector<float> A(Mn * 20), B(Mn * 20);
        matmul(narrow.packed, Xn.data(), Mn, 256, A.data(), 20, 1, KernelIsa::Auto, act);
        matmul(narrow.packed, Xn.data(), Mn, 256, B.data(), 20, 3, KernelIsa::Auto, act);
        CHECK(same_bits(A.data(), B.data(), A.size()));
    }
}

TEST_CASE("weight_matmul Q16: rows do not depend on M, neighbours, threads or column splits") {
    rows_do_not_depend(ActBits::Q16, false);
    // Float weights have no activation codes: Q16 changes nothing.
    Weight f = make_weight(TensorType::F16, 40, 96, 85);
    auto X = randn(static_cast<size_t>(3 * 96), 86);
    std::vector<float> a(3 * 40), b(3 * 40);
    matmul(f.packed, X.data(), 3, 96, a.data(), 40, 1, KernelIsa::Auto, ActBits::Q8);
    matmul(f.packed, X.data(), 3, 96, b.data(), 40, 1, KernelIsa::Auto, ActBits::Q16);
    CHECK(same_bits(a.data(), b.data(), a.size()));
    float x[64] = {}, y[64] = {};
    CHECK(status_of([&] { matmul(f.packed, x, 1, 96, y, 40, 1, KernelIsa::Auto, static_cast<ActBits>(12)); }) ==
          KVRT_ERR_INVALID_ARGUMENT);
}

TEST_CASE("weight_matmul Q16: the activation error against f32 math is ~256x smaller than Q8's") {
    const int64_t M = 8, N = 64, K = 768;
    std::vector<TensorType> types{TensorType::Q4_1, TensorType::Q4_0, TensorType::Q8_0};
    types.insert(types.end(), std::begin(kNewTypes), std::end(kNewTypes));
    for (TensorType t : types) {
        CAPTURE(tensor_type_name(t));
        Weight w = make_weight(t, N, K, 91);
        auto X = randn(static_cast<size_t>(M * K), 92);
        std::vector<float> Y8(M * N), Y16(M * N), Yf(M * N);
        matmul(w.packed, X.data(), M, K, Y8.data(), N, 0, KernelIsa::Auto, ActBits::Q8);
        matmul(w.packed, X.data(), M, K, Y16.data(), N, 0, KernelIsa::Auto, ActBits::Q16);
        ref::weight_matmul_dequant_f32(t, w.raw.data(), N, K, X.data(), M, K, Yf.data(), N);
        auto rel = [&](const std::vector<float>& Y) {
            double num = 0, den = 0;
            for (size_t i = 0; i < Y.size(); i++) num += (Y[i] - Yf[i]) * double(Y[i] - Yf[i]), den += double(Yf[i]) * Yf[i];
            return std::sqrt(num / den);
        };
        const double e8 = rel(Y8), e16 = rel(Y16);
        MESSAGE(std::string(tensor_type_name(t)), ": relative L2 error vs f32 math, 8-bit codes ", e8, ", 16-bit ", e16);
        CHECK(e16 > 0.0);
        CHECK(e16 < e8 / 50);  // 256x in the activation rounding; f32 sums of the partials remain
    }
}

// 8-bit codes with outlier residuals (ActBits::Q8R): the same contract.

TEST_CASE("weight_matmul Q8R: outlier blocks are marked by their scale and share, their residual codes refine the 8-bit ones") {
    const int64_t nb = 12;
    auto x = randn(static_cast<size_t>(nb * 32), 11);
    for (int j = 0; j < 32; j++) x[3 * 32 + j] *= 30.0f;  // an outlier block
    x[7 * 32 + 5] = 40.0f;                                  // an outlier channel in a block
    for (int j = 0; j < 32; j++) x[9 * 32 + j] = 0.0f;     // an all-zero block
    kernels::QuantizedRows want;
    kernels::QuantizedRowsBuffer want_buf;
    for (KernelIsa isa : isas()) {
        CAPTURE(kernel_isa_name(isa));
        kernels::QuantizedRowsBuffer buf;
        kernels::QuantizedRows q = buf.view(1, nb, ActBits::Q8R);
        REQUIRE(q.rq != nullptr);
        kernels::quantize_rows(x.data(), nb * 32, 0, 1, q, isa);
        float mean = 0.0f, squares = 0.0f;
        for (int64_t b = 0; b < nb; b++) mean += q.d[b], squares = std::fma(q.d[b], q.d[b], squares);
        mean /= static_cast<float>(nb);
        int marked = 0;
        for (int64_t b = 0; b < nb; b++) {
            CAPTURE(b);
            const bool mark = q.d[b] > kOutlierBlockRatio * mean && q.d[b] * q.d[b] >= kOutlierBlockShare * squares;
            CHECK((q.rd[b] != 0.0f) == mark);
            marked += mark;
            if (!mark) {  // (its residual codes and sums are not written)
                CHECK(q.s[b] == q.d[b] * static_cast<float>(q.sum[b]));
                continue;
            }
            int32_t t = 0, t_lo = 0;
            for (int j = 0; j < 32; j++) t += q.rq[b * 32 + j], t_lo += j < 16 ? q.rq[b * 32 + j] : 0;
            CHECK(q.rsum[b] == t);
            CHECK(q.rsum_lo[b] == t_lo);
            CHECK(q.s[b] == std::fma(q.rd[b], static_cast<float>(q.rsum[b]), q.d[b] * static_cast<float>(q.sum[b])));
            CHECK(q.rd[b] <= q.d[b] / 254.0f * 1.001f);  // the residual is at most half a code step
            for (int j = 0; j < 32; j++) {
                const double v = double(q.d[b]) * q.qs[b * 32 + j] + double(q.rd[b]) * q.rq[b * 32 + j];
                CHECK(std::fabs(v - x[b * 32 + j]) <= q.rd[b] * 0.5001 + 1e-30);
            }
        }
        CHECK(marked == 2);  // blocks 3 and 7
        CHECK(q.rcount[0] == 2);
        CHECK(q.rd[3] != 0.0f);
        CHECK(q.rd[7] != 0.0f);
        // ref's residual: the same codes and scales
        std::vector<int32_t> rq(nb * 32);
        std::vector<float> rd(nb);
        std::vector<int32_t> rs(nb);
        ref::residual_row_q8(x.data(), nb, q.qs, q.d, rq.data(), rd.data(), rs.data());
        CHECK(same_bits(rd.data(), q.rd, nb));
        for (int64_t b = 0; b < nb; b++) {
            if (rd[b] == 0.0f) continue;
            for (int j = 0; j < 32; j++) CHECK(rq[b * 32 + j] == q.rq[b * 32 + j]);
            CHECK(rs[b] == q.rsum[b]);
        }
        // every path: the same bytes
        if (isa == KernelIsa::Scalar) {
            want = want_buf.view(1, nb, ActBits::Q8R);
            kernels::quantize_rows(x.data(), nb * 32, 0, 1, want, isa);
        } else {
            CHECK(std::memcmp(q.qs, want.qs, nb * 32) == 0);
            CHECK(std::memcmp(q.rq + 3 * 32, want.rq + 3 * 32, 32) == 0);
            CHECK(std::memcmp(q.rq + 7 * 32, want.rq + 7 * 32, 32) == 0);
            CHECK(same_bits(q.d, want.d, nb));
            CHECK(same_bits(q.rd, want.rd, nb));
            CHECK(same_bits(q.s, want.s, nb));
        }
    }
    // Six equal outlier blocks: each above 3x the mean, none with a fifth of the row's squared scales.
    {
        auto y = randn(static_cast<size_t>(24 * 32), 13, 0.01f);
        for (int64_t b = 0; b < 6; b++)
            for (int j = 0; j < 32; j++) y[(4 * b + 1) * 32 + j] = (j % 2 ? 1.0f : -1.0f) * (0.5f + 0.01f * j);
        for (KernelIsa isa : isas()) {
            CAPTURE(kernel_isa_name(isa));
            kernels::QuantizedRowsBuffer buf;
            kernels::QuantizedRows q = buf.view(1, 24, ActBits::Q8R);
            kernels::quantize_rows(y.data(), 24 * 32, 0, 1, q, isa);
            float mean = 0.0f;
            for (int64_t b = 0; b < 24; b++) mean += q.d[b];
            CHECK(q.d[1] > kOutlierBlockRatio * mean / 24.0f);
            CHECK(q.rcount[0] == 0);
            std::vector<int32_t> rq(24 * 32);
            std::vector<float> rd(24, -1.0f);
            std::vector<int32_t> rs(24);
            ref::residual_row_q8(y.data(), 24, q.qs, q.d, rq.data(), rd.data(), rs.data());
            for (int64_t b = 0; b < 24; b++) CHECK(rd[b] == 0.0f);
            // four of them (a quarter each): all four marked
            for (int j = 0; j < 32; j++) y[21 * 32 + j] = y[17 * 32 + j] = 0.001f * static_cast<float>(j - 16);
            kernels::quantize_rows(y.data(), 24 * 32, 0, 1, q, isa);
            CHECK(q.rcount[0] == 4);
            ref::residual_row_q8(y.data(), 24, q.qs, q.d, rq.data(), rd.data(), rs.data());
            for (int64_t b = 0; b < 24; b++) CHECK((rd[b] != 0.0f) == (b < 16 && b % 4 == 1));
            for (int j = 0; j < 32; j++) y[21 * 32 + j] = y[17 * 32 + j] = (j % 2 ? 1.0f : -1.0f) * (0.5f + 0.01f * j);
        }
    }
    // A row without outliers, a row of one block, a row of NaN and inf: nothing marked.
    for (float special : {1.0f, std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
        auto y = randn(static_cast<size_t>(nb * 32), 12);
        y[40] *= special;
        kernels::QuantizedRowsBuffer buf;
        kernels::QuantizedRows q = buf.view(1, nb, ActBits::Q8R);
        kernels::quantize_rows(y.data(), nb * 32, 0, 1, q, KernelIsa::Auto);
        for (int64_t b = 0; b < nb; b++) CHECK(q.rd[b] == 0.0f);
        CHECK(q.rcount[0] == 0);
        kernels::QuantizedRows one = buf.view(1, 1, ActBits::Q8R);
        kernels::quantize_rows(x.data() + 3 * 32, 32, 0, 1, one, KernelIsa::Auto);
        CHECK(one.rd[0] == 0.0f);
    }
}

TEST_CASE("weight_matmul Q8R: every quantised type on every ISA path agrees with ref and gives the same bits") {
    const int64_t shapes[][3] = {{1, 1, 256}, {3, 17, 512}, {7, 45, 256}, {2, 48, 768}, {40, 33, 256}, {70, 20, 512}};
    each_quantised_case(shapes, 41, [](TensorType t, int64_t M, int64_t N, int64_t K, const Weight& w) {
        const int64_t ldx = K + 3, ldy = N + 5;
        auto X = randn(static_cast<size_t>(M * ldx), static_cast<uint32_t>(M + 5 * K));
        add_outlier_blocks(X, M, K, ldx);
        std::vector<float> Yref(M * ldy, -1.0f), Y8(M * ldy, -1.0f), Yscalar;
        matmul_ref(w.packed, X.data(), M, ldx, Yref.data(), ldy, ActBits::Q8R);
        matmul_ref(w.packed, X.data(), M, ldx, Y8.data(), ldy, ActBits::Q8);
        if (M > 1) CHECK_FALSE(same_bits(Yref.data(), Y8.data(), Yref.size()));  // the residuals are applied
        for (KernelIsa isa : isas()) {
            CAPTURE(kernel_isa_name(isa));
            std::vector<float> Y(M * ldy, -7.0f), Yq8(M * ldy, -7.0f);
            matmul(w.packed, X.data(), M, ldx, Y.data(), ldy, 2, isa, ActBits::Q8R);
            matmul(w.packed, X.data(), M, ldx, Yq8.data(), ldy, 2, isa, ActBits::Q8);
            CHECK(outside_ref_tolerance(t, w.raw.data(), N, K, X.data(), M, ldx, Y.data(), Yref.data(), ldy) == 0);
            int touched = 0;
            for (int64_t m = 0; m < M; m++) {
                for (int64_t n = N; n < ldy; n++) touched += Y[m * ldy + n] != -7.0f;
                // rows without outlier blocks: the bits of 8-bit codes
                if (m % 3 == 0) CHECK(same_bits(Y.data() + m * ldy, Yq8.data() + m * ldy, N));
            }
            CHECK(touched == 0);
            if (isa == KernelIsa::Scalar) Yscalar = Y;
            else CHECK(same_bits(Y.data(), Yscalar.data(), Y.size()));
        }
    });
}

// The fused residual's lists (weight_matmul_fused_residual.hpp): every (row, step) with a marked
// block once, a step's rows ordered by their first marked block there, then by row.
TEST_CASE("weight_matmul Q8R: the marked rows of each step come ordered by their first marked block, and the marked steps are listed") {
    for (int64_t subs : {int64_t{1}, int64_t{8}}) {
        CAPTURE(subs);
        const int64_t M = 37, nb = 32, nsteps = nb / subs;
        std::vector<float> rd(static_cast<size_t>(M * nb), 0.0f);
        std::vector<int32_t> rlist(static_cast<size_t>(M * nb)), rcount(static_cast<size_t>(M));
        std::mt19937 rng(7);
        for (int64_t m = 0; m < M; m++) {
            int32_t n = 0;
            for (int64_t b = 0; b < nb; b++)
                if (rng() % 5 == 0 && b % 4 != 2)  // (blocks 2, 6, ... of no row: empty steps of 1 block)
                    rd[static_cast<size_t>(m * nb + b)] = 0.5f, rlist[static_cast<size_t>(m * nb + n++)] = static_cast<int32_t>(b);
            rcount[static_cast<size_t>(m)] = n;
        }
        kernels::QuantizedRows a;
        a.rows = M;
        a.blocks = nb;
        a.rd = rd.data();
        a.rlist = rlist.data();
        a.rcount = rcount.data();
        kernels::MarkedStepRows l;
        REQUIRE(kernels::marked_step_rows(a, M, subs, l));
        REQUIRE(l.steps == nsteps);
        CHECK(l.start[0] == 0);
        // the steps with rows, in increasing order: the ones the kernels walk
        std::vector<int64_t> with_rows;
        for (int64_t st = 0; st < nsteps; st++)
            if (l.start[st + 1] > l.start[st]) with_rows.push_back(st);
        REQUIRE(l.n_marked == static_cast<int64_t>(with_rows.size()));
        CHECK(std::equal(with_rows.begin(), with_rows.end(), l.marked));
        if (subs == 1) CHECK(l.n_marked == nsteps - nsteps / 4);
        for (int64_t st = 0; st < nsteps; st++) {
            // the expected rows: every row with a mark in the step, keyed (first marked block, row)
            std::vector<std::pair<int64_t, int64_t>> want;
            for (int64_t m = 0; m < M; m++)
                for (int64_t j = 0; j < subs; j++)
                    if (rd[static_cast<size_t>(m * nb + st * subs + j)] != 0.0f) {
                        want.emplace_back(j, m);
                        break;
                    }
            std::sort(want.begin(), want.end());
            REQUIRE(l.start[st + 1] - l.start[st] == static_cast<int64_t>(want.size()));
            for (size_t i = 0; i < want.size(); i++) CHECK(l.rows[l.start[st] + static_cast<int64_t>(i)] == want[i].second);
        }
    }
}

// The AVX-512 and AVX2 kernels compute the residual products themselves after each panel pair's
// (panel's) row tiles: per step, the rows marked there in groups (AVX-512: up to
// kFusedResidualGroup; AVX2: the row tiles' 2), which in a K-quant step may be marked at different
// blocks of it (weight_matmul_fused_residual.hpp); the other paths run the separate pass. Both give its bits: here an outlier channel shared by most rows (many rows marked at
// the same blocks: several groups, of every size), rows with many marked blocks, and rows of none.
TEST_CASE("weight_matmul Q8R: shared outlier channels and rows with many marked blocks give the same bits on every path") {
    const int64_t shapes[][3] = {{13, 40, 512}, {8, 33, 768}, {21, 64, 3072}, {1, 20, 3072}, {70, 34, 256}};
    each_quantised_case(shapes, 43, [](TensorType t, int64_t M, int64_t N, int64_t K, const Weight& w) {
        const int64_t ldx = K + 1, ldy = N, nb = K / 32;
        auto X = randn(static_cast<size_t>(M * ldx), static_cast<uint32_t>(7 * M + K));
        for (int64_t m = 0; m < M; m++) {
            // blocks 1 and nb - 2: every row but each fifth; rows m % 4 == 3, where nb >= 16: blocks
            // 0, 5 and 10 as well, larger (a share of the row's squared scales of about 0.28 each,
            // leaving the shared blocks 0.07: those rows have 2-3 marks, as their scales fall, and
            // no shared one)
            for (int64_t b = 0; b < nb; b++) {
                const bool shared = (b == 1 || b == nb - 2) && m % 5 != 4;
                const bool many = m % 4 == 3 && nb >= 16 && b % 5 == 0 && b < 15;
                if (shared || many)
                    for (int64_t e = 0; e < 32; e++) X[m * ldx + b * 32 + e] *= many ? 40.0f : 20.0f;
            }
        }
        {  // the marks are as meant: the shared blocks in most rows, many blocks in some
            kernels::QuantizedRowsBuffer buf;
            kernels::QuantizedRows q = buf.view(M, nb, ActBits::Q8R);
            kernels::quantize_rows(X.data(), ldx, 0, M, q, KernelIsa::Auto);
            int shared = 0;
            for (int64_t m = 0; m < M; m++) shared += q.rd[m * nb + 1] != 0.0f;
            CHECK(shared >= (M > 1 ? 5 : 1));
            if (M > 3 && nb >= 16) CHECK(q.rcount[3] >= 2);
        }
        std::vector<float> Yref(M * ldy, -1.0f);
        matmul_ref(w.packed, X.data(), M, ldx, Yref.data(), ldy, ActBits::Q8R);
        std::vector<float> Yscalar;
        for (KernelIsa isa : isas()) {
            CAPTURE(kernel_isa_name(isa));
            for (int threads : {1, 2}) {
                std::vector<float> Y(M * ldy, -7.0f);
                matmul(w.packed, X.data(), M, ldx, Y.data(), ldy, threads, isa, ActBits::Q8R);
                CHECK(outside_ref_tolerance(t, w.raw.data(), N, K, X.data(), M, ldx, Y.data(), Yref.data(), ldy) == 0);
                if (Yscalar.empty()) Yscalar = Y;
                else CHECK(same_bits(Y.data(), Yscalar.data(), Y.size()));
            }
        }
    });
}

TEST_CASE("weight_matmul Q8R: rows do not depend on M, neighbours, threads or column splits") {
    rows_do_not_depend(ActBits::Q8R, true);
}

TEST_CASE("weight_matmul Q8R: the residuals cut the activation error against f32 math where rows have outliers") {
    const int64_t M = 8, N = 64, K = 768;
    std::vector<TensorType> types{TensorType::Q4_1, TensorType::Q4_0, TensorType::Q8_0};
    types.insert(types.end(), std::begin(kNewTypes), std::end(kNewTypes));
    for (TensorType t : types) {
        CAPTURE(tensor_type_name(t));
        Weight w = make_weight(t, N, K, 191);
        auto X = randn(static_cast<size_t>(M * K), 192);
        add_outlier_blocks(X, M, K, K);
        std::vector<float> Y8(M * N), Y8r(M * N), Y16(M * N), Yf(M * N);
        matmul(w.packed, X.data(), M, K, Y8.data(), N, 0, KernelIsa::Auto, ActBits::Q8);
        matmul(w.packed, X.data(), M, K, Y8r.data(), N, 0, KernelIsa::Auto, ActBits::Q8R);
        matmul(w.packed, X.data(), M, K, Y16.data(), N, 0, KernelIsa::Auto, ActBits::Q16);
        ref::weight_matmul_dequant_f32(t, w.raw.data(), N, K, X.data(), M, K, Yf.data(), N);
        auto rel = [&](const std::vector<float>& Y) {
            double num = 0, den = 0;
            for (size_t i = 0; i < Y.size(); i++)
                num += (Y[i] - Yf[i]) * double(Y[i] - Yf[i]), den += double(Yf[i]) * Yf[i];
            return std::sqrt(num / den);
        };
        const double e8 = rel(Y8), e8r = rel(Y8r), e16 = rel(Y16);
        MESSAGE(std::string(tensor_type_name(t)), ": relative L2 error vs f32 math with outlier blocks, 8-bit codes ", e8,
                ", with residuals ", e8r, ", 16-bit ", e16);
        CHECK(e8r < e8 / 2);   // the outlier blocks carry most of the rounding error here
        CHECK(e8r > e16);      // the other blocks keep their 8-bit codes
    }
}

// The emulated AMX tiles, called as matmul() calls a kernel: all panels, one thread.
static void amx_emulated(const Weight& w, const std::vector<float>& X, int64_t M, int64_t ldx, const kernels::QuantizedRows& rows,
                         std::vector<float>& Y, int64_t ldy, const kernels::MarkedStepRows* residual_rows = nullptr) {
    kernels::MatmulArgs args;
    args.w = &w.packed;
    args.a = &rows;
    args.X = X.data();
    args.ldx = ldx;
    args.Y = Y.data();
    args.ldy = ldy;
    args.M = M;
    args.residual_rows = residual_rows;
    kernels::matmul_panels_amx_emulated(args, 0, w.packed.panels());
}

TEST_CASE("weight_matmul: AMX tiles (real and emulated) give the bits of the AVX-512 kernel, outlier residuals included") {
    // Whole tiles of 16 rows take tdpbssd / tdpbsud (Q5_0, Q8_0, Q4_K, Q5_K, Q6_K; the others go to the
    // AVX-512 kernel), the remaining rows the AVX-512 kernel; both with the
    // same float operations, so every element has the AVX-512 kernel's bits. Shapes: one tile
    // and a row tail, several tiles, a panel tail (N % 16), an odd panel count (padding panel),
    // and K past one chunk of 64 blocks (the accumulators go through Y between chunks).
    if (!kernel_isa_supported(KernelIsa::Avx512)) {
        std::printf("KVRT_TEST_NOT_RUN: no AVX-512 VNNI on this CPU (the AMX kernel's float side needs it)\n");
        return;
    }
    const bool real = kernel_isa_supported(KernelIsa::Amx);
    MESSAGE((std::string("AMX tiles on this CPU: ") + (real ? "real and emulated" : "emulated only")));
    const TensorType types[] = {TensorType::Q4_0, TensorType::Q4_1, TensorType::Q8_0, TensorType::Q5_0,
                                TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K};
    const int64_t shapes[][3] = {{16, 17, 256}, {37, 48, 512}, {64, 80, 2304}, {33, 33, 4352}};
    for (TensorType t : types) {
        for (auto& s : shapes) {
            const int64_t M = s[0], N = s[1], K = s[2];
            CAPTURE(std::string(tensor_type_name(t)));
            CAPTURE(M);
            CAPTURE(N);
            CAPTURE(K);
            Weight w = make_weight(t, N, K, static_cast<uint32_t>(N * 7 + K + static_cast<int>(t)));
            const int64_t ldx = K + 3, ldy = N + 5;
            auto X = randn(static_cast<size_t>(M * ldx), static_cast<uint32_t>(M * 3 + K));
            std::vector<float> Y512(M * ldy, -7.0f);
            matmul(w.packed, X.data(), M, ldx, Y512.data(), ldy, 2, KernelIsa::Avx512);
            std::vector<float> Yemu(M * ldy, -7.0f);
            kernels::QuantizedRowsBuffer buf;
            const kernels::QuantizedRows rows = buf.view(M, K / 32);
            kernels::quantize_rows(X.data(), ldx, 0, M, rows, KernelIsa::Avx512);
            amx_emulated(w, X, M, ldx, rows, Yemu, ldy);
            CHECK(same_bits(Yemu.data(), Y512.data(), Yemu.size()));  // padding columns untouched too
            if (real) {
                for (int threads : {1, 2}) {
                    std::vector<float> Yamx(M * ldy, -7.0f);
                    matmul(w.packed, X.data(), M, ldx, Yamx.data(), ldy, threads, KernelIsa::Amx);
                    CHECK(same_bits(Yamx.data(), Y512.data(), Yamx.size()));
                }
            }
        }
    }
    // ActBits::Q8R: the tiles' chains, then the residual of every row (the AVX-512 kernel's fused
    // residual after them, given the marked rows' lists as matmul() gives them).
    for (TensorType t : {TensorType::Q8_0, TensorType::Q5_0, TensorType::Q4_K, TensorType::Q6_K}) {
        for (auto& s : shapes) {
            const int64_t M = s[0], N = s[1], K = s[2];
            CAPTURE(std::string(tensor_type_name(t)));
            CAPTURE(M);
            CAPTURE(K);
            Weight w = make_weight(t, N, K, static_cast<uint32_t>(N * 5 + K + static_cast<int>(t)));
            const int64_t ldx = K + 3, ldy = N + 5;
            auto X = randn(static_cast<size_t>(M * ldx), static_cast<uint32_t>(M * 7 + K));
            add_outlier_blocks(X, M, K, ldx);
            std::vector<float> Y512(M * ldy, -7.0f), Yq8(M * ldy, -7.0f);
            matmul(w.packed, X.data(), M, ldx, Y512.data(), ldy, 2, KernelIsa::Avx512, ActBits::Q8R);
            matmul(w.packed, X.data(), M, ldx, Yq8.data(), ldy, 2, KernelIsa::Avx512, ActBits::Q8);
            CHECK_FALSE(same_bits(Y512.data(), Yq8.data(), Y512.size()));
            std::vector<float> Yemu(M * ldy, -7.0f);
            kernels::QuantizedRowsBuffer buf;
            const kernels::QuantizedRows rows = buf.view(M, K / 32, ActBits::Q8R);
            kernels::quantize_rows(X.data(), ldx, 0, M, rows, KernelIsa::Avx512);
            kernels::MarkedStepRows lists;
            REQUIRE(kernels::marked_step_rows(rows, M, kernels::panel_step_elems(t) / 32, lists));
            amx_emulated(w, X, M, ldx, rows, Yemu, ldy, &lists);
            CHECK(same_bits(Yemu.data(), Y512.data(), Yemu.size()));
            if (real) {
                std::vector<float> Yamx(M * ldy, -7.0f);
                matmul(w.packed, X.data(), M, ldx, Yamx.data(), ldy, 2, KernelIsa::Amx, ActBits::Q8R);
                CHECK(same_bits(Yamx.data(), Y512.data(), Yamx.size()));
            }
        }
    }
    // The check can fail: a changed activation code changes the tile path's output.
    Weight w = make_weight(TensorType::Q4_K, 32, 256, 5);
    auto X = randn(16 * 256, 6);
    kernels::QuantizedRowsBuffer buf;
    const kernels::QuantizedRows rows = buf.view(16, 8);
    kernels::quantize_rows(X.data(), 256, 0, 16, rows, KernelIsa::Avx512);
    std::vector<float> Ya(16 * 32), Yb(16 * 32);
    kernels::MatmulArgs args;
    args.w = &w.packed;
    args.a = &rows;
    args.ldy = 32;
    args.M = 16;
    args.Y = Ya.data();
    kernels::matmul_panels_amx_emulated(args, 0, w.packed.panels());
    rows.qs[5 * 256 + 100] = static_cast<int8_t>(rows.qs[5 * 256 + 100] == 1 ? 2 : 1);
    args.Y = Yb.data();
    kernels::matmul_panels_amx_emulated(args, 0, w.packed.panels());
    int changed_rows = 0;
    for (int m = 0; m < 16; m++) changed_rows += !same_bits(&Ya[m * 32], &Yb[m * 32], 32);
    CHECK(changed_rows == 1);
}
