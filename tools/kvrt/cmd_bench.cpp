// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// kvrt bench: the model runtime's figures on the same prompts as
// bench/llamacpp_baseline.py (scripts/reference/kvrt_prompts.py):
//   prefill_2048    tokens/s of a cold 2,048-token prompt (the demo document's plain-text
//                   tokens repeated), prefix caching off, median of --reps;
//   decode_at_4096  tokens/s of 64 greedy decode steps after a 4,096-token prompt
//                   (positions 4096..4159 every repetition; prefix caching on, so going
//                   back to the prompt between repetitions is cheap on window models too),
//                   median of --reps (--decode-ctx N: after an N-token prompt, decode_at_N);
//   decode_bytes_per_token  what one of those steps reads: the weights as the runtime
//                   holds them (packed, the output head included, the embedding table
//                   only when tied to it) plus the KV rows its attention reads at the
//                   steps' mean position, per layer and element type;
//   decode_read_bandwidth  bytes per token x decode tokens/s, beside the STREAM read of
//                   the same thread count measured in the same run (bench/baselines.hpp);
//   ttft_A1..ttft_C time to first token of the demo's requests A, B, A, B, C on one
//                   context (prefix cache on), and cold A / B on empty caches;
//   ttft_B_hit_median  median TTFT of B over max(--reps, 5) more (A, B) pairs (compared
//                   with llama.cpp's ttft_B2: B right after A on its slot).
//   ttft_docs_round1_median, ttft_docs_round2_median  more documents than llama.cpp's slot
//                   holds (--only docs): requests on documents 1, 2, 3 (the demo document
//                   under three title lines + "List the deadlines."), then 1, 2, 3 again, on
//                   ONE sequence of one context with prefix caching on; the second round hits
//                   the prefix cache. Median TTFT of each round; ttft_docs_R{r}_D{k} per request.
//   model_load       wall time of kvrt_model_load (parsing, repacking every weight into the
//                   kernels' panels, the tokenizer), on -t threads, from the page cache when the
//                   file was read before (compared with the construction of llama.cpp's Llama
//                   object, which maps the file and creates its context).
// --baseline FILE reads llamacpp_baseline.py's JSON lines and prints each figure
// beside llama.cpp's (same thread count, its faster attention path) as a ratio.
//
// What a user gets: every figure is wall-clock time (steady_clock) through the public
// C API, under the OpenMP settings of the environment as they are. Nothing here sets
// OMP_WAIT_POLICY (llama.cpp's own thread pool spins between graph nodes, so the fair
// comparison is the OpenMP default); each line records the policy in force and the load
// average, since the machine may be shared. -t N runs the contexts on exactly N threads; -t 0
// (the default) on every core with each decode step's count chosen by the runtime
// (runtime/thread_governor.hpp; "decode_threads":"governed" on each line): figures against
// llama.cpp are taken with an explicit -t.
#include "api/decode_traffic.hpp"
#include "baselines.hpp"
#include "cli_common.hpp"
#include "commands.hpp"
#include "demo_prompts.hpp"
#include "util/error.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace kvrt_cli {

namespace {

struct Figure {
    std::string metric;
    double value;
    std::string unit;
    std::string extra;
    std::string base_name = {};  // a baseline of this run (not llama.cpp's), with its value
    double base_value = 0;
};

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
}

std::vector<int32_t> repeat_to_length(const std::vector<int32_t>& t, size_t n) {
    std::vector<int32_t> out;
    while (out.size() < n) out.insert(out.end(), t.begin(), t.end());
    out.resize(n);
    return out;
}

// The greedy token of sequence 0's last logits, picked as a C API user picks it (a greedy
// kvrt_sampler; llama.cpp's side takes numpy's argmax): std::max_element here had cost Gemma 3's
// 262,144-logit step ~0.3 ms more than the library's vectorised scan.
int32_t argmax_logits(kvrt_context* ctx, std::vector<float>& buf) {
    struct Greedy {
        kvrt_sampler* s = nullptr;
        Greedy() {
            kvrt_sampler_config cfg;
            if (kvrt_sampler_config_init(&cfg, sizeof cfg) == KVRT_OK) kvrt_sampler_create(&s, &cfg);
        }
        ~Greedy() { kvrt_sampler_destroy(s); }
    };
    static Greedy g;
    size_t w = 0;
    kvrt_context_get_logits(buf.data(), buf.size(), &w, ctx, 0);
    int32_t tok = 0;
    if (!g.s || kvrt_sampler_sample(&tok, g.s, buf.data(), w) != KVRT_OK)
        return static_cast<int32_t>(std::max_element(buf.begin(), buf.end()) - buf.begin());
    return tok;
}

// Pulls "key":value (number or string) out of one JSON line (flat objects only).
bool json_field(const std::string& line, const std::string& key, std::string& out) {
    const std::string k = "\"" + key + "\":";
    size_t p = line.find(k);
    if (p == std::string::npos) return false;
    p += k.size();
    while (p < line.size() && line[p] == ' ') ++p;
    if (p < line.size() && line[p] == '"') {
        const size_t e = line.find('"', p + 1);
        out = line.substr(p + 1, e - p - 1);
    } else {
        size_t e = p;
        while (e < line.size() && line[e] != ',' && line[e] != '}') ++e;
        out = line.substr(p, e - p);
    }
    return true;
}

// llama.cpp figures per metric for `threads`: the "best" attention path when present.
std::map<std::string, double> read_baseline(const std::string& path, int threads) {
    std::map<std::string, double> best, any;
    std::ifstream f(path);
    std::string line;
    while (std::getline(f, line)) {
        std::string metric, value, th, fa, bench;
        if (!json_field(line, "metric", metric) || !json_field(line, "value", value)) continue;
        if (json_field(line, "threads", th) && std::atoi(th.c_str()) != threads) continue;
        const double v = std::atof(value.c_str());
        if (json_field(line, "flash_attn", fa) && fa == "best") best[metric] = v;
        const bool lower_better = metric.rfind("ttft", 0) == 0 || metric == "model_load";
        auto it = any.find(metric);
        if (it == any.end() || (lower_better ? v < it->second : v > it->second)) any[metric] = v;
    }
    for (auto& [k, v] : best) any[k] = v;
    if (any.count("ttft_B2")) any["ttft_B_hit_median"] = any["ttft_B2"];  // llama.cpp's B after A
    return any;
}

}  // namespace

int cmd_bench(int argc, char** argv) {
    Args a = parse_args(argc, argv, with_kv_type_opts({"-m", "--model", "-t", "--threads", "--reps", "--baseline", "--only", "--decode-ctx", "--block-tokens"}));
    if (a.has("-h") || a.has("--help")) {
        std::fprintf(stderr,
                     "usage: kvrt bench [-m MODEL] [-t THREADS (0: all, decode governed)] [--reps 3] [--only prefill,decode,ttft,docs]\n"
                     "                  [--baseline llamacpp.jsonl] [--json] [--kv-type T] [--k-type T] [--v-type T]\n"
                     "                  [--act-bits default|8|outliers|16] [--decode-ctx 4096] [--block-tokens 64]\n");
        return 0;
    }
    const std::string path = a.get("-m", a.get("--model", default_model_path()));
    int threads = std::atoi(a.get("-t", a.get("--threads", "0")).c_str());
    // -t 0 (the default): the contexts get n_threads 0, up to every core with the decode steps'
    // count chosen by the runtime (runtime/thread_governor.hpp); the STREAM baseline and
    // llama.cpp's figures are taken at every core.
    const bool governed = threads <= 0;
    if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    const int reps = std::max(1, std::atoi(a.get("--reps", "3").c_str()));
    const std::string only = a.get("--only", "prefill,decode,ttft,docs");
    const bool json = a.has("--json");
    const long decode_ctx = std::strtol(a.get("--decode-ctx", "4096").c_str(), nullptr, 10);
    const bool want_decode = only.find("decode") != std::string::npos;
    constexpr long kDecodeRoom = 72;  // positions after the decode figure's prompt: 4 + 64 steps, and slack
    const long block_tokens = std::strtol(a.get("--block-tokens", "0").c_str(), nullptr, 10);  // 0: the default
    if (decode_ctx < 1 || decode_ctx > (1L << 20)) {
        std::fprintf(stderr, "kvrt bench: --decode-ctx must be in [1, 1048576]\n");
        return 2;
    }
    int32_t act_bits = 0;
    if (!parse_act_bits("bench", a, act_bits)) return 2;
    const auto load_start = std::chrono::steady_clock::now();
    kvrt_model* model = load_model("bench", path, threads);
    if (!model) return 1;
    const double load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - load_start).count();
    kvrt_model_info info;
    kvrt_model_info_init(&info, sizeof info);
    kvrt_model_get_info(&info, model);
    // The decode figure's context holds the prompt and 4 + 64 steps after it: name the limit
    // instead of failing later at the context's creation.
    if (want_decode && info.n_ctx_train > 0 && decode_ctx + kDecodeRoom > static_cast<long>(info.n_ctx_train)) {
        std::fprintf(stderr,
                     "kvrt bench: --decode-ctx %ld leaves no room for the %ld positions of the decode steps in the "
                     "model's context of %u positions: use at most %ld\n",
                     decode_ctx, kDecodeRoom, info.n_ctx_train, static_cast<long>(info.n_ctx_train) - kDecodeRoom);
        kvrt_model_destroy(model);
        return 2;
    }
    std::vector<float> logits(info.n_vocab);
    std::vector<Figure> figs;
    const char* wait_env = std::getenv("OMP_WAIT_POLICY");
    double load1 = 0;
    getloadavg(&load1, 1);
    char load_s[32];
    std::snprintf(load_s, sizeof load_s, "%.2f", load1);
    // The kernels' ISA level (KVRT_ISA caps it), so that every figure names the path it measured.
    int32_t isa_level = KVRT_ISA_SCALAR;
    (void)kvrt_isa_get(&isa_level, nullptr);
    const char* isa = kvrt_isa_name(isa_level);
    const std::string cpu = kvrt::bench::cpu_model();
    const std::string tag = "\"cpu\":\"" + cpu + "\",\"threads\":" + std::to_string(threads) + ",\"decode_threads\":\"" +
                            (governed ? "governed" : "fixed") + "\",\"omp_wait_policy\":\"" +
                            (wait_env && *wait_env ? wait_env : "default") + "\",\"act_bits\":\"" +
                            act_bits_name(act_bits) + "\",\"isa\":\"" + isa + "\",\"load1\":" + load_s;
    int rc = 0;
    figs.push_back({"model_load", load_ms, "ms", tag});

    std::vector<int32_t> doc_toks;
    {
        // Plain text: no template, no BOS (the model does not ask for one), specials not parsed.
        // (A model without a vocabulary gets the text's bytes as ids: cli_common.hpp.)
        size_t n = 0;
        const std::string doc = demo_document();
        if (has_vocabulary(model)) {
            kvrt_model_tokenize(nullptr, 0, &n, model, doc.data(), doc.size(), 0);
            doc_toks.resize(n);
            kvrt_model_tokenize(doc_toks.data(), n, &n, model, doc.data(), doc.size(), 0);
        } else if (!text_tokens(model, doc, false, doc_toks)) {
            return 1;
        }
    }
    int32_t blocks_used = 0;  // the cache block size the contexts got (the library's default unless --block-tokens)
    auto make_ctx = [&](int prefix_caching) {
        kvrt_context_config cc;
        kvrt_context_config_init(&cc, sizeof cc);
        const long room = info.n_ctx_train > 0 ? std::min(8192L, static_cast<long>(info.n_ctx_train)) : 8192L;
        cc.n_ctx = static_cast<uint32_t>(std::max(room, want_decode ? decode_ctx + kDecodeRoom : 0L));
        cc.n_threads = governed ? 0 : threads;
        if (block_tokens > 0) cc.block_tokens = static_cast<uint32_t>(block_tokens);
        if (!apply_kv_types("bench", a, cc)) return static_cast<kvrt_context*>(nullptr);
        cc.prefix_caching = prefix_caching;
        kvrt_context* c = nullptr;
        kvrt_status s = kvrt_context_create(&c, model, &cc);
        if (s != KVRT_OK) report_error("bench", "context", s);
        kvrt_cache* cache = nullptr;
        kvrt_cache_stats cs;
        kvrt_cache_stats_init(&cs, sizeof cs);
        if (c && kvrt_context_get_cache(&cache, c) == KVRT_OK && kvrt_cache_stats_get(&cs, cache) == KVRT_OK)
            blocks_used = cs.block_tokens;
        return c;
    };

    if (only.find("prefill") != std::string::npos) {
        const std::vector<int32_t> p = repeat_to_length(doc_toks, 2048);
        kvrt_context* c = make_ctx(0);
        if (!c) return 1;
        std::vector<double> rates;
        for (int r = -1; r < reps; ++r) {  // r = -1: warm-up
            kvrt_context_seq_release(c, 0);
            const double t0 = now_seconds();
            kvrt_status s = kvrt_context_prefill(nullptr, c, 0, p.data(), p.size());
            const double dt = now_seconds() - t0;
            if (s != KVRT_OK) { rc = report_error("bench", "prefill", s); break; }
            if (r >= 0) rates.push_back(p.size() / dt);
        }
        figs.push_back({"prefill_2048", median(rates), "tokens/s", tag + ",\"reps\":" + std::to_string(reps)});
        kvrt_context_destroy(c);
    }
    if (rc == 0 && want_decode) {
        const std::vector<int32_t> p = repeat_to_length(doc_toks, static_cast<size_t>(decode_ctx));
        const std::string n_s = std::to_string(decode_ctx);
        // Prefix caching on: each run() below first goes back to the prompt, and where a
        // sliding-window layer has already dropped rows the kept prefix needs (Gemma 3, 64 steps
        // past its window), the sequence cannot be cut back and the prompt's blocks come from the
        // prefix cache instead (off, Gemma 3 recomputed all 4,096 positions before every run:
        // 3 s each, untimed). The figures are unchanged: the first prefill runs on an empty cache.
        kvrt_context* c = make_ctx(1);
        if (!c) return 1;
        const double t0 = now_seconds();
        kvrt_status s = kvrt_context_prefill(nullptr, c, 0, p.data(), p.size());
        const double dt = now_seconds() - t0;
        if (s != KVRT_OK) return report_error("bench", ("prefill " + n_s).c_str(), s);
        figs.push_back({"prefill_" + n_s, p.size() / dt, "tokens/s", tag + ",\"reps\":1"});
        const int32_t first = argmax_logits(c, logits);
        constexpr int kSteps = 64;
        auto run = [&](int steps) {
            // Back to exactly the prompt (keeps all but its last position, recomputes that).
            kvrt_context_prefill(nullptr, c, 0, p.data(), p.size());
            int32_t tok = first;
            const int32_t seq = 0;
            const double t = now_seconds();
            for (int i = 0; i < steps; ++i) {
                if (kvrt_context_decode(c, &seq, &tok, 1) != KVRT_OK) return -1.0;
                tok = argmax_logits(c, logits);
            }
            return now_seconds() - t;
        };
        run(4);
        std::vector<double> rates;
        for (int r = 0; r < reps; ++r) rates.push_back(kSteps / run(kSteps));
        const double rate = median(rates);
        figs.push_back({"decode_at_" + n_s, rate, "tokens/s", tag + ",\"steps\":" + std::to_string(kSteps) + ",\"reps\":" + std::to_string(reps)});
        // Bytes per step at the steps' mean position (decode_ctx + 1 .. decode_ctx + 64 keys).
        kvrt::api::DecodeTraffic tr;
        std::string traffic_error;
        try {
            tr = kvrt::api::decode_traffic(c, decode_ctx + kSteps / 2);
        } catch (const kvrt::Error& e) {
            traffic_error = e.what();
        }
        kvrt_context_destroy(c);
        if (!traffic_error.empty()) {
            std::fprintf(stderr, "kvrt bench: %s\n", traffic_error.c_str());
            return 1;
        }
        const double bytes = static_cast<double>(tr.weight_bytes + tr.kv_bytes);
        char extra[160];
        std::snprintf(extra, sizeof extra, ",\"weight_mb\":%.2f,\"kv_mb\":%.2f,\"kv_counted\":%s,\"context\":%ld",
                      tr.weight_bytes / 1e6, tr.kv_bytes / 1e6, tr.kv_known ? "true" : "false", decode_ctx + kSteps / 2);
        figs.push_back({"decode_bytes_per_token", bytes / 1e6, "MB", tag + extra});
        const double stream = kvrt::bench::stream_read(threads) / 1e9;
        figs.push_back({"decode_read_bandwidth", bytes * rate / 1e9, "GB/s", tag + extra, "stream_read", stream});
    }
    // One server-style request on sequence 0 of c: prefill (time to the first greedy token),
    // then up to 32 more tokens untimed (stopping at end of generation), then the sequence is
    // released (its full blocks stay in the prefix cache). Returns the TTFT in seconds.
    auto request = [&](kvrt_context* c, const std::vector<int32_t>& t, kvrt_request_stats& st) {
        kvrt_request_stats_init(&st, sizeof st);
        const double t0 = now_seconds();
        kvrt_context_prefill(&st, c, 0, t.data(), t.size());
        int32_t tok = argmax_logits(c, logits);
        const double ttft = now_seconds() - t0;
        for (int i = 0; i < 32; ++i) {
            int eog = 0;
            kvrt_model_token_is_eog(&eog, model, tok);
            if (eog) break;
            const int32_t seq = 0;
            if (kvrt_context_decode(c, &seq, &tok, 1) != KVRT_OK) break;
            tok = argmax_logits(c, logits);
        }
        kvrt_context_seq_release(c, 0);
        return ttft;
    };
    // A context for the request cases, warmed up on an unrelated prompt (one-time costs).
    auto warm_ctx = [&]() {
        kvrt_context* c = make_ctx(1);
        if (!c) return c;
        std::vector<int32_t> warm;
        text_tokens(model, "Warm-up.", false, warm);
        kvrt_request_stats st;
        request(c, warm, st);
        return c;
    };
    if (rc == 0 && only.find("ttft") != std::string::npos) {
        const std::string doc = demo_document(), doc_c = edited_demo_document();
        std::vector<int32_t> ta, tb, tc;
        if (!conversation_tokens(model, {{"user", demo_user_message(doc, kQuestionRisks)}}, ta) ||
            !conversation_tokens(model, {{"user", demo_user_message(doc, kQuestionDeadlines)}}, tb) ||
            !conversation_tokens(model, {{"user", demo_user_message(doc_c, kQuestionDeadlines)}}, tc))
            return 1;
        std::map<std::string, const std::vector<int32_t>*> req = {{"A", &ta}, {"B", &tb}, {"C", &tc}};
        kvrt_context* c = warm_ctx();
        if (!c) return 1;
        const char* order[][2] = {{"A1", "A"}, {"B1", "B"}, {"A2", "A"}, {"B2", "B"}, {"C", "C"}};
        for (auto& o : order) {
            kvrt_request_stats st;
            const double t = request(c, *req[o[1]], st);
            figs.push_back({std::string("ttft_") + o[0], t * 1e3, "ms",
                            tag + ",\"request\":\"" + o[1] + "\",\"prompt_tokens\":" + std::to_string(st.prompt_tokens) +
                                ",\"reused_tokens\":" + std::to_string(st.reused_tokens) +
                                ",\"computed_tokens\":" + std::to_string(st.computed_tokens)});
        }
        // TTFT of a prefix hit is a few ms: one sample is noise on a shared machine. The
        // median of --reps more (A, B) pairs (at least 5), beside llama.cpp's ttft_B2.
        {
            std::vector<double> tb_hit;
            kvrt_request_stats st;
            for (int r = 0; r < std::max(reps, 5); ++r) {
                request(c, ta, st);
                tb_hit.push_back(request(c, tb, st));
            }
            figs.push_back({"ttft_B_hit_median", median(tb_hit) * 1e3, "ms",
                            tag + ",\"request\":\"B\",\"reps\":" + std::to_string(tb_hit.size()) +
                                ",\"prompt_tokens\":" + std::to_string(st.prompt_tokens) +
                                ",\"reused_tokens\":" + std::to_string(st.reused_tokens) +
                                ",\"computed_tokens\":" + std::to_string(st.computed_tokens)});
        }
        kvrt_context_destroy(c);
        for (const char* k : {"A", "B"}) {
            kvrt_context* cold = make_ctx(1);
            if (!cold) return 1;
            kvrt_request_stats st;
            const double t = request(cold, *req[k], st);
            figs.push_back({std::string("ttft_cold_") + k, t * 1e3, "ms",
                            tag + ",\"request\":\"" + k + "\",\"prompt_tokens\":" + std::to_string(st.prompt_tokens) +
                                ",\"reused_tokens\":0,\"computed_tokens\":" + std::to_string(st.computed_tokens)});
            kvrt_context_destroy(cold);
        }
    }

    if (rc == 0 && only.find("docs") != std::string::npos) {
        const std::string doc = demo_document();
        std::vector<std::vector<int32_t>> reqs(kArchiveDocs);
        for (int k = 0; k < kArchiveDocs; ++k)
            if (!conversation_tokens(model, {{"user", demo_user_message(archive_document(doc, k + 1), kQuestionDeadlines)}},
                                     reqs[static_cast<size_t>(k)]))
                return 1;
        kvrt_context* c = warm_ctx();
        if (!c) return 1;
        for (int round = 1; round <= 2; ++round) {
            std::vector<double> times;
            for (int k = 0; k < kArchiveDocs; ++k) {
                kvrt_request_stats st;
                const double ttft = request(c, reqs[static_cast<size_t>(k)], st);
                times.push_back(ttft);
                figs.push_back({"ttft_docs_R" + std::to_string(round) + "_D" + std::to_string(k + 1), ttft * 1e3, "ms",
                                tag + ",\"prompt_tokens\":" + std::to_string(st.prompt_tokens) +
                                    ",\"reused_tokens\":" + std::to_string(st.reused_tokens) +
                                    ",\"computed_tokens\":" + std::to_string(st.computed_tokens)});
            }
            figs.push_back({"ttft_docs_round" + std::to_string(round) + "_median", median(times) * 1e3, "ms",
                            tag + ",\"documents\":" + std::to_string(kArchiveDocs)});
        }
        kvrt_context_destroy(c);
    }

    std::map<std::string, double> base;
    if (a.has("--baseline")) base = read_baseline(a.get("--baseline"), threads);
    if (!json) {
        // `--only load` makes no context, so there are no cache blocks to describe.
        const std::string blocks =
            blocks_used > 0 ? "cache blocks of " + std::to_string(blocks_used) + " positions" : "no context";
        std::printf("# %s, %d threads%s, OMP_WAIT_POLICY=%s, act_bits %s, %s, kernels %s, "
                    "load average %s, wall-clock times%s\n",
                    cpu.c_str(), threads, governed ? " (decode steps: the runtime's choice, -t 0)" : "",
                    wait_env && *wait_env ? wait_env : "(default)", act_bits_name(act_bits), blocks.c_str(), isa, load_s,
                    base.empty() ? "" : "; llama.cpp from --baseline, ratio = kvrt / llama.cpp");
    }
    for (const Figure& f : figs) {
        auto it = base.find(f.metric);
        if (json) {
            if (!f.base_name.empty())
                std::printf("{\"bench\":\"kvrt\",\"metric\":\"%s\",\"value\":%.6g,\"unit\":\"%s\",%s,"
                            "\"baseline\":\"%s\",\"baseline_value\":%.6g,\"ratio\":%.4f}\n",
                            f.metric.c_str(), f.value, f.unit.c_str(), f.extra.c_str(), f.base_name.c_str(), f.base_value,
                            f.base_value != 0 ? f.value / f.base_value : 0.0);
            else if (it != base.end())
                std::printf("{\"bench\":\"kvrt\",\"metric\":\"%s\",\"value\":%.6g,\"unit\":\"%s\",%s,"
                            "\"baseline\":\"llama.cpp\",\"baseline_value\":%.6g,\"ratio\":%.4f}\n",
                            f.metric.c_str(), f.value, f.unit.c_str(), f.extra.c_str(), it->second,
                            it->second != 0 ? f.value / it->second : 0.0);
            else
                std::printf("{\"bench\":\"kvrt\",\"metric\":\"%s\",\"value\":%.6g,\"unit\":\"%s\",%s}\n", f.metric.c_str(),
                            f.value, f.unit.c_str(), f.extra.c_str());
        } else {
            std::printf("%-16s %10.2f %-9s", f.metric.c_str(), f.value, f.unit.c_str());
            if (!f.base_name.empty())
                std::printf("  %s %.2f  ratio %.3f", f.base_name.c_str(), f.base_value,
                            f.base_value != 0 ? f.value / f.base_value : 0.0);
            else if (it != base.end())
                std::printf("  llama.cpp %10.2f  ratio %.3f", it->second, it->second != 0 ? f.value / it->second : 0.0);
            std::printf("\n");
        }
    }
    kvrt_model_destroy(model);
    return rc;
}

}  // namespace kvrt_cli
