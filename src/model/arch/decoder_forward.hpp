// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// The forward pass of every decoder-family architecture (llama, qwen2, gemma3;
// model/arch/architecture.hpp) over a KV store, switched by DecoderConfig features.
//
// One call runs a batch of sequences: each contributes n >= 1 consecutive new
// tokens at positions [pos0, pos0 + n) (a prefill chunk, or one decode
// token). Per layer: RMSNorm, Q/K/V projections, RoPE (llama.cpp's NORM
// pairing for LLM_ARCH_LLAMA: adjacent pairs (x[2i], x[2i+1]), angle
// pos * theta^(-2i/n_rot)), the new K/V rows written into the store *first*,
// then causal attention of the new queries over rows [0, pos0 + n) (sliding
// window layers over their last W), output projection + residual, RMSNorm,
// SwiGLU FFN + residual; then the final norm and the output head for the rows
// that want logits.
//
// Exactness: every step is row-wise or (attention) depends only on the row's
// own keys, and the kernels promise reduction orders that depend only on the
// row, so a row's logits do not depend on chunking, batching, or on whether
// earlier rows came from the prefix cache. The same code runs with the
// reference kernels (ref/) for the reference forward.
#pragma once

#include "kernels/attention.hpp"
#include "kernels/paged_kv.hpp"
#include "kernels/weight_matmul.hpp"
#include "model/arch/kv_layer_types.hpp"
#include "util/dtype.hpp"

#include <cstddef>
#include <cstdint>
#include <atomic>
#include <span>
#include <vector>

namespace kvrt {

class Model;

// Where the forward writes and reads K/V rows of one sequence.
class KvStore {
public:
    virtual ~KvStore() = default;
    // The K and V rows' types of `layer` (util/kv_quant.hpp; kv_layer_types.hpp: a layer's
    // K type may differ from the others').
    virtual DType dtype(int32_t layer) const noexcept = 0;
    virtual DType v_dtype(int32_t layer) const noexcept = 0;
    // Rows of `layer` at position pos (already reserved): n_kv_heads x head_dim elements.
    virtual uint8_t* k_row_mut(int32_t layer, int64_t pos) = 0;
    virtual uint8_t* v_row_mut(int32_t layer, int64_t pos) = 0;
    // The kernels' view of `layer` covering positions [0, n_tokens).
    virtual PagedKV view(int32_t layer, int64_t n_tokens) = 0;
};

// A contiguous store for one sequence (capacity positions): the reference
// forward's per-call K/V and the tests' uncached runs. Not a cache: it lives
// for one call.
class ContiguousKv final : public KvStore {
public:
    // K and V rows of each layer's types (types.k/v: one per layer).
    ContiguousKv(int32_t n_kv_heads, int32_t head_dim, const KvLayerTypes& types, int64_t capacity);
    // Every layer's K and V rows of one type.
    ContiguousKv(int32_t n_layers, int32_t n_kv_heads, int32_t head_dim, DType dtype, int64_t capacity);
    DType dtype(int32_t layer) const noexcept override { return types_.k[static_cast<size_t>(layer)]; }
    DType v_dtype(int32_t layer) const noexcept override { return types_.v[static_cast<size_t>(layer)]; }
    uint8_t* k_row_mut(int32_t layer, int64_t pos) override;
    uint8_t* v_row_mut(int32_t layer, int64_t pos) override;
    PagedKV view(int32_t layer, int64_t n_tokens) override;

private:
    int32_t n_kv_heads_, head_dim_;
    KvLayerTypes types_;
    int64_t capacity_;
    std::vector<size_t> row_bytes_, v_row_bytes_;  // per layer
    std::vector<size_t> at_;                       // per layer: where its rows start in data_
    std::vector<uint8_t> data_;                    // [layer][K rows | V rows]
    std::vector<const uint8_t*> ptrs_;             // one "block" per layer
};

struct SeqStep {
    KvStore* kv = nullptr;
    const int32_t* tokens = nullptr;
    int32_t n_tokens = 0;
    int64_t pos0 = 0;
    // logits_all: n_tokens x n_vocab floats; else the last token's n_vocab (nullptr = none wanted).
    float* logits = nullptr;
    bool logits_all = false;
    // With logits_all: NULL = every row; else only rows t with logits_mask[t] != 0, written
    // one after another (the k-th wanted row to logits + k x n_vocab).
    const uint8_t* logits_mask = nullptr;
};

enum class KernelSet : uint8_t { Fast, Reference };

// The activation code width of each kind of quantised weight matmul (the context option
// kvrt_context_config.act_bits, kernels/weight_matmul.hpp ActBits). k, v: the K and V
// projections, whose outputs the cache stores and every later token attends to; other: Q,
// the attention output and the FFN; head: the output head. The default (act_bits 0, the same
// as 9 since 0.3.3) gives the K/V projections 16-bit codes and the rest 8-bit ones with their
// outlier blocks' residuals (ActBits::Q8R): on the three real models that puts kvrt's mean KL
// divergence from a float64 forward at 0.20-0.44x llama.cpp's, for 16-bit codes on ~1.5-6%
// of the matmul work and residuals on 0.4-3% of the 8-bit blocks (scripts/reference/README.md,
// "The default since 0.3.3").
// act_bits 9, the outlier-residual mode (the C API's KVRT_ACT_BITS_OUTLIERS): the default's computation.
inline constexpr int kActBitsOutliers = 9;
struct ActCodes {
    ActBits k = ActBits::Q16, v = ActBits::Q16;
    ActBits other = ActBits::Q8R;
    ActBits head = ActBits::Q8R;
    ActCodes() = default;
    ActCodes(ActBits all) : k(all), v(all), other(all), head(all) {}  // NOLINT: every matmul the same width
    // act_bits 0 (the default) or 9 (the same), 8 or 16; anything else is the caller's to refuse first.
    static ActCodes from_option(int act_bits) {
        return act_bits == 8 ? ActCodes(ActBits::Q8) : act_bits == 16 ? ActCodes(ActBits::Q16) : ActCodes();
    }
};

// Reusable scratch buffers of the forward (one per context; grows to the largest batch).
struct ForwardScratch {
    std::vector<float> x, xn, q, k, v, att, gate, up, logits_rows;
    std::vector<int32_t> pos;
    std::vector<PagedKV> views;
    std::vector<DecodeSeq> decode;
    std::vector<float> team;             // decode path: per-thread residual copies
    std::vector<uint8_t*> krow, vrow;    // decode path: cache rows per (layer, row)
    std::vector<float> rope_cs;          // team path: RoPE (cos, sin) pairs per (base, row)
    MatmulTeamBuffer team_act;           // team prefill: the matmuls' quantised activations
    // Set by the owner (a Context): checked before each layer of a batch of more than
    // kTeamRows rows; when true the forward throws KVRT_ERR_CANCELLED (rows it wrote are
    // the caller's to roll back, as for any failure).
    const std::atomic<bool>* cancel = nullptr;
    // Set by the owner: the activation code widths of the quantised weight matmuls
    // (ActCodes; the context option act_bits). Both forward paths (fast and reference)
    // honour it.
    ActCodes act;
};

// Runs the forward for a batch. Token ids must be < n_vocab and the stores must
// have room for the rows (the caller reserved them). n_threads = 0: OpenMP default.
void decoder_forward(const Model& model, std::span<SeqStep> batch, ForwardScratch& scratch, KernelSet kernels,
                   int n_threads = 0);

}  // namespace kvrt
