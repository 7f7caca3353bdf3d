// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// kvrt demo: the README's main job. A long project document stating a budget
// of 1,000,000 EUR, and three requests over one shared prefix cache:
//   A = document + "Summarise the risks."           (cold: computes everything)
//   B = document + "List the deadlines."            (prefix hit: the whole document is reused)
//   C = document with the budget changed to 500,000 EUR + B's question
//                                                   (the hit ends at the changed token)
// Each answer is greedy (48 tokens by default). Per request it prints reused vs
// computed tokens, time to first token, decode tokens/s and KV bytes. Then it
// runs B again cold, in a fresh cache, and checks that every logit of every
// step equals the prefix-hit run's bit for bit; exit status 1 if not.
#include "cli_common.hpp"
#include "commands.hpp"
#include "demo_prompts.hpp"
#include "sampler_opts.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace kvrt_cli {

namespace {

struct RequestResult {
    std::vector<int32_t> answer;
    std::vector<std::vector<float>> logits;  // after the prompt, then after each decoded token
    kvrt_request_stats stats{};
    double ttft_s = 0;
    double decode_s = 0;
    size_t decoded = 0;
    uint64_t kv_bytes = 0;
};

// Greedy generation through the low-level API (prefill, get_logits, decode), keeping
// every step's logits for the cold-vs-hit comparison.
// With a sampler (--repeat-penalty etc.), it picks the tokens instead of the argmax, its
// history set to the prompt and then each token picked.
bool run_request(kvrt_context* ctx, const kvrt_model* model, const std::vector<int32_t>& prompt, int n_answer,
                 bool keep_logits, RequestResult& r, kvrt_sampler* sampler = nullptr) {
    const double t0 = now_seconds();
    kvrt_request_stats_init(&r.stats, sizeof r.stats);
    kvrt_status s = kvrt_context_prefill(&r.stats, ctx, 0, prompt.data(), prompt.size());
    if (s != KVRT_OK) return report_error("demo", "prefill", s), false;
    size_t n_vocab = 0;
    kvrt_context_get_logits(nullptr, 0, &n_vocab, ctx, 0);
    std::vector<float> logits(n_vocab);
    if (sampler) {
        kvrt_sampler_reset(sampler);
        for (int32_t t : prompt) kvrt_sampler_accept(sampler, t);
    }
    for (int i = 0; i < n_answer; ++i) {
        size_t w = 0;
        s = kvrt_context_get_logits(logits.data(), logits.size(), &w, ctx, 0);
        if (s != KVRT_OK) return report_error("demo", "logits", s), false;
        if (keep_logits) r.logits.push_back(logits);
        int32_t tok = 0;
        if (sampler) {
            if ((s = kvrt_sampler_sample(&tok, sampler, logits.data(), logits.size())) != KVRT_OK)
                return report_error("demo", "sample", s), false;
            kvrt_sampler_accept(sampler, tok);
        } else {
            for (size_t v = 1; v < n_vocab; ++v)
                if (logits[v] > logits[static_cast<size_t>(tok)]) tok = static_cast<int32_t>(v);
        }
        if (i == 0) r.ttft_s = now_seconds() - t0;
        int eog = 0;
        kvrt_model_token_is_eog(&eog, model, tok);
        if (eog) break;
        r.answer.push_back(tok);
        if (i + 1 == n_answer) break;
        const double td = now_seconds();
        const int32_t seq = 0;
        s = kvrt_context_decode(ctx, &seq, &tok, 1);
        if (s != KVRT_OK) return report_error("demo", "decode", s), false;
        r.decode_s += now_seconds() - td;
        r.decoded++;
    }
    // KV bytes the request's sequence holds now (before it is released).
    kvrt_context_seq_kv_bytes(&r.kv_bytes, ctx, 0);
    return true;
}

void print_request(const char* label, const char* what, const kvrt_model* model, const RequestResult& r,
                   size_t first_diff, bool json) {
    const std::string answer = tokens_text(model, r.answer);
    const double tps = r.decode_s > 0 ? r.decoded / r.decode_s : 0.0;
    if (json) {
        std::printf("{\"request\":\"%s\",\"prompt_tokens\":%llu,\"reused_tokens\":%llu,\"reused_from_cache\":%llu,"
                    "\"computed_tokens\":%llu,\"ttft_ms\":%.3f,\"decode_tokens_per_s\":%.2f,\"kv_bytes\":%llu,"
                    "\"answer\":\"%s\"}\n",
                    label, (unsigned long long)r.stats.prompt_tokens, (unsigned long long)r.stats.reused_tokens,
                    (unsigned long long)r.stats.reused_from_cache, (unsigned long long)r.stats.computed_tokens,
                    r.ttft_s * 1e3, tps, (unsigned long long)r.kv_bytes, json_escape(answer).c_str());
        return;
    }
    std::printf("\n== Request %s: %s\n", label, what);
    std::printf("   prompt %llu tokens: %llu reused from the prefix cache%s, %llu computed",
                (unsigned long long)r.stats.prompt_tokens, (unsigned long long)r.stats.reused_from_cache,
                tier_reuse_text(r.stats).c_str(), (unsigned long long)r.stats.computed_tokens);
    if (first_diff != static_cast<size_t>(-1)) std::printf(" (first changed token at position %zu)", first_diff);
    std::printf("\n   time to first token %.1f ms, decode %.1f tokens/s, KV %.2f MiB\n", r.ttft_s * 1e3, tps,
                r.kv_bytes / 1048576.0);
    std::printf("   answer: %s\n", answer.c_str());
}

size_t first_difference(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
    size_t i = 0;
    while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
    return i;
}

}  // namespace

int cmd_demo(int argc, char** argv) {
    Args a = parse_args(argc, argv,
                        with_tier_opts(with_sampler_opts({"-m", "--model", "-n", "--answer-tokens", "-t", "--threads"})));
    if (a.has("-h") || a.has("--help")) {
        std::fprintf(stderr,
                     "usage: kvrt demo [-m MODEL] [-n ANSWER_TOKENS (48)] [-t THREADS] [--json] [sampling]\n"
                     "                 [--cache-dir DIR] [--cache-redis URL]   (prefix cache tiers: run twice and\n"
                     "                 request A reuses the document from the tier; checked against a cold run)\n%s",
                     sampler_opts_usage());
        return 0;
    }
    if (std::atof(a.get("--temp", "0").c_str()) > 0) {
        std::fprintf(stderr, "kvrt demo: answers are greedy (with optional penalties) so that the prefix-hit and cold "
                             "runs can be compared; sample with `kvrt run --temp`\n");
        return 2;
    }
    kvrt_sampler* sampler = nullptr;  // nullptr: greedy argmax (the default); else greedy + penalties
    if (!make_sampler("demo", a, true, &sampler)) return 2;
    const std::string path = a.get("-m", a.get("--model", default_model_path()));
    const int threads = std::atoi(a.get("-t", a.get("--threads", "0")).c_str());
    const int n_answer = std::atoi(a.get("-n", a.get("--answer-tokens", "48")).c_str());
    const bool json = a.has("--json");
    kvrt_model* model = load_model("demo", path, threads);
    if (!model) return 1;

    const std::string doc = demo_document();
    const std::string doc_c = edited_demo_document();
    std::vector<int32_t> ta, tb, tc;
    int rc = 0;
    kvrt_context* ctx = nullptr;
    kvrt_context* cold = nullptr;
    do {
        // The chat template when the model has one; a base model (Gemma 3 270M) gets the plain
        // text, a model without a vocabulary (CED from `kvrt ced-init`) the text's bytes as ids.
        if (!conversation_tokens(model, {{"user", demo_user_message(doc, kQuestionRisks)}}, ta) ||
            !conversation_tokens(model, {{"user", demo_user_message(doc, kQuestionDeadlines)}}, tb) ||
            !conversation_tokens(model, {{"user", demo_user_message(doc_c, kQuestionDeadlines)}}, tc)) {
            rc = 1;
            break;
        }
        kvrt_context_config cc;
        kvrt_context_config_init(&cc, sizeof cc);
        cc.n_threads = threads;
        {
            kvrt_model_info info;
            kvrt_model_info_init(&info, sizeof info);
            kvrt_model_get_info(&info, model);
            const size_t need = std::max({ta.size(), tb.size(), tc.size()}) + static_cast<size_t>(std::max(n_answer, 0)) + 16;
            cc.n_ctx = static_cast<uint32_t>(std::min<size_t>(info.n_ctx_train, std::max<size_t>(8192, need)));
        }
        if (stderr_is_tty()) cc.progress = progress_bar;
        kvrt_context_config cc_cold = cc;  // the cold runs: a fresh cache, no tiers
        std::vector<kvrt_tier_config> tiers;
        std::vector<std::string> tier_strings;
        apply_tiers(a, tiers, tier_strings, cc);
        kvrt_status s = kvrt_context_create(&ctx, model, &cc);
        if (s != KVRT_OK) {
            rc = report_error("demo", "context", s);
            break;
        }
        if (!json) {
            kvrt_model_info info;
            kvrt_model_info_init(&info, sizeof info);
            kvrt_model_get_info(&info, model);
            std::printf("kvrt demo on %s (%s): a %zu-byte project document (%zu tokens) stating a budget of\n"
                        "1,000,000 EUR, three requests sharing one prefix cache; greedy answers of up to %d tokens.\n",
                        info.name[0] ? info.name : path.c_str(), info.architecture, doc.size(), ta.size(), n_answer);
        }
        RequestResult ra, rb, rcr, rb_cold;
        // Each request runs on a fresh sequence; releasing it leaves its full blocks in the prefix cache.
        if (!run_request(ctx, model, ta, n_answer, !tiers.empty(), ra, sampler)) { rc = 1; break; }
        kvrt_context_seq_release(ctx, 0);
        print_request("A", "document + \"Summarise the risks.\"", model, ra, static_cast<size_t>(-1), json);
        if (!run_request(ctx, model, tb, n_answer, true, rb, sampler)) { rc = 1; break; }
        kvrt_context_seq_release(ctx, 0);
        print_request("B", "document + \"List the deadlines.\" (prefix hit)", model, rb, first_difference(ta, tb), json);
        if (!run_request(ctx, model, tc, n_answer, false, rcr, sampler)) { rc = 1; break; }
        kvrt_context_seq_release(ctx, 0);
        print_request("C", "document with the budget changed to 500,000 EUR + \"List the deadlines.\"", model, rcr,
                      first_difference(tb, tc), json);

        // B again, cold: a fresh context with its own empty cache.
        s = kvrt_context_create(&cold, model, &cc_cold);
        if (s != KVRT_OK) {
            rc = report_error("demo", "cold context", s);
            break;
        }
        if (!run_request(cold, model, tb, n_answer, true, rb_cold, sampler)) { rc = 1; break; }
        bool same = rb.logits.size() == rb_cold.logits.size() && rb.answer == rb_cold.answer;
        size_t steps_equal = 0;
        for (size_t i = 0; same && i < rb.logits.size(); ++i) {
            same = rb.logits[i].size() == rb_cold.logits[i].size() &&
                   std::memcmp(rb.logits[i].data(), rb_cold.logits[i].data(), rb.logits[i].size() * sizeof(float)) == 0;
            steps_equal += same;
        }
        if (json) {
            std::printf("{\"check\":\"B_prefix_hit_vs_cold\",\"steps\":%zu,\"identical\":%s,\"ttft_hit_ms\":%.3f,"
                        "\"ttft_cold_ms\":%.3f}\n",
                        rb.logits.size(), same ? "true" : "false", rb.ttft_s * 1e3, rb_cold.ttft_s * 1e3);
        } else {
            std::printf("\n== Check: request B with the prefix hit vs B cold in a fresh cache\n");
            std::printf("   cold: %llu tokens computed, time to first token %.1f ms (hit: %.1f ms, %.1fx faster)\n",
                        (unsigned long long)rb_cold.stats.computed_tokens, rb_cold.ttft_s * 1e3, rb.ttft_s * 1e3,
                        rb.ttft_s > 0 ? rb_cold.ttft_s / rb.ttft_s : 0.0);
            std::printf("   logits of %zu steps (%zu x %zu floats): %s\n", rb.logits.size(), rb.logits.size(),
                        rb.logits.empty() ? size_t(0) : rb.logits[0].size(),
                        same ? "IDENTICAL bit for bit; same greedy answer" : "DIFFERENT");
        }
        if (!same) {
            std::fprintf(stderr, "kvrt demo: B's logits differ from a cold run's (first %zu steps equal)\n", steps_equal);
            rc = 1;
        }
        if (!tiers.empty()) {
            // A against A cold: with a tier filled by an earlier run, A's document came from it.
            RequestResult ra_cold;
            kvrt_context_seq_release(cold, 0);
            kvrt_context_destroy(cold);
            cold = nullptr;
            if (kvrt_context_create(&cold, model, &cc_cold) != KVRT_OK ||
                !run_request(cold, model, ta, n_answer, true, ra_cold, sampler)) { rc = 1; break; }
            bool same_a = ra.logits.size() == ra_cold.logits.size() && ra.answer == ra_cold.answer;
            for (size_t i = 0; same_a && i < ra.logits.size(); ++i)
                same_a = ra.logits[i].size() == ra_cold.logits[i].size() &&
                         std::memcmp(ra.logits[i].data(), ra_cold.logits[i].data(), ra.logits[i].size() * sizeof(float)) == 0;
            kvrt_cache* cache = nullptr;
            uint64_t persisted = 0;
            kvrt_context_get_cache(&cache, ctx);
            kvrt_cache_persist(&persisted, cache);  // what is still only in RAM, for the next run
            if (json) {
                std::printf("{\"check\":\"A_tiers_vs_cold\",\"reused_from_disk\":%llu,\"reused_from_remote\":%llu,"
                            "\"identical\":%s,\"ttft_ms\":%.3f,\"ttft_cold_ms\":%.3f,\"persisted_blocks\":%llu}\n",
                            (unsigned long long)ra.stats.reused_from_disk, (unsigned long long)ra.stats.reused_from_remote,
                            same_a ? "true" : "false", ra.ttft_s * 1e3, ra_cold.ttft_s * 1e3,
                            (unsigned long long)persisted);
            } else {
                std::printf("\n== Check: request A through the prefix cache's tiers vs A cold\n");
                std::printf("   A reused %llu tokens from the disk tier and %llu from the redis tier%s\n",
                            (unsigned long long)ra.stats.reused_from_disk, (unsigned long long)ra.stats.reused_from_remote,
                            ra.stats.reused_from_disk + ra.stats.reused_from_remote == 0
                                ? " (an empty tier: run the demo again to hit it)" : "");
                std::printf("   time to first token %.1f ms vs %.1f ms cold; logits of %zu steps: %s\n", ra.ttft_s * 1e3,
                            ra_cold.ttft_s * 1e3, ra.logits.size(),
                            same_a ? "IDENTICAL bit for bit; same greedy answer" : "DIFFERENT");
                std::printf("   %llu block sets written to the tiers now (the rest went there on eviction)\n",
                            (unsigned long long)persisted);
            }
            if (!same_a) {
                std::fprintf(stderr, "kvrt demo: A's logits (prefix from the tiers) differ from a cold run's\n");
                rc = 1;
            }
        }
    } while (false);
    kvrt_context_destroy(cold);
    kvrt_context_destroy(ctx);
    kvrt_sampler_destroy(sampler);
    kvrt_model_destroy(model);
    return rc;
}

}  // namespace kvrt_cli
