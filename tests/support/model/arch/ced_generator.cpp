// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

#include "model/arch/ced_generator.hpp"

#include "model/gguf/gguf_writer.hpp"
#include "formats/tensor_type_quantize.hpp"
#include "util/error.hpp"

#include <cmath>
#include <string>
#include <vector>

namespace kvrt::ced {
namespace {

uint64_t splitmix(uint64_t& s) {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

uint64_t name_seed(uint64_t seed, const std::string& name) {
    uint64_t h = 1469598103934665603ull ^ seed;  // FNV-1a over the name, keyed by the seed
    for (unsigned char ch : name) h = (h ^ ch) * 1099511628211ull;
    uint64_t s = h;
    return splitmix(s);
}

// n values uniform in [center - a, center + a] with a = sqrt(3 * var) (variance var around center).
std::vector<float> draw(uint64_t seed, const std::string& name, uint64_t n, double var, double center = 0) {
    uint64_t s = name_seed(seed, name);
    const double a = std::sqrt(3.0 * var);
    std::vector<float> v(n);
    for (uint64_t i = 0; i < n; i++) {
        double u = static_cast<double>(splitmix(s) >> 11) * (1.0 / 9007199254740992.0);  // [0, 1)
        v[i] = static_cast<float>(center + (2 * u - 1) * a);
    }
    return v;
}

struct Gen {
    GgufWriter& w;
    uint64_t seed;
    TensorType type;
    void matrix(const std::string& name, uint64_t k, uint64_t n, double var) {
        std::vector<float> v = draw(seed, name, k * n, var);
        w.add_tensor_quantized(name, type, {k, n}, v.data());
    }
    void vec(const std::string& name, uint64_t n, double var, double center) {
        std::vector<float> v = draw(seed, name, n, var, center);
        w.add_tensor(name, TensorType::F32, {n}, v.data(), n * sizeof(float));
    }
};

std::string blk(int32_t l, const char* name) { return "blk." + std::to_string(l) + "." + name; }

}  // namespace

void write_random_gguf(const std::string& path, const GeneratorOptions& opt) {
    GgufWriter w;
    fill_random_gguf(w, opt);
    w.write(path);
}

void fill_random_gguf(GgufWriter& w, const GeneratorOptions& opt) {
    CedConfig c = opt.cfg;
    c.validate();
    const TensorType t = opt.weight_type;
    KVRT_CHECK(t == TensorType::F32 || t == TensorType::F16 || t == TensorType::BF16 || t == TensorType::Q8_0 ||
                   t == TensorType::Q4_0 || t == TensorType::Q4_1,
               KVRT_ERR_INVALID_ARGUMENT,
               std::string("ced generator: weight type ") + tensor_type_name(t) +
                   " is not one of f32, f16, bf16, q8_0, q4_0, q4_1");
    w.set_string("general.name", "ced-random");
    config_to_gguf(c, w);
    w.set_u64("ced.generator.seed", opt.seed);
    Gen g{w, opt.seed, t};
    const uint64_t E = c.n_embd, V = c.n_vocab, H = c.n_heads, D = c.entry_dim, F = c.n_ff;
    const uint64_t Hi = c.idx_heads, Di = c.idx_dim;
    const double deep = 2.0 * c.n_layers;
    g.matrix("token_embd.weight", E, V, 1.0);
    g.vec("output_norm.weight", E, 0.01 / 3, 1.0);
    g.matrix("output.weight", E, V, 4.0 / E);
    for (int32_t l = 0; l < c.n_layers; l++) {
        g.vec(blk(l, "attn_norm.weight"), E, 0.01 / 3, 1.0);
        g.matrix(blk(l, "attn_q.weight"), E, H * D, 1.0 / E);
        g.matrix(blk(l, "attn_kv.weight"), E, D, 1.0 / E);
        g.vec(blk(l, "attn_kv_norm.weight"), D, 0.01 / 3, 1.0);
        g.matrix(blk(l, "attn_output.weight"), H * D, E, 1.0 / (H * D * deep));
        g.vec(blk(l, "attn_sinks.weight"), H, 0.25 / 3, 0.0);
        g.vec(blk(l, "ffn_norm.weight"), E, 0.01 / 3, 1.0);
        g.matrix(blk(l, "ffn_gate.weight"), E, F, 1.0 / E);
        g.matrix(blk(l, "ffn_up.weight"), E, F, 1.0 / E);
        g.matrix(blk(l, "ffn_down.weight"), F, E, 1.0 / (F * deep));
        if (c.is_source[l]) {
            g.matrix(blk(l, "bank_kv.weight"), E, D, 1.0 / E);
            if (c.ratio_of_layer(l) > 1) g.matrix(blk(l, "bank_gate.weight"), E, D, 1.0 / E);
            g.vec(blk(l, "bank_norm.weight"), D, 0.01 / 3, 1.0);
            g.matrix(blk(l, "idx_k.weight"), D, Di, 1.0 / D);
            g.vec(blk(l, "idx_k_norm.weight"), Di, 0.01 / 3, 1.0);
        }
        if (c.is_index[l]) {
            g.matrix(blk(l, "idx_q.weight"), E, Hi * Di, 1.0 / E);
            g.matrix(blk(l, "idx_w.weight"), E, Hi, 1.0 / E);
        }
    }
}

}  // namespace kvrt::ced
