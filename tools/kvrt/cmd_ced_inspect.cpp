// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// `kvrt ced-inspect FILE [--tokens N] [--kv-type T] [--bank-type T]` (also what `kvrt inspect`
// prints for a CED model): KV bytes per token of a CED model by component (each
// bank's main rows and indexer keys per ratio, the per-sequence window constant)
// beside a dense GQA model of the same width and depth; then a prompt of N random
// tokens (default 256) is prefilled (CED prefill) in a context and the context's
// cache accounting is printed and checked against the report.
#include "cli_common.hpp"
#include "commands.hpp"

#include <kvrt/kvrt.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace kvrt_cli {

int cmd_ced_inspect(int argc, char** argv) {
    std::string path, type = "f16", bank_type;
    long long n = 256;
    auto usage = [] {
        std::fprintf(stderr, "usage: kvrt ced-inspect FILE.gguf [--tokens N] [--kv-type f32|f16|bf16|int8|fp8] "
                             "[--bank-type f32|f16|bf16|fp4]\n");
        return 2;
    };
    for (int i = 1; i < argc; i++) {
        if (std::strcmp(argv[i], "--tokens") == 0 && i + 1 < argc) n = std::atoll(argv[++i]);
        else if (std::strcmp(argv[i], "--kv-type") == 0 && i + 1 < argc) type = argv[++i];
        else if (std::strcmp(argv[i], "--bank-type") == 0 && i + 1 < argc) bank_type = argv[++i];
        else if (argv[i][0] != '-' && path.empty()) path = argv[i];
        else return usage();
    }
    // Windows take kv_dtype; banks and indexer keys bank_dtype (default: kv_dtype when it is a
    // float type, else f16: kvrt/context.h).
    const int32_t dtype = kv_type_from_name(type);
    int32_t bank = bank_type.empty() ? (dtype == KVRT_DTYPE_I8 || dtype == KVRT_DTYPE_FP8_E4M3 ? KVRT_DTYPE_F16 : dtype)
                                     : kv_type_from_name(bank_type);
    if (path.empty() || n < 1 || dtype < 0 || dtype == KVRT_DTYPE_FP4 || bank < 0 || bank == KVRT_DTYPE_I8 ||
        bank == KVRT_DTYPE_FP8_E4M3)
        return usage();
    kvrt_model* model = nullptr;
    if (kvrt_model_load(&model, path.c_str(), nullptr) != KVRT_OK) {
        std::fprintf(stderr, "kvrt ced-inspect: %s\n", kvrt_last_error());
        return 1;
    }
    // The banks' figures at the bank type, the windows' at the window type (kvrt_ced_memory_get
    // reads FP4 as 4-bit banks and I8 / FP8 as quantised windows).
    kvrt_ced_memory mem, win;
    kvrt_ced_memory_init(&mem, sizeof mem);
    kvrt_ced_memory_init(&win, sizeof win);
    if (kvrt_ced_memory_get(&mem, model, bank) != KVRT_OK || kvrt_ced_memory_get(&win, model, dtype) != KVRT_OK) {
        std::fprintf(stderr, "kvrt ced-inspect: %s\n", kvrt_last_error());
        kvrt_model_destroy(model);
        return 1;
    }
    std::printf("%s: CED, %u layers (encoder %u + decoder %u), W = %u, banks %s, windows %s\n", path.c_str(),
                mem.n_layers, mem.n_layers / 2, mem.n_layers / 2, mem.window, kv_type_name(bank), type.c_str());
    std::printf("KV bytes per token by component (scales included):\n");
    for (uint32_t s = 0; s < mem.n_sources; s++) {
        int32_t layer = 0, ratio = 0;
        double mb = 0, ib = 0;
        kvrt_ced_memory_source(&layer, &ratio, &mb, &ib, model, s, bank);
        std::printf("  bank %u (source layer %d, r = %d): main %.2f B/token, indexer %.2f B/token\n", s, layer, ratio,
                    mb, ib);
    }
    std::printf("  global KV (prefix-cacheable): %.2f B/token (main %.2f + indexer %.2f)\n", mem.global_bytes_per_token,
                mem.main_bytes_per_token, mem.indexer_bytes_per_token);
    std::printf("  windows: %llu B per sequence, whatever the context length\n",
                static_cast<unsigned long long>(win.window_bytes_per_sequence));
    std::printf("  global KV by bank type:");
    for (int32_t t : {KVRT_DTYPE_F32, KVRT_DTYPE_F16, KVRT_DTYPE_BF16, KVRT_DTYPE_FP4}) {
        kvrt_ced_memory m2;
        kvrt_ced_memory_init(&m2, sizeof m2);
        if (kvrt_ced_memory_get(&m2, model, t) == KVRT_OK)
            std::printf(" %s %.2f", kv_type_name(t), m2.global_bytes_per_token);
        else
            std::printf(" %s (n/a: %s)", kv_type_name(t), kvrt_last_error());
    }
    std::printf(" B/token\n");
    std::printf("dense GQA of the same width and depth (%u layers, %u KV heads x %u, %s): %.2f B/token\n",
                mem.n_layers, win.dense_kv_heads, win.dense_head_dim, type.c_str(), win.dense_bytes_per_token);
    std::printf("  CED global KV = %.3fx dense; at 128K tokens: CED %.1f MiB + %.2f MiB windows, dense %.1f MiB\n",
                mem.global_bytes_per_token / win.dense_bytes_per_token,
                mem.global_bytes_per_token * 131072 / 1048576.0, win.window_bytes_per_sequence / 1048576.0,
                win.dense_bytes_per_token * 131072 / 1048576.0);

    kvrt_context_config cfg;
    kvrt_context_config_init(&cfg, sizeof cfg);
    cfg.kv_dtype = dtype;
    cfg.bank_dtype = bank;
    cfg.n_ctx = static_cast<uint32_t>(n);
    cfg.ced_prefill_mode = KVRT_CED_PREFILL_CED;
    cfg.ced_resume = KVRT_CED_RESUME_COLD;
    kvrt_context* ctx = nullptr;
    kvrt_cache* cache = nullptr;
    int rc = 0;
    std::vector<int32_t> toks(static_cast<size_t>(n));
    for (size_t i = 0; i < toks.size(); i++) toks[i] = static_cast<int32_t>((i * 7919 + 13) % 251);
    kvrt_cache_stats st;
    st.struct_size = sizeof st;
    if (kvrt_context_create(&ctx, model, &cfg) != KVRT_OK ||
        kvrt_context_prefill(nullptr, ctx, 0, toks.data(), toks.size()) != KVRT_OK ||
        kvrt_context_get_cache(&cache, ctx) != KVRT_OK || kvrt_cache_stats_get(&st, cache) != KVRT_OK) {
        std::fprintf(stderr, "kvrt ced-inspect: %s\n", kvrt_last_error());
        rc = 1;
    } else {
        const double bpt = st.bytes_per_token;
        std::printf("cache accounting after a %lld-token CED prefill (blocks of %u): bank cache %.2f B/token (%s the "
                    "report), %llu B in use\n",
                    n, cfg.block_tokens, bpt, bpt == mem.global_bytes_per_token ? "matches" : "DIFFERS FROM",
                    static_cast<unsigned long long>(st.bytes_in_use));
        if (bpt != mem.global_bytes_per_token) rc = 1;
    }
    kvrt_context_destroy(ctx);
    kvrt_model_destroy(model);
    return rc;
}

}  // namespace kvrt_cli
