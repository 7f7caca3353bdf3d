// LlamaConfig: the hyper-parameters of a `llama`-architecture model, read
// from GGUF metadata ("llama.*" keys) and checked for consistency.
#pragma once

#include <cstdint>
#include <string>

namespace kvrt {

class GgufFile;

// How RoPE pairs the dimensions of a head (llama.cpp's rope types).
enum class RopeType : uint8_t {
    Norm = 0,  // adjacent pairs (x[2i], x[2i+1]): LLM_ARCH_LLAMA (the converter permutes Q/K for it)
    Neox = 2,  // halves (x[i], x[i + n_rot/2])
};

struct LlamaConfig {
    uint32_t n_layers = 0;
    uint32_t n_embd = 0;
    uint32_t n_ff = 0;
    uint32_t n_heads = 0;
    uint32_t n_kv_heads = 0;
    uint32_t head_dim = 0;
    uint32_t n_vocab = 0;
    uint32_t n_ctx_train = 0;
    uint32_t n_rot = 0;            // rotated dims per head (<= head_dim)
    float rope_theta = 10000.0f;
    float rms_eps = 1e-5f;
    RopeType rope_type = RopeType::Norm;
    // Sliding window: 0 = none. When set, layers whose index matches the
    // pattern attend only to their last `sliding_window` positions.
    uint32_t sliding_window = 0;
    // Every `swa_pattern`-th layer is full when a window is set (Gemma-2 style
    // "llama.attention.sliding_window_pattern"); 0 or 1 = every layer windowed.
    uint32_t swa_pattern = 0;

    bool layer_is_window(uint32_t layer) const noexcept {
        if (sliding_window == 0) return false;
        if (swa_pattern <= 1) return true;
        return (layer + 1) % swa_pattern != 0;
    }
    uint32_t q_dim() const noexcept { return n_heads * head_dim; }
    uint32_t kv_dim() const noexcept { return n_kv_heads * head_dim; }
};

// Reads and validates the config. Throws kvrt::Error: KVRT_ERR_UNSUPPORTED
// when general.architecture is not "llama"; KVRT_ERR_BAD_FORMAT naming the key
// when a value is missing, zero, or inconsistent (heads not dividing the
// width, KV heads not dividing heads, absurd sizes).
LlamaConfig read_llama_config(const GgufFile& file);

}  // namespace kvrt
