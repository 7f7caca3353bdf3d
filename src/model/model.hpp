// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Model: a loaded model of any supported architecture (model/arch/architecture.hpp)
// — its architecture, config, packed weights, tokenizer (when the file has a
// vocabulary), metadata and fingerprint. Immutable after load(); shared by
// contexts through std::shared_ptr (a context keeps its model alive).
#pragma once

#include "kernels/weight_matmul.hpp"
#include "model/gguf/gguf.hpp"
#include "model/arch/architecture.hpp"
#include "model/arch/decoder_config.hpp"

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace kvrt {

class LoadTasks;

namespace ced {
struct CedWeights;
}
class Tokenizer;
class ChatTemplate;
struct ChatMessage;

// 128-bit fingerprint (XXH3-128 of the whole file: metadata and tensor data).
struct ModelFingerprint {
    uint64_t lo = 0;
    uint64_t hi = 0;
    bool operator==(const ModelFingerprint&) const = default;
    std::array<uint8_t, 16> bytes() const noexcept;
    std::string hex() const;
};

struct DecoderLayerWeights {
    std::vector<float> attn_norm;  // n_embd
    std::vector<float> ffn_norm;   // n_embd
    std::vector<float> bq, bk, bv;                     // qkv_bias: q_dim, kv_dim, kv_dim (else empty)
    std::vector<float> q_norm, k_norm;                 // qk_norm: head_dim each (else empty)
    std::vector<float> post_attn_norm, post_ffn_norm;  // post_norms: n_embd each (else empty)
    std::unique_ptr<PackedWeight> wq, wk, wv, wo;  // [q_dim x n_embd], [kv_dim x n_embd] x2, [n_embd x q_dim]
    std::unique_ptr<PackedWeight> w_gate, w_up;    // [n_ff x n_embd]
    std::unique_ptr<PackedWeight> w_down;          // [n_embd x n_ff]
};

// Progress of load: (fraction in [0,1], stage) -> false to cancel.
using ProgressFn = std::function<bool(float, const char*)>;

struct ModelLoadOptions {
    ProgressFn progress;
    int n_threads = 0;  // 0 = OpenMP default
    // Dequantise every matmul weight to f32 at load (f32 activations, no activation
    // quantisation). Weights of a type the quantised kernels lack (K-quants, ...) are
    // always dequantised.
    bool f32_weights = false;
};

class Model {
public:
    // Throws kvrt::Error (see kvrt_model_load for the statuses).
    static std::shared_ptr<const Model> load(const std::string& path, const ModelLoadOptions& opts = {});
    ~Model();

    const Architecture& arch() const noexcept { return *arch_info_; }
    bool is_ced() const noexcept { return arch_info_->family == ArchFamily::Ced; }
    // Decoder family: the full config. CED: only the shared sizes are set (n_layers,
    // n_embd, n_ff, n_heads, head_dim, n_vocab, n_ctx_train); its config is ced()->cfg.
    const DecoderConfig& config() const noexcept { return cfg_; }
    // The CED weights (nullptr for the decoder family).
    const ced::CedWeights* ced() const noexcept { return ced_.get(); }
    const std::shared_ptr<const ced::CedWeights>& ced_ptr() const noexcept { return ced_; }
    const GgufFile& file() const noexcept { return *file_; }
    const ModelFingerprint& fingerprint() const noexcept { return fp_; }
    // The vocabulary. A model without one (a CED file made by `kvrt ced-init`) runs on
    // token ids; tokenizer() then throws KVRT_ERR_UNSUPPORTED.
    bool has_tokenizer() const noexcept { return tok_ != nullptr; }
    const Tokenizer& tokenizer() const;
    const std::string& name() const noexcept { return name_; }
    const std::string& architecture() const noexcept { return arch_; }

    const DecoderLayerWeights& layer(uint32_t i) const noexcept { return layers_[i]; }
    const std::vector<float>& output_norm() const noexcept { return output_norm_; }
    // The output head [n_vocab x n_embd] (token_embd when the model ties them).
    const PackedWeight& output() const noexcept { return *output_; }
    bool tied_output() const noexcept { return output_ == tok_embd_.get(); }

    // Writes the embedding of token (0 <= token < n_vocab) as n_embd floats, times the
    // architecture's embedding scale.
    void embed(int32_t token, float* out) const;

    // Tokenizer conveniences.
    bool is_eog(int32_t token) const noexcept;
    std::string_view token_piece(int32_t token) const;  // the bytes it stands for (specials: "")
    // Renders a conversation with the model's chat template (throws UNSUPPORTED
    // for a template kvrt does not recognise).
    std::string apply_chat(std::span<const ChatMessage> messages, bool add_assistant) const;

    uint64_t n_params() const noexcept { return n_params_; }
    uint64_t weight_bytes() const noexcept { return weight_bytes_; }
    // Bytes of weights one decode step reads, as held in memory (decoder family): every
    // layer's packed matmul weights (padding included), norms and biases, the output norm
    // and head, one embedding row. The embedding table is not counted unless it is also the
    // head (tied). CED: the file's tensor bytes (an upper bound: not every tensor is read).
    uint64_t decode_weight_bytes() const noexcept;
    // KV bytes per token of one layer for K/V elements of elem_bytes each.
    uint64_t kv_bytes_per_token_layer(uint32_t elem_bytes) const noexcept {
        return 2ull * cfg_.n_kv_heads * cfg_.head_dim * elem_bytes;
    }


private:
    Model() = default;
    // Checks a decoder model's tensors, allocates its packed weights and adds the tasks that
    // pack them (load_tasks.hpp).
    void plan_decoder(const ModelLoadOptions& opts, LoadTasks& tasks);
    void set_ced_sizes();

    std::unique_ptr<GgufFile> file_;
    const Architecture* arch_info_ = nullptr;
    DecoderConfig cfg_;
    std::shared_ptr<const ced::CedWeights> ced_;
    ModelFingerprint fp_;
    std::string name_, arch_;
    std::vector<DecoderLayerWeights> layers_;
    std::vector<float> output_norm_;
    std::unique_ptr<PackedWeight> tok_embd_;
    std::unique_ptr<PackedWeight> output_own_;
    const PackedWeight* output_ = nullptr;
    std::unique_ptr<Tokenizer> tok_;
    std::unique_ptr<ChatTemplate> chat_;  // null when the template is not recognised
    std::string chat_error_;
    uint64_t n_params_ = 0;
    uint64_t weight_bytes_ = 0;
};

}  // namespace kvrt
