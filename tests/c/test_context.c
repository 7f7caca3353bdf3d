/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The kvrt authors */

#define _POSIX_C_SOURCE 200809L
/* C99 test of kvrt/context.h: contexts, prefill/decode, logits, sequences,
 * cache sharing, samplers, generation and stats — success and failure paths —
 * on the real SmolLM2 model (short prompts: this also runs under ASan). */
#include <kvrt/kvrt.h>

#include "expect.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>



struct Stream {
    int calls;
    int stop_after;
    char text[4096];
    size_t len;
};

static int on_token(int32_t token, const char *text, size_t len, void *user_data) {
    struct Stream *s = (struct Stream *)user_data;
    (void)token;
    if (s->len + len < sizeof s->text) {
        memcpy(s->text + s->len, text, len);
        s->len += len;
        s->text[s->len] = '\0';
    }
    return ++s->calls >= s->stop_after;
}

static int argmax(const float *x, size_t n) {
    size_t i, best = 0;
    for (i = 1; i < n; ++i)
        if (x[i] > x[best]) best = i;
    return (int)best;
}

int main(void) {
    char path[1024];
    kvrt_model *m = NULL;
    kvrt_context *ctx = NULL, *ctx2 = NULL;
    kvrt_context_config cc;
    kvrt_request_stats st;
    kvrt_sampler *smp = NULL;
    kvrt_sampler_config sc;
    kvrt_generate_config gc;
    kvrt_cache *cache = NULL;
    kvrt_cache_stats cs;
    struct Stream stream;
    static float logits[49152], logits2[49152];
    int32_t prompt[64], seqs[2], toks[2], tok = 0;
    size_t n = 0, w = 0, len = 0;
    uint64_t kvb = 0;
    const char *stops[1];

    expect_model_path(path, sizeof path);
    if (kvrt_model_load(&m, path, NULL) != KVRT_OK) {
        fprintf(stderr, "test_context: cannot load %s: %s\n", path, kvrt_last_error());
        return 1;
    }
    EXPECT(kvrt_model_tokenize(prompt, 64, &n, m, "The capital of France is", 24, 0) == KVRT_OK);
    EXPECT(n >= 4);

    /* config and create */
    EXPECT(kvrt_context_config_init(&cc, sizeof cc) == KVRT_OK);
    EXPECT(cc.n_seq_max == 1 && cc.kv_dtype == KVRT_KV_F16 && cc.prefix_caching == 1 && cc.n_batch == 512);
    EXPECT(cc.block_tokens == 0); /* the model's default: 64 for a decoder (checked below) */
    EXPECT(kvrt_context_config_init(NULL, sizeof cc) == KVRT_ERR_INVALID_ARGUMENT);
    EXPECT(kvrt_context_config_init(&cc, 5) == KVRT_ERR_INVALID_ARGUMENT);
    kvrt_context_config_init(&cc, sizeof cc);
    cc.n_ctx = 128;
    cc.n_seq_max = 2;
    /* the default block size, resolved at create */
    {
        kvrt_context *d = NULL;
        kvrt_cache *dc = NULL;
        kvrt_cache_stats ds;
        EXPECT_OK(kvrt_context_create(&d, m, &cc));
        EXPECT_OK(kvrt_context_get_cache(&dc, d));
        kvrt_cache_stats_init(&ds, sizeof ds);
        EXPECT_OK(kvrt_cache_stats_get(&ds, dc));
        EXPECT(ds.block_tokens == 64);
        kvrt_context_destroy(d);
    }
    cc.block_tokens = 16; /* the hit counts below are written for blocks of 16 */
    EXPECT(kvrt_context_create(&ctx, NULL, &cc) == KVRT_ERR_BAD_HANDLE);
    EXPECT(ctx == NULL);
    EXPECT(kvrt_context_create(NULL, m, &cc) == KVRT_ERR_INVALID_ARGUMENT);
    cc.kv_dtype = 7;
    EXPECT(kvrt_context_create(&ctx, m, &cc) == KVRT_ERR_INVALID_ARGUMENT);
    cc.kv_dtype = KVRT_KV_F16;
    cc.n_ctx = 100000;
    EXPECT(kvrt_context_create(&ctx, m, &cc) == KVRT_ERR_INVALID_ARGUMENT);
    EXPECT(strstr(kvrt_last_error(), "n_ctx") != NULL);
    cc.n_ctx = 128;
    EXPECT(kvrt_context_create(&ctx, m, &cc) == KVRT_OK);
    EXPECT(ctx != NULL);

    /* prefill + logits */
    EXPECT(kvrt_request_stats_init(&st, sizeof st) == KVRT_OK);
    EXPECT(kvrt_request_stats_init(NULL, sizeof st) == KVRT_ERR_INVALID_ARGUMENT);
    EXPECT(kvrt_context_prefill(&st, ctx, 0, prompt, n) == KVRT_OK);
    EXPECT(st.prompt_tokens == n && st.computed_tokens == n && st.reused_tokens == 0);
    EXPECT(st.kv_bytes > 0 && st.time_to_first_token_s > 0);
    EXPECT(kvrt_context_get_logits(NULL, 0, &w, ctx, 0) == KVRT_OK && w == 49152);
    EXPECT(kvrt_context_get_logits(logits, 10, &w, ctx, 0) == KVRT_ERR_BUFFER_TOO_SMALL && w == 49152);
    EXPECT(kvrt_context_get_logits(logits, 49152, &w, ctx, 0) == KVRT_OK);
    EXPECT(kvrt_context_get_logits(logits, 49152, &w, ctx, 1) == KVRT_ERR_INVALID_STATE);
    EXPECT(kvrt_context_get_logits(logits, 49152, &w, ctx, 2) == KVRT_ERR_OUT_OF_RANGE);
    EXPECT(kvrt_context_get_logits(logits, 49152, NULL, ctx, 0) == KVRT_ERR_INVALID_ARGUMENT);
    EXPECT(kvrt_context_seq_length(&len, ctx, 0) == KVRT_OK && len == n);
    EXPECT(kvrt_context_seq_length(&len, ctx, 1) == KVRT_OK && len == 0);
    EXPECT(kvrt_context_seq_length(&len, ctx, -1) == KVRT_ERR_OUT_OF_RANGE);
    EXPECT(kvrt_context_seq_kv_bytes(&kvb, ctx, 0) == KVRT_OK && kvb == st.kv_bytes);
    EXPECT(kvrt_context_seq_kv_bytes(NULL, ctx, 0) == KVRT_ERR_INVALID_ARGUMENT);

    /* prefill failures: the sequence keeps its common prefix, the context stays usable */
    EXPECT(kvrt_context_prefill(NULL, ctx, 0, NULL, 3) == KVRT_ERR_INVALID_ARGUMENT);
    EXPECT(kvrt_context_prefill(NULL, ctx, 0, prompt, 0) == KVRT_ERR_INVALID_ARGUMENT);
    EXPECT(kvrt_context_prefill(NULL, ctx, 5, prompt, n) == KVRT_ERR_OUT_OF_RANGE);
    prompt[n] = 49152;
    EXPECT(kvrt_context_prefill(NULL, ctx, 1, prompt, n + 1) == KVRT_ERR_OUT_OF_RANGE);
    EXPECT(strstr(kvrt_last_error(), "49152") != NULL);
    {
        static int32_t big[200];
        memset(big, 0, sizeof big);
        EXPECT(kvrt_context_prefill(NULL, ctx, 1, big, 200) == KVRT_ERR_OUT_OF_RANGE);
        EXPECT(strstr(kvrt_last_error(), "n_ctx") != NULL);
    }
    EXPECT(kvrt_context_prefill(NULL, NULL, 0, prompt, n) == KVRT_ERR_BAD_HANDLE);

    /* prefill_batch: two sequences in shared passes; bad input changes nothing */
    {
        const int32_t *ptoks[2];
        size_t plens[2];
        kvrt_request_stats bst[2];
        static float batch_logits[49152];
        ptoks[0] = prompt;
        ptoks[1] = prompt;
        plens[0] = n;
        plens[1] = n;
        seqs[0] = 0;
        seqs[1] = 1;
        kvrt_request_stats_init(&bst[0], sizeof bst[0]);
        kvrt_request_stats_init(&bst[1], sizeof bst[1]);
        EXPECT_OK(kvrt_context_prefill_batch(bst, ctx, seqs, ptoks, plens, 2));
        EXPECT(bst[0].prompt_tokens == n && bst[0].computed_tokens == 0); /* it held the prompt already */
        EXPECT(bst[1].prompt_tokens == n && bst[1].computed_tokens + bst[1].reused_tokens == n);
        EXPECT(bst[1].kv_bytes > 0);
        EXPECT_OK(kvrt_context_get_logits(batch_logits, 49152, &w, ctx, 1));
        EXPECT(memcmp(batch_logits, logits, sizeof logits) == 0); /* same bits as sequence 0 alone */
        EXPECT_ERR(kvrt_context_prefill_batch(NULL, ctx, NULL, ptoks, plens, 2), KVRT_ERR_INVALID_ARGUMENT);
        EXPECT_ERR(kvrt_context_prefill_batch(NULL, ctx, seqs, NULL, plens, 2), KVRT_ERR_INVALID_ARGUMENT);
        EXPECT_ERR(kvrt_context_prefill_batch(NULL, ctx, seqs, ptoks, NULL, 2), KVRT_ERR_INVALID_ARGUMENT);
        EXPECT_ERR(kvrt_context_prefill_batch(NULL, ctx, seqs, ptoks, plens, 0), KVRT_ERR_INVALID_ARGUMENT);
        EXPECT_ERR(kvrt_context_prefill_batch(NULL, NULL, seqs, ptoks, plens, 2), KVRT_ERR_BAD_HANDLE);
        seqs[1] = 0;
        EXPECT_ERR(kvrt_context_prefill_batch(NULL, ctx, seqs, ptoks, plens, 2), KVRT_ERR_INVALID_ARGUMENT);
        EXPECT(strstr(kvrt_last_error(), "twice") != NULL);
        seqs[1] = 5;
        EXPECT_ERR(kvrt_context_prefill_batch(NULL, ctx, seqs, ptoks, plens, 2), KVRT_ERR_OUT_OF_RANGE);
        seqs[1] = 1;
        plens[1] = n + 1; /* prompt[n] is 49152, past the vocabulary */
        EXPECT_ERR(kvrt_context_prefill_batch(NULL, ctx, seqs, ptoks, plens, 2), KVRT_ERR_OUT_OF_RANGE);
        EXPECT(strstr(kvrt_last_error(), "49152") != NULL);
        plens[1] = 0;
        EXPECT_ERR(kvrt_context_prefill_batch(NULL, ctx, seqs, ptoks, plens, 2), KVRT_ERR_INVALID_ARGUMENT);
        plens[1] = n;
        ptoks[1] = NULL;
        EXPECT_ERR(kvrt_context_prefill_batch(NULL, ctx, seqs, ptoks, plens, 2), KVRT_ERR_INVALID_ARGUMENT);
        ptoks[1] = prompt;
        bst[1].struct_size = 3;
        EXPECT_ERR(kvrt_context_prefill_batch(bst, ctx, seqs, ptoks, plens, 2), KVRT_ERR_INVALID_ARGUMENT);
        /* nothing changed */
        EXPECT(kvrt_context_seq_length(&len, ctx, 0) == KVRT_OK && len == n);
        EXPECT(kvrt_context_seq_length(&len, ctx, 1) == KVRT_OK && len == n);
        EXPECT_OK(kvrt_context_get_logits(batch_logits, 49152, &w, ctx, 1));
        EXPECT(memcmp(batch_logits, logits, sizeof logits) == 0);
        EXPECT_OK(kvrt_context_seq_release(ctx, 1));
    }

    /* decode: one token, then a batch of two sequences */
    tok = argmax(logits, 49152);
    seqs[0] = 0;
    EXPECT(kvrt_context_decode(ctx, seqs, &tok, 1) == KVRT_OK);
    EXPECT(kvrt_context_seq_length(&len, ctx, 0) == KVRT_OK && len == n + 1);
    EXPECT(kvrt_context_prefill(&st, ctx, 1, prompt, n) == KVRT_OK);
    seqs[0] = 0;
    seqs[1] = 1;
    toks[0] = 11;
    toks[1] = tok;
    EXPECT(kvrt_context_decode(ctx, seqs, toks, 2) == KVRT_OK);
    /* sequence 1 decoded the same token after the same prompt as sequence 0 did: same logits */
    EXPECT(kvrt_context_get_logits(logits2, 49152, &w, ctx, 1) == KVRT_OK);
    seqs[1] = 0;
    EXPECT(kvrt_context_decode(ctx, seqs, toks, 2) == KVRT_ERR_INVALID_ARGUMENT); /* repeated id */
    EXPECT(kvrt_context_decode(ctx, seqs, toks, 0) == KVRT_ERR_INVALID_ARGUMENT);
    EXPECT(kvrt_context_decode(ctx, NULL, toks, 1) == KVRT_ERR_INVALID_ARGUMENT);
    toks[0] = -5;
    EXPECT(kvrt_context_decode(ctx, seqs, toks, 1) == KVRT_ERR_OUT_OF_RANGE);
    EXPECT(kvrt_context_seq_release(ctx, 1) == KVRT_OK);
    EXPECT(kvrt_context_seq_length(&len, ctx, 1) == KVRT_OK && len == 0);
    seqs[0] = 1;
    toks[0] = 11;
    EXPECT(kvrt_context_decode(ctx, seqs, toks, 1) == KVRT_ERR_INVALID_ARGUMENT); /* empty sequence */
    EXPECT(kvrt_context_seq_release(ctx, 9) == KVRT_ERR_OUT_OF_RANGE);

    /* a second context sharing the cache hits the prefix the first one computed */
    EXPECT(kvrt_context_get_cache(&cache, ctx) == KVRT_OK && cache != NULL);
    EXPECT(kvrt_context_get_cache(NULL, ctx) == KVRT_ERR_INVALID_ARGUMENT);
    {
        kvrt_cache *other = cache;
        EXPECT(kvrt_context_get_cache(&other, NULL) == KVRT_ERR_BAD_HANDLE && other == NULL);
    }
    {
        static int32_t doc[40];
        int i;
        for (i = 0; i < 40; ++i) doc[i] = 100 + i;
        EXPECT(kvrt_context_prefill(NULL, ctx, 1, doc, 40) == KVRT_OK);
        EXPECT(kvrt_context_get_logits(logits, 49152, &w, ctx, 1) == KVRT_OK);
        cc.cache = cache;
        EXPECT(kvrt_context_create(&ctx2, m, &cc) == KVRT_OK);
        EXPECT(kvrt_context_prefill(&st, ctx2, 0, doc, 40) == KVRT_OK);
        EXPECT(st.reused_from_cache == 32 && st.computed_tokens == 8);
        EXPECT(kvrt_context_get_logits(logits2, 49152, &w, ctx2, 0) == KVRT_OK);
        EXPECT(memcmp(logits, logits2, sizeof logits) == 0);
        cc.cache = NULL;
    }
    memset(&cs, 0, sizeof cs);
    cs.struct_size = sizeof cs;
    EXPECT(kvrt_cache_stats_get(&cs, cache) == KVRT_OK && cs.hit_tokens >= 32);

    /* destroying the model while contexts use it is safe: they keep it alive */
    kvrt_model_destroy(m);
    EXPECT(kvrt_context_prefill(&st, ctx2, 0, prompt, n) == KVRT_OK);
    EXPECT(kvrt_context_get_logits(logits2, 49152, &w, ctx2, 0) == KVRT_OK);
    {
        kvrt_context *none = NULL;
        EXPECT(kvrt_context_create(&none, m, &cc) == KVRT_ERR_BAD_HANDLE && none == NULL);
    }

    /* sampler */
    EXPECT(kvrt_sampler_config_init(&sc, sizeof sc) == KVRT_OK);
    EXPECT(sc.temperature == 0.0f && sc.top_p == 1.0f);
    EXPECT(kvrt_sampler_config_init(NULL, sizeof sc) == KVRT_ERR_INVALID_ARGUMENT);
    sc.top_p = 0.0f;
    EXPECT(kvrt_sampler_create(&smp, &sc) == KVRT_ERR_INVALID_ARGUMENT && smp == NULL);
    sc.top_p = 1.0f;
    sc.top_k = -2;
    EXPECT(kvrt_sampler_create(&smp, &sc) == KVRT_ERR_INVALID_ARGUMENT);
    /* NULL cfg: the defaults (greedy), as every create takes a NULL config */
    EXPECT(kvrt_sampler_create(&smp, NULL) == KVRT_OK && smp != NULL);
    kvrt_sampler_destroy(smp);
    smp = NULL;
    kvrt_sampler_config_init(&sc, sizeof sc);
    EXPECT(kvrt_sampler_create(&smp, &sc) == KVRT_OK);
    EXPECT(kvrt_sampler_sample(&tok, smp, logits2, 49152) == KVRT_OK && tok == argmax(logits2, 49152));
    EXPECT(kvrt_sampler_sample(&tok, smp, NULL, 49152) == KVRT_ERR_INVALID_ARGUMENT);
    EXPECT(kvrt_sampler_sample(&tok, smp, logits2, 0) == KVRT_ERR_INVALID_ARGUMENT);
    EXPECT(kvrt_sampler_sample(&tok, NULL, logits2, 49152) == KVRT_ERR_BAD_HANDLE);
    kvrt_sampler_destroy(smp);
    EXPECT(kvrt_sampler_sample(&tok, smp, logits2, 49152) == KVRT_ERR_BAD_HANDLE);
    kvrt_sampler_destroy(NULL);
    sc.temperature = 0.8f;
    sc.top_k = 40;
    sc.top_p = 0.95f;
    sc.min_p = 0.05f;
    sc.seed = 42;
    EXPECT(kvrt_sampler_create(&smp, &sc) == KVRT_OK);

    /* generate: max tokens, callback stop, stop string, sampler */
    EXPECT(kvrt_generate_config_init(&gc, sizeof gc) == KVRT_OK);
    EXPECT(gc.max_tokens == 256 && gc.stop_at_eog == 1 && gc.sampler == NULL);
    EXPECT(kvrt_generate_config_init(NULL, sizeof gc) == KVRT_ERR_INVALID_ARGUMENT);
    memset(&stream, 0, sizeof stream);
    stream.stop_after = 1000;
    gc.max_tokens = 6;
    gc.on_token = on_token;
    gc.user_data = &stream;
    kvrt_request_stats_init(&st, sizeof st);
    EXPECT(kvrt_context_generate(&st, ctx2, 0, prompt, n, &gc) == KVRT_OK);
    EXPECT(st.stop_reason == KVRT_STOP_MAX_TOKENS && st.generated_tokens == 6);
    EXPECT(st.reused_tokens == n - 1 || st.reused_tokens == n); /* the sequence already held the prompt */
    EXPECT(stream.len > 0 && strstr(stream.text, "Paris") != NULL);
    memset(&stream, 0, sizeof stream);
    stream.stop_after = 2;
    gc.max_tokens = 20;
    EXPECT(kvrt_context_generate(&st, ctx2, 0, prompt, n, &gc) == KVRT_OK);
    EXPECT(st.stop_reason == KVRT_STOP_CALLBACK && st.generated_tokens == 2);
    memset(&stream, 0, sizeof stream);
    stream.stop_after = 1000;
    stops[0] = "Paris";
    gc.stop_strings = stops;
    gc.n_stop_strings = 1;
    EXPECT(kvrt_context_generate(&st, ctx2, 0, prompt, n, &gc) == KVRT_OK);
    EXPECT(st.stop_reason == KVRT_STOP_STRING);
    EXPECT(strstr(stream.text, "Paris") == NULL);
    gc.n_stop_strings = 2;
    gc.stop_strings = NULL;
    EXPECT(kvrt_context_generate(&st, ctx2, 0, prompt, n, &gc) == KVRT_ERR_INVALID_ARGUMENT);
    gc.n_stop_strings = 0;
    gc.sampler = smp;
    memset(&stream, 0, sizeof stream);
    stream.stop_after = 1000;
    gc.max_tokens = 4;
    {
        struct timespec t0, t1;
        double wall;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        EXPECT(kvrt_context_generate(&st, ctx2, 0, prompt, n, &gc) == KVRT_OK);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        wall = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
        EXPECT(st.generated_tokens <= 4 && st.generated_tokens >= 1);
        /* the sampler's time: some, within the call's, and outside decode_s */
        EXPECT(st.sample_s > 0.0 && st.sample_s + st.decode_s <= wall);
        EXPECT(kvrt_context_prefill(&st, ctx2, 0, prompt, n) == KVRT_OK);
        EXPECT(st.sample_s == 0.0); /* a prefill samples nothing */
    }
    EXPECT(kvrt_context_generate(&st, ctx2, 0, NULL, n, &gc) == KVRT_ERR_INVALID_ARGUMENT);
    EXPECT(kvrt_context_generate(&st, NULL, 0, prompt, n, &gc) == KVRT_ERR_BAD_HANDLE);
    EXPECT(kvrt_context_generate(NULL, ctx2, 0, prompt, n, NULL) == KVRT_OK); /* defaults */

    kvrt_sampler_destroy(smp);
    kvrt_context_destroy(ctx);
    EXPECT(kvrt_context_seq_length(&len, ctx, 0) == KVRT_ERR_BAD_HANDLE);
    /* the shared cache lives on with ctx2 */
    EXPECT(kvrt_cache_stats_get(&cs, cache) == KVRT_OK);
    kvrt_context_destroy(ctx2);
    EXPECT(kvrt_cache_stats_get(&cs, cache) == KVRT_ERR_BAD_HANDLE);
    kvrt_context_destroy(NULL);

    if (failures) {
        fprintf(stderr, "test_context: %d failure(s)\n", failures);
        return 1;
    }
    printf("test_context: ok\n");
    return 0;
}
