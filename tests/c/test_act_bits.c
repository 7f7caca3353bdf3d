/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The kvrt authors */

#define _POSIX_C_SOURCE 200809L
/* C99 test of kvrt_context_config.act_bits (16-bit activation codes) on the real
 * SmolLM2 model: the default is 8 (also for an older struct_size); 16 changes the
 * logits and keeps every exactness guarantee (1 vs 2 threads, prefix hit == cold,
 * decode == prefill row); an 8-bit and a 16-bit context sharing one cache never reuse
 * each other's blocks; a sequence saved under one width does not load under the other;
 * widths other than 8 and 16 are refused with a message, creating nothing. */
#include <kvrt/kvrt.h>

#include "expect.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define VOCAB 49152
static float a[VOCAB], b[VOCAB];

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

int main(void) {
    kvrt_model *m = NULL;
    kvrt_context_config cc;
    kvrt_context *c8 = NULL, *c16 = NULL, *t1 = NULL, *hit = NULL, *old = NULL, *s8 = NULL, *s16 = NULL, *bad = NULL;
    kvrt_cache *shared = NULL;
    kvrt_request_stats st;
    char path[1024], state[256];
    int32_t toks[64], seq = 0, next;
    size_t n = 0;
    const int32_t bad_bits[] = {0, 4, 7, 12, 32, -8};
    size_t i;
    const char *text = "The lighthouse keeper climbed the stairs and looked out over the dark sea.";

    EXPECT_OK(kvrt_context_config_init(&cc, sizeof cc));
    EXPECT(cc.act_bits == 8);
    expect_model_path(path, sizeof path);
    if (kvrt_model_load(&m, path, NULL) != KVRT_OK) {
        fprintf(stderr, "test_act_bits: cannot load %s: %s\n", path, kvrt_last_error());
        return 1;
    }
    EXPECT_OK(kvrt_model_tokenize(toks, 64, &n, m, text, strlen(text), KVRT_TOKENIZE_ADD_BOS));
    EXPECT(n > 12);

    /* 16 vs 8: other logits, the same argmax region (both near exact math). */
    c8 = open_ctx(m, sizeof cc, 8, 2, 0, NULL);
    c16 = open_ctx(m, sizeof cc, 16, 2, 0, NULL);
    EXPECT_OK(kvrt_context_prefill(NULL, c8, 0, toks, n));
    EXPECT_OK(kvrt_context_prefill(NULL, c16, 0, toks, n));
    logits(a, c8);
    logits(b, c16);
    EXPECT(memcmp(a, b, sizeof a) != 0);

    /* 16-bit, 1 thread, chunks of 3, with a prefix hit: the same bits. */
    {
        kvrt_context_config h;
        EXPECT_OK(kvrt_context_config_init(&h, sizeof h));
        h.n_ctx = 128;
        h.n_threads = 1;
        h.n_batch = 3;
        h.block_tokens = 4;
        h.act_bits = 16;
        EXPECT_OK(kvrt_context_create(&hit, m, &h));
    }
    EXPECT_OK(kvrt_context_prefill(NULL, hit, 0, toks, 9));
    EXPECT_OK(kvrt_context_seq_release(hit, 0));
    EXPECT_OK(kvrt_request_stats_init(&st, sizeof st));
    EXPECT_OK(kvrt_context_prefill(&st, hit, 0, toks, n));
    EXPECT(st.reused_from_cache >= 8);
    logits(a, hit);
    EXPECT(memcmp(a, b, sizeof a) == 0);

    /* Decode == prefill row under 16: the last token decoded after n-1 prefilled. */
    t1 = open_ctx(m, sizeof cc, 16, 1, 0, NULL);
    EXPECT_OK(kvrt_context_prefill(NULL, t1, 0, toks, n - 1));
    next = toks[n - 1];
    EXPECT_OK(kvrt_context_decode(t1, &seq, &next, 1));
    logits(a, t1);
    EXPECT(memcmp(a, b, sizeof a) == 0);

    /* A struct_size from before act_bits: the 8-bit default. */
    old = open_ctx(m, offsetof(kvrt_context_config, act_bits), 16, 2, 0, NULL);
    EXPECT_OK(kvrt_context_prefill(NULL, old, 0, toks, n));
    logits(a, old);
    logits(b, c8);
    EXPECT(memcmp(a, b, sizeof a) == 0);

    /* One cache, two widths: the 16-bit context reuses none of the 8-bit one's blocks. */
    s8 = open_ctx(m, sizeof cc, 8, 2, 1, NULL);
    EXPECT_OK(kvrt_context_get_cache(&shared, s8));
    s16 = open_ctx(m, sizeof cc, 16, 2, 1, shared);
    EXPECT_OK(kvrt_context_prefill(NULL, s8, 0, toks, n));
    EXPECT_OK(kvrt_request_stats_init(&st, sizeof st));
    EXPECT_OK(kvrt_context_prefill(&st, s16, 0, toks, n));
    EXPECT(st.reused_from_cache == 0);
    EXPECT(st.computed_tokens == n);
    logits(a, s16);
    logits(b, c16);
    EXPECT(memcmp(a, b, sizeof a) == 0);
    EXPECT_OK(kvrt_request_stats_init(&st, sizeof st));  /* and the 8-bit one still hits its own */
    EXPECT_OK(kvrt_context_seq_release(s8, 0));
    EXPECT_OK(kvrt_context_prefill(&st, s8, 0, toks, n));
    EXPECT(st.reused_from_cache >= 8);

    /* A sequence saved under 16 bits does not load into an 8-bit context (and loads under 16). */
    snprintf(state, sizeof state, "/tmp/kvrt_test_act_bits_%ld.kvctx", (long)getpid());
    EXPECT_OK(kvrt_context_seq_save(c16, 0, state));
    EXPECT_ERR(kvrt_context_seq_load(c8, 0, state), KVRT_ERR_MISMATCH);
    EXPECT(strstr(kvrt_last_error(), "act_bits") != NULL);
    logits(a, c8);  /* the failed load left c8's sequence as it was */
    EXPECT(memcmp(a, b, sizeof a) != 0);
    EXPECT_OK(kvrt_context_seq_load(t1, 0, state));
    remove(state);

    /* Bad widths: a status, a message naming the field, no context. */
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
    kvrt_context_destroy(t1);
    kvrt_context_destroy(hit);
    kvrt_context_destroy(old);
    kvrt_context_destroy(s16);
    kvrt_context_destroy(s8);
    kvrt_model_destroy(m);
    if (failures) fprintf(stderr, "test_act_bits: %d failure(s)\n", failures);
    return failures ? 1 : 0;
}
