// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// kvrt run -m MODEL -p TEXT: generates a continuation, streaming tokens.
#include "cli_common.hpp"
#include "commands.hpp"
#include "sampler_opts.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>

namespace kvrt_cli {

namespace {
void run_usage() {
    std::fprintf(stderr,
                 "usage: kvrt run [-m MODEL] -p TEXT [options]\n"
                 "  -m, --model PATH   GGUF model (default: the fetched SmolLM2, $KVRT_MODEL)\n"
                 "  -p, --prompt TEXT  the prompt\n"
                 "  --chat             wrap the prompt as a user turn with the model's chat template\n"
                 "  -n, --max-tokens N tokens to generate (default 128)\n"
                 "  --stop STR         stop string (repeatable)\n"
                 "  --ignore-eos       do not stop at end-of-generation tokens\n"
                 "  -t, --threads N    threads (default 0: all, each decode step's count chosen by kvrt)\n"
                 "  --kv-type T        KV cache element type: f32, f16 (default), bf16, int8, fp8\n"
                 "  --k-type T, --v-type T   K and V rows of different types\n"
                 "  --act-bits B       activation codes of the quantised matmuls: default = outliers (16-bit\n"
                 "                     for the K/V projections, 8-bit with residuals of outlier blocks\n"
                 "                     elsewhere), 8 (fastest: ~twice the default's distance from exact\n"
                 "                     math) or 16 (closest to exact math): scripts/reference/README.md\n"
                 "  --json             print one JSON object (text + stats) instead of streaming\n");
    std::fputs(sampler_opts_usage(), stderr);
}

struct StreamState {
    bool json;
    bool ids;  // the model has no vocabulary: stream token ids
    std::string text;
};

int on_token(int32_t token, const char* text, size_t len, void* ud) {
    auto* st = static_cast<StreamState*>(ud);
    std::string ids;
    if (st->ids) {
        if (token < 0) return 0;  // the end-of-text flush
        ids = " " + std::to_string(token);
        text = ids.data();
        len = ids.size();
    }
    st->text.append(text, len);
    if (!st->json) {
        std::fwrite(text, 1, len, stdout);
        std::fflush(stdout);
    }
    return 0;
}
}  // namespace

int cmd_run(int argc, char** argv) {
    Args a = parse_args(argc, argv,
                        with_tier_opts(with_sampler_opts(with_kv_type_opts({"-m", "--model", "-p", "--prompt", "-n",
                                                                            "--max-tokens", "--stop", "-t", "--threads"}))));
    if (a.has("-h") || a.has("--help")) return run_usage(), 0;
    std::string prompt = a.get("-p", a.get("--prompt"));
    if (prompt.empty() && !a.positional.empty()) prompt = a.positional[0];
    if (prompt.empty()) return run_usage(), 2;
    const std::string path = a.get("-m", a.get("--model", default_model_path()));
    const int threads = std::atoi(a.get("-t", a.get("--threads", "0")).c_str());
    const bool json = a.has("--json");

    kvrt_model* model = load_model("run", path, threads);
    if (!model) return 1;
    int rc = 0;
    kvrt_context* ctx = nullptr;
    kvrt_sampler* sampler = nullptr;
    do {
        std::vector<int32_t> toks;
        const bool ok = a.has("--chat") ? conversation_tokens(model, {{"user", prompt}}, toks)
                                        : text_tokens(model, prompt, false, toks);
        if (!ok || toks.empty()) {
            std::fprintf(stderr, "kvrt run: the prompt has no tokens\n");
            rc = 1;
            break;
        }
        kvrt_context_config cc;
        kvrt_context_config_init(&cc, sizeof cc);
        cc.n_threads = threads;
        if (stderr_is_tty()) cc.progress = progress_bar;
        if (!apply_kv_types("run", a, cc)) {
            rc = 2;
            break;
        }
        std::vector<kvrt_tier_config> tiers;  // --cache-dir / --cache-redis
        std::vector<std::string> tier_strings;
        apply_tiers(a, tiers, tier_strings, cc);
        kvrt_status s = kvrt_context_create(&ctx, model, &cc);
        if (s != KVRT_OK) {
            rc = report_error("run", "context", s);
            break;
        }
        if (!make_sampler("run", a, false, &sampler)) {
            rc = 2;
            break;
        }
        std::vector<std::string> stops = a.all("--stop");
        std::vector<const char*> stop_ptrs;
        for (const auto& st : stops) stop_ptrs.push_back(st.c_str());
        StreamState st{json, !has_vocabulary(model), {}};
        kvrt_generate_config g;
        kvrt_generate_config_init(&g, sizeof g);
        g.max_tokens = static_cast<uint32_t>(std::atoi(a.get("-n", a.get("--max-tokens", "128")).c_str()));
        g.stop_at_eog = a.has("--ignore-eos") ? 0 : 1;
        g.sampler = sampler;
        g.stop_strings = stop_ptrs.empty() ? nullptr : stop_ptrs.data();
        g.n_stop_strings = stop_ptrs.size();
        g.on_token = on_token;
        g.user_data = &st;
        kvrt_request_stats rs;
        kvrt_request_stats_init(&rs, sizeof rs);
        if (!json && !a.has("--chat")) std::fputs(st.ids ? tokens_text(model, toks).c_str() : prompt.c_str(), stdout);
        s = kvrt_context_generate(&rs, ctx, 0, toks.data(), toks.size(), &g);
        if (s != KVRT_OK) {
            rc = report_error("run", "generate", s);
            break;
        }
        static const char* reasons[] = {"none", "eog", "max_tokens", "stop_string", "callback", "context_full"};
        const char* reason = rs.stop_reason >= 0 && rs.stop_reason <= 5 ? reasons[rs.stop_reason] : "?";
        // (the sampler's time per token picked; decode tokens/s leaves it out)
        const double sample_ms = rs.generated_tokens > 0 ? rs.sample_s * 1e3 / static_cast<double>(rs.generated_tokens) : 0.0;
        if (json) {
            std::printf(
                "{\"text\":\"%s\",\"prompt_tokens\":%llu,\"reused_tokens\":%llu,\"computed_tokens\":%llu,"
                "\"generated_tokens\":%llu,\"ttft_ms\":%.3f,\"prefill_tokens_per_s\":%.2f,"
                "\"decode_tokens_per_s\":%.2f,\"sample_ms_per_token\":%.3f,\"kv_bytes\":%llu,\"stop_reason\":\"%s\"}\n",
                json_escape(st.text).c_str(), (unsigned long long)rs.prompt_tokens,
                (unsigned long long)rs.reused_tokens, (unsigned long long)rs.computed_tokens,
                (unsigned long long)rs.generated_tokens, rs.time_to_first_token_s * 1e3,
                rs.prefill_s > 0 ? rs.computed_tokens / rs.prefill_s : 0.0, rs.decode_tokens_per_s, sample_ms,
                (unsigned long long)rs.kv_bytes, reason);
        } else {
            std::printf("\n");
            std::fprintf(stderr,
                         "[%llu prompt tokens (%llu reused, %llu computed), %llu generated; TTFT %.1f ms, "
                         "decode %.1f tokens/s, sampling %.2f ms/token, KV %.2f MiB; stop: %s]\n",
                         (unsigned long long)rs.prompt_tokens, (unsigned long long)rs.reused_tokens,
                         (unsigned long long)rs.computed_tokens, (unsigned long long)rs.generated_tokens,
                         rs.time_to_first_token_s * 1e3, rs.decode_tokens_per_s, sample_ms, rs.kv_bytes / 1048576.0, reason);
        }
    } while (false);
    kvrt_sampler_destroy(sampler);
    kvrt_context_destroy(ctx);
    kvrt_model_destroy(model);
    return rc;
}

}  // namespace kvrt_cli
