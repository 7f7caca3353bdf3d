// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// bench_act_bits: the speed of the activation-code settings (kvrt_context_config.act_bits:
// 8 everywhere, the default 0 = 9 = 16-bit codes for the K/V projections and 8-bit codes with
// the outlier blocks' residuals elsewhere, 16 everywhere) through the public C API, in the
// same run, on a real model: a cold prefill of 2,048 tokens (prefix caching off) and 64 greedy
// decode steps after a 512-token prompt. The settings alternate rep by rep (8, 0, 16, 8, 0,
// 16, ...), each figure is the median of its reps, and the ratios to 8 of the same run are
// what to read on a shared machine (8 is the baseline: the fastest). Builds before 0.3.3 ran
// 8, 0, 9 and 16 (0 then had no residuals): their ratio_default_to_8 against this one's,
// alternated, is the cost of the 0.3.3 default.
//
// Usage: bench_act_bits [--reps N] [--threads T] [--prefill N] [--decode-after N]
//                       [model.gguf ...]     (default: the three models of ~/.cache/kvrt/models)
// One JSON line per model and figure.
#include "kvrt/kvrt.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
}

std::string model_dir() {
    if (const char* d = std::getenv("KVRT_MODEL_DIR"); d && *d) return d;
    const char* h = std::getenv("HOME");
    return std::string(h && *h ? h : "/root") + "/.cache/kvrt/models";
}

bool ok(kvrt_status s, const char* what) {
    if (s == KVRT_OK) return true;
    std::fprintf(stderr, "bench_act_bits: %s: %s: %s\n", what, kvrt_status_string(s), kvrt_last_error());
    return false;
}

// Text tokens repeated to n (the bench's prompt: real text, no special tokens but BOS).
std::vector<int32_t> prompt_tokens(kvrt_model* m, size_t n) {
    std::string text;
    for (const char* p : {"bench/data/fidelity_text.txt", "../bench/data/fidelity_text.txt",
                          "../../bench/data/fidelity_text.txt"}) {
        std::ifstream f(p, std::ios::binary);
        if (!f) continue;
        std::ostringstream ss;
        ss << f.rdbuf();
        text = ss.str();
        break;
    }
    if (text.empty()) text = "The quick brown fox jumps over the lazy dog. ";
    std::vector<int32_t> t(text.size() + 16);
    size_t w = 0;
    if (kvrt_model_tokenize(t.data(), t.size(), &w, m, text.data(), text.size(), 0) != KVRT_OK) return {};
    t.resize(w);
    std::vector<int32_t> out;
    while (out.size() < n) out.insert(out.end(), t.begin(), t.end());
    out.resize(n);
    return out;
}

kvrt_context* make_context(kvrt_model* m, int32_t act_bits, int threads, uint32_t n_ctx) {
    kvrt_context_config cc;
    kvrt_context_config_init(&cc, sizeof cc);
    cc.n_ctx = n_ctx;
    cc.n_threads = threads;
    cc.prefix_caching = 0;
    cc.act_bits = act_bits;
    kvrt_context* c = nullptr;
    return ok(kvrt_context_create(&c, m, &cc), "kvrt_context_create") ? c : nullptr;
}

}  // namespace

int main(int argc, char** argv) {
    int reps = 5, threads = 2;
    size_t n_prefill = 2048, n_decode_after = 512;
    const int n_steps = 64;
    std::vector<std::string> models;
    for (int i = 1; i < argc; i++) {
        if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) reps = std::atoi(argv[++i]);
        else if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) threads = std::atoi(argv[++i]);
        else if (!std::strcmp(argv[i], "--prefill") && i + 1 < argc) n_prefill = std::strtoul(argv[++i], nullptr, 10);
        else if (!std::strcmp(argv[i], "--decode-after") && i + 1 < argc) n_decode_after = std::strtoul(argv[++i], nullptr, 10);
        else models.emplace_back(argv[i]);
    }
    if (models.empty())
        for (const char* f : {"SmolLM2-135M-Instruct.Q4_1.gguf", "gemma-3-270m-Q4_K_M.gguf",
                              "qwen2.5-coder-0.5b-instruct-Q4_K_M.gguf"})
            models.push_back(model_dir() + "/" + f);
    for (const std::string& path : models) {
        kvrt_model* m = nullptr;
        if (!ok(kvrt_model_load(&m, path.c_str(), nullptr), path.c_str())) return 1;
        const std::vector<int32_t> pre = prompt_tokens(m, n_prefill), dec = prompt_tokens(m, n_decode_after);
        if (pre.empty() || dec.empty()) return 1;
        const uint32_t n_ctx = static_cast<uint32_t>(std::max(n_prefill, n_decode_after + n_steps) + 16);
        constexpr int kSettings = 3;
        const int32_t bits[kSettings] = {8, 0, 16};
        kvrt_context* ctx[kSettings];
        for (int k = 0; k < kSettings; k++)
            if (!(ctx[k] = make_context(m, bits[k], threads, n_ctx))) return 1;
        kvrt_model_info info;
        kvrt_model_info_init(&info, sizeof info);
        kvrt_model_get_info(&info, m);
        std::vector<float> logits(static_cast<size_t>(info.n_vocab));
        std::vector<double> prefill_s[kSettings], decode_s[kSettings];
        for (int r = 0; r < reps + 1; r++) {  // rep 0 warms up
            for (int k = 0; k < kSettings; k++) {
                kvrt_context_seq_release(ctx[k], 0);
                double t0 = now();
                if (!ok(kvrt_context_prefill(nullptr, ctx[k], 0, pre.data(), pre.size()), "prefill")) return 1;
                const double tp = now() - t0;
                kvrt_context_seq_release(ctx[k], 0);
                if (!ok(kvrt_context_prefill(nullptr, ctx[k], 0, dec.data(), dec.size()), "prefill")) return 1;
                t0 = now();
                for (int s = 0; s < n_steps; s++) {
                    size_t w = 0;
                    kvrt_context_get_logits(logits.data(), logits.size(), &w, ctx[k], 0);
                    const int32_t tok = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
                    const int32_t id = 0;
                    if (!ok(kvrt_context_decode(ctx[k], &id, &tok, 1), "decode")) return 1;
                }
                const double td = now() - t0;
                if (r > 0) {
                    prefill_s[k].push_back(tp);
                    decode_s[k].push_back(td);
                }
            }
        }
        const std::string name = path.substr(path.find_last_of('/') + 1);
        double load[3] = {0, 0, 0};
        if (std::FILE* f = std::fopen("/proc/loadavg", "r")) {
            if (std::fscanf(f, "%lf %lf %lf", &load[0], &load[1], &load[2]) != 3) load[0] = -1;
            std::fclose(f);
        }
        double p[kSettings], d[kSettings];
        for (int k = 0; k < kSettings; k++) {
            p[k] = n_prefill / median(prefill_s[k]);
            d[k] = n_steps / median(decode_s[k]);
        }
        std::printf("{\"bench\":\"act_bits\",\"model\":\"%s\",\"metric\":\"prefill_%zu\",\"unit\":\"tokens/s\","
                    "\"act8\":%.1f,\"act_default\":%.1f,\"act16\":%.1f,"
                    "\"ratio_default_to_8\":%.3f,\"ratio_16_to_8\":%.3f,"
                    "\"threads\":%d,\"reps\":%d,\"load1\":%.2f}\n",
                    name.c_str(), n_prefill, p[0], p[1], p[2], p[1] / p[0], p[2] / p[0], threads, reps, load[0]);
        std::printf("{\"bench\":\"act_bits\",\"model\":\"%s\",\"metric\":\"decode_after_%zu\",\"unit\":\"tokens/s\","
                    "\"act8\":%.2f,\"act_default\":%.2f,\"act16\":%.2f,"
                    "\"ratio_default_to_8\":%.3f,\"ratio_16_to_8\":%.3f,"
                    "\"threads\":%d,\"reps\":%d,\"load1\":%.2f}\n",
                    name.c_str(), n_decode_after, d[0], d[1], d[2], d[1] / d[0], d[2] / d[0], threads, reps, load[0]);
        std::fflush(stdout);
        for (kvrt_context* c : ctx) kvrt_context_destroy(c);
        kvrt_model_destroy(m);
    }
    return 0;
}
