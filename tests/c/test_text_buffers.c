/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The kvrt authors */

#define _POSIX_C_SOURCE 200809L
/* C99 test of the one (dst, capacity, written) convention (kvrt/model.h) on
 * every function that fills a caller's buffer, with the real SmolLM2 model:
 *   - a size query (dst NULL, capacity 0) gives *written = n;
 *   - a call with capacity exactly n succeeds and sets *written = n;
 *   - capacity n - 1 gives KVRT_ERR_BUFFER_TOO_SMALL with a message, sets
 *     *written = n and writes nothing past the capacity;
 *   - NULL written, or NULL dst with capacity > 0, is KVRT_ERR_INVALID_ARGUMENT.
 * Text buffers are NUL-terminated and the NUL is counted in all three cases
 * (so the text is n - 1 bytes); kvrt_generate_config's text_out follows the
 * same count (text_written = length + 1; more than text_capacity = truncated). */
#include <kvrt/kvrt.h>

#include "expect.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CANARY 0x5A
#define SLACK 16

static kvrt_model *M;
static kvrt_context *CTX;

/* ---- text functions behind one signature ---- */
typedef kvrt_status (*text_fn)(char *dst, size_t capacity, size_t *written);

static kvrt_status t_meta_string(char *d, size_t c, size_t *w) {
    return kvrt_model_meta_string(d, c, w, M, "general.architecture");
}
static kvrt_status t_meta_key(char *d, size_t c, size_t *w) { return kvrt_model_meta_key(d, c, w, M, 3); }
static kvrt_status t_tensor_info(char *d, size_t c, size_t *w) {
    return kvrt_model_tensor_info(d, c, w, NULL, NULL, NULL, M, 5);
}
static const int32_t DETOK[3] = {504, 6376, 314}; /* "The sky is" */
static kvrt_status t_detokenize(char *d, size_t c, size_t *w) { return kvrt_model_detokenize(d, c, w, M, DETOK, 3, 0); }
static kvrt_status t_detokenize_empty(char *d, size_t c, size_t *w) {
    return kvrt_model_detokenize(d, c, w, M, DETOK, 0, 0);
}
static const int32_t SPECIAL[2] = {1, 2}; /* <|im_start|><|im_end|> */
static kvrt_status t_detokenize_special(char *d, size_t c, size_t *w) {
    return kvrt_model_detokenize(d, c, w, M, SPECIAL, 2, KVRT_DETOKENIZE_SPECIAL);
}
static kvrt_chat_message MSG[1];
static kvrt_status t_chat_apply(char *d, size_t c, size_t *w) { return kvrt_model_chat_apply(d, c, w, M, MSG, 1, 1); }
static kvrt_status t_chat_apply_template(char *d, size_t c, size_t *w) {
    return kvrt_model_chat_apply_template(d, c, w, M, "llama3", MSG, 1, 1);
}

/* The convention on one text function; returns the text (malloc'ed) or NULL. */
static char *check_text(const char *name, text_fn f) {
    size_t n = 0, w = 0, i;
    char *buf;
    kvrt_status s = f(NULL, 0, &n);
    if (s != KVRT_OK || n == 0) {
        fprintf(stderr, "%s: size query gave %d, n = %zu (%s)\n", name, (int)s, n, kvrt_last_error());
        failures++;
        return NULL;
    }
    buf = (char *)malloc(n + SLACK);
    if (!buf) return NULL;
    /* exactly n: success, *written = n, NUL at n - 1, nothing past n */
    memset(buf, CANARY, n + SLACK);
    w = 12345;
    s = f(buf, n, &w);
    if (s != KVRT_OK || w != n || buf[n - 1] != '\0') {
        fprintf(stderr, "%s: capacity %zu gave %d, written %zu (%s)\n", name, n, (int)s, w, kvrt_last_error());
        failures++;
    }
    for (i = n; i < n + SLACK; ++i) EXPECT((unsigned char)buf[i] == CANARY);
    /* n - 1: too small, *written = n, nothing written at or past n - 1 */
    memset(buf, CANARY, n + SLACK);
    w = 12345;
    kvrt_clear_error();
    s = f(buf, n - 1, &w);
    if (s != KVRT_ERR_BUFFER_TOO_SMALL || w != n || kvrt_last_error()[0] == '\0') {
        fprintf(stderr, "%s: capacity %zu gave %d, written %zu (%s)\n", name, n - 1, (int)s, w, kvrt_last_error());
        failures++;
    }
    for (i = n - 1; i < n + SLACK; ++i) EXPECT((unsigned char)buf[i] == CANARY);
    /* misuse */
    EXPECT_ERR(f(buf, n, NULL), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(f(NULL, n, &w), KVRT_ERR_INVALID_ARGUMENT);
    /* the text again, for the caller's checks */
    EXPECT_OK(f(buf, n + SLACK, &w));
    EXPECT(w == n);
    return buf;
}

/* ---- element buffers: the same rule, counted in elements ---- */
typedef kvrt_status (*elem_fn)(void *dst, size_t capacity, size_t *written);

static kvrt_status e_tokenize(void *d, size_t c, size_t *w) {
    return kvrt_model_tokenize((int32_t *)d, c, w, M, "The sky is blue", 15, KVRT_TOKENIZE_ADD_BOS);
}
static kvrt_status e_seq_tokens(void *d, size_t c, size_t *w) { return kvrt_context_seq_tokens((int32_t *)d, c, w, CTX, 0); }
static kvrt_status e_logits(void *d, size_t c, size_t *w) { return kvrt_context_get_logits((float *)d, c, w, CTX, 0); }
static kvrt_status e_logits_at(void *d, size_t c, size_t *w) { return kvrt_context_get_logits_at((float *)d, c, w, CTX, 0, 1); }
static kvrt_cache *CACHE;

static void check_elems(const char *name, elem_fn f, size_t elem) {
    size_t n = 0, w = 0, i;
    unsigned char *buf;
    kvrt_status s = f(NULL, 0, &n);
    if (s != KVRT_OK || n == 0) {
        fprintf(stderr, "%s: size query gave %d, n = %zu (%s)\n", name, (int)s, n, kvrt_last_error());
        failures++;
        return;
    }
    buf = (unsigned char *)malloc((n + SLACK) * elem);
    if (!buf) return;
    memset(buf, CANARY, (n + SLACK) * elem);
    s = f(buf, n, &w);
    if (s != KVRT_OK || w != n) {
        fprintf(stderr, "%s: capacity %zu gave %d, written %zu (%s)\n", name, n, (int)s, w, kvrt_last_error());
        failures++;
    }
    for (i = n * elem; i < (n + SLACK) * elem; ++i) EXPECT(buf[i] == CANARY);
    memset(buf, CANARY, (n + SLACK) * elem);
    w = 0;
    kvrt_clear_error();
    s = f(buf, n - 1, &w);
    if (s != KVRT_ERR_BUFFER_TOO_SMALL || w != n || kvrt_last_error()[0] == '\0') {
        fprintf(stderr, "%s: capacity %zu gave %d, written %zu (%s)\n", name, n - 1, (int)s, w, kvrt_last_error());
        failures++;
    }
    for (i = (n - 1) * elem; i < (n + SLACK) * elem; ++i) EXPECT(buf[i] == CANARY);
    EXPECT_ERR(f(buf, n, NULL), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(f(NULL, n, &w), KVRT_ERR_INVALID_ARGUMENT);
    free(buf);
}

static kvrt_status e_block_table_real(void *d, size_t c, size_t *w) {
    return kvrt_cache_block_table((const void **)d, c, w, CACHE, 1, 0);
}

int main(void) {
    char path[1024];
    char *t;
    kvrt_context_config cc;
    kvrt_generate_config gc;
    int32_t prompt[64];
    uint32_t positions[2] = {1, 3};
    size_t n = 0, xw = 0, full = 0;
    char text[2048], small[4096];
    size_t i;

    expect_model_path(path, sizeof path);
    if (kvrt_model_load(&M, path, NULL) != KVRT_OK) {
        fprintf(stderr, "test_text_buffers: cannot load %s: %s\n", path, kvrt_last_error());
        return 1;
    }
    MSG[0].role = "user";
    MSG[0].content = "Hi";

    t = check_text("kvrt_model_meta_string", t_meta_string);
    EXPECT(t && strcmp(t, "llama") == 0);
    free(t);
    t = check_text("kvrt_model_meta_key", t_meta_key);
    EXPECT(t && strlen(t) > 0);
    free(t);
    t = check_text("kvrt_model_tensor_info", t_tensor_info);
    EXPECT(t && strchr(t, '.') != NULL);
    free(t);
    t = check_text("kvrt_model_detokenize", t_detokenize);
    EXPECT(t && strcmp(t, "The sky is") == 0);
    free(t);
    t = check_text("kvrt_model_detokenize (no tokens)", t_detokenize_empty);
    EXPECT(t && t[0] == '\0');
    free(t);
    t = check_text("kvrt_model_detokenize (special)", t_detokenize_special);
    EXPECT(t && strcmp(t, "<|im_start|><|im_end|>") == 0);
    free(t);
    t = check_text("kvrt_model_chat_apply", t_chat_apply);
    EXPECT(t && strstr(t, "<|im_start|>user\nHi<|im_end|>") != NULL);
    free(t);
    t = check_text("kvrt_model_chat_apply_template", t_chat_apply_template);
    EXPECT(t && strstr(t, "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>") != NULL);
    free(t);
    /* The size query of every text function equals the length + 1 of what it writes. */
    EXPECT_OK(kvrt_model_meta_string(NULL, 0, &n, M, "general.architecture"));
    EXPECT(n == strlen("llama") + 1);

    check_elems("kvrt_model_tokenize", e_tokenize, sizeof(int32_t));

    kvrt_context_config_init(&cc, sizeof cc);
    cc.n_ctx = 128;
    EXPECT_OK(kvrt_context_create(&CTX, M, &cc));
    EXPECT_OK(kvrt_model_tokenize(prompt, 64, &n, M, "Here is a list of fruits: apple, banana,", 40, 0));
    EXPECT_OK(kvrt_context_prefill_logits(NULL, CTX, 0, prompt, n, positions, 2));
    check_elems("kvrt_context_seq_tokens", e_seq_tokens, sizeof(int32_t));
    check_elems("kvrt_context_get_logits", e_logits, sizeof(float));
    check_elems("kvrt_context_get_logits_at", e_logits_at, sizeof(float));

    /* A cache of its own for the block table (2 blocks of 4 positions + 1). */
    {
        kvrt_cache_layout *lay = NULL;
        kvrt_cache_layer_config lc;
        uint64_t seq = 0;
        int32_t toks[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
        EXPECT_OK(kvrt_cache_layout_create(&lay, 4));
        kvrt_cache_layer_config_init(&lc, sizeof lc);
        lc.n_kv_heads = 1;
        lc.head_dim = 8;
        EXPECT_OK(kvrt_cache_layout_add_layers(NULL, lay, &lc, 1));
        EXPECT_OK(kvrt_cache_create(&CACHE, lay, NULL));
        EXPECT_OK(kvrt_cache_seq_create(&seq, CACHE, NULL));
        EXPECT(seq == 1);
        EXPECT_OK(kvrt_cache_seq_append(CACHE, seq, toks, 9));
        check_elems("kvrt_cache_block_table", e_block_table_real, sizeof(void *));
        kvrt_cache_destroy(CACHE);
        kvrt_cache_layout_destroy(lay);
    }

    /* kvrt_generate_config.text_out: text_written = length + 1; a capacity of exactly
     * text_written holds the whole answer, one byte less truncates it. */
    kvrt_generate_config_init(&gc, sizeof gc);
    gc.max_tokens = 6;
    gc.stop_at_eog = 0;
    gc.text_out = text;
    gc.text_capacity = sizeof text;
    gc.text_written = &xw;
    EXPECT_OK(kvrt_context_generate(NULL, CTX, 0, prompt, n, &gc));
    full = xw;
    EXPECT(full >= 2 && full <= sizeof text && strlen(text) + 1 == full);
    memcpy(small, text, full);
    memset(text, CANARY, sizeof text);
    gc.text_capacity = full;
    EXPECT_OK(kvrt_context_generate(NULL, CTX, 0, prompt, n, &gc));
    EXPECT(xw == full && strcmp(text, small) == 0); /* not truncated: xw <= capacity */
    for (i = full; i < full + SLACK; ++i) EXPECT((unsigned char)text[i] == CANARY);
    memset(text, CANARY, sizeof text);
    gc.text_capacity = full - 1;
    EXPECT_OK(kvrt_context_generate(NULL, CTX, 0, prompt, n, &gc));
    EXPECT(xw == full && xw > gc.text_capacity); /* truncated */
    EXPECT(strlen(text) < full - 1 && strncmp(text, small, strlen(text)) == 0);
    for (i = full - 1; i < full + SLACK; ++i) EXPECT((unsigned char)text[i] == CANARY);
    /* No buffer: text_written still counts the NUL. */
    gc.text_out = NULL;
    gc.text_capacity = 0;
    EXPECT_OK(kvrt_context_generate(NULL, CTX, 0, prompt, n, &gc));
    EXPECT(xw == full);

    kvrt_context_destroy(CTX);
    kvrt_model_destroy(M);
    if (failures) fprintf(stderr, "test_text_buffers: %d failures\n", failures);
    return failures ? 1 : 0;
}
