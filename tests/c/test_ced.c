/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The kvrt authors */

/* C99 test of CED models through the one model and context API (kvrt/ced.h,
 * kvrt/context.h): load, memory report, the context's CED options, prefill in
 * both modes, prefix-cache reuse with bounded replay, decode, generate, stats,
 * and their failure paths. The tiny CED model is written by `kvrt ced-init`
 * (a CTest fixture) to $KVRT_CED_MODEL. */
#include <kvrt/kvrt.h>

#include "expect.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int not_a_handle = 42;
#define FOREIGN_MODEL ((kvrt_model *)(void *)&not_a_handle)

static kvrt_context *make_context(kvrt_model *model, int32_t mode, int32_t resume, int32_t prefix_caching) {
    kvrt_context_config cfg;
    kvrt_context *ctx = NULL;
    kvrt_context_config_init(&cfg, sizeof cfg);
    cfg.n_ctx = 256;
    cfg.n_seq_max = 2;
    cfg.block_tokens = 4;
    cfg.n_threads = 2;
    cfg.kv_dtype = KVRT_KV_F32;
    cfg.ced_prefill_mode = mode;
    cfg.ced_resume = resume;
    cfg.prefix_caching = prefix_caching;
    EXPECT_OK(kvrt_context_create(&ctx, model, &cfg));
    return ctx;
}

static int count_tokens(int32_t token, const char *text, size_t len, void *user_data) {
    (void)token;
    (void)text;
    (void)len;
    ++*(int *)user_data;
    return 0;
}

int main(void) {
    const char *path = getenv("KVRT_CED_MODEL");
    kvrt_model *model = NULL;
    kvrt_model_info info;
    kvrt_ced_memory mem;
    kvrt_context_config cfg;
    kvrt_context *ctx = NULL, *ctx2 = NULL;
    kvrt_request_stats st;
    kvrt_generate_config gcfg;
    int32_t layer = 0, ratio = 0, tokens[64], seqs[2], toks2[2], tok;
    double main_bpt = 0, idx_bpt = 0;
    size_t written = 0, len = 0, i;
    uint64_t kv = 0;
    float *a, *b;
    int streamed = 0;

    if (!path || !*path) {
        fprintf(stderr, "test_ced: KVRT_CED_MODEL is not set (the ced_model fixture writes it)\n");
        return 1;
    }
    for (i = 0; i < 64; i++) tokens[i] = (int32_t)((i * 37 + 11) % 256);

    /* load: a CED file loads like any model */
    EXPECT_OK(kvrt_model_load(&model, path, NULL));
    if (!model) return 1;
    EXPECT_OK(kvrt_model_info_init(&info, sizeof info));
    EXPECT_OK(kvrt_model_get_info(&info, model));
    EXPECT(strcmp(info.architecture, "ced") == 0);
    EXPECT(info.n_layers == 6 && info.n_vocab == 256);
    /* no vocabulary in the file: text calls say so, ids work */
    EXPECT_ERR(kvrt_model_tokenize(tokens, 64, &written, model, "hi", 2, 0), KVRT_ERR_UNSUPPORTED);
    EXPECT(strstr(kvrt_last_error(), "vocabulary") != NULL);

    /* memory report */
    mem.struct_size = 3;
    EXPECT_ERR(kvrt_ced_memory_get(&mem, model, KVRT_DTYPE_F32), KVRT_ERR_INVALID_ARGUMENT);
    mem.struct_size = sizeof mem;
    EXPECT_ERR(kvrt_ced_memory_get(NULL, model, KVRT_DTYPE_F32), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(kvrt_ced_memory_get(&mem, FOREIGN_MODEL, KVRT_DTYPE_F32), KVRT_ERR_BAD_HANDLE);
    EXPECT_ERR(kvrt_ced_memory_get(&mem, model, 7), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_OK(kvrt_ced_memory_get(&mem, model, KVRT_DTYPE_F32));
    EXPECT(mem.n_layers == 6 && mem.n_sources == 2 && mem.window == 8 && mem.elem_bytes == 4);
    EXPECT(mem.global_bytes_per_token == mem.main_bytes_per_token + mem.indexer_bytes_per_token);
    EXPECT(mem.global_bytes_per_token < mem.dense_bytes_per_token);
    EXPECT_OK(kvrt_ced_memory_source(&layer, &ratio, &main_bpt, &idx_bpt, model, 0, KVRT_DTYPE_F32));
    EXPECT(layer == 1 && ratio == 2 && main_bpt == 32 * 4 / 2.0 && idx_bpt == 16 * 4 / 2.0);
    EXPECT_OK(kvrt_ced_memory_source(&layer, &ratio, NULL, NULL, model, 1, KVRT_DTYPE_BF16));
    EXPECT(layer == 3 && ratio == 1);
    EXPECT_ERR(kvrt_ced_memory_source(NULL, NULL, NULL, NULL, model, 2, KVRT_DTYPE_F32), KVRT_ERR_OUT_OF_RANGE);
    EXPECT_OK(kvrt_ced_memory_get(&mem, model, KVRT_DTYPE_BF16));
    EXPECT(mem.elem_bytes == 2);
    EXPECT_OK(kvrt_ced_memory_get(&mem, model, KVRT_DTYPE_F32));

    /* context options */
    EXPECT_OK(kvrt_context_config_init(&cfg, sizeof cfg));
    EXPECT(cfg.ced_prefill_mode == KVRT_CED_PREFILL_EXACT && cfg.ced_resume == KVRT_CED_RESUME_AUTO);
    cfg.ced_prefill_mode = 7;
    EXPECT_ERR(kvrt_context_create(&ctx, model, &cfg), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT(strstr(kvrt_last_error(), "ced_prefill_mode") != NULL);
    cfg.ced_prefill_mode = KVRT_CED_PREFILL_EXACT;
    cfg.ced_resume = 9;
    EXPECT_ERR(kvrt_context_create(&ctx, model, &cfg), KVRT_ERR_INVALID_ARGUMENT);
    cfg.ced_resume = KVRT_CED_RESUME_AUTO;
    cfg.block_tokens = 3; /* not a multiple of the r = 2 bank */
    EXPECT_ERR(kvrt_context_create(&ctx, model, &cfg), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT(ctx == NULL);
    /* a 0.1-sized config (no CED fields) still works, with their defaults */
    cfg.block_tokens = 16;
    cfg.struct_size = offsetof(kvrt_context_config, ced_prefill_mode);
    EXPECT_OK(kvrt_context_create(&ctx, model, &cfg));
    kvrt_context_destroy(ctx);
    ctx = NULL;
    EXPECT_ERR(kvrt_context_config_init(&cfg, offsetof(kvrt_context_config, ced_prefill_mode) - 1),
               KVRT_ERR_INVALID_ARGUMENT);

    /* exact prefill == token by token decode, bit for bit (no prefix cache) */
    a = (float *)malloc(256 * sizeof(float));
    b = (float *)malloc(256 * sizeof(float));
    ctx = make_context(model, KVRT_CED_PREFILL_EXACT, KVRT_CED_RESUME_AUTO, 0);
    EXPECT_OK(kvrt_request_stats_init(&st, sizeof st));
    EXPECT_OK(kvrt_context_prefill(&st, ctx, 0, tokens, 30));
    EXPECT(st.prompt_tokens == 30 && st.computed_tokens == 30 && st.reused_from_cache == 0 && st.kv_bytes > 0);
    EXPECT_OK(kvrt_context_get_logits(a, 256, &written, ctx, 0));
    EXPECT(written == 256 && isfinite(a[0]) && isfinite(a[255]));
    EXPECT_OK(kvrt_context_prefill(NULL, ctx, 1, tokens, 1));
    seqs[0] = 1;
    for (i = 1; i < 30; i++) EXPECT_OK(kvrt_context_decode(ctx, seqs, tokens + i, 1));
    EXPECT_OK(kvrt_context_get_logits(b, 256, &written, ctx, 1));
    EXPECT(memcmp(a, b, 256 * sizeof(float)) == 0);
    EXPECT_OK(kvrt_context_seq_length(&len, ctx, 1));
    EXPECT(len == 30);
    /* a batch decode of both sequences: each as alone */
    seqs[0] = 0;
    seqs[1] = 1;
    toks2[0] = toks2[1] = 5;
    EXPECT_OK(kvrt_context_decode(ctx, seqs, toks2, 2));
    EXPECT_OK(kvrt_context_get_logits(a, 256, &written, ctx, 0));
    EXPECT_OK(kvrt_context_get_logits(b, 256, &written, ctx, 1));
    EXPECT(memcmp(a, b, 256 * sizeof(float)) == 0);
    /* an appended turn keeps the sequence (31 held + 3 new computed) */
    tokens[30] = 5;
    EXPECT_OK(kvrt_context_prefill(&st, ctx, 0, tokens, 34));
    EXPECT(st.reused_tokens == 31 && st.computed_tokens == 3);
    /* bad input: the sequence stays usable */
    tok = 999;
    EXPECT_ERR(kvrt_context_decode(ctx, seqs, &tok, 1), KVRT_ERR_OUT_OF_RANGE);
    EXPECT_ERR(kvrt_context_prefill(NULL, ctx, 0, &tok, 1), KVRT_ERR_OUT_OF_RANGE);
    EXPECT_ERR(kvrt_context_get_logits(a, 256, &written, ctx, 0), KVRT_ERR_INVALID_STATE);
    EXPECT_OK(kvrt_context_seq_kv_bytes(&kv, ctx, 0));
    EXPECT(kv > 0);
    EXPECT_OK(kvrt_context_seq_release(ctx, 0));
    EXPECT_OK(kvrt_context_seq_kv_bytes(&kv, ctx, 0));
    EXPECT(kv == 0);
    kvrt_context_destroy(ctx);

    /* CED prefill, then a second request sharing 28 tokens resumes by bounded replay */
    ctx = make_context(model, KVRT_CED_PREFILL_CED, KVRT_CED_RESUME_BOUNDED_REPLAY, 1);
    EXPECT_OK(kvrt_context_prefill(&st, ctx, 0, tokens, 30));
    EXPECT(st.computed_tokens == 30 && st.reused_from_cache == 0);
    EXPECT_OK(kvrt_context_prefill(&st, ctx, 1, tokens, 35));
    EXPECT(st.reused_from_cache == 28 && st.computed_tokens == 35 - 28 + 8);
    kvrt_context_destroy(ctx);

    /* generate on token ids (no vocabulary: empty text pieces), stats, stop at max_tokens */
    ctx = make_context(model, KVRT_CED_PREFILL_EXACT, KVRT_CED_RESUME_AUTO, 1);
    EXPECT_OK(kvrt_generate_config_init(&gcfg, sizeof gcfg));
    gcfg.max_tokens = 6;
    gcfg.on_token = count_tokens;
    gcfg.user_data = &streamed;
    EXPECT_OK(kvrt_context_generate(&st, ctx, 0, tokens, 20, &gcfg));
    EXPECT(st.generated_tokens == 6 && st.stop_reason == KVRT_STOP_MAX_TOKENS && streamed >= 6);
    EXPECT_OK(kvrt_context_seq_length(&len, ctx, 0));
    EXPECT(len == 25);
    /* the same prompt again in another sequence: its prefix comes from the cache, logits as cold */
    EXPECT_OK(kvrt_context_prefill(&st, ctx, 1, tokens, 20));
    EXPECT(st.reused_from_cache >= 16);
    EXPECT_OK(kvrt_context_get_logits(a, 256, &written, ctx, 1));
    ctx2 = make_context(model, KVRT_CED_PREFILL_EXACT, KVRT_CED_RESUME_COLD, 0);
    EXPECT_OK(kvrt_context_prefill(NULL, ctx2, 0, tokens, 20));
    EXPECT_OK(kvrt_context_get_logits(b, 256, &written, ctx2, 0));
    EXPECT(memcmp(a, b, 256 * sizeof(float)) == 0);
    kvrt_context_destroy(ctx2);
    kvrt_context_destroy(ctx);
    free(a);
    free(b);

    /* a CED memory report of a model of another architecture is refused */
    {
        char smol[1024];
        kvrt_model *dense = NULL;
        expect_model_path(smol, sizeof smol);
        EXPECT_OK(kvrt_model_load(&dense, smol, NULL));
        EXPECT_ERR(kvrt_ced_memory_get(&mem, dense, KVRT_DTYPE_F32), KVRT_ERR_UNSUPPORTED);
        kvrt_model_destroy(dense);
    }
    kvrt_model_destroy(model);
    if (failures) fprintf(stderr, "test_ced: %d failures\n", failures);
    return failures ? 1 : 0;
}
