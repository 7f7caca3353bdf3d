/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The kvrt authors */

#define _POSIX_C_SOURCE 200809L
/* C99 test of kvrt_generate_config's output buffers (tokens and text into the
 * caller's memory, with or without on_token): the same answer as the stream,
 * truncation reported through *_written with the text NUL-terminated at a
 * character boundary, a 0.1-sized config still accepted, and bad buffers
 * rejected before anything runs. Real SmolLM2 model, greedy. */
#include <kvrt/kvrt.h>

#include "expect.h"

#include <stdio.h>
#include <string.h>

struct Stream {
    int32_t tokens[64];
    size_t n_tokens;
    char text[4096];
    size_t len;
};

static int on_token(int32_t token, const char *text, size_t len, void *user_data) {
    struct Stream *s = (struct Stream *)user_data;
    if (token >= 0 && s->n_tokens < 64) s->tokens[s->n_tokens++] = token;
    if (s->len + len < sizeof s->text) {
        memcpy(s->text + s->len, text, len);
        s->len += len;
        s->text[s->len] = '\0';
    }
    return 0;
}

int main(void) {
    char path[1024];
    kvrt_model *m = NULL;
    kvrt_context *ctx = NULL;
    kvrt_context_config cc;
    kvrt_generate_config gc;
    kvrt_request_stats st;
    struct Stream stream;
    int32_t prompt[64], toks[64], small_toks[2];
    char text[4096], small_text[6];
    size_t n = 0, tw = 0, xw = 0, i, pos = 0;
    size_t v01 = offsetof(kvrt_generate_config, user_data) + sizeof(void *);

    expect_model_path(path, sizeof path);
    if (kvrt_model_load(&m, path, NULL) != KVRT_OK) {
        fprintf(stderr, "test_generate_buffers: cannot load %s: %s\n", path, kvrt_last_error());
        return 1;
    }
    EXPECT_OK(kvrt_model_tokenize(prompt, 64, &n, m, "Here is a list of fruits: apple, banana,", 40, 0));
    kvrt_context_config_init(&cc, sizeof cc);
    cc.n_ctx = 256;
    EXPECT_OK(kvrt_context_create(&ctx, m, &cc));

    /* The stream, for reference. */
    memset(&stream, 0, sizeof stream);
    kvrt_generate_config_init(&gc, sizeof gc);
    EXPECT(gc.tokens_out == NULL && gc.tokens_capacity == 0 && gc.text_out == NULL && gc.text_written == NULL);
    gc.max_tokens = 24;
    gc.stop_at_eog = 0;
    gc.on_token = on_token;
    gc.user_data = &stream;
    EXPECT_OK(kvrt_context_generate(NULL, ctx, 0, prompt, n, &gc));
    EXPECT(stream.n_tokens == 24 && stream.len > 0);

    /* No callback: the answer lands in the buffers, identical to the stream. */
    kvrt_generate_config_init(&gc, sizeof gc);
    gc.max_tokens = 24;
    gc.stop_at_eog = 0;
    gc.tokens_out = toks;
    gc.tokens_capacity = 64;
    gc.tokens_written = &tw;
    gc.text_out = text;
    gc.text_capacity = sizeof text;
    gc.text_written = &xw;
    kvrt_request_stats_init(&st, sizeof st);
    EXPECT_OK(kvrt_context_generate(&st, ctx, 0, prompt, n, &gc));
    EXPECT(tw == 24 && st.generated_tokens == 24);
    EXPECT(memcmp(toks, stream.tokens, 24 * sizeof(int32_t)) == 0);
    EXPECT(xw == stream.len + 1 && strlen(text) + 1 == xw && strcmp(text, stream.text) == 0); /* the NUL counts */

    /* Truncated: the first tokens, the counts of the whole answer, a NUL-terminated prefix. */
    gc.tokens_out = small_toks;
    gc.tokens_capacity = 2;
    gc.text_out = small_text;
    gc.text_capacity = sizeof small_text;
    EXPECT_OK(kvrt_context_generate(NULL, ctx, 0, prompt, n, &gc));
    EXPECT(tw == 24 && small_toks[0] == stream.tokens[0] && small_toks[1] == stream.tokens[1]);
    EXPECT(xw == stream.len + 1 && xw > sizeof small_text); /* reported as truncated */
    EXPECT(strlen(small_text) <= sizeof small_text - 1);
    EXPECT(strncmp(small_text, stream.text, strlen(small_text)) == 0);
    /* cut at a character boundary: the next byte of the full text is not a continuation byte */
    pos = strlen(small_text);
    EXPECT(((unsigned char)stream.text[pos] & 0xC0) != 0x80);

    /* Stop strings cut the buffered text as they cut the stream. */
    {
        const char *stops[1];
        char cut[64];
        stops[0] = stream.text + 4;  /* a suffix of the answer: the text stops at its first occurrence */
        memset(cut, 0, sizeof cut);
        memcpy(cut, stream.text + 4, 3);
        stops[0] = cut;
        gc.stop_strings = stops;
        gc.n_stop_strings = 1;
        gc.tokens_out = toks;
        gc.tokens_capacity = 64;
        gc.text_out = text;
        gc.text_capacity = sizeof text;
        kvrt_request_stats_init(&st, sizeof st);
        EXPECT_OK(kvrt_context_generate(&st, ctx, 0, prompt, n, &gc));
        EXPECT(st.stop_reason == KVRT_STOP_STRING);
        EXPECT(strstr(stream.text, cut) != NULL);
        EXPECT(xw == (size_t)(strstr(stream.text, cut) - stream.text) + 1);
        EXPECT(strlen(text) + 1 == xw && strncmp(text, stream.text, xw - 1) == 0);
        gc.stop_strings = NULL;
        gc.n_stop_strings = 0;
    }

    /* A caller built against 0.1 (no output fields) keeps working. */
    {
        static unsigned char raw[sizeof(kvrt_generate_config) + 64];
        kvrt_generate_config *old = (kvrt_generate_config *)(void *)raw;
        memset(raw, 0xAB, sizeof raw); /* the bytes past 0.1's struct are garbage */
        EXPECT_OK(kvrt_generate_config_init(old, v01));
        EXPECT(old->max_tokens == 256 && old->struct_size == v01);
        for (i = v01; i < sizeof raw; ++i) EXPECT(raw[i] == 0xAB); /* nothing written past it */
        old->max_tokens = 3;
        EXPECT_OK(kvrt_context_generate(NULL, ctx, 0, prompt, n, old));
    }

    /* Bad buffers: refused before anything runs. */
    kvrt_generate_config_init(&gc, sizeof gc);
    gc.tokens_capacity = 4;
    EXPECT_ERR(kvrt_context_generate(NULL, ctx, 0, prompt, n, &gc), KVRT_ERR_INVALID_ARGUMENT);
    kvrt_generate_config_init(&gc, sizeof gc);
    gc.text_capacity = 4;
    EXPECT_ERR(kvrt_context_generate(NULL, ctx, 0, prompt, n, &gc), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(kvrt_generate_config_init(&gc, v01 - 1), KVRT_ERR_INVALID_ARGUMENT);

    kvrt_context_destroy(ctx);
    kvrt_model_destroy(m);
    if (failures) fprintf(stderr, "test_generate_buffers: %d failure(s)\n", failures);
    return failures ? 1 : 0;
}
