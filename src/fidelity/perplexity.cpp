// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors
#include "fidelity/perplexity.hpp"

#include "util/error.hpp"

#include <algorithm>
#include <cmath>
#include <memory>

namespace kvrt::fidelity {

namespace {
void check_api(kvrt_status s, const char* what) {
    if (s != KVRT_OK) fail(s, std::string(what) + ": " + kvrt_last_error());
}
}  // namespace

WindowPlan plan_windows(size_t n_tokens, uint32_t n_ctx, uint32_t stride) {
    KVRT_CHECK(n_tokens > 0, KVRT_ERR_INVALID_ARGUMENT, "perplexity: the text has no tokens");
    KVRT_CHECK(n_ctx >= 3, KVRT_ERR_INVALID_ARGUMENT,
               "perplexity: a context of " + std::to_string(n_ctx) +
                   " tokens scores no position (the window's second half is scored): use at least 3");
    WindowPlan p;
    p.n_ctx = n_ctx;
    p.stride = stride;
    if (stride == 0) {
        KVRT_CHECK(n_tokens >= 2ull * n_ctx, KVRT_ERR_INVALID_ARGUMENT,
                   "perplexity: the text has " + std::to_string(n_tokens) + " tokens; a context of " +
                       std::to_string(n_ctx) + " needs at least " + std::to_string(2ull * n_ctx) +
                       " (llama-perplexity's rule: two windows)");
        for (size_t i = 0; i < n_tokens / n_ctx; ++i) p.windows.push_back({i * n_ctx, n_ctx / 2, n_ctx - 2});
    } else {
        KVRT_CHECK(stride < n_ctx, KVRT_ERR_INVALID_ARGUMENT,
                   "perplexity: the stride " + std::to_string(stride) + " must be below the context " +
                       std::to_string(n_ctx));
        KVRT_CHECK(n_tokens > n_ctx, KVRT_ERR_INVALID_ARGUMENT,
                   "perplexity: the text has " + std::to_string(n_tokens) + " tokens, not more than the context " +
                       std::to_string(n_ctx));
        const size_t n = (n_tokens - n_ctx + stride - 1) / stride;
        for (size_t i = 0; i < n; ++i) p.windows.push_back({i * stride, n_ctx - stride - 1, n_ctx - 2});
    }
    for (const Window& w : p.windows) p.n_scored += w.last - w.first + 1;
    return p;
}

std::string model_identity(const kvrt_model* m) {
    kvrt_model_info info;
    kvrt_model_info_init(&info, sizeof info);
    check_api(kvrt_model_get_info(&info, m), "model info");
    return std::string(info.architecture ? info.architecture : "") + "|" + (info.name ? info.name : "") + "|" +
           std::to_string(info.n_params);
}

PerplexityResult run_perplexity(kvrt_context* ctx, const kvrt_model* m, const std::vector<int32_t>& tokens,
                                const PerplexityOptions& opt) {
    PerplexityResult r;
    r.plan = plan_windows(tokens.size(), opt.n_ctx, opt.stride);
    kvrt_model_info info;
    kvrt_model_info_init(&info, sizeof info);
    check_api(kvrt_model_get_info(&info, m), "model info");
    const uint32_t V = info.n_vocab;
    r.n_vocab = V;
    for (size_t i = 0; i < tokens.size(); ++i)
        KVRT_CHECK(tokens[i] >= 0 && static_cast<uint32_t>(tokens[i]) < V, KVRT_ERR_OUT_OF_RANGE,
                   "perplexity: token " + std::to_string(tokens[i]) + " at " + std::to_string(i) +
                       " is outside the vocabulary");
    KVRT_CHECK(opt.bos < static_cast<int32_t>(V), KVRT_ERR_OUT_OF_RANGE, "perplexity: BOS id outside the vocabulary");

    LogitsHeader h;
    h.n_vocab = V;
    h.n_ctx = opt.n_ctx;
    h.stride = opt.stride;
    h.bos = opt.bos;
    h.n_records = static_cast<uint32_t>(r.plan.n_scored);
    h.model = model_identity(m);
    h.producer = opt.producer;
    h.tokens = tokens;
    std::unique_ptr<LogitsReader> base;
    if (!opt.kl_base_path.empty()) {
        base = std::make_unique<LogitsReader>(opt.kl_base_path);
        check_comparable(base->header(), h, opt.allow_other_model);
        r.has_kl = true;
        r.base_producer = base->header().producer;
    }
    std::unique_ptr<LogitsWriter> save;
    if (!opt.save_path.empty()) save = std::make_unique<LogitsWriter>(opt.save_path, h);

    const size_t rows_per_call = std::max<size_t>(1, opt.max_rows_bytes / (static_cast<size_t>(V) * 4));
    std::vector<int32_t> win(opt.n_ctx);
    std::vector<uint32_t> pos;
    std::vector<float> row(V);
    LogitsRecord rec, brec;
    uint32_t k = 0;
    for (const Window& w : r.plan.windows) {
        std::copy_n(tokens.begin() + static_cast<std::ptrdiff_t>(w.start), opt.n_ctx, win.begin());
        if (opt.bos >= 0) win[0] = opt.bos;
        for (uint32_t a = w.first; a <= w.last;) {
            const uint32_t b = static_cast<uint32_t>(std::min<size_t>(w.last, a + rows_per_call - 1));
            pos.clear();
            for (uint32_t j = a; j <= b; ++j) pos.push_back(j);
            check_api(kvrt_context_prefill_logits(nullptr, ctx, 0, win.data(), b + 1, pos.data(), pos.size()),
                      "prefill");
            for (uint32_t j = a; j <= b; ++j) {
                size_t written = 0;
                check_api(kvrt_context_get_logits_at(row.data(), row.size(), &written, ctx, 0, j), "logits");
                const size_t index = w.start + j;
                encode_record(row.data(), V, static_cast<uint32_t>(index), tokens[index + 1], rec);
                r.nll -= rec.lp_target;
                ++r.n_scored;
                if (save) save->add(rec);
                if (base) {
                    base->read(k, brec);
                    KVRT_CHECK(brec.index == rec.index, KVRT_ERR_MISMATCH,
                               "the saved file scores position " + std::to_string(brec.index) + " where this run scores " +
                                   std::to_string(rec.index));
                    r.kl.add(brec, rec);
                }
                ++k;
            }
            if (opt.progress) opt.progress(r.n_scored, r.plan.n_scored, std::exp(r.nll / static_cast<double>(r.n_scored)));
            a = b + 1;
        }
        r.window_ppl.push_back(std::exp(r.nll / static_cast<double>(r.n_scored)));
    }
    if (save) save->finish();
    r.ppl = std::exp(r.nll / static_cast<double>(r.n_scored));
    return r;
}

}  // namespace kvrt::fidelity
