// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// The reference forward: no cache at all. Every position of a token sequence
// is recomputed from scratch in one pass with the ref/ kernels (matmul_ref,
// ref::rms_norm, ref::rope, ref::attention_*: naive loops, double
// accumulation), K/V rounded to kv_dtype exactly as a cache would store them
// and kept only for the duration of the call. Used by the tests as the oracle
// of the cached runtime.
#pragma once

#include "model/arch/decoder_forward.hpp"
#include "util/dtype.hpp"

#include <cstdint>
#include <vector>

namespace kvrt {
class Model;
}

namespace kvrt::runtime {

// Returns n x n_vocab logits (row t = the logits after token t).
std::vector<float> reference_forward(const Model& model, const int32_t* tokens, int32_t n, DType kv_dtype,
                                     ActCodes act = {});

// The same single pass with the fast kernels and no cache (a contiguous K/V
// buffer for this call only): the "uncached" run the tests compare with the
// cached runtime bit for bit.
std::vector<float> uncached_forward(const Model& model, const int32_t* tokens, int32_t n, DType kv_dtype);
// K rows of k_dtype, V rows of v_dtype (the quantised KV types: util/kv_quant.hpp).
// act: the activation codes of the quantised matmuls (ContextParams::act_bits; the default
// is a context's default, as in the other overloads).
std::vector<float> uncached_forward(const Model& model, const int32_t* tokens, int32_t n, DType k_dtype,
                                    DType v_dtype, ActCodes act = {});

}  // namespace kvrt::runtime
