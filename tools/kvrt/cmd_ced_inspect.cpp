// `kvrt ced-inspect FILE [--tokens N]`: KV bytes per token of a CED model by
// component (each bank's main rows and indexer keys per ratio, the per-sequence
// window constant) beside a dense GQA model of the same width and depth; then
// a prompt of N random tokens (default 256) is prefilled and the caches' own
// accounting is printed and checked against the report.
#include "commands.hpp"

#include <kvrt/kvrt.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace kvrt_cli {

int cmd_ced_inspect(int argc, char** argv) {
    std::string path;
    long long n = 256;
    for (int i = 1; i < argc; i++) {
        if (std::strcmp(argv[i], "--tokens") == 0 && i + 1 < argc) n = std::atoll(argv[++i]);
        else if (argv[i][0] != '-' && path.empty()) path = argv[i];
        else {
            std::fprintf(stderr, "usage: kvrt ced-inspect FILE.gguf [--tokens N]\n");
            return 2;
        }
    }
    if (path.empty() || n < 1) {
        std::fprintf(stderr, "usage: kvrt ced-inspect FILE.gguf [--tokens N]\n");
        return 2;
    }
    kvrt_ced_model* model = nullptr;
    if (kvrt_ced_model_load(&model, path.c_str()) != KVRT_OK) {
        std::fprintf(stderr, "kvrt ced-inspect: %s\n", kvrt_last_error());
        return 1;
    }
    kvrt_ced_memory mem;
    mem.struct_size = sizeof mem;
    kvrt_ced_memory_get(&mem, model);
    std::printf("%s: CED, %u layers (encoder %u + decoder %u), W = %u, elements f32\n", path.c_str(), mem.n_layers,
                mem.n_layers / 2, mem.n_layers / 2, mem.window);
    std::printf("KV bytes per token by component:\n");
    for (uint32_t s = 0; s < mem.n_sources; s++) {
        int32_t layer = 0, ratio = 0;
        double mb = 0, ib = 0;
        kvrt_ced_memory_source(&layer, &ratio, &mb, &ib, model, s);
        std::printf("  bank %u (source layer %d, r = %d): main %.2f B/token, indexer %.2f B/token\n", s, layer, ratio,
                    mb, ib);
    }
    std::printf("  global KV (prefix-cacheable): %.2f B/token (main %.2f + indexer %.2f)\n", mem.global_bytes_per_token,
                mem.main_bytes_per_token, mem.indexer_bytes_per_token);
    std::printf("  windows: %llu B per sequence, whatever the context length\n",
                static_cast<unsigned long long>(mem.window_bytes_per_sequence));
    std::printf("dense GQA of the same width and depth (%u layers, %u KV heads x %u): %.2f B/token\n", mem.n_layers,
                mem.dense_kv_heads, mem.dense_head_dim, mem.dense_bytes_per_token);
    std::printf("  CED global KV = %.3fx dense; at 128K tokens: CED %.1f MiB + %.2f MiB windows, dense %.1f MiB\n",
                mem.global_bytes_per_token / mem.dense_bytes_per_token,
                mem.global_bytes_per_token * 131072 / 1048576.0, mem.window_bytes_per_sequence / 1048576.0,
                mem.dense_bytes_per_token * 131072 / 1048576.0);

    kvrt_ced_session* sess = nullptr;
    kvrt_ced_session_config cfg;
    kvrt_ced_session_config_init(&cfg, sizeof cfg);
    int rc = 0;
    uint64_t seq = 0;
    std::vector<int32_t> toks(static_cast<size_t>(n));
    for (size_t i = 0; i < toks.size(); i++) toks[i] = static_cast<int32_t>((i * 7919 + 13) % 251);
    if (kvrt_ced_session_create(&sess, model, &cfg) != KVRT_OK || kvrt_ced_seq_create(&seq, sess) != KVRT_OK ||
        kvrt_ced_prefill(nullptr, sess, seq, toks.data(), toks.size(), KVRT_CED_PREFILL_CED, KVRT_CED_RESUME_COLD) !=
            KVRT_OK) {
        std::fprintf(stderr, "kvrt ced-inspect: %s\n", kvrt_last_error());
        rc = 1;
    } else {
        double bpt = 0;
        uint64_t bank = 0, win = 0;
        kvrt_ced_session_bytes(&bpt, &bank, &win, sess);
        std::printf("cache accounting after a %lld-token CED prefill (blocks of %d): bank cache %.2f B/token (%s the "
                    "report), %llu B in use; window cache %llu B in use\n",
                    n, cfg.block_tokens, bpt, bpt == mem.global_bytes_per_token ? "matches" : "DIFFERS FROM",
                    static_cast<unsigned long long>(bank), static_cast<unsigned long long>(win));
        if (bpt != mem.global_bytes_per_token) rc = 1;
    }
    kvrt_ced_session_destroy(sess);
    kvrt_ced_model_destroy(model);
    return rc;
}

}  // namespace kvrt_cli
