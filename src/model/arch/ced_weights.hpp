// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// CedWeights: the tensors of a CED model, loaded from a GGUF file whose
// metadata CedConfig validated. Matrices are repacked into PackedWeight (any
// type weight_matmul supports); norms and sinks must be F32. Every tensor's
// name, shape and type is checked (expect_tensor): a missing, misshapen or
// mistyped tensor throws kvrt::Error naming it.
//
// Tensor names (docs/ced_gguf.md), ne[0] first:
//   token_embd.weight [E, V]   output_norm.weight [E]   output.weight [E, V]
//   blk.l.attn_norm.weight [E]        blk.l.attn_q.weight [E, H*D]
//   blk.l.attn_kv.weight [E, D]       blk.l.attn_kv_norm.weight [D]
//   blk.l.attn_output.weight [H*D, E] blk.l.attn_sinks.weight [H]
//   blk.l.ffn_norm.weight [E]  blk.l.ffn_gate.weight / ffn_up.weight [E, F]  blk.l.ffn_down.weight [F, E]
//   sources:       blk.l.bank_kv.weight [E, D]  blk.l.bank_gate.weight [E, D] (r > 1)
//                  blk.l.bank_norm.weight [D]   blk.l.idx_k.weight [D, Di]  blk.l.idx_k_norm.weight [Di]
//   index sources: blk.l.idx_q.weight [E, Hi*Di]  blk.l.idx_w.weight [E, Hi]
//
// Immutable after construction; share across threads freely.
#pragma once

#include "kernels/weight_matmul.hpp"
#include "model/arch/ced_config.hpp"

#include <memory>
#include <optional>
#include <vector>

namespace kvrt {
class GgufFile;
}

namespace kvrt::ced {

struct CedLayerWeights {
    std::vector<float> attn_norm, kv_norm, sinks, ffn_norm;
    std::optional<PackedWeight> wq, wkv, wo, ffn_gate, ffn_up, ffn_down;
    // source
    std::optional<PackedWeight> bank_kv, bank_gate, idx_k;
    std::vector<float> bank_norm, idx_k_norm;
    // index source
    std::optional<PackedWeight> idx_q, idx_w;
};

struct CedWeights {
    CedConfig cfg;
    std::optional<PackedWeight> tok_embd;  // V rows of E
    std::optional<PackedWeight> output;    // V rows of E
    std::vector<float> output_norm;
    std::vector<CedLayerWeights> layers;

    // Reads cfg (config_from_gguf) and every tensor of f.
    static std::shared_ptr<const CedWeights> load(const GgufFile& f);
};

}  // namespace kvrt::ced
