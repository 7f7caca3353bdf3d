/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The kvrt authors */

#define _POSIX_C_SOURCE 200809L
/* C99 test of the quantised KV element types (issue 15): int8 and fp8 layers
 * in a cache layout (row bytes with their scales, K and V of different types),
 * the refusals (a type the layer kind cannot hold, a head_dim the int8 group
 * does not divide, reserved and unknown types) leaving the layout as it was,
 * and contexts over the real SmolLM2 model with int8 / fp8 / mixed K,V rows:
 * they run, their caches hold the accounted bytes, and greedy decoding from
 * int8 KV agrees with f16 KV on the first tokens. */
#include <kvrt/kvrt.h>

#include "expect.h"

#include <stdio.h>
#include <string.h>

static int argmax(const float *x, size_t n) {
    size_t i, best = 0;
    for (i = 1; i < n; ++i)
        if (x[i] > x[best]) best = i;
    return (int)best;
}

/* Greedy tokens of `prompt` continued for n_gen steps under the given K/V types. */
static int greedy(kvrt_model *m, int32_t k, int32_t v, const int32_t *prompt, size_t n, int32_t *out, int n_gen,
                  uint64_t *row_bytes, uint64_t *v_row_bytes) {
    static float logits[49152];
    kvrt_context_config cc;
    kvrt_context *ctx = NULL;
    kvrt_cache *c = NULL;
    kvrt_cache_layer_info li;
    size_t w = 0;
    int i;
    kvrt_context_config_init(&cc, sizeof cc);
    cc.n_ctx = 256;
    cc.n_threads = 2;
    cc.k_dtype = k;
    cc.v_dtype = v;
    if (kvrt_context_create(&ctx, m, &cc) != KVRT_OK) return 0;
    EXPECT_OK(kvrt_context_get_cache(&c, ctx));
    EXPECT_OK(kvrt_cache_layer_info_init(&li, sizeof li));
    EXPECT_OK(kvrt_cache_layer_info_get(&li, c, 0));
    EXPECT(li.dtype == k && li.v_dtype == v);
    *row_bytes = li.row_bytes;
    *v_row_bytes = li.v_row_bytes;
    EXPECT_OK(kvrt_context_prefill(NULL, ctx, 0, prompt, n));
    for (i = 0; i < n_gen; ++i) {
        int32_t seq = 0, tok;
        EXPECT_OK(kvrt_context_get_logits(logits, 49152, &w, ctx, 0));
        tok = argmax(logits, w);
        out[i] = tok;
        EXPECT_OK(kvrt_context_decode(ctx, &seq, &tok, 1));
    }
    kvrt_context_destroy(ctx);
    return 1;
}

/* Qwen2.5's layers 0-4 and 8 have K biases with outliers: an int8 context keeps their K rows
 * in f16 (V stays int8) and the cache reports each layer's types (kvrt/context.h). */
static void qwen_layer_types(void) {
    char path[1024];
    const char *d = getenv("KVRT_MODEL_DIR");
    const char *h = getenv("HOME");
    kvrt_model *m = NULL;
    kvrt_context_config cc;
    kvrt_context *ctx = NULL;
    kvrt_cache *c = NULL;
    kvrt_cache_layer_info li;
    int32_t l;
    if (d && *d) snprintf(path, sizeof path, "%s/qwen2.5-coder-0.5b-instruct-Q4_K_M.gguf", d);
    else snprintf(path, sizeof path, "%s/.cache/kvrt/models/qwen2.5-coder-0.5b-instruct-Q4_K_M.gguf", h && *h ? h : "/root");
    if (kvrt_model_load(&m, path, NULL) != KVRT_OK) {
        fprintf(stderr, "test_kv_quant: cannot load %s: %s\n", path, kvrt_last_error());
        ++failures;
        return;
    }
    kvrt_context_config_init(&cc, sizeof cc);
    cc.n_ctx = 64;
    cc.kv_dtype = KVRT_DTYPE_I8;
    EXPECT_OK(kvrt_context_create(&ctx, m, &cc));
    if (ctx) {
        EXPECT_OK(kvrt_context_get_cache(&c, ctx));
        for (l = 0; l < 24; ++l) {
            const int kept = l <= 4 || l == 8;
            EXPECT_OK(kvrt_cache_layer_info_init(&li, sizeof li));
            EXPECT_OK(kvrt_cache_layer_info_get(&li, c, l));
            EXPECT(li.dtype == (kept ? KVRT_DTYPE_F16 : KVRT_DTYPE_I8));
            EXPECT(li.v_dtype == KVRT_DTYPE_I8);
            EXPECT(li.row_bytes == (kept ? 2u * 64u * 2u : 2u * (64u + 4u))); /* 2 KV heads of 64 */
            EXPECT(li.v_row_bytes == 2u * (64u + 4u));
        }
        kvrt_context_destroy(ctx);
    }
    kvrt_model_destroy(m);
}

int main(void) {
    kvrt_cache_layout *lay = NULL;
    kvrt_cache_layer_config lc;
    kvrt_cache_config cfg;
    kvrt_cache *cache = NULL;
    kvrt_cache_layer_info li;
    kvrt_context_config cc;
    kvrt_context *ctx = NULL;
    kvrt_model *m = NULL;
    char path[1024];
    int32_t n_layers = 0, first = -1, prompt[64], g_f16[8], g_i8[8], g_mix[8];
    size_t n = 0;
    uint64_t rb = 0, vrb = 0;
    int i, agree = 0;

    /* Layout: int8 full (3 heads x (64 + 2 x 2)), fp8 window (3 x (64 + 2)), f16 K with int8 V. */
    EXPECT_OK(kvrt_cache_layout_create(&lay, 16));
    EXPECT_OK(kvrt_cache_layer_config_init(&lc, sizeof lc));
    EXPECT(lc.v_dtype == -1);
    lc.n_kv_heads = 3;
    lc.head_dim = 64;
    lc.dtype = KVRT_DTYPE_I8;
    EXPECT_OK(kvrt_cache_layout_add_layers(&first, lay, &lc, 1));
    lc.kind = KVRT_LAYER_WINDOW;
    lc.window = 32;
    lc.dtype = KVRT_DTYPE_FP8_E4M3;
    EXPECT_OK(kvrt_cache_layout_add_layers(&first, lay, &lc, 1));
    lc.kind = KVRT_LAYER_FULL;
    lc.window = 0;
    lc.dtype = KVRT_DTYPE_F16;
    lc.v_dtype = KVRT_DTYPE_I8;
    EXPECT_OK(kvrt_cache_layout_add_layers(&first, lay, &lc, 1));
    EXPECT(first == 2);

    /* Refusals: each leaves the layout at 3 layers and names the problem. */
    lc.v_dtype = -1;
    lc.dtype = KVRT_DTYPE_I8;
    lc.head_dim = 48; /* not a multiple of int8's group of 32 */
    EXPECT_ERR(kvrt_cache_layout_add_layers(NULL, lay, &lc, 1), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT(strstr(kvrt_last_error(), "scale group") != NULL);
    lc.head_dim = 64;
    lc.kind = KVRT_LAYER_BANK_SOURCE; /* a bank cannot hold int8 */
    lc.n_kv_heads = 1;
    EXPECT_ERR(kvrt_cache_layout_add_layers(NULL, lay, &lc, 1), KVRT_ERR_UNSUPPORTED);
    EXPECT(strstr(kvrt_last_error(), "full and window") != NULL);
    lc.kind = KVRT_LAYER_FULL;
    lc.n_kv_heads = 3;
    lc.dtype = KVRT_DTYPE_FP4; /* reserved */
    EXPECT_ERR(kvrt_cache_layout_add_layers(NULL, lay, &lc, 1), KVRT_ERR_UNSUPPORTED);
    lc.dtype = 9;
    EXPECT_ERR(kvrt_cache_layout_add_layers(NULL, lay, &lc, 1), KVRT_ERR_INVALID_ARGUMENT);
    lc.dtype = KVRT_DTYPE_F16;
    lc.v_dtype = 9;
    EXPECT_ERR(kvrt_cache_layout_add_layers(NULL, lay, &lc, 1), KVRT_ERR_INVALID_ARGUMENT);
    lc.v_dtype = KVRT_DTYPE_I8;
    lc.kind = KVRT_LAYER_WINDOW;
    lc.window = 8;
    lc.shared_kv = 1; /* one row as K and V cannot have two types */
    EXPECT_ERR(kvrt_cache_layout_add_layers(NULL, lay, &lc, 1), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_OK(kvrt_cache_layout_n_layers(&n_layers, lay));
    EXPECT(n_layers == 3);

    EXPECT_OK(kvrt_cache_config_init(&cfg, sizeof cfg));
    cfg.budget_bytes = 1u << 22;
    EXPECT_OK(kvrt_cache_create(&cache, lay, &cfg));
    EXPECT_OK(kvrt_cache_layer_info_init(&li, sizeof li));
    EXPECT_OK(kvrt_cache_layer_info_get(&li, cache, 0));
    EXPECT(li.dtype == KVRT_DTYPE_I8 && li.v_dtype == KVRT_DTYPE_I8 && li.row_bytes == 204 && li.v_row_bytes == 204);
    EXPECT_OK(kvrt_cache_layer_info_get(&li, cache, 1));
    EXPECT(li.dtype == KVRT_DTYPE_FP8_E4M3 && li.row_bytes == 198 && li.v_row_bytes == 198);
    EXPECT_OK(kvrt_cache_layer_info_get(&li, cache, 2));
    EXPECT(li.dtype == KVRT_DTYPE_F16 && li.v_dtype == KVRT_DTYPE_I8 && li.row_bytes == 384 && li.v_row_bytes == 204);
    EXPECT(li.v_offset >= li.k_offset + 16 * 384);
    kvrt_cache_destroy(cache);
    kvrt_cache_layout_destroy(lay);

    /* Contexts over the real model. */
    expect_model_path(path, sizeof path);
    if (kvrt_model_load(&m, path, NULL) != KVRT_OK) {
        fprintf(stderr, "test_kv_quant: cannot load %s: %s\n", path, kvrt_last_error());
        return 1;
    }
    EXPECT_OK(kvrt_model_tokenize(prompt, 64, &n, m, "The capital of France is Paris. The capital of Italy is", 55, 0));
    EXPECT(n >= 8);
    /* Bad types: unknown kv_dtype / k_dtype / v_dtype. */
    EXPECT_OK(kvrt_context_config_init(&cc, sizeof cc));
    EXPECT(cc.k_dtype == -1 && cc.v_dtype == -1);
    cc.n_ctx = 64;
    cc.kv_dtype = 5;
    EXPECT_ERR(kvrt_context_create(&ctx, m, &cc), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT(ctx == NULL);
    cc.kv_dtype = KVRT_KV_I8;
    cc.k_dtype = -2;
    EXPECT_ERR(kvrt_context_create(&ctx, m, &cc), KVRT_ERR_INVALID_ARGUMENT);
    cc.k_dtype = -1;
    cc.v_dtype = 17;
    EXPECT_ERR(kvrt_context_create(&ctx, m, &cc), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT(ctx == NULL);

    EXPECT(greedy(m, KVRT_KV_F16, KVRT_KV_F16, prompt, n, g_f16, 8, &rb, &vrb));
    EXPECT(rb == 3 * 64 * 2 && vrb == rb); /* SmolLM2: 3 KV heads of 64 */
    EXPECT(greedy(m, KVRT_KV_I8, KVRT_KV_I8, prompt, n, g_i8, 8, &rb, &vrb));
    EXPECT(rb == 3 * (64 + 4) && vrb == rb);
    EXPECT(greedy(m, KVRT_KV_FP8_E4M3, KVRT_KV_I8, prompt, n, g_mix, 8, &rb, &vrb));
    EXPECT(rb == 3 * (64 + 2) && vrb == 3 * (64 + 4));
    for (i = 0; i < 8; ++i) agree += g_f16[i] == g_i8[i];
    /* int8 KV moves the logits by ~1e-2: the first greedy tokens agree with f16 KV. */
    EXPECT(g_f16[0] == g_i8[0]);
    EXPECT(agree >= 6);
    kvrt_model_destroy(m);
    qwen_layer_types();
    if (failures) fprintf(stderr, "test_kv_quant: %d failures\n", failures);
    return failures ? 1 : 0;
}
