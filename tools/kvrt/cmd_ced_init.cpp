// `kvrt ced-init --preset tiny|base --seed N [--type f32|f16|bf16|q8_0|q4_0|q4_1]
//                [--window W] [--top-k K] -o FILE`: writes a CED model of
// deterministic random weights (kvrt/ced.h).
#include "commands.hpp"

#include <kvrt/kvrt.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace kvrt_cli {

int cmd_ced_init(int argc, char** argv) {
    kvrt_ced_init_config cfg;
    kvrt_ced_init_config_init(&cfg, sizeof cfg);
    std::string out, preset = "tiny", type;
    auto usage = [] {
        std::fprintf(stderr,
                     "usage: kvrt ced-init [--preset tiny|base] [--seed N] [--type f32|f16|bf16|q8_0|q4_0|q4_1]\n"
                     "                     [--window W] [--top-k K] -o FILE\n");
        return 2;
    };
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        if (i + 1 >= argc) return usage();
        const char* v = argv[++i];
        if (a == "-o" || a == "--output") out = v;
        else if (a == "--preset") preset = v;
        else if (a == "--seed") cfg.seed = std::strtoull(v, nullptr, 10);
        else if (a == "--type") type = v;
        else if (a == "--window") cfg.window = std::atoi(v);
        else if (a == "--top-k") cfg.top_k = std::atoi(v);
        else return usage();
    }
    if (out.empty()) return usage();
    cfg.preset = preset.c_str();
    if (type.empty()) type = preset == "base" ? "q8_0" : "f32";
    const char* names[] = {"f32", "f16", "bf16", "q8_0", "q4_0", "q4_1"};
    cfg.weight_type = -1;
    for (int t = 0; t < 6; t++)
        if (type == names[t]) cfg.weight_type = t;
    if (cfg.weight_type < 0) {
        std::fprintf(stderr, "kvrt ced-init: unknown --type '%s'\n", type.c_str());
        return 2;
    }
    uint64_t n = 0;
    if (kvrt_ced_param_count(&n, &cfg) != KVRT_OK || kvrt_ced_write_gguf(out.c_str(), &cfg) != KVRT_OK) {
        std::fprintf(stderr, "kvrt ced-init: %s\n", kvrt_last_error());
        return 1;
    }
    std::printf("wrote %s: ced preset %s, %.1fM parameters, %s weights, seed %llu\n", out.c_str(), preset.c_str(),
                double(n) / 1e6, type.c_str(), static_cast<unsigned long long>(cfg.seed));
    return 0;
}

}  // namespace kvrt_cli
