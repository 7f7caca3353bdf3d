// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// CedConfig: the shape of a CED model (causal encoder-decoder, DeepSeek-V4.1-Flash
// style; see /work/shared/docs/CED.md and docs/ced_gguf.md for every key).
//
// Layers [0, L/2) are the encoder, [L/2, L) the decoder. Every layer has a
// private sliding window of W K=V rows of width D. KV-source layers build a
// global bank (ratio r: one row per group of r positions); every other layer
// reuses the bank of the nearest source at or below it (layers below the first
// source have none). Index-source layers run their own indexer; the others
// reuse the last published selection. The first decoder layer is the one
// decoder source (r = 1); the decoder's index sources after it re-rank the
// candidates the decoder source publishes.
//
// from_gguf() reads `ced.*` metadata and validates everything (throws
// kvrt::Error(KVRT_ERR_BAD_FORMAT) naming the key); validate() does the same
// for a config built in code.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kvrt {
class GgufFile;
class GgufWriter;
}  // namespace kvrt

namespace kvrt::ced {

inline constexpr const char* kArch = "ced";

struct CedConfig {
    int32_t n_layers = 0;       // L (even): encoder L/2, decoder L/2
    int32_t n_embd = 0;         // hidden width
    int32_t n_ff = 0;           // SwiGLU inner width
    int32_t n_vocab = 0;
    int32_t n_ctx_train = 0;    // informational
    int32_t n_heads = 0;        // query heads H
    int32_t entry_dim = 0;      // D: width of a query head, a window row and a bank row
    int32_t rope_dims = 0;      // R: RoPE on the last R dims of queries, rows, indexer q/k
    float rope_theta = 10000.0f;
    float rms_eps = 1e-6f;
    int32_t window = 0;         // W
    std::vector<int32_t> source_layers;  // ascending; the last one is n_layers / 2
    std::vector<int32_t> source_ratios;  // one per source; the decoder source's is 1
    std::vector<int32_t> index_layers;   // ascending; contains every source layer
    int32_t idx_heads = 0;      // indexer query heads
    int32_t idx_dim = 0;        // indexer key / query head width (>= rope_dims)
    int32_t top_k = 0;          // rows selected per query
    int32_t cand_block = 0;     // decoder candidates: block of positions (public: 8)
    int32_t cand_blocks = 0;    // decoder candidates: blocks kept (public: 2048)

    // ---- derived (filled by validate())
    int32_t n_encoder = 0;              // L / 2
    std::vector<int32_t> bank_of;       // per layer: index into source_layers, -1 = none
    std::vector<int8_t> is_source;      // per layer
    std::vector<int8_t> is_index;       // per layer

    int32_t decoder_source() const { return n_encoder; }
    int32_t ratio_of_layer(int32_t l) const { return bank_of[l] < 0 ? 0 : source_ratios[bank_of[l]]; }
    int32_t n_sources() const { return static_cast<int32_t>(source_layers.size()); }

    // Checks every field and fills the derived ones. Throws
    // kvrt::Error(KVRT_ERR_BAD_FORMAT) whose message names the `ced.*` key.
    void validate();

    // Parameters of a model with this shape (tensor elements).
    uint64_t n_params() const;
};

// GGUF metadata keys (all under "ced.").
namespace key {
inline constexpr const char* kBlockCount = "ced.block_count";
inline constexpr const char* kEmbd = "ced.embedding_length";
inline constexpr const char* kFf = "ced.feed_forward_length";
inline constexpr const char* kVocab = "ced.vocab_size";
inline constexpr const char* kCtx = "ced.context_length";
inline constexpr const char* kHeads = "ced.attention.head_count";
inline constexpr const char* kEntry = "ced.attention.entry_length";
inline constexpr const char* kWindow = "ced.attention.sliding_window";
inline constexpr const char* kEps = "ced.attention.layer_norm_rms_epsilon";
inline constexpr const char* kRopeDims = "ced.rope.dimension_count";
inline constexpr const char* kRopeBase = "ced.rope.freq_base";
inline constexpr const char* kSrcLayers = "ced.kv_source.layers";
inline constexpr const char* kSrcRatios = "ced.kv_source.ratios";
inline constexpr const char* kIdxLayers = "ced.index_source.layers";
inline constexpr const char* kIdxHeads = "ced.indexer.head_count";
inline constexpr const char* kIdxDim = "ced.indexer.key_length";
inline constexpr const char* kTopK = "ced.indexer.top_k";
inline constexpr const char* kCandBlock = "ced.indexer.candidate_block";
inline constexpr const char* kCandBlocks = "ced.indexer.candidate_blocks";
}  // namespace key

// Reads and validates the `ced.*` metadata of f (general.architecture must be "ced").
CedConfig config_from_gguf(const GgufFile& f);
// Writes general.architecture = "ced" and every `ced.*` key of cfg.
void config_to_gguf(const CedConfig& cfg, GgufWriter& w);

// Named shapes for the generator: "tiny" (tests: 6 layers, width 64, W = 8)
// and "base" (~100M parameters, benchmarks). Throws INVALID_ARGUMENT for
// another name. The result is validated.
CedConfig preset(const std::string& name);

}  // namespace kvrt::ced
