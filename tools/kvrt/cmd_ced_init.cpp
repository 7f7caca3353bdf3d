// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// `kvrt ced-init --preset tiny|base --seed N [--type f32|f16|bf16|q8_0|q4_0|q4_1]
//                [--window W] [--top-k K] [--vocab V] -o FILE`: writes a CED model of
// deterministic random weights (the internal generator of tests/support; it is
// not part of libkvrt's ABI). The file loads with kvrt_model_load like any model.
#include "commands.hpp"

#include "model/arch/ced_generator.hpp"
#include "util/error.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>

namespace kvrt_cli {

int cmd_ced_init(int argc, char** argv) {
    std::string out, preset = "tiny", type;
    uint64_t seed = 1;
    int window = 0, top_k = 0, vocab = 0, idx_dim = 0;
    auto usage = [] {
        std::fprintf(stderr,
                     "usage: kvrt ced-init [--preset tiny|base] [--seed N] [--type f32|f16|bf16|q8_0|q4_0|q4_1]\n"
                     "                     [--window W] [--top-k K] [--vocab V] [--idx-dim D] -o FILE\n");
        return 2;
    };
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        if (i + 1 >= argc) return usage();
        const char* v = argv[++i];
        if (a == "-o" || a == "--output") out = v;
        else if (a == "--preset") preset = v;
        else if (a == "--seed") seed = std::strtoull(v, nullptr, 10);
        else if (a == "--type") type = v;
        else if (a == "--window") window = std::atoi(v);
        else if (a == "--top-k") top_k = std::atoi(v);
        else if (a == "--vocab") vocab = std::atoi(v);
        else if (a == "--idx-dim") idx_dim = std::atoi(v);  // indexer key width (4-bit keys: a multiple of 32)
        else return usage();
    }
    if (out.empty()) return usage();
    if (type.empty()) type = preset == "base" ? "q8_0" : "f32";
    using kvrt::TensorType;
    const std::pair<const char*, TensorType> types[] = {{"f32", TensorType::F32},   {"f16", TensorType::F16},
                                                        {"bf16", TensorType::BF16}, {"q8_0", TensorType::Q8_0},
                                                        {"q4_0", TensorType::Q4_0}, {"q4_1", TensorType::Q4_1}};
    kvrt::ced::GeneratorOptions o;
    bool known = false;
    for (const auto& [name, t] : types)
        if (type == name) o.weight_type = t, known = true;
    if (!known) {
        std::fprintf(stderr, "kvrt ced-init: unknown --type '%s'\n", type.c_str());
        return 2;
    }
    try {
        o.cfg = kvrt::ced::preset(preset);
        if (window) o.cfg.window = window;
        if (top_k) o.cfg.top_k = top_k;
        if (vocab) o.cfg.n_vocab = vocab;
        if (idx_dim) o.cfg.idx_dim = idx_dim;
        o.cfg.validate();
        o.seed = seed;
        kvrt::ced::write_random_gguf(out, o);
    } catch (const kvrt::Error& e) {
        std::fprintf(stderr, "kvrt ced-init: %s\n", e.what());
        return 1;
    }
    std::printf("wrote %s: ced preset %s, %.1fM parameters, %s weights, seed %llu\n", out.c_str(), preset.c_str(),
                double(o.cfg.n_params()) / 1e6, type.c_str(), static_cast<unsigned long long>(seed));
    return 0;
}

}  // namespace kvrt_cli
