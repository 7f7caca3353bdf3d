/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The kvrt authors */

#define _POSIX_C_SOURCE 200809L
/* C99 test of sampler chains (kvrt_sampler_chain_create / _add / accept /
 * reset): each stage against a hand computation on small rows of logits,
 * determinism, the non-finite rule, the failure paths, and a chain inside
 * kvrt_context_generate on the real SmolLM2 model (penalties see the prompt
 * and every token generated). */
#include <kvrt/kvrt.h>

#include "expect.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static kvrt_sampler *chain(uint64_t seed) {
    kvrt_sampler *s = NULL;
    EXPECT_OK(kvrt_sampler_chain_create(&s, seed));
    return s;
}
static kvrt_sampler_stage stage(int32_t type) {
    kvrt_sampler_stage st;
    kvrt_sampler_stage_init(&st, sizeof st);
    st.type = type;
    return st;
}
static int32_t pick(kvrt_sampler *s, const float *logits, size_t n) {
    int32_t t = -1;
    EXPECT_OK(kvrt_sampler_sample(&t, s, logits, n));
    return t;
}
static kvrt_sampler *penalties(int32_t last_n, float repeat, float freq, float presence) {
    kvrt_sampler *s = chain(1);
    kvrt_sampler_stage st = stage(KVRT_SAMPLER_PENALTIES);
    st.penalty_last_n = last_n;
    st.repeat_penalty = repeat;
    st.frequency_penalty = freq;
    st.presence_penalty = presence;
    EXPECT_OK(kvrt_sampler_chain_add(s, &st));
    st = stage(KVRT_SAMPLER_GREEDY);
    EXPECT_OK(kvrt_sampler_chain_add(s, &st));
    return s;
}

int main(void) {
    kvrt_sampler *s = NULL, *s2 = NULL, *plain = NULL;
    kvrt_sampler_stage st;
    kvrt_sampler_config sc;
    int i, seen[3];
    int32_t t;

    /* Defaults of a stage. */
    EXPECT_OK(kvrt_sampler_stage_init(&st, sizeof st));
    EXPECT(st.type == 0 && st.top_k == 40 && st.p == 1.0f && st.penalty_last_n == 64 && st.repeat_penalty == 1.0f &&
           st.frequency_penalty == 0.0f && st.presence_penalty == 0.0f && st.n_bias == 0);

    /* Empty chain: argmax. Greedy: argmax, ties to the lowest id. */
    {
        const float l[4] = {1.0f, 3.0f, 3.0f, 2.0f};
        s = chain(7);
        EXPECT(pick(s, l, 4) == 1);
        kvrt_sampler_destroy(s);
    }

    /* Repetition penalty (history [1], repeat 2): 3 / 2 = 1.5 < 2.5, so 2 wins; a negative
     * logit is multiplied: -0.5 x 2 = -1.0 < -0.6. */
    {
        const float pos[3] = {1.0f, 3.0f, 2.5f}, neg[3] = {-1.0f, -0.5f, -0.6f}, keep[3] = {1.0f, 3.0f, 1.4f};
        s = penalties(64, 2.0f, 0.0f, 0.0f);
        EXPECT(pick(s, pos, 3) == 1); /* empty history: nothing penalised */
        EXPECT_OK(kvrt_sampler_accept(s, 1));
        EXPECT(pick(s, pos, 3) == 2);
        EXPECT(pick(s, neg, 3) == 2);
        EXPECT(pick(s, keep, 3) == 1); /* 1.5 > 1.4 */
        EXPECT_OK(kvrt_sampler_reset(s));
        EXPECT(pick(s, pos, 3) == 1);
        kvrt_sampler_destroy(s);
    }
    /* Frequency and presence (history [1, 1]): 1.0 - 2 x 0.06 = 0.88 < 0.9 (2 wins);
     * presence 0.05 alone: 0.95 > 0.9 (1 stays); both: 1.0 - 0.12 - 0.05 = 0.83. */
    {
        const float l[3] = {0.0f, 1.0f, 0.9f}, l2[3] = {0.0f, 1.0f, 0.85f};
        s = penalties(64, 1.0f, 0.06f, 0.0f);
        kvrt_sampler_accept(s, 1);
        kvrt_sampler_accept(s, 1);
        EXPECT(pick(s, l, 3) == 2);
        kvrt_sampler_destroy(s);
        s = penalties(64, 1.0f, 0.0f, 0.05f);
        kvrt_sampler_accept(s, 1);
        kvrt_sampler_accept(s, 1);
        EXPECT(pick(s, l, 3) == 1);
        kvrt_sampler_destroy(s);
        s = penalties(64, 1.0f, 0.06f, 0.05f);
        kvrt_sampler_accept(s, 1);
        kvrt_sampler_accept(s, 1);
        EXPECT(pick(s, l2, 3) == 2); /* 0.83 < 0.85 */
        kvrt_sampler_destroy(s);
    }
    /* The window: last_n = 1 sees only the newest token. */
    {
        const float l[3] = {0.0f, 3.0f, 2.0f};
        s = penalties(1, 10.0f, 0.0f, 0.0f);
        kvrt_sampler_accept(s, 1);
        kvrt_sampler_accept(s, 2);
        EXPECT(pick(s, l, 3) == 1); /* 1 is outside the window */
        kvrt_sampler_accept(s, 1);
        EXPECT(pick(s, l, 3) == 2); /* 3 / 10 = 0.3 < 2 */
        kvrt_sampler_destroy(s);
        s = penalties(0, 10.0f, 0.0f, 0.0f); /* 0: off */
        kvrt_sampler_accept(s, 1);
        EXPECT(pick(s, l, 3) == 1);
        kvrt_sampler_destroy(s);
    }

    /* Logit bias: +1.5 on token 2 wins; -inf bans the argmax; ids past the row are refused. */
    {
        const float l[3] = {0.0f, 1.0f, 0.0f};
        const int32_t ids[2] = {2, 1};
        const float up[2] = {1.5f, 0.0f}, ban[2] = {0.0f, -INFINITY};
        const int32_t far_ids[1] = {3};
        s = chain(1);
        st = stage(KVRT_SAMPLER_LOGIT_BIAS);
        st.bias_tokens = ids;
        st.bias_values = up;
        st.n_bias = 2;
        EXPECT_OK(kvrt_sampler_chain_add(s, &st));
        EXPECT(pick(s, l, 3) == 2);
        kvrt_sampler_destroy(s);
        s = chain(1);
        st.bias_values = ban;
        EXPECT_OK(kvrt_sampler_chain_add(s, &st));
        EXPECT(pick(s, l, 3) == 0); /* 1 banned; 0 and 2 tie: lowest id */
        kvrt_sampler_destroy(s);
        s = chain(1);
        st.bias_tokens = far_ids;
        st.n_bias = 1;
        EXPECT_OK(kvrt_sampler_chain_add(s, &st));
        EXPECT_ERR(kvrt_sampler_sample(&t, s, l, 3), KVRT_ERR_INVALID_ARGUMENT);
        kvrt_sampler_destroy(s);
    }

    /* top-p 0.6 over probabilities {0.5, 0.3, 0.2}: keeps {0, 1} (0.5 < 0.6 <= 0.8);
     * min-p 0.5: keeps p >= 0.25, also {0, 1}. 300 seeded draws: never 2, both others seen. */
    {
        const float l[3] = {logf(0.5f), logf(0.3f), logf(0.2f)};
        int type;
        for (type = KVRT_SAMPLER_TOP_P; type <= KVRT_SAMPLER_MIN_P; ++type) {
            s = chain(42);
            st = stage(type);
            st.p = type == KVRT_SAMPLER_TOP_P ? 0.6f : 0.5f;
            EXPECT_OK(kvrt_sampler_chain_add(s, &st));
            st = stage(KVRT_SAMPLER_DIST);
            EXPECT_OK(kvrt_sampler_chain_add(s, &st));
            memset(seen, 0, sizeof seen);
            for (i = 0; i < 300; ++i) {
                t = pick(s, l, 3);
                if (t >= 0 && t < 3) seen[t]++;
            }
            EXPECT(seen[2] == 0 && seen[0] > 0 && seen[1] > 0);
            EXPECT(seen[0] > seen[1]); /* 0.625 vs 0.375 after renormalising */
            kvrt_sampler_destroy(s);
        }
        /* Without truncation all three appear; the same seed repeats the same draws. */
        s = chain(9);
        s2 = chain(9);
        st = stage(KVRT_SAMPLER_DIST);
        EXPECT_OK(kvrt_sampler_chain_add(s, &st));
        EXPECT_OK(kvrt_sampler_chain_add(s2, &st));
        memset(seen, 0, sizeof seen);
        for (i = 0; i < 300; ++i) {
            t = pick(s, l, 3);
            EXPECT(t == pick(s2, l, 3));
            if (t >= 0 && t < 3) seen[t]++;
        }
        EXPECT(seen[0] > 0 && seen[1] > 0 && seen[2] > 0);
        kvrt_sampler_destroy(s);
        kvrt_sampler_destroy(s2);
        /* top-k 1 and temperature 0 leave only the argmax for dist. */
        for (type = KVRT_SAMPLER_TOP_K; type <= KVRT_SAMPLER_TEMPERATURE; type += 3) {
            s = chain(5);
            st = stage(type);
            st.top_k = 1;
            st.temperature = 0.0f;
            EXPECT_OK(kvrt_sampler_chain_add(s, &st));
            st = stage(KVRT_SAMPLER_DIST);
            EXPECT_OK(kvrt_sampler_chain_add(s, &st));
            for (i = 0; i < 50; ++i) EXPECT(pick(s, l, 3) == 0);
            kvrt_sampler_destroy(s);
        }
    }

    /* Non-finite: +inf wins over a penalty; NaN and -inf are never picked; nothing pickable fails. */
    {
        const float inf_row[3] = {5.0f, INFINITY, 1.0f};
        const float nan_row[3] = {NAN, -INFINITY, -3.0f};
        const float none[2] = {NAN, -INFINITY};
        s = penalties(-1, 100.0f, 1.0f, 1.0f);
        kvrt_sampler_accept(s, 1);
        EXPECT(pick(s, inf_row, 3) == 1);
        EXPECT(pick(s, nan_row, 3) == 2);
        EXPECT_ERR(kvrt_sampler_sample(&t, s, none, 2), KVRT_ERR_INVALID_ARGUMENT);
        kvrt_sampler_destroy(s);
    }

    /* Failure paths. */
    EXPECT_ERR(kvrt_sampler_chain_create(NULL, 1), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(kvrt_sampler_stage_init(NULL, sizeof st), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(kvrt_sampler_stage_init(&st, 3), KVRT_ERR_INVALID_ARGUMENT);
    s = chain(1);
    st = stage(KVRT_SAMPLER_GREEDY);
    EXPECT_ERR(kvrt_sampler_chain_add(NULL, &st), KVRT_ERR_BAD_HANDLE);
    EXPECT_ERR(kvrt_sampler_chain_add(s, NULL), KVRT_ERR_INVALID_ARGUMENT);
    st.type = 99;
    EXPECT_ERR(kvrt_sampler_chain_add(s, &st), KVRT_ERR_INVALID_ARGUMENT);
    st = stage(KVRT_SAMPLER_TOP_K);
    st.top_k = -1;
    EXPECT_ERR(kvrt_sampler_chain_add(s, &st), KVRT_ERR_INVALID_ARGUMENT);
    st = stage(KVRT_SAMPLER_TOP_P);
    st.p = 0.0f;
    EXPECT_ERR(kvrt_sampler_chain_add(s, &st), KVRT_ERR_INVALID_ARGUMENT);
    st = stage(KVRT_SAMPLER_MIN_P);
    st.p = 1.5f;
    EXPECT_ERR(kvrt_sampler_chain_add(s, &st), KVRT_ERR_INVALID_ARGUMENT);
    st = stage(KVRT_SAMPLER_TEMPERATURE);
    st.temperature = INFINITY;
    EXPECT_ERR(kvrt_sampler_chain_add(s, &st), KVRT_ERR_INVALID_ARGUMENT);
    st = stage(KVRT_SAMPLER_PENALTIES);
    st.repeat_penalty = 0.0f;
    EXPECT_ERR(kvrt_sampler_chain_add(s, &st), KVRT_ERR_INVALID_ARGUMENT);
    st.repeat_penalty = 1.1f;
    st.penalty_last_n = -2;
    EXPECT_ERR(kvrt_sampler_chain_add(s, &st), KVRT_ERR_INVALID_ARGUMENT);
    st = stage(KVRT_SAMPLER_LOGIT_BIAS);
    st.n_bias = 2;
    EXPECT_ERR(kvrt_sampler_chain_add(s, &st), KVRT_ERR_INVALID_ARGUMENT); /* NULL arrays */
    {
        const int32_t neg[1] = {-1};
        const float b[1] = {1.0f};
        st.bias_tokens = neg;
        st.bias_values = b;
        st.n_bias = 1;
        EXPECT_ERR(kvrt_sampler_chain_add(s, &st), KVRT_ERR_INVALID_ARGUMENT);
    }
    st = stage(KVRT_SAMPLER_GREEDY);
    EXPECT_OK(kvrt_sampler_chain_add(s, &st));
    st = stage(KVRT_SAMPLER_TOP_K);
    EXPECT_ERR(kvrt_sampler_chain_add(s, &st), KVRT_ERR_INVALID_STATE); /* after greedy */
    {
        const float l[3] = {0.0f, 2.0f, 1.0f};
        EXPECT(pick(s, l, 3) == 1); /* the failed adds left the chain as it was */
    }
    EXPECT_ERR(kvrt_sampler_accept(s, -1), KVRT_ERR_OUT_OF_RANGE);
    EXPECT_ERR(kvrt_sampler_accept(NULL, 1), KVRT_ERR_BAD_HANDLE);
    EXPECT_ERR(kvrt_sampler_reset(NULL), KVRT_ERR_BAD_HANDLE);
    kvrt_sampler_destroy(s);
    EXPECT_ERR(kvrt_sampler_accept(s, 1), KVRT_ERR_BAD_HANDLE); /* destroyed */
    kvrt_sampler_config_init(&sc, sizeof sc);
    EXPECT_OK(kvrt_sampler_create(&plain, &sc));
    st = stage(KVRT_SAMPLER_GREEDY);
    EXPECT_ERR(kvrt_sampler_chain_add(plain, &st), KVRT_ERR_INVALID_STATE); /* not a chain */
    EXPECT_OK(kvrt_sampler_accept(plain, 3));                               /* no history: no-op */
    EXPECT_OK(kvrt_sampler_reset(plain));
    kvrt_sampler_destroy(plain);

    /* Inside generate: a strong penalty over the whole history (prompt included) makes
     * every generated token new, while plain greedy repeats prompt tokens. */
    {
        char path[1024];
        kvrt_model *m = NULL;
        kvrt_context *ctx = NULL;
        kvrt_context_config cc;
        kvrt_generate_config gc;
        int32_t prompt[64], out[16], greedy_out[16];
        size_t n = 0, w = 0, j, k;
        int repeats_greedy = 0, repeats_penalised = 0;
        expect_model_path(path, sizeof path);
        if (kvrt_model_load(&m, path, NULL) != KVRT_OK) {
            fprintf(stderr, "test_sampler_chain: cannot load %s: %s\n", path, kvrt_last_error());
            return 1;
        }
        EXPECT_OK(kvrt_model_tokenize(prompt, 64, &n, m, "one two three one two three one two three one two", 50, 0));
        kvrt_context_config_init(&cc, sizeof cc);
        cc.n_ctx = 128;
        EXPECT_OK(kvrt_context_create(&ctx, m, &cc));
        kvrt_generate_config_init(&gc, sizeof gc);
        gc.max_tokens = 12;
        gc.stop_at_eog = 0;
        gc.tokens_out = greedy_out;
        gc.tokens_capacity = 16;
        gc.tokens_written = &w;
        EXPECT_OK(kvrt_context_generate(NULL, ctx, 0, prompt, n, &gc));
        EXPECT(w == 12);
        for (j = 0; j < 12; ++j)
            for (k = 0; k < n; ++k)
                if (greedy_out[j] == prompt[k]) {
                    repeats_greedy++;
                    break;
                }
        EXPECT(repeats_greedy > 0); /* the pattern continues under greedy */
        s = penalties(-1, 1000.0f, 0.0f, 0.0f);
        gc.sampler = s;
        gc.tokens_out = out;
        EXPECT_OK(kvrt_context_generate(NULL, ctx, 0, prompt, n, &gc));
        EXPECT(w == 12);
        for (j = 0; j < 12; ++j) {
            for (k = 0; k < n; ++k)
                if (out[j] == prompt[k]) repeats_penalised++;
            for (k = 0; k < j; ++k)
                if (out[j] == out[k]) repeats_penalised++;
        }
        EXPECT(repeats_penalised == 0);
        kvrt_sampler_destroy(s);
        kvrt_context_destroy(ctx);
        kvrt_model_destroy(m);
    }

    if (failures) fprintf(stderr, "test_sampler_chain: %d failure(s)\n", failures);
    return failures ? 1 : 0;
}
