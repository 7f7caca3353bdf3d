// Model: a loaded `llama`-architecture model — config, packed weights,
// tokenizer, metadata and its fingerprint. Immutable after load(); shared by
// contexts through std::shared_ptr (a context keeps its model alive).
#pragma once

#include "kernels/weight_matmul.hpp"
#include "model/gguf/gguf.hpp"
#include "model/arch/llama_config.hpp"

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace kvrt {

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

struct LlamaLayerWeights {
    std::vector<float> attn_norm;  // n_embd
    std::vector<float> ffn_norm;   // n_embd
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

    const LlamaConfig& config() const noexcept { return cfg_; }
    const GgufFile& file() const noexcept { return *file_; }
    const ModelFingerprint& fingerprint() const noexcept { return fp_; }
    const Tokenizer& tokenizer() const noexcept { return *tok_; }
    const std::string& name() const noexcept { return name_; }
    const std::string& architecture() const noexcept { return arch_; }

    const LlamaLayerWeights& layer(uint32_t i) const noexcept { return layers_[i]; }
    const std::vector<float>& output_norm() const noexcept { return output_norm_; }
    // The output head [n_vocab x n_embd] (token_embd when the model ties them).
    const PackedWeight& output() const noexcept { return *output_; }
    bool tied_output() const noexcept { return output_ == tok_embd_.get(); }

    // Writes the embedding of token (0 <= token < n_vocab) as n_embd floats.
    void embed(int32_t token, float* out) const { tok_embd_->dequantize_row(token, out); }

    // Tokenizer conveniences.
    bool is_eog(int32_t token) const noexcept;
    std::string_view token_piece(int32_t token) const;  // the bytes it stands for (specials: "")
    // Renders a conversation with the model's chat template (throws UNSUPPORTED
    // for a template kvrt does not recognise).
    std::string apply_chat(std::span<const ChatMessage> messages, bool add_assistant) const;

    uint64_t n_params() const noexcept { return n_params_; }
    uint64_t weight_bytes() const noexcept { return weight_bytes_; }
    // KV bytes per token of one layer for K/V elements of elem_bytes each.
    uint64_t kv_bytes_per_token_layer(uint32_t elem_bytes) const noexcept {
        return 2ull * cfg_.n_kv_heads * cfg_.head_dim * elem_bytes;
    }

private:
    Model() = default;
    std::unique_ptr<GgufFile> file_;
    LlamaConfig cfg_;
    ModelFingerprint fp_;
    std::string name_, arch_;
    std::vector<LlamaLayerWeights> layers_;
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
