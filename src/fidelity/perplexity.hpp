// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors
// Perplexity of a token sequence in windows, as llama.cpp's llama-perplexity computes it,
// through the public C API (kvrt_context_prefill_logits), optionally saving the scored
// distributions (logits_file.hpp) and comparing them with a saved file (KL divergence).
//
// Window rules (tokens = the text's ids, BOS first when the model adds one):
//   stride 0 (llama-perplexity's default): windows [i n_ctx, (i + 1) n_ctx) for
//     i < n_tokens / n_ctx (at least 2 n_ctx tokens are needed); the window's first token
//     is replaced by BOS when the model uses one; the logits of window positions
//     j in [n_ctx / 2, n_ctx - 2] are scored against the next token (the first half only
//     gives context).
//   stride S (llama-perplexity --ppl-stride S): windows start at i S for
//     i < ceil((n_tokens - n_ctx) / S), BOS first likewise, and score the last S
//     predictions, j in [n_ctx - S - 1, n_ctx - 2].
// Perplexity = exp(mean over the scored positions of -log p(next token)).
#pragma once

#include "fidelity/kl_divergence.hpp"
#include "fidelity/logits_file.hpp"

#include <kvrt/kvrt.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace kvrt::fidelity {

struct Window {
    size_t start = 0;    // first text position of the window
    uint32_t first = 0;  // scored window positions [first, last]
    uint32_t last = 0;
};

struct WindowPlan {
    uint32_t n_ctx = 0;
    uint32_t stride = 0;
    std::vector<Window> windows;
    size_t n_scored = 0;
};

// Throws kvrt::Error INVALID_ARGUMENT naming the problem: no tokens, n_ctx < 3 (nothing
// would be scored), a stride outside [1, n_ctx - 1], a text too short for one window.
WindowPlan plan_windows(size_t n_tokens, uint32_t n_ctx, uint32_t stride);

// "architecture|name|n_params": what logits files compare to tell models apart.
std::string model_identity(const kvrt_model* m);

struct PerplexityOptions {
    uint32_t n_ctx = 512;
    uint32_t stride = 0;
    int32_t bos = -1;              // id put first in each window; -1: none (the model adds no BOS)
    std::string save_path;         // "": do not save
    std::string kl_base_path;      // "": no KL
    bool allow_other_model = false;
    std::string producer;          // stored in the saved file
    size_t max_rows_bytes = 64u << 20;  // logits rows per prefill call, in bytes
    // After each prefill call: scored positions done, total, the running perplexity.
    std::function<void(size_t, size_t, double)> progress;
};

struct PerplexityResult {
    WindowPlan plan;
    uint32_t n_vocab = 0;
    size_t n_scored = 0;
    double nll = 0;   // sum of -log p over the scored positions
    double ppl = 0;
    std::vector<double> window_ppl;  // the running perplexity after each window
    bool has_kl = false;
    KlSummary kl;
    std::string base_producer;
};

// Runs the windows on sequence 0 of ctx (whose n_ctx must hold a window). Every input is
// checked (and the KL base file opened and matched) before anything is computed. Throws
// kvrt::Error: the plan's errors, a C API status with kvrt_last_error()'s message, the
// logits file's BAD_FORMAT / MISMATCH / IO.
PerplexityResult run_perplexity(kvrt_context* ctx, const kvrt_model* m, const std::vector<int32_t>& tokens,
                                const PerplexityOptions& opt);

}  // namespace kvrt::fidelity
