/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The kvrt authors */

#define _POSIX_C_SOURCE 200809L
/* C99 test of memory control: kvrt_cache_set_budget (shrinking evicts cached
 * prefix blocks, refusing below the bytes sequences hold; growing) and
 * kvrt_cache_trim (releasing cached blocks now), on a context's cache over
 * the real SmolLM2 model, plus the default budget of a context given none. */
#include <kvrt/kvrt.h>

#include "expect.h"

#include <stdio.h>
#include <string.h>

static kvrt_cache_stats stats_of(kvrt_cache *c) {
    kvrt_cache_stats s;
    memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    EXPECT_OK(kvrt_cache_stats_get(&s, c));
    return s;
}

int main(void) {
    char path[1024];
    kvrt_model *m = NULL;
    kvrt_context *ctx = NULL, *dflt = NULL;
    kvrt_cache *cache = NULL;
    kvrt_context_config cc;
    kvrt_request_stats st;
    kvrt_cache_stats s0, s1, s2;
    kvrt_model_info info;
    int32_t a[128], b[128];
    size_t na = 0, nb = 0;
    uint64_t released = 0, per_token = 0;
    const char *ta = "Alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho "
                     "sigma tau upsilon phi chi psi omega, and then the whole alphabet again from the start.";
    const char *tb = "Completely different words about the weather: rain, snow, sleet, hail, fog, wind, sun, "
                     "clouds, storms, thunder and lightning over the hills and the sea.";

    expect_model_path(path, sizeof path);
    if (kvrt_model_load(&m, path, NULL) != KVRT_OK) {
        fprintf(stderr, "test_memory_control: cannot load %s: %s\n", path, kvrt_last_error());
        return 1;
    }
    EXPECT_OK(kvrt_model_tokenize(a, 128, &na, m, ta, strlen(ta), 0));
    EXPECT_OK(kvrt_model_tokenize(b, 128, &nb, m, tb, strlen(tb), 0));
    EXPECT(na >= 33 && nb >= 33);

    kvrt_context_config_init(&cc, sizeof cc);
    cc.n_ctx = 256;
    cc.n_seq_max = 2;
    EXPECT_OK(kvrt_context_create(&ctx, m, &cc));
    EXPECT_OK(kvrt_context_get_cache(&cache, ctx));

    /* Prompt A, then released: its full blocks stay cached. */
    EXPECT_OK(kvrt_context_prefill(NULL, ctx, 0, a, na));
    EXPECT_OK(kvrt_context_seq_release(ctx, 0));
    s0 = stats_of(cache);
    EXPECT(s0.bytes_cached > 0 && s0.bytes_in_use == 0);
    /* B holds blocks in use. */
    EXPECT_OK(kvrt_context_prefill(NULL, ctx, 1, b, nb));
    s1 = stats_of(cache);
    EXPECT(s1.bytes_in_use > 0 && s1.bytes_cached == s0.bytes_cached);

    /* Below the bytes in use: refused, nothing changed. */
    EXPECT_ERR(kvrt_cache_set_budget(cache, s1.bytes_in_use - 1), KVRT_ERR_INVALID_STATE);
    EXPECT_ERR(kvrt_cache_set_budget(cache, 0), KVRT_ERR_INVALID_ARGUMENT);
    s2 = stats_of(cache);
    EXPECT(s2.budget_bytes == s1.budget_bytes && s2.bytes_cached == s1.bytes_cached && s2.evictions == s1.evictions);

    /* Exactly the bytes in use: every cached block is evicted. */
    EXPECT_OK(kvrt_cache_set_budget(cache, s1.bytes_in_use));
    s2 = stats_of(cache);
    EXPECT(s2.budget_bytes == s1.bytes_in_use && s2.bytes_cached == 0 && s2.bytes_in_use == s1.bytes_in_use);
    EXPECT(s2.evictions > s1.evictions && s2.bytes_free == 0);
    /* The cache is full: a new prompt does not fit... */
    EXPECT_ERR(kvrt_context_prefill(NULL, ctx, 0, a, na), KVRT_ERR_CACHE_FULL);
    /* ... until the budget grows again; A was evicted, so it is computed from scratch. */
    EXPECT_OK(kvrt_cache_set_budget(cache, s1.budget_bytes));
    kvrt_request_stats_init(&st, sizeof st);
    EXPECT_OK(kvrt_context_prefill(&st, ctx, 0, a, na));
    EXPECT(st.reused_from_cache == 0 && st.computed_tokens == na);

    /* Trim: A's blocks are cached after a release; a hit before, a miss after the trim. */
    EXPECT_OK(kvrt_context_seq_release(ctx, 0));
    kvrt_request_stats_init(&st, sizeof st);
    EXPECT_OK(kvrt_context_prefill(&st, ctx, 0, a, na));
    EXPECT(st.reused_from_cache > 0);
    EXPECT_OK(kvrt_context_seq_release(ctx, 0));
    s1 = stats_of(cache);
    EXPECT(s1.bytes_cached > 0);
    /* keep_bytes: trims down to at most that much, block by block. */
    EXPECT_OK(kvrt_cache_trim(&released, cache, s1.bytes_cached - 1));
    s2 = stats_of(cache);
    EXPECT(released > 0 && s2.bytes_cached == s1.bytes_cached - released && s2.bytes_cached <= s1.bytes_cached - 1);
    EXPECT_OK(kvrt_cache_trim(&released, cache, 0));
    EXPECT(released == s2.bytes_cached);
    s2 = stats_of(cache);
    EXPECT(s2.bytes_cached == 0 && s2.bytes_in_use == s1.bytes_in_use);
    EXPECT_OK(kvrt_cache_trim(&released, cache, 0));
    EXPECT(released == 0);
    EXPECT_OK(kvrt_cache_trim(NULL, cache, 0));
    kvrt_request_stats_init(&st, sizeof st);
    EXPECT_OK(kvrt_context_prefill(&st, ctx, 0, a, na));
    EXPECT(st.reused_from_cache == 0);
    /* Sequence B was never touched: it still continues. */
    {
        int32_t next = b[0];
        int32_t seq = 1;
        EXPECT_OK(kvrt_context_decode(ctx, &seq, &next, 1));
    }

    /* Failure paths. */
    EXPECT_ERR(kvrt_cache_set_budget(NULL, 1u << 20), KVRT_ERR_BAD_HANDLE);
    EXPECT_ERR(kvrt_cache_trim(&released, NULL, 0), KVRT_ERR_BAD_HANDLE);
    EXPECT(released == 0);

    /* The default budget of a context given none: n_seq_max sequences of n_ctx positions
     * plus as much again (this small model fits well under a quarter of the machine). */
    kvrt_model_info_init(&info, sizeof info);
    EXPECT_OK(kvrt_model_get_info(&info, m));
    kvrt_context_config_init(&cc, sizeof cc);
    cc.n_ctx = 512;
    cc.n_seq_max = 3;
    EXPECT_OK(kvrt_context_create(&dflt, m, &cc));
    {
        kvrt_cache *dc = NULL;
        EXPECT_OK(kvrt_context_get_cache(&dc, dflt));
        s2 = stats_of(dc);
        /* f16 K/V: 2 x layers x kv_heads x head_dim x 2 bytes per token; (512 + a block) positions,
         * the default block holding 64 */
        per_token = 2ull * info.n_layers * info.n_kv_heads * info.head_dim * 2ull;
        EXPECT(s2.block_tokens == 64);
        EXPECT(s2.budget_bytes == 2ull * 3ull * (512 + 64) * per_token);
    }
    kvrt_context_destroy(dflt);

    kvrt_context_destroy(ctx);
    kvrt_model_destroy(m);
    if (failures) fprintf(stderr, "test_memory_control: %d failure(s)\n", failures);
    return failures ? 1 : 0;
}
