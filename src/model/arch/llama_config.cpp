#include "model/arch/llama_config.hpp"

#include "model/gguf/gguf.hpp"
#include "util/error.hpp"

namespace kvrt {

namespace {
[[noreturn]] void bad(const GgufFile& f, const std::string& msg) {
    fail(KVRT_ERR_BAD_FORMAT, f.path() + ": " + msg);
}
}  // namespace

LlamaConfig read_llama_config(const GgufFile& f) {
    const std::string arch(f.architecture());
    if (arch == "ced")
        fail(KVRT_ERR_UNSUPPORTED, f.path() + ": architecture 'ced' loads with kvrt_ced_model_load "
                                              "(include/kvrt/ced.h), not kvrt_model_load");
    if (arch != "llama")
        fail(KVRT_ERR_UNSUPPORTED, f.path() + ": architecture '" + arch +
                                       "' is not supported (kvrt runs 'llama' models, and 'ced' through kvrt_ced_*)");
    LlamaConfig c;
    c.n_layers = f.require_u32(f.arch_key("block_count"));
    c.n_embd = f.require_u32(f.arch_key("embedding_length"));
    c.n_ff = f.require_u32(f.arch_key("feed_forward_length"));
    c.n_heads = f.require_u32(f.arch_key("attention.head_count"));
    c.n_kv_heads = f.get_u32(f.arch_key("attention.head_count_kv"), c.n_heads);
    c.n_ctx_train = f.get_u32(f.arch_key("context_length"), 2048);
    c.rope_theta = f.get_f32(f.arch_key("rope.freq_base"), 10000.0f);
    c.rms_eps = f.get_f32(f.arch_key("attention.layer_norm_rms_epsilon"), 1e-5f);
    c.sliding_window = f.get_u32(f.arch_key("attention.sliding_window"), 0);
    c.swa_pattern = f.get_u32(f.arch_key("attention.sliding_window_pattern"), 0);

    constexpr uint32_t kMaxDim = 1u << 16, kMaxLayers = 1024, kMaxHeads = 1024;
    if (c.n_layers == 0 || c.n_layers > kMaxLayers) bad(f, "block_count " + std::to_string(c.n_layers) + " out of range");
    if (c.n_embd == 0 || c.n_embd > kMaxDim) bad(f, "embedding_length " + std::to_string(c.n_embd) + " out of range");
    if (c.n_ff == 0 || c.n_ff > 4 * kMaxDim) bad(f, "feed_forward_length " + std::to_string(c.n_ff) + " out of range");
    if (c.n_heads == 0 || c.n_heads > kMaxHeads) bad(f, "head_count " + std::to_string(c.n_heads) + " out of range");
    if (c.n_kv_heads == 0 || c.n_kv_heads > c.n_heads || c.n_heads % c.n_kv_heads != 0)
        bad(f, "head_count_kv " + std::to_string(c.n_kv_heads) + " does not divide head_count " +
                   std::to_string(c.n_heads));
    if (c.n_embd % c.n_heads != 0)
        bad(f, "embedding_length " + std::to_string(c.n_embd) + " is not a multiple of head_count " +
                   std::to_string(c.n_heads));
    c.head_dim = f.get_u32(f.arch_key("attention.key_length"), c.n_embd / c.n_heads);
    if (f.get_u32(f.arch_key("attention.value_length"), c.head_dim) != c.head_dim)
        fail(KVRT_ERR_UNSUPPORTED, f.path() + ": key_length != value_length is not supported");
    if (c.head_dim == 0 || c.head_dim % 2 != 0 || c.head_dim > 1024)
        bad(f, "head width " + std::to_string(c.head_dim) + " must be even and at most 1024");
    c.n_rot = f.get_u32(f.arch_key("rope.dimension_count"), c.head_dim);
    if (c.n_rot == 0 || c.n_rot > c.head_dim || c.n_rot % 2 != 0)
        bad(f, "rope.dimension_count " + std::to_string(c.n_rot) + " must be even and at most the head width");
    if (!(c.rope_theta > 0.0f)) bad(f, "rope.freq_base must be positive");
    if (!(c.rms_eps > 0.0f) || c.rms_eps > 1.0f) bad(f, "layer_norm_rms_epsilon out of range");
    if (c.n_ctx_train == 0) bad(f, "context_length is 0");
    if (f.has(f.arch_key("rope.scaling.type"))) {
        const std::string_view t = f.get_string(f.arch_key("rope.scaling.type"), "none");
        if (t != "none" && f.get_f32(f.arch_key("rope.scaling.factor"), 1.0f) != 1.0f)
            fail(KVRT_ERR_UNSUPPORTED, f.path() + ": RoPE scaling '" + std::string(t) + "' is not supported");
    }
    c.rope_type = RopeType::Norm;
    return c;
}

}  // namespace kvrt
