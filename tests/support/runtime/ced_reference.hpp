// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// CedReference: the no-cache oracle of a CED model (CED.md), straightforward
// loops over positions with double accumulation (matmul_ref for the weights,
// every norm, RoPE, dot product, softmax and pooling in double, rounded to
// f32 between operations). It keeps every position's rows in plain arrays and
// processes one position at a time through the layers it runs; it is slow
// (O(N * (W + k)) attention, O(N^2) indexer) and exists to check the cached
// runtime (src/model/arch/ced_runtime.hpp).
//
// Semantics it computes (say which in every test):
//   Exact       every layer runs over every prompt position (window floor 0).
//   CedPrefill  the encoder (layers [0, L/2)) and the decoder source's row
//               projection run over all N positions; the decoder's attention
//               and FFN run only over [N - W, N) with window floor N - W.
//   bounded replay (hit > 0, with either mode): the bank rows (main rows and
//               indexer keys) of groups wholly inside [0, hit) come from a
//               cold encoder pass over [0, hit); window rows, tail state and
//               hidden states are then rebuilt by replaying [hit - W, hit)
//               with window floor hit - W (decoder too in Exact mode) without
//               rewriting those bank rows; then [hit, N) runs as usual.
// decode() runs one more position through every layer (floors unchanged).
#pragma once

#include "model/arch/ced_weights.hpp"
#include "model/arch/ced_runtime.hpp"  // PrefillMode

#include <cstdint>
#include <memory>
#include <vector>

namespace kvrt::ced {

class CedReference {
public:
    explicit CedReference(std::shared_ptr<const CedWeights> w);

    // Runs the prompt tokens[0, n) (n >= 1) from an empty state; returns the
    // logits of position n - 1. hit: see "bounded replay" above (0 = cold; a
    // multiple of every bank ratio, < n).
    std::vector<float> prefill(const int32_t* tokens, int64_t n, PrefillMode mode, int64_t hit = 0);
    // Runs one more token through every layer; returns its logits.
    std::vector<float> decode(int32_t token);

    int64_t length() const { return static_cast<int64_t>(tokens_.size()); }
    // RMS of the residual stream after each layer (and [0] = the embedding)
    // at the last processed position: n_layers + 1 values.
    const std::vector<double>& layer_rms() const { return layer_rms_; }
    // Rows selected by layer l (bank rows) at the last processed position.
    const std::vector<int32_t>& selection(int32_t l) const { return sel_[l]; }

private:
    using Row = std::vector<float>;
    void reset();
    void run_position(int64_t p, bool run_decoder, std::vector<float>* logits_out);
    void layer(int32_t l, int64_t p, std::vector<float>& x);
    std::vector<float> logits(const std::vector<float>& x) const;

    std::shared_ptr<const CedWeights> w_;
    const CedConfig& c_;
    std::vector<int32_t> tokens_;
    std::vector<std::vector<Row>> win_;       // [layer][position] window rows (empty = never computed)
    std::vector<std::vector<Row>> main_;      // [source][group]
    std::vector<std::vector<Row>> idxk_;      // [source][group]
    std::vector<std::vector<Row>> raw_kv_;    // [source][position] (r > 1)
    std::vector<std::vector<Row>> raw_gate_;  // [source][position] (r > 1)
    std::vector<int64_t> fixed_groups_;       // [source] groups not to rewrite (bounded replay)
    std::vector<std::vector<int32_t>> sel_;   // [layer] selection used at the last position
    std::vector<int32_t> published_;          // last published selection
    std::vector<int32_t> candidates_;         // decoder candidates (rows)
    std::vector<double> layer_rms_;
    int64_t enc_floor_ = 0, dec_floor_ = 0;
};

}  // namespace kvrt::ced
