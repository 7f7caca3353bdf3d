/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The kvrt authors */

/* C99 test of kvrt_context_config.bank_dtype (4-bit CED banks) and of int8 / fp8
 * window rows in CED contexts: the default (-1), a context with FP4 banks (its
 * cache's layer types and row bytes, scales included, equal to the memory report;
 * prefill in chunks == one pass, bit for bit), int8 windows, and the refusals
 * (a type banks cannot hold, an unknown value, 4-bit keys on a model whose
 * indexer keys are 16 wide), each leaving no context behind and naming the
 * problem. Models: the tiny CED preset ($KVRT_CED_MODEL, 16-wide indexer keys)
 * and the same with 32-wide keys ($KVRT_CED_MODEL32; `kvrt ced-init --idx-dim 32`). */
#include <kvrt/kvrt.h>

#include "expect.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static kvrt_context *make(kvrt_model *m, int32_t kv, int32_t bank, uint32_t n_batch) {
    kvrt_context_config cfg;
    kvrt_context *ctx = NULL;
    kvrt_context_config_init(&cfg, sizeof cfg);
    cfg.n_ctx = 256;
    cfg.block_tokens = 4;
    cfg.n_threads = 2;
    cfg.n_batch = n_batch;
    cfg.kv_dtype = kv;
    cfg.bank_dtype = bank;
    if (kvrt_context_create(&ctx, m, &cfg) != KVRT_OK) return NULL;
    return ctx;
}

int main(void) {
    const char *p16 = getenv("KVRT_CED_MODEL"), *p32 = getenv("KVRT_CED_MODEL32");
    kvrt_model *m16 = NULL, *m32 = NULL;
    kvrt_context_config cfg;
    kvrt_context *ctx = NULL, *ctx2 = NULL;
    kvrt_cache *cache = NULL;
    kvrt_cache_layer_info li;
    kvrt_cache_stats st;
    kvrt_ced_memory mem, wmem;
    int32_t tokens[40];
    float a[256], b[256];
    size_t written = 0, i;

    if (!p16 || !*p16 || !p32 || !*p32) {
        fprintf(stderr, "test_ced_fp4: KVRT_CED_MODEL / KVRT_CED_MODEL32 are not set (the ced fixtures write them)\n");
        return 1;
    }
    EXPECT_OK(kvrt_model_load(&m16, p16, NULL));
    EXPECT_OK(kvrt_model_load(&m32, p32, NULL));
    if (!m16 || !m32) return 1;
    for (i = 0; i < 40; i++) tokens[i] = (int32_t)((i * 53 + 7) % 256);

    /* The default: -1 (banks follow kv_dtype). */
    EXPECT_OK(kvrt_context_config_init(&cfg, sizeof cfg));
    EXPECT(cfg.bank_dtype == -1);

    /* Memory report with 4-bit banks: bank rows of 32 are 16 + 2 B, indexer keys of 32 are
     * 16 + 1 B; sources r = 2 and r = 1: (18 + 17) / 2 + (18 + 17) = 52.5 B per token. */
    EXPECT_OK(kvrt_ced_memory_init(&mem, sizeof mem));
    EXPECT_OK(kvrt_ced_memory_get(&mem, m32, KVRT_DTYPE_FP4));
    EXPECT(mem.main_bytes_per_token == 18 / 2.0 + 18 && mem.indexer_bytes_per_token == 17 / 2.0 + 17);
    EXPECT(mem.global_bytes_per_token == 52.5);
    EXPECT(mem.window_bytes_per_sequence == 6u * 8u * 32u * 2u); /* f16 windows beside 4-bit banks */
    EXPECT_OK(kvrt_ced_memory_init(&wmem, sizeof wmem));
    EXPECT_OK(kvrt_ced_memory_get(&wmem, m32, KVRT_DTYPE_I8));
    EXPECT(wmem.window_bytes_per_sequence == 6u * 8u * (32u + 2u)); /* int8 windows: a scale per 32 */
    /* 16-wide indexer keys cannot be 4-bit: the report says so. */
    EXPECT_ERR(kvrt_ced_memory_get(&mem, m16, KVRT_DTYPE_FP4), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT(strstr(kvrt_last_error(), "indexer key width 16") != NULL);

    /* A context with 4-bit banks: its bank cache holds FP4 rows of the reported bytes. */
    ctx = make(m32, KVRT_DTYPE_F32, KVRT_DTYPE_FP4, 512);
    EXPECT(ctx != NULL);
    if (!ctx) return 1;
    EXPECT_OK(kvrt_context_prefill(NULL, ctx, 0, tokens, 40));
    EXPECT_OK(kvrt_context_get_logits(a, 256, &written, ctx, 0));
    EXPECT(written == 256);
    EXPECT_OK(kvrt_context_get_cache(&cache, ctx));
    EXPECT_OK(kvrt_cache_layer_info_init(&li, sizeof li));
    EXPECT_OK(kvrt_cache_layer_info_get(&li, cache, 0));
    EXPECT(li.kind == KVRT_LAYER_BANK_SOURCE && li.dtype == KVRT_DTYPE_FP4 && li.row_bytes == 18);
    EXPECT_OK(kvrt_cache_layer_info_get(&li, cache, 1));
    EXPECT(li.kind == KVRT_LAYER_INDEXER_KEYS && li.dtype == KVRT_DTYPE_FP4 && li.row_bytes == 17);
    EXPECT_OK(kvrt_cache_stats_init(&st, sizeof st));
    EXPECT_OK(kvrt_cache_stats_get(&st, cache));
    EXPECT_OK(kvrt_ced_memory_get(&mem, m32, KVRT_DTYPE_FP4));
    EXPECT(st.bytes_per_token == mem.global_bytes_per_token);
    /* Prefill in chunks of 3: the same logits, bit for bit. */
    ctx2 = make(m32, KVRT_DTYPE_F32, KVRT_DTYPE_FP4, 3);
    EXPECT(ctx2 != NULL);
    if (ctx2) {
        EXPECT_OK(kvrt_context_prefill(NULL, ctx2, 0, tokens, 40));
        EXPECT_OK(kvrt_context_get_logits(b, 256, &written, ctx2, 0));
        EXPECT(memcmp(a, b, sizeof a) == 0);
        kvrt_context_destroy(ctx2);
    }
    kvrt_context_destroy(ctx);

    /* int8 windows (banks f16 by default), and fp8 windows beside 4-bit banks. */
    ctx = make(m16, KVRT_DTYPE_I8, -1, 512);
    EXPECT(ctx != NULL);
    if (ctx) {
        EXPECT_OK(kvrt_context_prefill(NULL, ctx, 0, tokens, 40));
        EXPECT_OK(kvrt_context_get_cache(&cache, ctx));
        EXPECT_OK(kvrt_cache_layer_info_get(&li, cache, 0));
        EXPECT(li.dtype == KVRT_DTYPE_F16);
        kvrt_context_destroy(ctx);
    }
    ctx = make(m32, KVRT_DTYPE_FP8_E4M3, KVRT_DTYPE_FP4, 512);
    EXPECT(ctx != NULL);
    if (ctx) {
        EXPECT_OK(kvrt_context_prefill(NULL, ctx, 0, tokens, 40));
        kvrt_context_destroy(ctx);
    }

    /* Refusals: nothing created, the problem named. */
    ctx = NULL;
    kvrt_context_config_init(&cfg, sizeof cfg);
    cfg.block_tokens = 4;
    cfg.bank_dtype = KVRT_DTYPE_I8; /* banks take f32, f16, bf16, fp4 */
    EXPECT_ERR(kvrt_context_create(&ctx, m32, &cfg), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT(strstr(kvrt_last_error(), "bank_dtype") != NULL);
    EXPECT(ctx == NULL);
    cfg.bank_dtype = 9;
    EXPECT_ERR(kvrt_context_create(&ctx, m32, &cfg), KVRT_ERR_INVALID_ARGUMENT);
    cfg.bank_dtype = -2;
    EXPECT_ERR(kvrt_context_create(&ctx, m32, &cfg), KVRT_ERR_INVALID_ARGUMENT);
    cfg.bank_dtype = KVRT_DTYPE_FP4; /* 16-wide indexer keys */
    EXPECT_ERR(kvrt_context_create(&ctx, m16, &cfg), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT(strstr(kvrt_last_error(), "scale group of 32") != NULL);
    EXPECT(ctx == NULL);
    cfg.bank_dtype = -1;
    cfg.kv_dtype = KVRT_DTYPE_FP4; /* windows cannot be 4-bit */
    EXPECT_ERR(kvrt_context_create(&ctx, m32, &cfg), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT(strstr(kvrt_last_error(), "kv_dtype") != NULL);
    EXPECT(ctx == NULL);
    /* CED models have 8-bit activation codes only: 16 and 9 (outlier residuals) are refused. */
    kvrt_context_config_init(&cfg, sizeof cfg);
    cfg.act_bits = 16;
    EXPECT_ERR(kvrt_context_create(&ctx, m32, &cfg), KVRT_ERR_UNSUPPORTED);
    EXPECT(strstr(kvrt_last_error(), "act_bits 16") != NULL);
    EXPECT(ctx == NULL);
    cfg.act_bits = KVRT_ACT_BITS_OUTLIERS;
    EXPECT_ERR(kvrt_context_create(&ctx, m32, &cfg), KVRT_ERR_UNSUPPORTED);
    EXPECT(strstr(kvrt_last_error(), "act_bits 9") != NULL);
    EXPECT(ctx == NULL);
    /* An older config size (ending at act_bits) keeps the default. */
    kvrt_context_config_init(&cfg, sizeof cfg);
    cfg.block_tokens = 4;
    cfg.kv_dtype = KVRT_DTYPE_F32;
    cfg.bank_dtype = 12345; /* past struct_size: never read */
    cfg.struct_size = offsetof(kvrt_context_config, act_bits) + sizeof(int32_t);
    EXPECT_OK(kvrt_context_create(&ctx, m32, &cfg));
    if (ctx) {
        EXPECT_OK(kvrt_context_get_cache(&cache, ctx));
        EXPECT_OK(kvrt_cache_layer_info_get(&li, cache, 0));
        EXPECT(li.dtype == KVRT_DTYPE_F32);
        kvrt_context_destroy(ctx);
    }

    kvrt_model_destroy(m16);
    kvrt_model_destroy(m32);
    if (failures) fprintf(stderr, "test_ced_fp4: %d failures\n", failures);
    return failures ? 1 : 0;
}
