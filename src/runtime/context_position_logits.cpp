// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors
// Logits at chosen positions of a prefill (kvrt_context_prefill_logits): what perplexity,
// speculative decoding, classification and reward scoring read. The rows are computed by
// the same forward as every other row, so the logits of position p equal the last-position
// logits of prefilling tokens[0, p] alone, bit for bit (kvrt's exactness contract).
#include "runtime/context.hpp"
#include "runtime/thread_scope.hpp"

#include "kvrt/context.h"
#include "model/model.hpp"
#include "util/error.hpp"
#include "util/log.hpp"

#include <algorithm>
#include <string>

namespace kvrt::runtime {

void Context::prefill_positions(int32_t seq, const int32_t* tokens, size_t n, const uint32_t* positions,
                                size_t n_positions, RequestStats* stats) {
    const double t0 = log::now_s();
    Seq& s = seq_ref(seq);
    // Every check before the sequence changes.
    KVRT_CHECK(positions != nullptr && n_positions > 0, KVRT_ERR_INVALID_ARGUMENT,
               "prefill_logits: no positions (positions is NULL or n_positions is 0)");
    try {
        check_prompt("prefill_logits", tokens, n);
    } catch (...) {
        s.has_logits = false;  // as prefill: after a failed call the last logits are unset
        throw;
    }
    for (size_t i = 0; i < n_positions; ++i) {
        KVRT_CHECK(positions[i] < n, KVRT_ERR_OUT_OF_RANGE,
                   "prefill_logits: positions[" + std::to_string(i) + "] = " + std::to_string(positions[i]) +
                       " is not below n_tokens = " + std::to_string(n));
        KVRT_CHECK(i == 0 || positions[i] > positions[i - 1], KVRT_ERR_INVALID_ARGUMENT,
                   "prefill_logits: positions must be strictly increasing (positions[" + std::to_string(i) +
                       "] = " + std::to_string(positions[i]) + " after " + std::to_string(positions[i - 1]) + ")");
    }
    if (ced_) {
        KVRT_CHECK(n_positions == 1 && positions[0] == n - 1, KVRT_ERR_UNSUPPORTED,
                   "prefill_logits: a CED model computes the logits of the last position only (its decoder "
                   "runs over the prompt's last window); position " + std::to_string(positions[0]) +
                       " was asked for");
    }
    const size_t V = model_->config().n_vocab;
    // The previous request's rows go first (memory), then the new ones are computed.
    s.pos_list.clear();
    s.pos_rows = {};
    s.pos_tokens.clear();
    std::vector<float> rows;
    if (ced_) {
        prefill(seq, tokens, n, stats);
        rows = logits(seq);
    } else {
        ThreadScope threads(p_.n_threads);
        governor_.interrupt();  // (thread_governor.hpp: the next decode step is not measured)
        std::vector<uint8_t> want(n, 0);
        for (size_t i = 0; i < n_positions; ++i) want[positions[i]] = 1;
        want[n - 1] = 1;  // the last position's logits (kvrt_context_get_logits) always
        const size_t n_rows = n_positions + (positions[n_positions - 1] == n - 1 ? 0 : 1);
        rows.assign(n_rows * V, 0.0f);
        const PrefillPlan plan = plan_prefill(s, tokens, n, false, positions[0]);
        PromptWork w{&s, tokens, n, plan.start, plan.from_cache, plan.start, 0};
        w.want = want.data();
        w.rows = rows.data();
        compute_prompts(std::span<PromptWork>(&w, 1), nullptr);
        KVRT_CHECK(w.rows_done == n_rows, KVRT_ERR_INTERNAL,
                   "prefill_logits: computed " + std::to_string(w.rows_done) + " rows of " + std::to_string(n_rows));
        rows.resize(n_positions * V);  // drop the last position when it was not asked for
        fill_prefill_stats(stats, w, seq, t0);
    }
    s.pos_list.assign(positions, positions + n_positions);
    s.pos_rows = std::move(rows);
    s.pos_tokens.assign(tokens, tokens + positions[n_positions - 1] + 1);
}

const float* Context::position_logits(int32_t seq, size_t position) const {
    const Seq& s = seq_ref(seq);
    const auto it = std::lower_bound(s.pos_list.begin(), s.pos_list.end(), position,
                                     [](uint32_t a, size_t b) { return static_cast<size_t>(a) < b; });
    KVRT_CHECK(it != s.pos_list.end() && *it == position, KVRT_ERR_NOT_FOUND,
               "sequence " + std::to_string(seq) + ": the logits of position " + std::to_string(position) +
                   " were not asked for by its last kvrt_context_prefill_logits (" +
                   std::to_string(s.pos_list.size()) + " positions were)");
    // Readable while the sequence holds the tokens the row was computed from (kvrt's rows are
    // a function of tokens [0, position] alone).
    const bool same = s.tokens.size() > position &&
                      std::equal(s.pos_tokens.begin(), s.pos_tokens.begin() + static_cast<std::ptrdiff_t>(position) + 1,
                                 s.tokens.begin());
    KVRT_CHECK(same, KVRT_ERR_INVALID_STATE,
               "sequence " + std::to_string(seq) + " no longer holds the tokens [0, " + std::to_string(position) +
                   "] its logits were computed from (edited, truncated or released since)");
    const size_t V = model_->config().n_vocab;
    return s.pos_rows.data() + static_cast<size_t>(it - s.pos_list.begin()) * V;
}

}  // namespace kvrt::runtime
