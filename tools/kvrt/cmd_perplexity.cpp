// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors
// kvrt perplexity -m MODEL -f TEXT [--ctx N] [--stride S] [--save-logits FILE] [--kl FILE] [--json]
// Perplexity of a text in windows with llama-perplexity's rule (src/fidelity/perplexity.hpp),
// the scored distributions saved in kvrt's logits file (docs/logits_file.md), and the KL
// divergence from a saved file (another runtime, other settings, the float64 reference).
#include "cli_common.hpp"
#include "commands.hpp"

#include "fidelity/perplexity.hpp"
#include "util/error.hpp"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace kvrt_cli {

namespace {

const char* kUsage =
    "usage: kvrt perplexity -m MODEL -f TEXT [--ctx N] [--stride S] [--save-logits FILE] [--kl FILE]\n"
    "                       [--json] [-t THREADS] [--kv f32|f16|bf16] [--batch N] [--allow-other-model]\n"
    "                       [--producer LABEL] [--act-bits default|8|outliers|16]\n"
    "Perplexity of TEXT (a UTF-8 file) with llama.cpp's llama-perplexity rule: the text is tokenised\n"
    "whole (BOS first when the model adds one), cut into non-overlapping windows of N tokens\n"
    "(default 512; at least 2N tokens are needed), each window's first token replaced by BOS\n"
    "when the model uses one, and only the second half of each window scored (positions N/2 to\n"
    "N-2 predict the next token). --stride S is llama-perplexity --ppl-stride S: windows start\n"
    "every S tokens and score their last S predictions.\n"
    "  --save-logits FILE  write the scored distributions (kvrt logits file, docs/logits_file.md)\n"
    "  --kl FILE           compare with a saved file of the same text and windows: KL(FILE || this\n"
    "                      run) mean, median, p99, max; top-1 agreement; perplexity ratio\n"
    "  --allow-other-model compare with a file of another model (same vocabulary and tokens)\n"
    "  --json              one JSON object on stdout instead of text\n"
    "  --kl BASE --compare FILE  compare two saved files (no model is run)\n"
    "  --kv T              KV element type (default f16); -t threads; --batch prefill chunk\n"
    "  --act-bits B        activation codes of the quantised matmuls (kvrt_context_config.act_bits):\n"
    "                      default = outliers (9: 16-bit for the K/V projections, 8-bit with residual\n"
    "                      codes for each row's outlier blocks elsewhere), 8 or 16\n";

bool read_file(const std::string& path, std::string& out) {
    std::ifstream f(path, std::ios::binary);
    if (!f) return false;
    std::ostringstream ss;
    ss << f.rdbuf();
    out = ss.str();
    return true;
}

bool parse_u32(const std::string& s, uint32_t& out) {
    if (s.empty()) return false;
    char* end = nullptr;
    const unsigned long long v = std::strtoull(s.c_str(), &end, 10);
    if (*end != '\0' || v > 0xFFFFFFFFull || s[0] == '-') return false;
    out = static_cast<uint32_t>(v);
    return true;
}

int kv_type(const std::string& s) {
    if (s == "f32") return KVRT_KV_F32;
    if (s == "f16") return KVRT_KV_F16;
    if (s == "bf16") return KVRT_KV_BF16;
    return -1;
}

int fail_msg(const std::string& msg) {
    std::fprintf(stderr, "kvrt perplexity: %s\n", msg.c_str());
    return 1;
}

// --kl BASE --compare OTHER: two saved files, no model.
int compare_files(const Args& a) {
    const std::string base_path = a.get("--kl"), other_path = a.get("--compare");
    if (base_path.empty()) return fail_msg("--compare needs --kl BASE");
    try {
        kvrt::fidelity::LogitsReader base(base_path), other(other_path);
        kvrt::fidelity::check_comparable(base.header(), other.header(), a.has("--allow-other-model"));
        kvrt::fidelity::KlSummary kl;
        kvrt::fidelity::LogitsRecord x, y;
        for (uint32_t i = 0; i < base.header().n_records; ++i) {
            base.read(i, x);
            other.read(i, y);
            kl.add(x, y);
        }
        if (a.has("--json"))
            std::printf("{\"base\":\"%s\",\"base_producer\":\"%s\",\"other\":\"%s\",\"other_producer\":\"%s\","
                        "\"scored\":%zu,\"kl\":{\"mean\":%.6e,\"median\":%.6e,\"p99\":%.6e,\"max\":%.6e,"
                        "\"top1_agreement\":%.6f,\"ppl_base\":%.6f,\"ppl_other\":%.6f,\"ppl_ratio\":%.6f}}\n",
                        json_escape(base_path).c_str(), json_escape(base.header().producer).c_str(),
                        json_escape(other_path).c_str(), json_escape(other.header().producer).c_str(), kl.count(),
                        kl.mean(), kl.median(), kl.p99(), kl.max(), kl.top1_agreement(), kl.ppl_base(), kl.ppl_other(),
                        kl.ppl_ratio());
        else
            std::printf("KL(%s || %s) over %zu positions\n  base: %s\n  other: %s\n"
                        "  mean %.4e  median %.4e  p99 %.4e  max %.4e\n"
                        "  top-1 agreement %.2f%%  PPL %.4f vs %.4f (ratio %.5f)\n",
                        base_path.c_str(), other_path.c_str(), kl.count(), base.header().producer.c_str(),
                        other.header().producer.c_str(), kl.mean(), kl.median(), kl.p99(), kl.max(),
                        100.0 * kl.top1_agreement(), kl.ppl_base(), kl.ppl_other(), kl.ppl_ratio());
        return 0;
    } catch (const kvrt::Error& e) {
        std::fprintf(stderr, "kvrt perplexity: %s: %s\n", kvrt_status_string(e.status()), e.what());
        return 1;
    }
}

}  // namespace

int cmd_perplexity(int argc, char** argv) {
    Args a = parse_args(argc, argv,
                        {"-m", "--model", "-f", "--file", "--ctx", "-c", "--stride", "--save-logits", "--kl", "-t",
                         "--threads", "--kv", "--batch", "--producer", "--compare", "--act-bits"});
    if (a.has("-h") || a.has("--help")) {
        std::fputs(kUsage, stdout);
        return 0;
    }
    if (a.has("--compare")) return compare_files(a);
    const std::string text_path = a.get("-f", a.get("--file"));
    if (text_path.empty()) {
        std::fputs(kUsage, stderr);
        return 2;
    }
    uint32_t n_ctx = 512, stride = 0, n_batch = 512, threads = 0;
    if (!parse_u32(a.get("--ctx", a.get("-c", "512")), n_ctx)) return fail_msg("--ctx takes a number of tokens");
    if (!parse_u32(a.get("--stride", "0"), stride)) return fail_msg("--stride takes a number of tokens");
    if (!parse_u32(a.get("--batch", "512"), n_batch) || n_batch == 0) return fail_msg("--batch takes a positive number");
    if (!parse_u32(a.get("-t", a.get("--threads", "0")), threads)) return fail_msg("-t takes a number of threads");
    const int kv = kv_type(a.get("--kv", "f16"));
    if (kv < 0) return fail_msg("--kv takes f32, f16 or bf16, not '" + a.get("--kv") + "'");
    int32_t act_bits = 0;
    if (!parse_act_bits("perplexity", a, act_bits)) return 2;
    const bool json = a.has("--json");
    std::string text;
    if (!read_file(text_path, text)) return fail_msg("cannot read " + text_path);

    const std::string model_path = a.get("-m", a.get("--model", default_model_path()));
    kvrt_model* m = load_model("perplexity", model_path, static_cast<int>(threads));
    if (!m) return 1;
    int rc = 0;
    kvrt_context* ctx = nullptr;
    try {
        std::vector<int32_t> tokens;
        if (!text_tokens(m, text, false, tokens)) throw kvrt::Error(KVRT_ERR_INVALID_ARGUMENT, "cannot tokenise " + text_path);
        // Does the model add a BOS? Then every window starts with it (llama-perplexity).
        int32_t bos = -1;
        {
            int32_t one[4];
            size_t w = 0;
            if (kvrt_model_tokenize(one, 4, &w, m, "", 0, KVRT_TOKENIZE_ADD_BOS) == KVRT_OK && w == 1) bos = one[0];
        }
        kvrt::fidelity::PerplexityOptions o;
        o.n_ctx = n_ctx;
        o.stride = stride;
        o.bos = bos;
        o.save_path = a.get("--save-logits");
        o.kl_base_path = a.get("--kl");
        o.allow_other_model = a.has("--allow-other-model");
        const char* isa = std::getenv("KVRT_ISA");
        o.producer = a.has("--producer") ? a.get("--producer")
                                         : std::string("kvrt ") + kvrt_version_string() + " kv=" + a.get("--kv", "f16") +
                                               " act_bits=" + act_bits_name(act_bits) +
                                               " threads=" + std::to_string(threads) + " isa=" + (isa ? isa : "auto");
        // Checked before the context is made (its n_ctx is the window).
        const kvrt::fidelity::WindowPlan plan = kvrt::fidelity::plan_windows(tokens.size(), n_ctx, stride);
        kvrt_context_config cc;
        kvrt_context_config_init(&cc, sizeof cc);
        cc.n_ctx = n_ctx;
        cc.n_batch = n_batch;
        cc.n_threads = static_cast<int32_t>(threads);
        cc.kv_dtype = kv;
        cc.prefix_caching = 0;
        cc.act_bits = act_bits;
        kvrt_status s = kvrt_context_create(&ctx, m, &cc);
        if (s != KVRT_OK) throw kvrt::Error(s, std::string("context: ") + kvrt_last_error());
        if (!json)
            std::printf("kvrt perplexity: %s: %zu tokens, %zu windows of %u (%s), %zu scored positions\n",
                        text_path.c_str(), tokens.size(), plan.windows.size(), n_ctx,
                        stride ? ("stride " + std::to_string(stride) + ", last " + std::to_string(stride) + " scored").c_str()
                               : "llama-perplexity rule, second half scored",
                        plan.n_scored);
        const bool bar = stderr_is_tty();
        o.progress = [&](size_t done, size_t total, double ppl) {
            if (bar) {
                char stage[64];
                std::snprintf(stage, sizeof stage, "perplexity %.4f", ppl);
                progress_bar(static_cast<float>(done) / static_cast<float>(total), stage, nullptr);
            }
        };
        const double t0 = now_seconds();
        const kvrt::fidelity::PerplexityResult r = kvrt::fidelity::run_perplexity(ctx, m, tokens, o);
        const double secs = now_seconds() - t0;
        if (bar) std::fputc('\n', stderr);
        if (json) {
            std::printf("{\"model\":\"%s\",\"text\":\"%s\",\"tokens\":%zu,\"ctx\":%u,\"stride\":%u,\"rule\":\"%s\","
                        "\"windows\":%zu,\"scored\":%zu,\"ppl\":%.6f,\"nll\":%.6f,\"seconds\":%.3f,\"producer\":\"%s\"",
                        json_escape(model_path).c_str(), json_escape(text_path).c_str(), tokens.size(), n_ctx, stride,
                        stride ? "llama-perplexity --ppl-stride" : "llama-perplexity", r.plan.windows.size(),
                        r.n_scored, r.ppl, r.nll, secs, json_escape(o.producer).c_str());
            if (r.has_kl)
                std::printf(",\"kl\":{\"base\":\"%s\",\"base_producer\":\"%s\",\"mean\":%.6e,\"median\":%.6e,"
                            "\"p99\":%.6e,\"max\":%.6e,\"top1_agreement\":%.6f,\"ppl_base\":%.6f,\"ppl_ratio\":%.6f}",
                            json_escape(o.kl_base_path).c_str(), json_escape(r.base_producer).c_str(), r.kl.mean(),
                            r.kl.median(), r.kl.p99(), r.kl.max(), r.kl.top1_agreement(), r.kl.ppl_base(),
                            r.kl.ppl_ratio());
            std::printf("}\n");
        } else {
            for (size_t i = 0; i < r.window_ppl.size(); ++i) std::printf("[%zu]%.4f,", i + 1, r.window_ppl[i]);
            std::printf("\nPPL = %.4f over %zu positions (%.1f s)\n", r.ppl, r.n_scored, secs);
            if (r.has_kl)
                std::printf("KL(%s || this run), base: %s\n  mean %.4e  median %.4e  p99 %.4e  max %.4e\n"
                            "  top-1 agreement %.2f%%  PPL ratio %.5f (base %.4f)\n",
                            o.kl_base_path.c_str(), r.base_producer.c_str(), r.kl.mean(), r.kl.median(), r.kl.p99(),
                            r.kl.max(), 100.0 * r.kl.top1_agreement(), r.kl.ppl_ratio(), r.kl.ppl_base());
            if (!o.save_path.empty()) std::printf("saved %s\n", o.save_path.c_str());
        }
    } catch (const kvrt::Error& e) {
        std::fprintf(stderr, "kvrt perplexity: %s: %s\n", kvrt_status_string(e.status()), e.what());
        rc = 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "kvrt perplexity: %s\n", e.what());
        rc = 1;
    }
    kvrt_context_destroy(ctx);
    kvrt_model_destroy(m);
    return rc;
}

}  // namespace kvrt_cli
