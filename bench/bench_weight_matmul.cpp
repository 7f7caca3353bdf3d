// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// bench_weight_matmul: the weight matmul kernels (src/kernels/weight_matmul.hpp)
// on the real model's weights (SmolLM2-135M-Instruct Q4_1, Q8_0 tied head).
//
// Decode (M = 1, 4, 8): one pass over every linear layer of the 30 blocks plus the
// 49152 x 576 head, as a decode step reads them (~100 MB, larger than the LLC):
// bytes of W per second vs the STREAM read of the same run (goal >= 0.8). Also
// per shape with the matrix cache-resident (repeated), for the compute ceiling.
// Prefill (M = 512, 2048): effective GOP/s (2*M*N*K per second) per shape vs
// oneDNN's f32 and bf16 GEMM of the same shape measured here, and the whole
// stack of linear layers as tokens/s. 1 and 2 threads.
//
// Q5_0, Q4_K, Q5_K, Q6_K (the K-quant model, Qwen2.5-Coder-0.5B Q4_K_M by default):
// per type, a decode pass (M = 1) over all of the model's 2-D tensors of that type,
// repacked as separate copies until the pass reads >= 96 MiB (Q5_K: random blocks of
// the model's ffn_down shape), as bytes
// of W per second vs the STREAM read; the type's largest layer shape at M = 1 in cache
// (the compute ceiling of that read), and at M = 512 vs oneDNN's f32 and bf16 GEMM of that shape.
//
// Usage: bench_weight_matmul [--quick] [--kquant-only] [--kquant FILE] [model.gguf]
#include "baselines.hpp"
#include "kernels/weight_matmul.hpp"
#include "model/gguf/gguf.hpp"

#include <array>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

using namespace kvrt;
using namespace kvrt::bench;

namespace {

std::string default_model() {
    if (const char* p = std::getenv("KVRT_MODEL"); p && *p) return p;
    const char* h = std::getenv("HOME");
    return std::string(h && *h ? h : "/root") + "/.cache/kvrt/models/SmolLM2-135M-Instruct.Q4_1.gguf";
}

struct Layer {
    std::string name;
    PackedWeight w;
};

// Best time of `reps` runs of f (each run repeated until min_seconds of wall time have
// passed), each call timed by run_seconds (the busiest thread's CPU time of a team of
// `threads`, so that a shared machine's other work does not count).
template <class F>
double best_seconds(int threads, F&& f, int reps, double min_seconds) {
    double best = 1e30;
    f();  // warm-up
    for (int r = 0; r < reps; r++) {
        int iters = 0;
        double spent = 0;
        const double t0 = now_seconds();
        do {
            spent += run_seconds(threads, f);
            iters++;
        } while (now_seconds() - t0 < min_seconds);
        best = std::min(best, spent / iters);
    }
    return best;
}

std::string kquant_model() {
    const char* h = std::getenv("HOME");
    return std::string(h && *h ? h : "/root") + "/.cache/kvrt/models/qwen2.5-coder-0.5b-instruct-Q4_K_M.gguf";
}

// Random Q5_K rows (codes and 6-bit scales random, d and dmin ~2^-9).
std::vector<uint8_t> random_q5k(int64_t n, int64_t k) {
    std::vector<uint8_t> v(static_cast<size_t>(n * k / 256) * sizeof(BlockQ5_K));
    std::mt19937 rng(3);
    for (auto& b : v) b = static_cast<uint8_t>(rng());
    const uint16_t d = 0x1800;  // 2^-9
    for (size_t o = 0; o < v.size(); o += sizeof(BlockQ5_K)) {
        std::memcpy(&v[o], &d, 2);
        std::memcpy(&v[o + 2], &d, 2);
    }
    return v;
}

std::string shape_extra(int threads, int64_t M, int64_t N, int64_t K, const PackedWeight& w) {
    return "\"threads\":" + std::to_string(threads) + ",\"M\":" + std::to_string(M) + ",\"N\":" + std::to_string(N) +
           ",\"K\":" + std::to_string(K) + ",\"type\":\"" + tensor_type_name(w.type()) + "\",\"isa\":\"" +
           kernel_isa_name(kernel_isa_detected()) + "\"";
}

// The Q5_0 / K-quant section (see the top of the file).
void bench_kquants(const std::string& path, bool quick, int reps, double min_s) {
    if (!std::filesystem::exists(path)) {
        std::fprintf(stderr, "bench_weight_matmul: %s is missing: Q5_0 / K-quant section skipped\n", path.c_str());
        return;
    }
    GgufFile f = GgufFile::open(path);
    struct Set {
        TensorType type;
        std::vector<PackedWeight> ws;
        size_t bytes = 0;
        std::vector<uint8_t> synth;  // Q5_K's random blocks
    };
    std::vector<Set> sets;
    const size_t kMinBytes = size_t{96} << 20;  // beyond the LLC (32 MiB on the development machine)
    for (TensorType t : {TensorType::Q5_0, TensorType::Q4_K, TensorType::Q6_K}) {
        Set s;
        s.type = t;
        std::vector<const GgufTensor*> src;
        for (const GgufTensor& g : f.tensors())
            if (g.type == t && g.n_dims == 2) src.push_back(&g);
        // The type's tensors once, then packed again (separate copies) until the pass
        // outgrows the LLC, as a decode step's weights do.
        for (size_t i = 0; !src.empty() && (i < src.size() || s.bytes < kMinBytes); i++) {
            const GgufTensor& g = *src[i % src.size()];
            s.ws.emplace_back(t, g.data, static_cast<int64_t>(g.n_rows()), static_cast<int64_t>(g.row_elems()));
            s.bytes += s.ws.back().bytes();
        }
        if (!s.ws.empty()) sets.push_back(std::move(s));
    }
    {
        const GgufTensor& down = f.require_tensor("blk.0.ffn_down.weight");  // [4864 -> 896] in Qwen2.5-0.5B
        const int64_t k = static_cast<int64_t>(down.row_elems()) / 256 * 256, n = static_cast<int64_t>(down.n_rows());
        Set s;
        s.type = TensorType::Q5_K;
        s.synth = random_q5k(n, k);
        while (s.bytes < kMinBytes) {
            s.ws.emplace_back(TensorType::Q5_K, s.synth.data(), n, k);
            s.bytes += s.ws.back().bytes();
        }
        sets.push_back(std::move(s));
    }
    int64_t max_n = 0, max_k = 0;
    for (auto& s : sets)
        for (auto& w : s.ws) max_n = std::max(max_n, w.rows()), max_k = std::max(max_k, w.cols());
    std::mt19937 rng(2);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    const int64_t M512 = 512;
    std::vector<float> X(static_cast<size_t>(M512 * max_k));
    for (auto& x : X) x = nd(rng);
    std::vector<float> Y(static_cast<size_t>(M512 * max_n));
    const int max_t = std::max(1, omp_get_max_threads());
    for (int threads = 1; threads <= max_t; threads++) {
        for (auto& s : sets) {
            // decode: every tensor of the type once (beyond the LLC), STREAM alternately
            double t = 1e30, s_best = 0;
            for (int r = 0; r < 2 * reps; r++) {
                s_best = std::max(s_best, stream_read(threads, 0, 1));
                t = std::min(t, best_seconds(threads,
                                    [&] {
                                        for (auto& w : s.ws)
                                            matmul(w, X.data(), 1, w.cols(), Y.data(), w.rows(), threads);
                                    },
                                    1, min_s));
            }
            emit_vs("weight_matmul", "decode_type_weight_bandwidth", s.bytes / t / 1e9, "GB/s", "stream_read",
                    s_best / 1e9,
                    "\"threads\":" + std::to_string(threads) + ",\"M\":1,\"type\":\"" + tensor_type_name(s.type) +
                        "\",\"matmuls\":" + std::to_string(s.ws.size()) + ",\"weight_mib\":" +
                        std::to_string(s.bytes >> 20) + ",\"synthetic\":" + (s.synth.empty() ? "false" : "true") +
                        ",\"isa\":\"" + kernel_isa_name(kernel_isa_detected()) + "\"");
            // prefill: the type's largest shape vs oneDNN
            // (an embedding table, > 8192 rows, is no layer shape: Qwen2.5's Q5_0 set starts with one)
            const PackedWeight* big = nullptr;
            for (auto& w : s.ws)
                if (w.rows() <= 8192 && (!big || w.rows() * w.cols() > big->rows() * big->cols())) big = &w;
            if (!big) continue;  // only an embedding table
            const int64_t N = big->rows(), K = big->cols();
            // decode's compute ceiling: the same shape at M = 1 with its weights in cache (a few MB:
            // the LLC), beside the same STREAM read; where it is not well above 1, the GEMV cannot
            // read memory at that rate (the AVX2 path on a core with much bandwidth of its own)
            const double tg = best_seconds(threads, [&] { matmul(*big, X.data(), 1, K, Y.data(), N, threads); }, reps, min_s);
            emit_vs("weight_matmul", "decode_gemv_weight_bandwidth", big->bytes() / tg / 1e9, "GB/s", "stream_read",
                    s_best / 1e9, shape_extra(threads, 1, N, K, *big));
            const double tp = best_seconds(threads, [&] { matmul(*big, X.data(), M512, K, Y.data(), N, threads); }, reps, min_s);
            const double gops = 2.0 * M512 * N * K / tp / 1e9;
            const std::string extra = shape_extra(threads, M512, N, K, *big);
            emit_vs("weight_matmul", "prefill_gops", gops, "GOP/s", "onednn_gemm_f32",
                    gemm(GemmType::F32, M512, N, K, threads, min_s, reps), extra);
            if (kernel_isa_detected() == KernelIsa::Amx) {  // the tiles against the VNNI kernel they replace
                const double tv = best_seconds(
                    threads, [&] { matmul(*big, X.data(), M512, K, Y.data(), N, threads, KernelIsa::Avx512); }, reps, min_s);
                emit_vs("weight_matmul", "prefill_gops", gops, "GOP/s", "avx512_vnni_kernel", 2.0 * M512 * N * K / tv / 1e9,
                        extra);
            }
            if (!quick)
                emit_vs("weight_matmul", "prefill_gops", gops, "GOP/s", "onednn_gemm_bf16",
                        gemm(GemmType::BF16, M512, N, K, threads, min_s, reps), extra);
        }
    }
}

}  // namespace

int run(int argc, char** argv) {
    bool quick = false, kquant_only = false;
    std::string path = default_model(), kpath = kquant_model();
    for (int i = 1; i < argc; i++) {
        if (std::strcmp(argv[i], "--quick") == 0) quick = true;
        else if (std::strcmp(argv[i], "--kquant-only") == 0) kquant_only = true;
        else if (std::strcmp(argv[i], "--kquant") == 0 && i + 1 < argc) kpath = argv[++i];
        else if (argv[i][0] != '-') path = argv[i];
        else {
            std::fprintf(stderr, "usage: bench_weight_matmul [--quick] [--kquant-only] [--kquant FILE] [model.gguf]\n");
            return 2;
        }
    }
    const int reps = quick ? 2 : 5;
    const double min_s = quick ? 0.05 : 0.2;
    bench_kquants(kpath, quick, reps, min_s);
    if (kquant_only) return 0;

    GgufFile f = GgufFile::open(path);
    std::vector<Layer> layers;  // in decode order
    size_t linear_bytes = 0;
    for (int b = 0;; b++) {
        const std::string p = "blk." + std::to_string(b) + ".";
        if (!f.find_tensor(p + "attn_q.weight")) break;
        for (const char* n : {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"}) {
            const GgufTensor& t = f.require_tensor(p + n + ".weight");
            layers.push_back({p + n, PackedWeight(t.type, t.data, static_cast<int64_t>(t.n_rows()),
                                                  static_cast<int64_t>(t.row_elems()))});
            linear_bytes += layers.back().w.bytes();
        }
    }
    // The same weights stacked as a runtime may load them: QKV and gate+up as one matrix each.
    std::vector<Layer> stacked;
    for (int b = 0;; b++) {
        const std::string p = "blk." + std::to_string(b) + ".";
        if (!f.find_tensor(p + "attn_q.weight")) break;
        auto part = [&](const char* n) {
            const GgufTensor& t = f.require_tensor(p + n + ".weight");
            return WeightRows{t.data, static_cast<int64_t>(t.n_rows())};
        };
        auto type_k = [&](const char* n) {
            const GgufTensor& t = f.require_tensor(p + n + ".weight");
            return std::make_pair(t.type, static_cast<int64_t>(t.row_elems()));
        };
        const WeightRows qkv[] = {part("attn_q"), part("attn_k"), part("attn_v")};
        const WeightRows gu[] = {part("ffn_gate"), part("ffn_up")};
        stacked.push_back({p + "qkv", PackedWeight(type_k("attn_q").first, qkv, type_k("attn_q").second)});
        stacked.push_back({p + "attn_output", PackedWeight(type_k("attn_output").first,
                                                           std::span<const WeightRows>(std::array{part("attn_output")}),
                                                           type_k("attn_output").second)});
        stacked.push_back({p + "gate_up", PackedWeight(type_k("ffn_gate").first, gu, type_k("ffn_gate").second)});
        stacked.push_back({p + "ffn_down", PackedWeight(type_k("ffn_down").first,
                                                        std::span<const WeightRows>(std::array{part("ffn_down")}),
                                                        type_k("ffn_down").second)});
    }
    const GgufTensor* ht = f.find_tensor("output.weight");
    if (!ht) ht = &f.require_tensor("token_embd.weight");
    PackedWeight head(ht->type, ht->data, static_cast<int64_t>(ht->n_rows()), static_cast<int64_t>(ht->row_elems()));
    const int64_t D = head.cols(), V = head.rows();
    int64_t max_n = 0, max_k = D;  // over the linear layers (prefill does not run the head)
    for (auto* set : {&layers, &stacked})
        for (auto& l : *set) max_n = std::max(max_n, l.w.rows()), max_k = std::max(max_k, l.w.cols());

    std::mt19937 rng(1);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    const int64_t max_m = 2048;
    std::vector<float> X(static_cast<size_t>(max_m * max_k));
    for (auto& x : X) x = nd(rng);
    // decode writes up to 8 x V (the head), prefill max_m x max_n
    std::vector<float> Y(std::max<size_t>(8 * static_cast<size_t>(V), static_cast<size_t>(max_m * max_n)));

    const int max_t = std::max(1, omp_get_max_threads());
    for (int threads = 1; threads <= max_t; threads++) {
        const double stream = stream_read(threads, 0, reps);
        emit("weight_matmul", "stream_read", stream / 1e9, "GB/s", "\"threads\":" + std::to_string(threads));

        // ---- decode: a whole step's weights, larger than the LLC. The machine may be
        // shared: STREAM and the step are measured alternately, best of each.
        for (int64_t M : {1, 4, 8})
            for (const std::vector<Layer>* set : {&layers, &stacked}) {
            const size_t bytes = linear_bytes + head.bytes();
            double t = 1e30, s_best = 0;
            for (int r = 0; r < 2 * reps; r++) {
                s_best = std::max(s_best, stream_read(threads, 0, 1));
                t = std::min(t, best_seconds(threads,
                                    [&] {
                                        for (auto& l : *set)
                                            matmul(l.w, X.data(), M, l.w.cols(), Y.data(), l.w.rows(), threads);
                                        matmul(head, X.data(), M, D, Y.data(), V, threads);
                                    },
                                    1, min_s));
            }
            emit_vs("weight_matmul", "decode_step_weight_bandwidth", bytes / t / 1e9, "GB/s", "stream_read",
                    s_best / 1e9,
                    "\"threads\":" + std::to_string(threads) + ",\"M\":" + std::to_string(M) + ",\"matmuls\":" +
                        std::to_string(set->size() + 1) + ",\"weight_mib\":" + std::to_string(bytes >> 20) +
                        ",\"step_ms\":" + std::to_string(t * 1e3) + ",\"isa\":\"" +
                        kernel_isa_name(kernel_isa_detected()) + "\"");
        }
        // ---- decode per shape, cache-resident (the head is 30 MB: LLC-sized)
        const PackedWeight* shapes[] = {&layers[0].w, &layers[1].w, &layers[4].w, &layers[6].w, &head};
        for (const PackedWeight* w : shapes) {
            const double t = best_seconds(threads, [&] { matmul(*w, X.data(), 1, w->cols(), Y.data(), w->rows(), threads); },
                                          reps, min_s);
            emit_vs("weight_matmul", "decode_gemv_weight_bandwidth", w->bytes() / t / 1e9, "GB/s", "stream_read",
                    stream / 1e9, shape_extra(threads, 1, w->rows(), w->cols(), *w) + ",\"us\":" + std::to_string(t * 1e6));
        }

        // ---- prefill per shape vs oneDNN GEMM of the same shape
        for (int64_t M : {512, 2048}) {
            if (quick && M > 512) continue;
            for (const PackedWeight* w : {&layers[0].w, &layers[1].w, &layers[4].w, &layers[6].w}) {
                const int64_t N = w->rows(), K = w->cols();
                const double t = best_seconds(threads, [&] { matmul(*w, X.data(), M, K, Y.data(), N, threads); }, reps, min_s);
                const double gops = 2.0 * M * N * K / t / 1e9;
                const std::string extra = shape_extra(threads, M, N, K, *w);
                emit_vs("weight_matmul", "prefill_gops", gops, "GOP/s", "onednn_gemm_f32",
                        gemm(GemmType::F32, M, N, K, threads, min_s, reps), extra);
                emit_vs("weight_matmul", "prefill_gops", gops, "GOP/s", "onednn_gemm_bf16",
                        gemm(GemmType::BF16, M, N, K, threads, min_s, reps), extra);
            }
            // every linear layer of the model for M tokens (the head excluded: prefill
            // needs logits of the last position only)
            for (const std::vector<Layer>* set : {&layers, &stacked}) {
                const double t = best_seconds(threads,
                    [&] {
                        for (auto& l : *set) matmul(l.w, X.data(), M, l.w.cols(), Y.data(), l.w.rows(), threads);
                    },
                    1, min_s);
                emit("weight_matmul", "prefill_linear_tokens_per_s", M / t, "tokens/s",
                     "\"threads\":" + std::to_string(threads) + ",\"M\":" + std::to_string(M) + ",\"matmuls\":" +
                         std::to_string(set->size()) + ",\"isa\":\"" + kernel_isa_name(kernel_isa_detected()) + "\"");
            }
        }
    }
    return 0;
}

int main(int argc, char** argv) {
    use_passive_omp_wait(argv);
    try {
        return run(argc, argv);
    } catch (const std::exception& e) {  // a missing or unreadable model file
        std::fprintf(stderr, "bench_weight_matmul: %s\n", e.what());
        return 1;
    }
}
