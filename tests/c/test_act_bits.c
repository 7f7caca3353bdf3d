/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The kvrt authors */

#define _POSIX_C_SOURCE 200809L
/* C99 test of kvrt_context_config.act_bits on the real SmolLM2 model: the default is 0
 * (also for an older struct_size), the same computation as 9 (KVRT_ACT_BITS_OUTLIERS: 16-bit
 * codes for the K/V projections, 8-bit codes with outlier residuals elsewhere); 0, 8 and 16
 * give three different logits, and each keeps every exactness guarantee (1 vs 2 threads,
 * chunks, prefix hit == cold, decode == prefill row); contexts of the three settings sharing
 * one cache never reuse each other's blocks, while 0 and 9 share theirs; a sequence saved
 * under one setting does not load under another (but one of 9 loads under 0); values other
 * than 0, 8, 9 and 16 are refused with a message, creating nothing. */
#include <kvrt/kvrt.h>

#include "expect.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define VOCAB 49152
static float a[VOCAB], b[VOCAB], c[VOCAB];

static kvrt_context *open_ctx(kvrt_model *m, size_t struct_size, int32_t act_bits, int32_t threads, int prefix,
                              kvrt_cache *share) {
    kvrt_context_config cc;
    kvrt_context *ctx = NULL;
    memset(&cc, 0, sizeof cc);
    EXPECT_OK(kvrt_context_config_init(&cc, struct_size));
    cc.n_ctx = 128;
    cc.n_threads = threads;
    cc.block_tokens = 4;
    cc.prefix_caching = prefix;
    cc.cache = share;
    if (struct_size >= offsetof(kvrt_context_config, act_bits) + sizeof(int32_t)) cc.act_bits = act_bits;
    EXPECT_OK(kvrt_context_create(&ctx, m, &cc));
    return ctx;
}

static void logits(float *dst, kvrt_context *ctx) {
    size_t w = 0;
    EXPECT_OK(kvrt_context_get_logits(dst, VOCAB, &w, ctx, 0));
    EXPECT(w == VOCAB);
}

/* Under act_bits `bits`, with `want` the 2-thread cold prefill's last logits: 1 thread in
 * chunks of 3 with a prefix hit, and the last token decoded after n-1 prefilled, give the
 * same bits. */
static void exact_under(kvrt_model *m, int32_t bits, const int32_t *toks, size_t n, const float *want) {
    kvrt_context_config h;
    kvrt_context *hit = NULL, *t1 = NULL;
    kvrt_request_stats st;
    int32_t seq = 0, next;
    EXPECT_OK(kvrt_context_config_init(&h, sizeof h));
    h.n_ctx = 128;
    h.n_threads = 1;
    h.n_batch = 3;
    h.block_tokens = 4;
    h.act_bits = bits;
    EXPECT_OK(kvrt_context_create(&hit, m, &h));
    EXPECT_OK(kvrt_context_prefill(NULL, hit, 0, toks, 9));
    EXPECT_OK(kvrt_context_seq_release(hit, 0));
    EXPECT_OK(kvrt_request_stats_init(&st, sizeof st));
    EXPECT_OK(kvrt_context_prefill(&st, hit, 0, toks, n));
    EXPECT(st.reused_from_cache >= 8);
    logits(c, hit);
    EXPECT(memcmp(c, want, sizeof c) == 0);

    t1 = open_ctx(m, sizeof h, bits, 1, 0, NULL);
    EXPECT_OK(kvrt_context_prefill(NULL, t1, 0, toks, n - 1));
    next = toks[n - 1];
    EXPECT_OK(kvrt_context_decode(t1, &seq, &next, 1));
    logits(c, t1);
    EXPECT(memcmp(c, want, sizeof c) == 0);
    kvrt_context_destroy(hit);
    kvrt_context_destroy(t1);
}

int main(void) {
    kvrt_model *m = NULL;
    kvrt_context_config cc;
    kvrt_context *c8 = NULL, *c16 = NULL, *c0 = NULL, *c9 = NULL, *old = NULL, *s8 = NULL, *s16 = NULL, *s0 = NULL,
                 *s9 = NULL, *bad = NULL;
    kvrt_cache *shared = NULL;
    kvrt_request_stats st;
    char path[1024], state[256];
    int32_t toks[64];
    size_t n = 0;
    const int32_t bad_bits[] = {1, 4, 7, 10, 12, 32, -8};
    size_t i;
    const char *text = "The lighthouse keeper climbed the stairs and looked out over the dark sea.";

    EXPECT_OK(kvrt_context_config_init(&cc, sizeof cc));
    EXPECT(cc.act_bits == 0);
    expect_model_path(path, sizeof path);
    if (kvrt_model_load(&m, path, NULL) != KVRT_OK) {
        fprintf(stderr, "test_act_bits: cannot load %s: %s\n", path, kvrt_last_error());
        return 1;
    }
    EXPECT_OK(kvrt_model_tokenize(toks, 64, &n, m, text, strlen(text), KVRT_TOKENIZE_ADD_BOS));
    EXPECT(n > 12);

    /* 0, 8 and 16: three computations. */
    c8 = open_ctx(m, sizeof cc, 8, 2, 0, NULL);
    c16 = open_ctx(m, sizeof cc, 16, 2, 0, NULL);
    c0 = open_ctx(m, sizeof cc, 0, 2, 0, NULL);
    EXPECT_OK(kvrt_context_prefill(NULL, c8, 0, toks, n));
    EXPECT_OK(kvrt_context_prefill(NULL, c16, 0, toks, n));
    EXPECT_OK(kvrt_context_prefill(NULL, c0, 0, toks, n));
    logits(a, c8);
    logits(b, c16);
    logits(c, c0);
    EXPECT(memcmp(a, b, sizeof a) != 0);
    EXPECT(memcmp(c, a, sizeof c) != 0);
    EXPECT(memcmp(c, b, sizeof c) != 0);

    /* Each keeps the exactness guarantees. */
    exact_under(m, 16, toks, n, b);
    logits(a, c0);
    exact_under(m, 0, toks, n, a);

    /* 9: the default's computation, as exact. */
    c9 = open_ctx(m, sizeof cc, KVRT_ACT_BITS_OUTLIERS, 2, 0, NULL);
    EXPECT_OK(kvrt_context_prefill(NULL, c9, 0, toks, n));
    logits(b, c9);
    EXPECT(memcmp(a, b, sizeof a) == 0);
    exact_under(m, KVRT_ACT_BITS_OUTLIERS, toks, n, b);

    /* A struct_size from before act_bits: the default (0). */
    old = open_ctx(m, offsetof(kvrt_context_config, act_bits), 16, 2, 0, NULL);
    EXPECT_OK(kvrt_context_prefill(NULL, old, 0, toks, n));
    logits(a, old);
    logits(b, c0);
    EXPECT(memcmp(a, b, sizeof a) == 0);

    /* One cache, three settings: none reuses another's blocks. */
    s8 = open_ctx(m, sizeof cc, 8, 2, 1, NULL);
    EXPECT_OK(kvrt_context_get_cache(&shared, s8));
    s16 = open_ctx(m, sizeof cc, 16, 2, 1, shared);
    s0 = open_ctx(m, sizeof cc, 0, 2, 1, shared);
    EXPECT_OK(kvrt_context_prefill(NULL, s8, 0, toks, n));
    EXPECT_OK(kvrt_request_stats_init(&st, sizeof st));
    EXPECT_OK(kvrt_context_prefill(&st, s16, 0, toks, n));
    EXPECT(st.reused_from_cache == 0);
    EXPECT(st.computed_tokens == n);
    logits(a, s16);
    logits(b, c16);
    EXPECT(memcmp(a, b, sizeof a) == 0);
    EXPECT_OK(kvrt_request_stats_init(&st, sizeof st));
    EXPECT_OK(kvrt_context_prefill(&st, s0, 0, toks, n));
    EXPECT(st.reused_from_cache == 0);
    logits(a, s0);
    logits(b, c0);
    EXPECT(memcmp(a, b, sizeof a) == 0);
    s9 = open_ctx(m, sizeof cc, KVRT_ACT_BITS_OUTLIERS, 2, 1, shared);
    EXPECT_OK(kvrt_request_stats_init(&st, sizeof st));  /* 9 hits the default's blocks */
    EXPECT_OK(kvrt_context_prefill(&st, s9, 0, toks, n));
    EXPECT(st.reused_from_cache >= 8);
    logits(a, s9);
    logits(b, c9);
    EXPECT(memcmp(a, b, sizeof a) == 0);
    EXPECT_OK(kvrt_request_stats_init(&st, sizeof st));  /* and the 8-bit one still hits its own */
    EXPECT_OK(kvrt_context_seq_release(s8, 0));
    EXPECT_OK(kvrt_context_prefill(&st, s8, 0, toks, n));
    EXPECT(st.reused_from_cache >= 8);

    /* A sequence saved under 16 (or the default) does not load into an 8-bit context, nor
     * one saved under 8 into a default one; each loads under its own setting. */
    snprintf(state, sizeof state, "/tmp/kvrt_test_act_bits_%ld.kvctx", (long)getpid());
    logits(b, c8);
    EXPECT_OK(kvrt_context_seq_save(c16, 0, state));
    EXPECT_ERR(kvrt_context_seq_load(c8, 0, state), KVRT_ERR_MISMATCH);
    EXPECT(strstr(kvrt_last_error(), "act_bits") != NULL);
    logits(a, c8);  /* the failed load left c8's sequence as it was */
    EXPECT(memcmp(a, b, sizeof a) == 0);
    EXPECT_OK(kvrt_context_seq_load(s16, 0, state));
    EXPECT_OK(kvrt_context_seq_save(c0, 0, state));
    EXPECT_ERR(kvrt_context_seq_load(c8, 0, state), KVRT_ERR_MISMATCH);
    EXPECT_OK(kvrt_context_seq_load(s0, 0, state));
    EXPECT_OK(kvrt_context_seq_save(c8, 0, state));
    EXPECT_ERR(kvrt_context_seq_load(c0, 0, state), KVRT_ERR_MISMATCH);
    EXPECT_OK(kvrt_context_seq_save(c9, 0, state));
    EXPECT_ERR(kvrt_context_seq_load(c8, 0, state), KVRT_ERR_MISMATCH);
    EXPECT_OK(kvrt_context_seq_load(c0, 0, state));
    EXPECT_OK(kvrt_context_seq_load(s9, 0, state));
    remove(state);

    /* Bad values: a status, a message naming the field, no context. */
    for (i = 0; i < sizeof bad_bits / sizeof bad_bits[0]; ++i) {
        EXPECT_OK(kvrt_context_config_init(&cc, sizeof cc));
        cc.n_ctx = 64;
        cc.act_bits = bad_bits[i];
        bad = (kvrt_context *)&cc;  /* must be reset to NULL */
        EXPECT_ERR(kvrt_context_create(&bad, m, &cc), KVRT_ERR_INVALID_ARGUMENT);
        EXPECT(bad == NULL);
        EXPECT(strstr(kvrt_last_error(), "act_bits") != NULL);
    }

    kvrt_context_destroy(c8);
    kvrt_context_destroy(c16);
    kvrt_context_destroy(c0);
    kvrt_context_destroy(c9);
    kvrt_context_destroy(s9);
    kvrt_context_destroy(old);
    kvrt_context_destroy(s16);
    kvrt_context_destroy(s0);
    kvrt_context_destroy(s8);
    kvrt_model_destroy(m);
    if (failures) fprintf(stderr, "test_act_bits: %d failure(s)\n", failures);
    return failures ? 1 : 0;
}
