// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// bench_ced_fp4_agree: what 4-bit banks (bank rows and indexer keys in FP4, util/kv_quant.hpp)
// cost in accuracy on a CED preset, against f16 banks in the same run (windows f16 in both).
// A prompt of --prompt N random tokens (default 512) is prefilled (exact mode) by both; then
// --steps S (default 100) greedy steps are teacher-forced with the f16 run's own greedy tokens,
// so both see the same history: per step, whether the FP4 run's argmax is the f16 run's (top-1
// agreement), KL(f16 || fp4) of the softmaxes, and the largest logit difference. A free-running
// FP4 continuation is also decoded and its first divergence from the f16 one reported.
//   bench_ced_fp4_agree [--preset base|tiny] [--prompt N] [--steps S] [--model FILE.gguf]
#include "bench_json.hpp"
#include "model/arch/ced_generator.hpp"
#include "model/arch/ced_runtime.hpp"
#include "model/gguf/gguf.hpp"
#include "model/gguf/gguf_writer.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

using namespace kvrt;
using namespace kvrt::ced;
using kvrt::bench::emit;

namespace {

int32_t argmax(const std::vector<float>& v) {
    return int32_t(std::max_element(v.begin(), v.end()) - v.begin());
}

// KL(p || q) of the softmaxes of logits a (p) and b (q), in nats.
double kl(const std::vector<float>& a, const std::vector<float>& b) {
    const double ma = *std::max_element(a.begin(), a.end()), mb = *std::max_element(b.begin(), b.end());
    double za = 0, zb = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        za += std::exp(double(a[i]) - ma);
        zb += std::exp(double(b[i]) - mb);
    }
    double k = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        const double la = double(a[i]) - ma - std::log(za), lb = double(b[i]) - mb - std::log(zb);
        k += std::exp(la) * (la - lb);
    }
    return k;
}

}  // namespace

int main(int argc, char** argv) {
    std::string preset_name = "base", path;
    int64_t n_prompt = 512;
    int steps = 100;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (std::strcmp(argv[i], "--preset") == 0) preset_name = argv[i + 1];
        else if (std::strcmp(argv[i], "--prompt") == 0) n_prompt = std::atoll(argv[i + 1]);
        else if (std::strcmp(argv[i], "--steps") == 0) steps = std::atoi(argv[i + 1]);
        else if (std::strcmp(argv[i], "--model") == 0) path = argv[i + 1];
    }
    std::vector<uint8_t> bytes;
    std::unique_ptr<GgufFile> file;
    if (!path.empty()) {
        file = std::make_unique<GgufFile>(GgufFile::open(path));
    } else {  // the preset with random Q8_0 weights, as bench_ced builds it
        GgufWriter wr;
        GeneratorOptions o;
        o.cfg = preset(preset_name);
        o.seed = 1;
        o.weight_type = TensorType::Q8_0;
        fill_random_gguf(wr, o);
        bytes = wr.to_bytes();
        file = std::make_unique<GgufFile>(GgufFile::from_buffer(bytes.data(), bytes.size(), preset_name));
    }
    const std::shared_ptr<const CedWeights> w = CedWeights::load(*file);
    auto opts = [](DType bank) {
        CedRuntimeOptions o;
        o.cache_dtype = DType::F16;
        o.bank_dtype = bank;
        o.block_tokens = 16;
        o.chunk = 512;
        o.bank_budget_bytes = 1ull << 30;
        o.window_budget_bytes = 512ull << 20;
        return o;
    };
    std::mt19937 rng(5);
    std::vector<int32_t> prompt(n_prompt);
    for (auto& x : prompt) x = int32_t(rng() % uint32_t(w->cfg.n_vocab));

    CedRuntime f16(w, opts(DType::F16)), fp4(w, opts(DType::FP4)), free4(w, opts(DType::FP4));
    auto s16 = f16.create(), s4 = fp4.create(), sf = free4.create();
    std::vector<float> l16 = f16.prefill(s16, prompt.data(), n_prompt, PrefillMode::Exact).logits;
    std::vector<float> l4 = fp4.prefill(s4, prompt.data(), n_prompt, PrefillMode::Exact).logits;
    std::vector<float> lf = free4.prefill(sf, prompt.data(), n_prompt, PrefillMode::Exact).logits;
    int agree = 0, diverged_at = -1;
    double kl_sum = 0, kl_max = 0, dmax = 0;
    for (int t = 0; t < steps; ++t) {
        const int32_t g16 = argmax(l16), g4 = argmax(l4), gf = argmax(lf);
        agree += g16 == g4;
        const double k = kl(l16, l4);
        kl_sum += k;
        kl_max = std::max(kl_max, k);
        for (size_t i = 0; i < l16.size(); ++i) dmax = std::max(dmax, std::fabs(double(l16[i]) - double(l4[i])));
        if (diverged_at < 0 && gf != g16) diverged_at = t;
        l16 = f16.decode(s16, g16);
        l4 = fp4.decode(s4, g16);  // teacher-forced: the f16 run's token
        lf = free4.decode(sf, gf);  // its own greedy token
    }
    const std::string extra = "\"preset\":\"" + (path.empty() ? preset_name : path) + "\",\"prompt\":" +
                              std::to_string(n_prompt) + ",\"steps\":" + std::to_string(steps) +
                              ",\"bank_bytes_per_token_fp4\":" +
                              std::to_string(fp4.bank_cache().stats().bytes_per_token) +
                              ",\"bank_bytes_per_token_f16\":" + std::to_string(f16.bank_cache().stats().bytes_per_token);
    emit("ced_fp4", "top1_agreement_teacher_forced", double(agree) / steps, "fraction", extra);
    emit("ced_fp4", "mean_kl_f16_fp4", kl_sum / steps, "nats", extra);
    emit("ced_fp4", "max_kl_f16_fp4", kl_max, "nats", extra);
    emit("ced_fp4", "max_abs_logit_diff", dmax, "logit", extra);
    emit("ced_fp4", "free_running_first_divergence", diverged_at < 0 ? double(steps) : double(diverged_at), "step",
         extra + ",\"note\":\"" + (diverged_at < 0 ? "never diverged" : "first step whose greedy token differs") + "\"");
    return 0;
}
