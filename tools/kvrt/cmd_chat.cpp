// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// kvrt chat: an interactive conversation. Each stdin line is a user turn; the
// whole conversation is re-rendered with the chat template every turn and the
// context keeps it in the cache, so a turn computes only its new tokens.
#include "cli_common.hpp"
#include "commands.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

namespace kvrt_cli {

namespace {
int on_chat_token(int32_t, const char* text, size_t len, void* ud) {
    static_cast<std::string*>(ud)->append(text, len);
    std::fwrite(text, 1, len, stdout);
    std::fflush(stdout);
    return 0;
}
}  // namespace

int cmd_chat(int argc, char** argv) {
    Args a = parse_args(argc, argv, with_tier_opts({"-m", "--model", "-n", "--max-tokens", "-t", "--threads", "--system", "--temp",
                                     "--seed"}));
    if (a.has("-h") || a.has("--help")) {
        std::fprintf(stderr,
                     "usage: kvrt chat [-m MODEL] [--system TEXT] [-n MAX_TOKENS] [--temp T] [--seed S] [-t N]\n"
                     "  reads one user turn per line from stdin; an empty line or EOF ends; stats go to stderr\n");
        return 0;
    }
    const std::string path = a.get("-m", a.get("--model", default_model_path()));
    const int threads = std::atoi(a.get("-t", a.get("--threads", "0")).c_str());
    kvrt_model* model = load_model("chat", path, threads);
    if (!model) return 1;
    kvrt_context* ctx = nullptr;
    kvrt_sampler* sampler = nullptr;
    kvrt_context_config cc;
    kvrt_context_config_init(&cc, sizeof cc);
    cc.n_threads = threads;
    std::vector<kvrt_tier_config> tiers;  // --cache-dir / --cache-redis
    std::vector<std::string> tier_strings;
    apply_tiers(a, tiers, tier_strings, cc);
    kvrt_status s = kvrt_context_create(&ctx, model, &cc);
    int rc = 0;
    if (s != KVRT_OK) rc = report_error("chat", "context", s);
    kvrt_sampler_config sc;
    kvrt_sampler_config_init(&sc, sizeof sc);
    sc.temperature = static_cast<float>(std::atof(a.get("--temp", "0").c_str()));
    sc.seed = std::strtoull(a.get("--seed", "0").c_str(), nullptr, 10);
    if (rc == 0 && (s = kvrt_sampler_create(&sampler, &sc)) != KVRT_OK) rc = report_error("chat", "sampler", s);

    std::vector<std::pair<std::string, std::string>> msgs;
    if (a.has("--system")) msgs.emplace_back("system", a.get("--system"));
    const bool tty = isatty(0);
    std::string line;
    while (rc == 0) {
        if (tty) std::fprintf(stderr, "> ");
        if (!std::getline(std::cin, line) || line.empty()) break;
        msgs.emplace_back("user", line);
        std::vector<int32_t> toks;
        if (!conversation_tokens(model, msgs, toks)) {
            rc = 1;
            break;
        }
        std::string answer;
        kvrt_generate_config g;
        kvrt_generate_config_init(&g, sizeof g);
        g.max_tokens = static_cast<uint32_t>(std::atoi(a.get("-n", a.get("--max-tokens", "256")).c_str()));
        g.sampler = sampler;
        g.on_token = on_chat_token;
        g.user_data = &answer;
        kvrt_request_stats rs;
        kvrt_request_stats_init(&rs, sizeof rs);
        s = kvrt_context_generate(&rs, ctx, 0, toks.data(), toks.size(), &g);
        std::printf("\n");
        if (s != KVRT_OK) {
            rc = report_error("chat", "generate", s);
            break;
        }
        std::fprintf(stderr, "[turn: %llu prompt tokens, %llu reused, %llu computed; TTFT %.1f ms; %.1f tokens/s]\n",
                     (unsigned long long)rs.prompt_tokens, (unsigned long long)rs.reused_tokens,
                     (unsigned long long)rs.computed_tokens, rs.time_to_first_token_s * 1e3, rs.decode_tokens_per_s);
        msgs.emplace_back("assistant", answer);
    }
    kvrt_sampler_destroy(sampler);
    kvrt_context_destroy(ctx);
    kvrt_model_destroy(model);
    return rc;
}

}  // namespace kvrt_cli
