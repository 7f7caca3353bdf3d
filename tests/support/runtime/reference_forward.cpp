// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

#include "runtime/reference_forward.hpp"

#include "model/arch/decoder_forward.hpp"
#include "model/model.hpp"
#include "util/error.hpp"

namespace kvrt::runtime {

namespace {
std::vector<float> one_pass(const Model& model, const int32_t* tokens, int32_t n, DType kv_dtype, KernelSet ks,
                            DType v_dtype, ActCodes act = {}) {
    const DecoderConfig& c = model.config();
    KVRT_CHECK(tokens != nullptr && n > 0, KVRT_ERR_INVALID_ARGUMENT, "reference forward: empty token list");
    for (int32_t i = 0; i < n; ++i)
        KVRT_CHECK(tokens[i] >= 0 && static_cast<uint32_t>(tokens[i]) < c.n_vocab, KVRT_ERR_OUT_OF_RANGE,
                   "token id " + std::to_string(tokens[i]) + " at index " + std::to_string(i) +
                       " is past the vocabulary (" + std::to_string(c.n_vocab) + ")");
    // The layers' types as a context's cache would have them (kv_layer_types.hpp).
    ContiguousKv kv(static_cast<int32_t>(c.n_kv_heads), static_cast<int32_t>(c.head_dim),
                    kv_layer_types(model, kv_dtype, v_dtype), n);
    std::vector<float> logits(static_cast<size_t>(n) * c.n_vocab);
    SeqStep step;
    step.kv = &kv;
    step.tokens = tokens;
    step.n_tokens = n;
    step.pos0 = 0;
    step.logits = logits.data();
    step.logits_all = true;
    ForwardScratch scratch;
    scratch.act = act;
    decoder_forward(model, std::span<SeqStep>(&step, 1), scratch, ks);
    return logits;
}
}  // namespace

std::vector<float> reference_forward(const Model& model, const int32_t* tokens, int32_t n, DType kv_dtype,
                                     ActCodes act) {
    return one_pass(model, tokens, n, kv_dtype, KernelSet::Reference, kv_dtype, act);
}

std::vector<float> uncached_forward(const Model& model, const int32_t* tokens, int32_t n, DType kv_dtype) {
    return one_pass(model, tokens, n, kv_dtype, KernelSet::Fast, kv_dtype);
}

std::vector<float> uncached_forward(const Model& model, const int32_t* tokens, int32_t n, DType k_dtype,
                                    DType v_dtype, ActCodes act) {
    return one_pass(model, tokens, n, k_dtype, KernelSet::Fast, v_dtype, act);
}

}  // namespace kvrt::runtime
