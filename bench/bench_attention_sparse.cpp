// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// bench_attention_sparse: the CED pieces, each against a baseline from the same run.
//   - sparse K=V attention (64 heads of 512, bf16 bank): 2,048 selected rows out of 1,048,576
//     vs the same 2,048 out of 8,192. Goal (issue 3): ratio <= 1.5.
//   - sliding-window decode (9/3 heads of 64, bf16, W = 512): total length 131,072 vs 8,192.
//     Goal: cost independent of the total length (ratio ~ 1).
//   - indexer scores (32 heads of 128, bf16 keys) over 131,072 keys vs oneDNN f32 GEMM of the
//     same shape (keys x 128 x 32) over a contiguous copy, and vs oneDNN bf16 GEMM of that shape (the
//     limit where the indexer uses bf16 dot products); top-k 512 and block-max 2,048 timed.
//   - the CED decode scan: indexer scores (4 heads of 64, bf16 keys, 16-token blocks in random
//     order) over 1,048,576 keys (2,097,152 without --quick): key bytes per second vs STREAM read.
//   - 4-bit banks (util/kv_quant.hpp) beside f16 ones, interleaved in the same run: sparse K=V
//     attention (64 heads of 512, 2,048 of 1,048,576 rows; 262,144 with --quick) and the decode
//     indexer scan over 1,048,576 keys in scattered 16-token blocks (the base preset's 4 heads of
//     64, and the public model's 32 heads of 128): time ratio fp4 / f16 and bytes read per second
//     vs the STREAM read of the same run.
//   bench_attention_sparse [--quick] [--fp4-only] [--scan-only] [--scan-block N] [--scan-keys N]
//     --scan-only: of --fp4-only's measurements only the indexer scans (for profiles)
//     --scan-block N: positions per cache block of the 4-bit / f16 indexer scans (default 16, the
//       cache's default; a 16-token block of 4-bit 64-wide keys is a 544-byte run)
//     --scan-keys N: keys of those scans (default 1,048,576); e.g. 16,384 keeps them in the L2,
//       which separates the scan's compute from its memory stream
#include "baselines.hpp"
#include "bench_kv_fixture.hpp"
#include "kernels/attention.hpp"
#include "kernels/indexer.hpp"
#include "util/isa.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <string>

using namespace kvrt;
using namespace kvrt::bench;

namespace {
std::vector<int32_t> pick_sorted(int32_t n_bank, int32_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<int32_t> rows;
    rows.reserve(n);
    std::vector<uint8_t> taken(n_bank, 0);
    std::uniform_int_distribution<int32_t> u(0, n_bank - 1);
    while (int32_t(rows.size()) < n) {
        int32_t r = u(rng);
        if (!taken[r]) {
            taken[r] = 1;
            rows.push_back(r);
        }
    }
    std::sort(rows.begin(), rows.end());
    return rows;
}

// 4-bit banks and indexer keys beside f16 ones (see the top of this file).
void bench_fp4(bool quick, int max_t, double min_s, int32_t scan_block, int32_t scan_keys, bool scan_only) {
    if (!scan_only) {
        const int D = 512, H = 64, k = 2048;
        const int32_t big = quick ? 262144 : 1048576;
        BenchKV b16(big, 1, D, DType::F16, 16, /*kv_shared=*/true, 21);
        BenchKV b4(big, 1, D, DType::FP4, 16, true, 22);
        AttnParams p;
        p.n_heads = H;
        p.head_dim = D;
        p.scale = 1.0f / std::sqrt(float(D));
        std::vector<float> sinks(H, 0.5f), q(size_t(H) * D, 0.01f), out(q.size()), lse(H);
        p.sinks = sinks.data();
        auto rows = pick_sorted(big, k, 23);
        SparseQuery sq{q.data(), rows.data(), k, out.data(), lse.data()};
        for (int t = 1; t <= max_t; ++t) {
            omp_set_num_threads(t);
            double t16 = 1e30, t4 = 1e30;
            for (int r = 0; r < 3; ++r) {
                t16 = std::min(t16, time_best([&] { cpu::attention_sparse(b16.kv, p, &sq, 1); }, min_s / 3));
                t4 = std::min(t4, time_best([&] { cpu::attention_sparse(b4.kv, p, &sq, 1); }, min_s / 3));
            }
            const double sr = stream_read(t);
            char extra[240];
            std::snprintf(extra, sizeof extra,
                          "\"heads\":%d,\"dim\":%d,\"selected\":%d,\"bank_rows\":%d,\"threads\":%d,\"isa\":\"%s\","
                          "\"fp4_row_bytes\":%zu,\"f16_row_bytes\":%zu",
                          H, D, k, big, t, isa_name(isa_active()), b4.kv.row_bytes, b16.kv.row_bytes);
            emit_vs("attention_sparse_fp4", "fp4_time_us", t4 * 1e6, "us", "f16_time_us", t16 * 1e6, extra);
            emit_vs("attention_sparse_fp4", "fp4_row_bytes_per_s", double(k) * b4.kv.row_bytes / t4 / 1e9, "GB/s",
                    "stream_read", sr / 1e9, extra);
            emit_vs("attention_sparse_fp4", "f16_row_bytes_per_s", double(k) * b16.kv.row_bytes / t16 / 1e9, "GB/s",
                    "stream_read", sr / 1e9, extra);
        }
    }
    for (const auto [Hs, Ds] : {std::pair<int, int>{4, 64}, std::pair<int, int>{32, 128}}) {
        const int32_t ns = scan_keys;
        BenchKV k16(ns, 1, Ds, DType::F16, scan_block, true, 24);
        BenchKV k4(ns, 1, Ds, DType::FP4_E8, scan_block, true, 25);
        std::vector<float> qs(size_t(Hs) * Ds, 0.01f), ws(Hs, 0.1f), ss(ns);
        IndexerQuery iq{qs.data(), ws.data(), Hs};
        for (int t = 1; t <= max_t; ++t) {
            omp_set_num_threads(t);
            double t16 = 1e30, t4 = 1e30;
            for (int r = 0; r < 3; ++r) {
                t16 = std::min(t16, time_best([&] { cpu::indexer_scores(k16.kv, iq, ns, ss.data()); }, min_s / 3));
                t4 = std::min(t4, time_best([&] { cpu::indexer_scores(k4.kv, iq, ns, ss.data()); }, min_s / 3));
            }
            const double sr = stream_read(t);
            const std::string extra = "\"heads\":" + std::to_string(Hs) + ",\"dim\":" + std::to_string(Ds) +
                                      ",\"keys\":" + std::to_string(ns) + ",\"block_tokens\":" +
                                      std::to_string(scan_block) + ",\"threads\":" + std::to_string(t) +
                                      ",\"isa\":\"" + isa_name(isa_active()) + "\",\"fp4_us\":" + std::to_string(t4 * 1e6) +
                                      ",\"fp4_key_bytes\":" + std::to_string(k4.kv.row_bytes) +
                                      ",\"f16_key_bytes\":" + std::to_string(k16.kv.row_bytes);
            emit_vs("indexer_fp4", "scan_fp4_time_us", t4 * 1e6, "us", "scan_f16_time_us", t16 * 1e6, extra);
            emit_vs("indexer_fp4", "fp4_scan_key_bytes_per_s", double(k4.payload_bytes) / t4 / 1e9, "GB/s",
                    "stream_read", sr / 1e9, extra);
            emit_vs("indexer_fp4", "f16_scan_key_bytes_per_s", double(k16.payload_bytes) / t16 / 1e9, "GB/s",
                    "stream_read", sr / 1e9, extra);
        }
    }
}
}  // namespace

int main(int argc, char** argv) {
    use_passive_omp_wait(argv);
    bool quick = false, fp4_only = false, scan_only = false;
    int32_t scan_block = 16, scan_keys = 1 << 20;
    for (int i = 1; i < argc; ++i) {
        quick = quick || std::strcmp(argv[i], "--quick") == 0;
        fp4_only = fp4_only || std::strcmp(argv[i], "--fp4-only") == 0;
        scan_only = scan_only || std::strcmp(argv[i], "--scan-only") == 0;
        if (std::strcmp(argv[i], "--scan-block") == 0 && i + 1 < argc) scan_block = std::max(1, std::atoi(argv[++i]));
        if (std::strcmp(argv[i], "--scan-keys") == 0 && i + 1 < argc) scan_keys = std::max(64, std::atoi(argv[++i]));
    }
    const int max_t = std::min(2, std::max(1, omp_get_max_threads()));
    const double min_s = quick ? 0.05 : 0.3;
    if (fp4_only || scan_only) {
        bench_fp4(quick, max_t, min_s, scan_block, scan_keys, scan_only);
        return 0;
    }

    // ---- sparse K=V attention ----
    {
        const int D = 512, H = 64, k = 2048;
        const int32_t big = quick ? 262144 : 1048576, small = 8192;
        BenchKV bank_big(big, 1, D, DType::BF16, 64, /*kv_shared=*/true, 3);
        BenchKV bank_small(small, 1, D, DType::BF16, 64, true, 4);
        AttnParams p;
        p.n_heads = H;
        p.head_dim = D;
        p.scale = 1.0f / std::sqrt(float(D));
        std::vector<float> sinks(H, 0.5f), q(size_t(H) * D, 0.01f), out(q.size()), lse(H);
        p.sinks = sinks.data();
        auto rows_big = pick_sorted(big, k, 5), rows_small = pick_sorted(small, k, 6);
        for (int t = 1; t <= max_t; ++t) {
            omp_set_num_threads(t);
            SparseQuery sb{q.data(), rows_big.data(), k, out.data(), lse.data()};
            SparseQuery ss{q.data(), rows_small.data(), k, out.data(), lse.data()};
            // Interleave the two measurements so machine noise hits both alike.
            double tb = 1e30, ts = 1e30;
            for (int r = 0; r < 3; ++r) {
                tb = std::min(tb, time_best([&] { cpu::attention_sparse(bank_big.kv, p, &sb, 1); }, min_s / 3));
                ts = std::min(ts, time_best([&] { cpu::attention_sparse(bank_small.kv, p, &ss, 1); }, min_s / 3));
            }
            char extra[200];
            std::snprintf(extra, sizeof extra,
                          "\"heads\":%d,\"dim\":%d,\"bank\":\"bf16\",\"selected\":%d,\"bank_rows\":%d,\"threads\":%d,"
                          "\"isa\":\"%s\"",
                          H, D, k, big, t, isa_name(isa_active()));
            emit_vs("attention_sparse", "time_2048_of_large_bank", tb * 1e6, "us", "time_2048_of_8192", ts * 1e6,
                    extra);
            const double flops = 4.0 * H * D * k;
            emit("attention_sparse", "gflops", flops / tb / 1e9, "GFLOP/s", extra);
        }
    }

    // ---- sliding-window decode ----
    {
        const int W = 512;
        const int64_t big = quick ? 32768 : 131072, small = 8192;
        BenchKV kv_big(big, 3, 64, DType::BF16, 16, false, 7);
        BenchKV kv_small(small, 3, 64, DType::BF16, 16, false, 8);
        AttnParams p;
        p.n_heads = 9;
        p.head_dim = 64;
        p.scale = 0.125f;
        p.window = W;
        std::vector<float> q(9 * 64, 0.01f), out(q.size());
        DecodeSeq sb{&kv_big.kv, q.data(), out.data(), nullptr, int32_t(big - 1)};
        DecodeSeq ss{&kv_small.kv, q.data(), out.data(), nullptr, int32_t(small - 1)};
        for (int t = 1; t <= max_t; ++t) {
            omp_set_num_threads(t);
            double tb = 1e30, ts = 1e30;
            for (int r = 0; r < 3; ++r) {
                tb = std::min(tb, time_best([&] { cpu::attention_decode(&sb, 1, p); }, min_s / 3));
                ts = std::min(ts, time_best([&] { cpu::attention_decode(&ss, 1, p); }, min_s / 3));
            }
            emit_vs("attention_window", "decode_time_long", tb * 1e6, "us", "decode_time_8192", ts * 1e6,
                    "\"heads\":\"9/3\",\"head_dim\":64,\"kv\":\"bf16\",\"window\":" + std::to_string(W) +
                        ",\"length\":" + std::to_string(big) + ",\"threads\":" + std::to_string(t));
        }
    }

    // ---- indexer ----
    {
        const int Hi = 32, Di = 128;
        const int32_t n = quick ? 32768 : 131072;
        BenchKV keys(n, 1, Di, DType::BF16, 64, true, 9);
        std::vector<float> q(size_t(Hi) * Di, 0.01f), w(Hi, 0.1f), scores(n);
        IndexerQuery iq{q.data(), w.data(), Hi};
        const double flops = 2.0 * Hi * Di * double(n);
        for (int t = 1; t <= max_t; ++t) {
            omp_set_num_threads(t);
            double ti = time_best([&] { cpu::indexer_scores(keys.kv, iq, n, scores.data()); }, min_s);
            double g = gemm(GemmType::F32, n, Hi, Di, t, quick ? 0.03 : 0.15);
            const std::string extra = "\"heads\":32,\"dim\":128,\"keys_dtype\":\"bf16\",\"keys\":" +
                                      std::to_string(n) + ",\"threads\":" + std::to_string(t) +
                                      ",\"isa\":\"" + isa_name(isa_active()) + "\",\"us\":" + std::to_string(ti * 1e6);
            emit_vs("indexer", "scores_gflops", flops / ti / 1e9, "GFLOP/s", "onednn_gemm_f32_same_shape", g, extra);
            // Where the CPU has bf16 dot products the indexer multiplies bf16 keys by a bf16-rounded
            // query (indexer_core.inl): the bf16 GEMM of the same shape is its machine limit.
            double gb = gemm(GemmType::BF16, n, Hi, Di, t, quick ? 0.03 : 0.15);
            emit_vs("indexer", "scores_gflops", flops / ti / 1e9, "GFLOP/s", "onednn_gemm_bf16_same_shape", gb, extra);
        }
        // The CED decode scan: the base preset's indexer (4 heads of 64, bf16 keys) over a bank far
        // beyond the LLC in scattered 16-token blocks: memory-bound, so key bytes per second
        // against the STREAM read.
        {
            const int Hs = 4, Ds = 64;
            const int32_t ns = quick ? (1 << 20) : (1 << 21);
            BenchKV bank(ns, 1, Ds, DType::BF16, 16, true, 10);
            std::vector<float> qs(size_t(Hs) * Ds, 0.01f), ws(Hs, 0.1f), ss(ns);
            IndexerQuery sq{qs.data(), ws.data(), Hs};
            for (int t = 1; t <= max_t; ++t) {
                omp_set_num_threads(t);
                double ts = time_best([&] { cpu::indexer_scores(bank.kv, sq, ns, ss.data()); }, min_s);
                emit_vs("indexer", "scan_key_bytes_per_s", double(bank.payload_bytes) / ts / 1e9, "GB/s", "stream_read",
                        stream_read(t) / 1e9,
                        "\"heads\":4,\"dim\":64,\"keys_dtype\":\"bf16\",\"keys\":" + std::to_string(ns) +
                            ",\"block_tokens\":16,\"threads\":" + std::to_string(t) + ",\"isa\":\"" +
                            isa_name(isa_active()) + "\",\"us\":" + std::to_string(ts * 1e6));
            }
        }
        for (size_t i = 0; i < scores.size(); ++i) scores[i] = float((i * 2654435761u) % 100003);
        std::vector<int32_t> sel(2048);
        double tk = time_best([&] { topk_rows(scores.data(), nullptr, n, 512, sel.data()); }, min_s);
        emit("indexer", "topk_512_time", tk * 1e6, "us", "\"keys\":" + std::to_string(n));
        double tbm = time_best([&] { block_max_candidates(scores.data(), n, 8, 2048, sel.data()); }, min_s);
        emit("indexer", "block_max_2048_time", tbm * 1e6, "us", "\"keys\":" + std::to_string(n) + ",\"block\":8");
    }
    bench_fp4(quick, max_t, min_s, scan_block, scan_keys, false);
    return 0;
}
