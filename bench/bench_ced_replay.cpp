// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// How far bounded replay (CED.md "Prefix hit of H tokens") moves the logits
// against exact computation, for both prefill modes.
//
// A first request caches the banks of prompt A. A second prompt B shares A's
// first H tokens: it is run (1) by bounded replay of [H - W, H) from the bank
// hit and (2) cold, exactly. Printed: the max abs logit difference at B's last
// prompt position, then over 100 greedy steps (teacher-forced on the exact
// run's tokens) the max abs difference and the top-1 agreement. JSON lines,
// plus a table on stderr.
// Usage: bench_ced_replay [--quick] [--model FILE.gguf] [--prompt N] [--hit H] [--steps S]
#include "bench_json.hpp"
#include "model/arch/ced_generator.hpp"
#include "model/gguf/gguf.hpp"
#include "model/gguf/gguf_writer.hpp"
#include "model/arch/ced_runtime.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

using namespace kvrt;
using namespace kvrt::ced;
using kvrt::bench::emit;
using kvrt::bench::emit_vs;

namespace {

int32_t argmax(const std::vector<float>& v) { return int32_t(std::max_element(v.begin(), v.end()) - v.begin()); }

double max_abs(const std::vector<float>& a, const std::vector<float>& b) {
    double m = 0;
    for (size_t i = 0; i < a.size(); i++) m = std::max(m, std::fabs(double(a[i]) - double(b[i])));
    return m;
}

}  // namespace

int main(int argc, char** argv) {
    std::string model;
    bool quick = false;
    int64_t prompt = 1536, hit = 1024;
    int steps = 100;
    for (int i = 1; i < argc; i++) {
        if (std::strcmp(argv[i], "--quick") == 0) quick = true;
        else if (std::strcmp(argv[i], "--model") == 0 && i + 1 < argc) model = argv[++i];
        else if (std::strcmp(argv[i], "--prompt") == 0 && i + 1 < argc) prompt = std::atoll(argv[++i]);
        else if (std::strcmp(argv[i], "--hit") == 0 && i + 1 < argc) hit = std::atoll(argv[++i]);
        else if (std::strcmp(argv[i], "--steps") == 0 && i + 1 < argc) steps = std::atoi(argv[++i]);
        else {
            std::fprintf(stderr, "usage: bench_ced_replay [--quick] [--model F] [--prompt N] [--hit H] [--steps S]\n");
            return 2;
        }
    }
    if (quick) prompt = 96, hit = 64, steps = 20;
    try {
        std::vector<uint8_t> bytes;
        std::unique_ptr<GgufFile> file;
        if (!model.empty()) {
            file = std::make_unique<GgufFile>(GgufFile::open(model));
        } else {
            GgufWriter wr;
            GeneratorOptions o;
            o.cfg = preset(quick ? "tiny" : "base");
            o.weight_type = quick ? TensorType::F32 : TensorType::Q8_0;
            fill_random_gguf(wr, o);
            bytes = wr.to_bytes();
            file = std::make_unique<GgufFile>(GgufFile::from_buffer(bytes.data(), bytes.size(), "ced"));
        }
        auto w = CedWeights::load(*file);
        const CedConfig& c = w->cfg;
        std::mt19937 rng(77);
        std::vector<int32_t> a(prompt + 64), b;
        for (auto& t : a) t = int32_t(rng() % uint32_t(c.n_vocab));
        b.assign(a.begin(), a.begin() + hit);
        while (int64_t(b.size()) < prompt) b.push_back(int32_t(rng() % uint32_t(c.n_vocab)));
        CedRuntimeOptions ro;
        ro.block_tokens = 16;
        ro.chunk = 512;
        ro.bank_budget_bytes = 2ull << 30;
        ro.window_budget_bytes = 1ull << 30;
        std::fprintf(stderr, "bounded replay vs exact: W = %d, prompt %lld, hit %lld, %d greedy steps\n", c.window,
                     (long long)prompt, (long long)hit, steps);
        std::fprintf(stderr, "%-12s %14s %16s %14s\n", "mode", "prompt max|d|", "decode max|d|", "top-1 agree");
        for (PrefillMode mode : {PrefillMode::Exact, PrefillMode::CedPrefill}) {
            const char* name = mode == PrefillMode::Exact ? "exact" : "ced_prefill";
            CedRuntime rt(w, ro);
            auto sa = rt.create();
            rt.prefill(sa, a.data(), int64_t(a.size()), mode, Resume::Cold);
            rt.release(sa);
            auto sb = rt.create();
            PrefillResult r = rt.prefill(sb, b.data(), int64_t(b.size()), mode, Resume::BoundedReplay);
            CedRuntime cold(w, ro);
            auto sc = cold.create();
            std::vector<float> lc = cold.prefill(sc, b.data(), int64_t(b.size()), mode, Resume::Cold).logits;
            const double d0 = max_abs(r.logits, lc);
            double dmax = 0;
            int agree = argmax(r.logits) == argmax(lc) ? 1 : 0;
            std::vector<float> lr = r.logits;
            for (int i = 0; i < steps; i++) {
                int32_t t = argmax(lc);  // the exact run's greedy token, fed to both
                lc = cold.decode(sc, t);
                lr = rt.decode(sb, t);
                dmax = std::max(dmax, max_abs(lr, lc));
                agree += argmax(lr) == argmax(lc) ? 1 : 0;
            }
            const double frac = double(agree) / double(steps + 1);
            std::string extra = std::string("\"mode\":\"") + name + "\",\"hit\":" + std::to_string(r.hit) +
                                ",\"replayed\":" + std::to_string(r.replayed) + ",\"window\":" +
                                std::to_string(c.window) + ",\"steps\":" + std::to_string(steps);
            emit("ced_replay", "prompt_max_abs_logit_diff", d0, "logit", extra);
            emit("ced_replay", "decode_max_abs_logit_diff", dmax, "logit", extra);
            emit("ced_replay", "top1_agreement", frac, "fraction", extra);
            std::fprintf(stderr, "%-12s %14.5f %16.5f %13.1f%%\n", name, d0, dmax, 100 * frac);
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "bench_ced_replay: %s\n", e.what());
        return 1;
    }
    return 0;
}
