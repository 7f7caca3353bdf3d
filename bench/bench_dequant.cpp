// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// bench_dequant: dequantisation throughput (elements/s) of every vector path,
// each printed beside the scalar reference measured in the same run, for f32 and
// bf16 output, on an L2-sized buffer (compute bound) and on one larger than the
// last-level cache, where the bytes moved per second (quantised input read +
// bf16 output written) are also printed as a fraction of the machine's STREAM
// read bandwidth (single thread).
//   bench_dequant [--quick]
#include "baselines.hpp"

#include "formats/tensor_type_dequant.hpp"

#include <random>

using namespace kvrt;
using namespace kvrt::bench;

namespace {

std::vector<uint8_t> blocks(TensorType t, uint64_t n_elems, std::mt19937& rng) {
    const auto& tr = tensor_type_traits(t);
    std::vector<uint8_t> v(n_elems / tr.block_elems * tr.block_bytes);
    for (auto& b : v) b = static_cast<uint8_t>(rng());
    if (tr.block_elems > 1)  // finite scales
        for (size_t off = 0; off < v.size(); off += tr.block_bytes) {
            size_t d = t == TensorType::Q6_K ? offsetof(BlockQ6_K, d) : 0;
            v[off + d + 1] &= 0x3b;
            v[off + 3] &= 0x3b;
        }
    return v;
}

template <class Out>
double best_seconds(TensorType t, const std::vector<uint8_t>& src, Out* dst, uint64_t n, DequantIsa isa, int reps) {
    double best = 1e30;
    for (int r = 0; r < reps; ++r) {
        double t0 = now_seconds();
        if constexpr (sizeof(Out) == 4) dequantize_f32(t, src.data(), dst, n, isa);
        else dequantize_bf16(t, src.data(), dst, n, isa);
        best = std::min(best, now_seconds() - t0);
    }
    return best;
}

}  // namespace

int main(int argc, char** argv) {
    const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
    const int reps = quick ? 3 : 10;
    std::mt19937 rng(1);
    const double stream = stream_read(1, 0, quick ? 2 : 5);
    const uint64_t small = 1 << 15;                                        // 128 KiB of f32 output
    const uint64_t large = std::max<uint64_t>(llc_bytes() / 2, 8u << 20);  // elements: input > LLC / 2, output > 2 x LLC
    for (TensorType t : {TensorType::Q4_1, TensorType::Q8_0, TensorType::Q4_0, TensorType::Q5_1, TensorType::F16,
                         TensorType::BF16, TensorType::Q4_K, TensorType::Q6_K}) {
        for (uint64_t n : {small, large}) {
            const uint64_t elems = n / kQK_K * kQK_K;
            auto src = blocks(t, elems, rng);
            std::vector<float> f32(elems);
            std::vector<uint16_t> b16(elems);
            const double s_f32 = best_seconds(t, src, f32.data(), elems, DequantIsa::Scalar, reps);
            const double s_b16 = best_seconds(t, src, b16.data(), elems, DequantIsa::Scalar, reps);
            for (DequantIsa isa : {DequantIsa::Avx2, DequantIsa::Avx512}) {
                if (!dequant_isa_available(isa)) continue;
                std::string extra = std::string("\"type\":\"") + tensor_type_name(t) + "\",\"isa\":\"" +
                                    dequant_isa_name(isa) + "\",\"elements\":" + std::to_string(elems);
                const double v_f32 = best_seconds(t, src, f32.data(), elems, isa, reps);
                const double v_b16 = best_seconds(t, src, b16.data(), elems, isa, reps);
                emit_vs("dequant", "to_f32", elems / v_f32 / 1e9, "Gelem/s", "scalar", elems / s_f32 / 1e9, extra);
                emit_vs("dequant", "to_bf16", elems / v_b16 / 1e9, "Gelem/s", "scalar", elems / s_b16 / 1e9, extra);
                if (n == large)  // memory bound: quantised bytes read + bf16 bytes written per second
                    emit_vs("dequant", "to_bf16_bytes_moved", (src.size() + 2.0 * elems) / v_b16 / 1e9, "GB/s",
                            "stream_read_1t", stream / 1e9, extra);
            }
        }
    }
    return 0;
}
