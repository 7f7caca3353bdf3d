// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// kvrt chat: an interactive conversation. Each stdin line is a user turn; the
// whole conversation is re-rendered with the chat template every turn and the
// context keeps it in the cache, so a turn computes only its new tokens.
// --session FILE keeps the conversation across runs: after every turn the sequence
// is saved to FILE (kvrt_context_seq_save) and its messages to FILE.messages; a run
// that finds them restores both (kvrt_context_seq_restore: loaded as saved, or
// recomputed when this run keeps another KV type or kvrt computes otherwise).
#include "chat_session.hpp"
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
    Args a = parse_args(argc, argv,
                        with_kv_type_opts(with_tier_opts({"-m", "--model", "-n", "--max-tokens", "-t", "--threads",
                                                          "--system", "--temp", "--seed", "--session"})));
    if (a.has("-h") || a.has("--help")) {
        std::fprintf(stderr,
                     "usage: kvrt chat [-m MODEL] [--system TEXT] [-n MAX_TOKENS] [--temp T] [--seed S] [-t N]\n"
                     "                 [--session FILE] [--kv-type T] [--act-bits B]\n"
                     "  reads one user turn per line from stdin; an empty line or EOF ends; stats go to stderr\n"
                     "  --session FILE: the conversation is saved to FILE (and FILE.messages) after every turn\n"
                     "  and restored from them at the start (recomputed when its KV was kept otherwise)\n");
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
    if (!apply_kv_types("chat", a, cc)) {
        kvrt_model_destroy(model);
        return 1;
    }
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

    ChatMessages msgs;
    const std::string session = a.get("--session");
    if (rc == 0 && !session.empty() && access(session.c_str(), F_OK) == 0) {
        std::string err;
        kvrt_request_stats rs;
        kvrt_request_stats_init(&rs, sizeof rs);
        int32_t recomputed = 0;
        if (!read_chat_messages(chat_messages_path(session), msgs, err)) {
            std::fprintf(stderr, "kvrt chat: %s\n", err.c_str());
            rc = 1;
        } else if ((s = kvrt_context_seq_restore(&rs, &recomputed, ctx, 0, session.c_str())) != KVRT_OK) {
            rc = report_error("chat", "restoring " + session, s);
        } else {
            std::fprintf(stderr, "[session %s: %zu messages, %llu tokens %s]\n", session.c_str(), msgs.size(),
                         (unsigned long long)rs.prompt_tokens,
                         recomputed ? "recomputed (saved under another KV type or computation)" : "loaded as saved");
            if (a.has("--system") && !msgs.empty())
                std::fprintf(stderr, "kvrt chat: --system ignored: the session has its own messages\n");
        }
    }
    if (msgs.empty() && a.has("--system")) msgs.emplace_back("system", a.get("--system"));
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
        if (!session.empty()) {
            std::string err;
            if ((s = kvrt_context_seq_save(ctx, 0, session.c_str())) != KVRT_OK) {
                rc = report_error("chat", "saving " + session, s);
            } else if (!write_chat_messages(chat_messages_path(session), msgs, err)) {
                std::fprintf(stderr, "kvrt chat: %s\n", err.c_str());
                rc = 1;
            }
        }
    }
    kvrt_sampler_destroy(sampler);
    kvrt_context_destroy(ctx);
    kvrt_model_destroy(model);
    return rc;
}

}  // namespace kvrt_cli
