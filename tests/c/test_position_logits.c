/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The kvrt authors */
#define _POSIX_C_SOURCE 200809L
/* C99 test of kvrt_context_prefill_logits / kvrt_context_get_logits_at on the
 * real SmolLM2 model: the logits of each requested position equal, bit for
 * bit, the last-position logits of prefilling that prefix alone (in another
 * context, so no row is shared), whatever the chunking and the reuse; and the
 * failure paths (bad positions, unrequested or stale positions, bad handles)
 * return their status, name the problem and change nothing. Short prompts:
 * this also runs under ASan. */
#include <kvrt/kvrt.h>

#include "expect.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NV 49152

int main(void) {
    char path[1024];
    kvrt_model *m = NULL;
    kvrt_context *ctx = NULL, *alone = NULL;
    kvrt_context_config cc;
    kvrt_request_stats st;
    static float a[NV], b[NV];
    int32_t prompt[64], edited[64];
    uint32_t pos[4];
    size_t n = 0, w = 0, len = 0, i;
    const char *text = "The quick brown fox jumps over the lazy dog, and then it runs far away into the woods.";

    expect_model_path(path, sizeof path);
    if (kvrt_model_load(&m, path, NULL) != KVRT_OK) {
        fprintf(stderr, "test_position_logits: cannot load %s: %s\n", path, kvrt_last_error());
        return 1;
    }
    EXPECT_OK(kvrt_model_tokenize(prompt, 64, &n, m, text, strlen(text), 0));
    EXPECT(n >= 12);

    kvrt_context_config_init(&cc, sizeof cc);
    cc.n_ctx = 128;
    cc.n_seq_max = 2;
    cc.n_batch = 5; /* requested rows fall in several chunks, at their starts and ends */
    EXPECT_OK(kvrt_context_create(&ctx, m, &cc));
    cc.n_batch = 512;
    cc.n_seq_max = 1;
    cc.prefix_caching = 0;
    EXPECT_OK(kvrt_context_create(&alone, m, &cc));

    /* The sequence first holds the whole prompt (and the prefix cache its full blocks): the
     * requested positions must be recomputed anyway, from the first one on. */
    EXPECT_OK(kvrt_context_prefill(NULL, ctx, 0, prompt, n));
    pos[0] = 2;
    pos[1] = 6;
    pos[2] = 7;
    pos[3] = (uint32_t)(n - 2); /* the last position is not asked for */
    kvrt_request_stats_init(&st, sizeof st);
    EXPECT_OK(kvrt_context_prefill_logits(&st, ctx, 0, prompt, n, pos, 4));
    EXPECT(st.prompt_tokens == n && st.reused_tokens == 2 && st.computed_tokens == n - 2);
    for (i = 0; i < 4; ++i) {
        EXPECT_OK(kvrt_context_get_logits_at(a, NV, &w, ctx, 0, pos[i]));
        EXPECT(w == NV);
        EXPECT_OK(kvrt_context_prefill(NULL, alone, 0, prompt, pos[i] + 1));
        EXPECT_OK(kvrt_context_get_logits(b, NV, &w, alone, 0));
        EXPECT(memcmp(a, b, sizeof a) == 0);
        kvrt_context_seq_release(alone, 0);
    }
    /* The last position's logits are computed as always. */
    EXPECT_OK(kvrt_context_get_logits(a, NV, &w, ctx, 0));
    EXPECT_OK(kvrt_context_prefill(NULL, alone, 0, prompt, n));
    EXPECT_OK(kvrt_context_get_logits(b, NV, &w, alone, 0));
    EXPECT(memcmp(a, b, sizeof a) == 0);

    /* Every position of a fresh sequence (1), including 0 and the last. */
    {
        uint32_t all[64];
        for (i = 0; i < n; ++i) all[i] = (uint32_t)i;
        EXPECT_OK(kvrt_context_prefill_logits(&st, ctx, 1, prompt, n, all, n));
        EXPECT(st.computed_tokens == n);
        for (i = 0; i < n; i += 3) {
            EXPECT_OK(kvrt_context_get_logits_at(a, NV, &w, ctx, 1, i));
            EXPECT_OK(kvrt_context_prefill(NULL, alone, 0, prompt, i + 1));
            EXPECT_OK(kvrt_context_get_logits(b, NV, &w, alone, 0));
            EXPECT(memcmp(a, b, sizeof a) == 0);
            kvrt_context_seq_release(alone, 0);
        }
        EXPECT_OK(kvrt_context_get_logits_at(a, NV, &w, ctx, 1, n - 1));
        EXPECT_OK(kvrt_context_get_logits(b, NV, &w, ctx, 1));
        EXPECT(memcmp(a, b, sizeof a) == 0);
    }

    /* Bad arguments: a status, a message, and sequence 0 as it was (its rows still readable). */
    EXPECT_OK(kvrt_context_get_logits_at(a, NV, &w, ctx, 0, pos[1]));
    EXPECT_ERR(kvrt_context_prefill_logits(NULL, ctx, 0, prompt, n, NULL, 2), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(kvrt_context_prefill_logits(NULL, ctx, 0, prompt, n, pos, 0), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(kvrt_context_prefill_logits(NULL, ctx, 0, NULL, n, pos, 1), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(kvrt_context_prefill_logits(NULL, ctx, 0, prompt, 0, pos, 1), KVRT_ERR_INVALID_ARGUMENT);
    {
        uint32_t bad[2];
        bad[0] = 5;
        bad[1] = 5; /* repeated */
        EXPECT_ERR(kvrt_context_prefill_logits(NULL, ctx, 0, prompt, n, bad, 2), KVRT_ERR_INVALID_ARGUMENT);
        EXPECT(strstr(kvrt_last_error(), "increasing") != NULL);
        bad[0] = 6;
        bad[1] = 3; /* decreasing */
        EXPECT_ERR(kvrt_context_prefill_logits(NULL, ctx, 0, prompt, n, bad, 2), KVRT_ERR_INVALID_ARGUMENT);
        bad[0] = 1;
        bad[1] = (uint32_t)n; /* past the prompt */
        EXPECT_ERR(kvrt_context_prefill_logits(NULL, ctx, 0, prompt, n, bad, 2), KVRT_ERR_OUT_OF_RANGE);
        EXPECT(strstr(kvrt_last_error(), "positions[1]") != NULL);
    }
    EXPECT_ERR(kvrt_context_prefill_logits(NULL, ctx, 9, prompt, n, pos, 1), KVRT_ERR_OUT_OF_RANGE);
    EXPECT_ERR(kvrt_context_prefill_logits(NULL, NULL, 0, prompt, n, pos, 1), KVRT_ERR_BAD_HANDLE);
    EXPECT(kvrt_context_seq_length(&len, ctx, 0) == KVRT_OK && len == n);
    EXPECT_OK(kvrt_context_get_logits_at(b, NV, &w, ctx, 0, pos[1]));
    EXPECT(memcmp(a, b, sizeof a) == 0);

    /* Reading: size query, small buffer, unrequested position, bad handle and id. */
    EXPECT(kvrt_context_get_logits_at(NULL, 0, &w, ctx, 0, pos[0]) == KVRT_OK && w == NV);
    EXPECT(kvrt_context_get_logits_at(a, 10, &w, ctx, 0, pos[0]) == KVRT_ERR_BUFFER_TOO_SMALL && w == NV);
    EXPECT_ERR(kvrt_context_get_logits_at(a, NV, NULL, ctx, 0, pos[0]), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(kvrt_context_get_logits_at(a, NV, &w, ctx, 0, 3), KVRT_ERR_NOT_FOUND);
    EXPECT(strstr(kvrt_last_error(), "position 3") != NULL);
    EXPECT_ERR(kvrt_context_get_logits_at(a, NV, &w, ctx, 0, n - 1), KVRT_ERR_NOT_FOUND);
    EXPECT_ERR(kvrt_context_get_logits_at(a, NV, &w, ctx, 5, pos[0]), KVRT_ERR_OUT_OF_RANGE);
    EXPECT_ERR(kvrt_context_get_logits_at(a, NV, &w, NULL, 0, pos[0]), KVRT_ERR_BAD_HANDLE);

    /* A decode keeps the rows; an edit at position 5 keeps 2 readable and makes 6 and 7 stale. */
    {
        int32_t tok = prompt[1];
        EXPECT_OK(kvrt_context_get_logits_at(a, NV, &w, ctx, 0, pos[2]));
        EXPECT_OK(kvrt_context_decode(ctx, &(int32_t){0}, &tok, 1));
        EXPECT_OK(kvrt_context_get_logits_at(b, NV, &w, ctx, 0, pos[2]));
        EXPECT(memcmp(a, b, sizeof a) == 0);
    }
    memcpy(edited, prompt, n * sizeof prompt[0]);
    edited[5] = prompt[5] == 100 ? 101 : 100;
    EXPECT_OK(kvrt_context_prefill(NULL, ctx, 0, edited, n));
    EXPECT_OK(kvrt_context_get_logits_at(a, NV, &w, ctx, 0, pos[0]));
    EXPECT_ERR(kvrt_context_get_logits_at(a, NV, &w, ctx, 0, pos[1]), KVRT_ERR_INVALID_STATE);
    EXPECT_ERR(kvrt_context_get_logits_at(a, NV, &w, ctx, 0, pos[2]), KVRT_ERR_INVALID_STATE);
    /* A release forgets them. */
    EXPECT_OK(kvrt_context_seq_release(ctx, 0));
    EXPECT_ERR(kvrt_context_get_logits_at(a, NV, &w, ctx, 0, pos[0]), KVRT_ERR_NOT_FOUND);

    kvrt_context_destroy(alone);
    kvrt_context_destroy(ctx);
    kvrt_model_destroy(m);
    if (failures) fprintf(stderr, "test_position_logits: %d failure(s)\n", failures);
    return failures ? 1 : 0;
}
