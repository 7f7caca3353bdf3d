/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The kvrt authors */

#define _POSIX_C_SOURCE 200809L
/* C99 test of kvrt_context_seq_restore (kvrt/context.h): a saved conversation
 * restored as saved where its rows fit (the same logits bit for bit, nothing
 * computed), and recomputed from its tokens where the KV dtype, block size or
 * act_bits (the cache salt) differ (the logits of a prefill of the same tokens in
 * the restoring context, bit for bit); every failure path with the sequence left
 * as it was. On SmolLM2, and on the tiny CED model when $KVRT_CED_MODEL names it. */
#include <kvrt/kvrt.h>

#include "expect.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N_PROMPT 40
#define N_STEPS 3

static kvrt_context *make_ctx(kvrt_model *m, int32_t k_dtype, uint32_t block_tokens, int32_t act_bits,
                              uint32_t n_ctx) {
    kvrt_context_config cc;
    kvrt_context *ctx = NULL;
    kvrt_context_config_init(&cc, sizeof cc);
    cc.n_ctx = n_ctx;
    cc.n_seq_max = 3;
    cc.n_threads = 2;
    cc.kv_dtype = k_dtype;
    cc.block_tokens = block_tokens;
    cc.act_bits = act_bits;
    cc.cache_salt = "tenant";
    if (kvrt_context_create(&ctx, m, &cc) != KVRT_OK) {
        fprintf(stderr, "context_create: %s\n", kvrt_last_error());
        return NULL;
    }
    return ctx;
}

static size_t vocab_of(kvrt_model *m) {
    kvrt_model_info info;
    kvrt_model_info_init(&info, sizeof info);
    if (kvrt_model_get_info(&info, m) != KVRT_OK) return 0;
    return (size_t)info.n_vocab;
}

static int argmax(const float *x, size_t n) {
    size_t i, best = 0;
    for (i = 1; i < n; ++i)
        if (x[i] > x[best]) best = i;
    return (int)best;
}

/* The sequence's logits into out (V floats); 0 on success. */
static int logits_of(kvrt_context *ctx, int32_t seq, float *out, size_t V) {
    size_t w = 0;
    return kvrt_context_get_logits(out, V, &w, ctx, seq) == KVRT_OK && w == V ? 0 : -1;
}

/* Restores `file` into (ctx, seq) where the rows differ from the file's: recomputed, the
 * tokens as saved, the logits those of a prefill of the same tokens in ctx (sequence `spare`),
 * and decode goes on. */
static void expect_recomputed(const char *name, kvrt_context *ctx, int32_t seq, int32_t spare, const char *file,
                              const int32_t *saved, size_t n, size_t V, int ced) {
    kvrt_request_stats st;
    int32_t recomputed = -1, tok;
    int32_t *got = (int32_t *)malloc((n + 1) * sizeof(int32_t));
    float *a = (float *)malloc(V * sizeof(float)), *b = (float *)malloc(V * sizeof(float));
    size_t w = 0;
    kvrt_request_stats_init(&st, sizeof st);
    EXPECT_OK(kvrt_context_seq_restore(&st, &recomputed, ctx, seq, file));
    EXPECT(recomputed == 1);
    EXPECT(st.prompt_tokens == n);
    EXPECT(st.reused_tokens + st.computed_tokens == n);
    EXPECT(st.computed_tokens > 0);
    EXPECT(st.kv_bytes > 0);
    EXPECT_OK(kvrt_context_seq_tokens(got, n + 1, &w, ctx, seq));
    EXPECT(w == n && memcmp(got, saved, n * sizeof(int32_t)) == 0);
    EXPECT(logits_of(ctx, seq, a, V) == 0);
    EXPECT_OK(kvrt_context_prefill(NULL, ctx, spare, saved, n));
    EXPECT(logits_of(ctx, spare, b, V) == 0);
    if (memcmp(a, b, V * sizeof(float)) != 0) {
        fprintf(stderr, "%s: restored logits differ from a prefill of the same tokens\n", name);
        failures++;
    }
    /* The strict load still refuses the file, and its message names the way out. */
    EXPECT_ERR(kvrt_context_seq_load(ctx, spare, file), KVRT_ERR_MISMATCH);
    EXPECT(strstr(kvrt_last_error(), "kvrt_context_seq_restore") != NULL);
    if (!ced) {  /* (the CED runtime's window rings: one decode is enough to show it goes on) */
        tok = argmax(a, V);
        EXPECT_OK(kvrt_context_decode(ctx, &seq, &tok, 1));
        EXPECT_OK(kvrt_context_seq_tokens(NULL, 0, &w, ctx, seq));
        EXPECT(w == n + 1);
    }
    printf("%s: restored by recomputing %u of %u tokens; logits == a prefill's\n", name,
           (unsigned)st.computed_tokens, (unsigned)n);
    free(got);
    free(a);
    free(b);
}

static void scenario(const char *name, const char *model_path, int32_t dtype, uint32_t bt, int ced,
                     const char *dir) {
    kvrt_model *m = NULL, *m2 = NULL;
    kvrt_context *ctx = NULL, *other = NULL;
    kvrt_request_stats st;
    int32_t prompt[N_PROMPT + N_STEPS], saved[N_PROMPT + N_STEPS + 1], recomputed, seq = 0, tok;
    size_t V, w = 0, i, n_saved;
    float *la, *lb;
    char file[512], empty[512], bad[512];
    FILE *f;

    snprintf(file, sizeof file, "%s/conv.kvrt", dir);
    snprintf(empty, sizeof empty, "%s/empty.kvrt", dir);
    snprintf(bad, sizeof bad, "%s/bad.kvrt", dir);
    EXPECT_OK(kvrt_model_load(&m, model_path, NULL));
    if (!m) return;
    V = vocab_of(m);
    la = (float *)malloc(V * sizeof(float));
    lb = (float *)malloc(V * sizeof(float));
    ctx = make_ctx(m, dtype, bt, 0, 512);
    EXPECT(ctx != NULL);
    if (!ctx) goto done;
    for (i = 0; i < N_PROMPT; ++i) prompt[i] = (int32_t)((i * 7919u + 13u) % (V > 1000 ? 1000 : V - 1) + 1);
    EXPECT_OK(kvrt_context_prefill(NULL, ctx, 0, prompt, N_PROMPT));
    for (i = 0; i < N_STEPS; ++i) {
        EXPECT(logits_of(ctx, 0, la, V) == 0);
        tok = argmax(la, V);
        EXPECT_OK(kvrt_context_decode(ctx, &seq, &tok, 1));
    }
    EXPECT(logits_of(ctx, 0, la, V) == 0);
    EXPECT_OK(kvrt_context_seq_tokens(saved, N_PROMPT + N_STEPS + 1, &n_saved, ctx, 0));
    EXPECT(n_saved == N_PROMPT + N_STEPS);
    EXPECT_OK(kvrt_context_seq_save(ctx, 0, file));
    EXPECT_OK(kvrt_context_seq_save(ctx, 2, empty)); /* sequence 2 holds nothing */

    /* Rows that fit: loaded as saved, nothing computed, the saved logits. */
    kvrt_request_stats_init(&st, sizeof st);
    recomputed = -1;
    EXPECT_OK(kvrt_context_seq_restore(&st, &recomputed, ctx, 1, file));
    EXPECT(recomputed == 0);
    EXPECT(st.prompt_tokens == n_saved && st.reused_tokens == n_saved && st.computed_tokens == 0);
    EXPECT(st.kv_bytes > 0);
    EXPECT(logits_of(ctx, 1, lb, V) == 0);
    EXPECT(memcmp(la, lb, V * sizeof(float)) == 0);
    EXPECT_OK(kvrt_context_seq_restore(NULL, NULL, ctx, 1, file)); /* stats and flag optional */

    /* Another act_bits (the cache salt), block size and K type: recomputed. */
    other = ced ? NULL : make_ctx(m, dtype, bt, 8, 512); /* (CED models compute act_bits 0 as 8) */
    if (other) {
        expect_recomputed(name, other, 0, 1, file, saved, n_saved, V, ced);
        kvrt_context_destroy(other);
    }
    other = make_ctx(m, dtype, bt * 2, 0, 512);
    if (other) {
        expect_recomputed(name, other, 0, 1, file, saved, n_saved, V, ced);
        kvrt_context_destroy(other);
    }
    other = make_ctx(m, dtype == KVRT_DTYPE_I8 ? KVRT_DTYPE_F16 : KVRT_DTYPE_I8, bt, 0, 512);
    if (other) {
        /* A sequence that already holds part of the conversation keeps it (the common prefix). */
        EXPECT_OK(kvrt_context_prefill(NULL, other, 0, saved, 20));
        expect_recomputed(name, other, 0, 1, file, saved, n_saved, V, ced);
        /* An empty conversation saved under another computation empties the sequence. */
        recomputed = -1;
        EXPECT_OK(kvrt_context_seq_restore(NULL, &recomputed, other, 0, empty));
        EXPECT(recomputed == 1);
        EXPECT_OK(kvrt_context_seq_tokens(NULL, 0, &w, other, 0));
        EXPECT(w == 0);
        kvrt_context_destroy(other);
    }

    /* Failure paths: sequence 1 (restored above) stays as it was. */
    EXPECT(logits_of(ctx, 1, la, V) == 0);
    recomputed = -1;
    EXPECT_ERR(kvrt_context_seq_restore(NULL, &recomputed, ctx, 1, NULL), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT(recomputed == 0);
    EXPECT_ERR(kvrt_context_seq_restore(NULL, NULL, NULL, 1, file), KVRT_ERR_BAD_HANDLE);
    EXPECT_ERR(kvrt_context_seq_restore(NULL, NULL, ctx, 9, file), KVRT_ERR_OUT_OF_RANGE);
    EXPECT_ERR(kvrt_context_seq_restore(NULL, NULL, ctx, 1, "/nonexistent-dir/x.kvrt"), KVRT_ERR_NOT_FOUND);
    kvrt_request_stats_init(&st, sizeof st);
    st.struct_size = 4;
    EXPECT_ERR(kvrt_context_seq_restore(&st, NULL, ctx, 1, file), KVRT_ERR_INVALID_ARGUMENT);
    f = fopen(bad, "wb");
    if (f) {
        fputs("not a kvrt file at all, just some text that is long enough", f);
        fclose(f);
    }
    EXPECT_ERR(kvrt_context_seq_restore(NULL, NULL, ctx, 1, bad), KVRT_ERR_BAD_FORMAT);
    /* Too many tokens for the restoring context's n_ctx: refused before anything changes. */
    other = make_ctx(m, dtype, bt, 8, 32);
    if (other) {
        EXPECT_OK(kvrt_context_prefill(NULL, other, 0, prompt, 8));
        EXPECT_ERR(kvrt_context_seq_restore(NULL, NULL, other, 0, file), KVRT_ERR_OUT_OF_RANGE);
        EXPECT_OK(kvrt_context_seq_tokens(NULL, 0, &w, other, 0));
        EXPECT(w == 8);
        kvrt_context_destroy(other);
    }
    /* Another model: refused, whatever it could recompute. */
    if (!ced && getenv("KVRT_CED_MODEL") && *getenv("KVRT_CED_MODEL") &&
        kvrt_model_load(&m2, getenv("KVRT_CED_MODEL"), NULL) == KVRT_OK) {
        other = make_ctx(m2, KVRT_DTYPE_F32, 4, 0, 512);
        if (other) {
            EXPECT_ERR(kvrt_context_seq_restore(NULL, NULL, other, 0, file), KVRT_ERR_MISMATCH);
            kvrt_context_destroy(other);
        }
        kvrt_model_destroy(m2);
    }
    EXPECT_OK(kvrt_context_seq_tokens(NULL, 0, &w, ctx, 1));
    EXPECT(w == n_saved);
    EXPECT(logits_of(ctx, 1, lb, V) == 0);
    EXPECT(memcmp(la, lb, V * sizeof(float)) == 0);

done:
    free(la);
    free(lb);
    kvrt_context_destroy(ctx);
    kvrt_model_destroy(m);
    remove(file);
    remove(empty);
    remove(bad);
}

int main(void) {
    char path[1024], dir[] = "/tmp/kvrt_restore_XXXXXX";
    const char *ced = getenv("KVRT_CED_MODEL");
    expect_model_path(path, sizeof path);
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    scenario("SmolLM2", path, KVRT_DTYPE_F16, 16, 0, dir);
    if (ced && *ced) scenario("CED", ced, KVRT_DTYPE_F32, 4, 1, dir);
    else fprintf(stderr, "test_context_restore: KVRT_CED_MODEL is not set; the CED half did not run\n");
    rmdir(dir);
    if (failures) fprintf(stderr, "test_context_restore: %d failures\n", failures);
    return failures ? 1 : 0;
}
