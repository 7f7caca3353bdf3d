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
// Usage: bench_weight_matmul [--quick] [model.gguf]
#include "baselines.hpp"
#include "kernels/weight_matmul.hpp"
#include "model/gguf/gguf.hpp"

#include <array>
#include <cstring>
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

// Best time of `reps` runs of f (each run repeated until min_seconds have passed).
template <class F>
double best_seconds(F&& f, int reps, double min_seconds) {
    double best = 1e30;
    f();  // warm-up
    for (int r = 0; r < reps; r++) {
        int iters = 0;
        const double t0 = now_seconds();
        double t1 = t0;
        do {
            f();
            iters++;
            t1 = now_seconds();
        } while (t1 - t0 < min_seconds);
        best = std::min(best, (t1 - t0) / iters);
    }
    return best;
}

std::string shape_extra(int threads, int64_t M, int64_t N, int64_t K, const PackedWeight& w) {
    return "\"threads\":" + std::to_string(threads) + ",\"M\":" + std::to_string(M) + ",\"N\":" + std::to_string(N) +
           ",\"K\":" + std::to_string(K) + ",\"type\":\"" + tensor_type_name(w.type()) + "\",\"isa\":\"" +
           kernel_isa_name(kernel_isa_detected()) + "\"";
}

}  // namespace

int main(int argc, char** argv) {
    bool quick = false;
    std::string path = default_model();
    for (int i = 1; i < argc; i++) {
        if (std::strcmp(argv[i], "--quick") == 0) quick = true;
        else path = argv[i];
    }
    const int reps = quick ? 2 : 5;
    const double min_s = quick ? 0.05 : 0.2;

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
                t = std::min(t, best_seconds(
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
            const double t = best_seconds([&] { matmul(*w, X.data(), 1, w->cols(), Y.data(), w->rows(), threads); },
                                          reps, min_s);
            emit_vs("weight_matmul", "decode_gemv_weight_bandwidth", w->bytes() / t / 1e9, "GB/s", "stream_read",
                    stream / 1e9, shape_extra(threads, 1, w->rows(), w->cols(), *w) + ",\"us\":" + std::to_string(t * 1e6));
        }

        // ---- prefill per shape vs oneDNN GEMM of the same shape
        for (int64_t M : {512, 2048}) {
            if (quick && M > 512) continue;
            for (const PackedWeight* w : {&layers[0].w, &layers[1].w, &layers[4].w, &layers[6].w}) {
                const int64_t N = w->rows(), K = w->cols();
                const double t = best_seconds([&] { matmul(*w, X.data(), M, K, Y.data(), N, threads); }, reps, min_s);
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
                const double t = best_seconds(
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
