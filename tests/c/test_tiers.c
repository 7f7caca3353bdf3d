/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The kvrt authors */

#define _POSIX_C_SOURCE 200809L
/* C99 test of the prefix cache's lower tiers (kvrt/cache.h "Lower tiers"):
 * kvrt_tier_config_init, kvrt_cache_add_tier, kvrt_cache_persist,
 * kvrt_cache_n_tiers, kvrt_tier_stats_init, kvrt_cache_tier_stats_get and
 * kvrt_context_config.tiers — success and failure paths — and, on SmolLM2, a
 * document prefix written to a disk tier by one context and loaded back by a
 * fresh context (a fresh cache): reported as reused from disk, its logits equal
 * a cold run's bit for bit. */
#include <kvrt/kvrt.h>

#include "expect.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static kvrt_context *make_ctx(kvrt_model *m, const kvrt_tier_config *tiers, size_t n_tiers, int prefix_caching) {
    kvrt_context_config cc;
    kvrt_context *ctx = NULL;
    kvrt_context_config_init(&cc, sizeof cc);
    cc.n_ctx = 512;
    cc.n_threads = 2;
    cc.block_tokens = 16; /* the block counts below are written for blocks of 16 */
    cc.tiers = tiers;
    cc.n_tiers = n_tiers;
    cc.prefix_caching = prefix_caching;
    if (kvrt_context_create(&ctx, m, &cc) != KVRT_OK) fprintf(stderr, "context_create: %s\n", kvrt_last_error());
    return ctx;
}

int main(void) {
    char path[1024], dir[] = "/tmp/kvrt_tiers_c_XXXXXX", cmd[256];
    kvrt_model *m = NULL;
    kvrt_context *ctx, *cold;
    kvrt_cache *cache = NULL;
    kvrt_tier_config tc, bad;
    kvrt_tier_stats ts;
    kvrt_cache_stats cs;
    kvrt_request_stats st;
    kvrt_context_config cc;
    static float a[49152], b[49152];
    int32_t doc[200];
    size_t i, n = 0, w = 0;
    uint64_t blocks = 0;

    /* Config init and validation (no model needed). */
    EXPECT_ERR(kvrt_tier_config_init(NULL, sizeof tc), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(kvrt_tier_config_init(&tc, 3), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_OK(kvrt_tier_config_init(&tc, sizeof tc));
    EXPECT(tc.kind == KVRT_TIER_DISK && tc.timeout_ms == 200 && tc.location == NULL && tc.budget_bytes == 0);
    EXPECT_ERR(kvrt_tier_stats_init(NULL, sizeof ts), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_OK(kvrt_tier_stats_init(&ts, sizeof ts));
    if (!mkdtemp(dir)) return 1;

    expect_model_path(path, sizeof path);
    if (kvrt_model_load(&m, path, NULL) != KVRT_OK) {
        fprintf(stderr, "test_tiers: cannot load %s: %s\n", path, kvrt_last_error());
        return 1;
    }
    for (i = 0; i < 200; ++i) doc[i] = (int32_t)(i * 37 % 900 + 20);

    /* A context whose cache has a disk tier; bad tier configs refuse the context. */
    tc.location = dir;
    bad = tc;
    bad.kind = 7;
    cc.struct_size = 0;
    EXPECT(make_ctx(m, &bad, 1, 1) == NULL);
    bad = tc;
    bad.location = NULL;
    EXPECT(make_ctx(m, &bad, 1, 1) == NULL);
    EXPECT(make_ctx(m, NULL, 1, 1) == NULL);
    ctx = make_ctx(m, &tc, 1, 1);
    EXPECT(ctx != NULL);
    if (!ctx) return 1;
    EXPECT_OK(kvrt_context_get_cache(&cache, ctx));
    EXPECT_OK(kvrt_cache_n_tiers(&n, cache));
    EXPECT(n == 1);
    EXPECT_ERR(kvrt_cache_n_tiers(NULL, cache), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(kvrt_cache_n_tiers(&n, NULL), KVRT_ERR_BAD_HANDLE);

    /* add_tier failure paths leave the cache as it was. */
    EXPECT_ERR(kvrt_cache_add_tier(cache, NULL), KVRT_ERR_INVALID_ARGUMENT);
    bad = tc;
    bad.location = "";
    EXPECT_ERR(kvrt_cache_add_tier(cache, &bad), KVRT_ERR_INVALID_ARGUMENT);
    bad = tc;
    bad.kind = 0;
    EXPECT_ERR(kvrt_cache_add_tier(cache, &bad), KVRT_ERR_INVALID_ARGUMENT);
    bad = tc;
    bad.location = "/proc/kvrt-no-such-dir/tier";
    EXPECT_ERR(kvrt_cache_add_tier(cache, &bad), KVRT_ERR_IO);
    bad = tc;
    bad.kind = KVRT_TIER_REDIS;
    bad.location = "not a url://";
    {
        kvrt_status s = kvrt_cache_add_tier(cache, &bad);
        EXPECT(s == KVRT_ERR_INVALID_ARGUMENT || s == KVRT_ERR_UNSUPPORTED);
    }
    bad = tc;
    bad.struct_size = 2;
    EXPECT_ERR(kvrt_cache_add_tier(cache, &bad), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(kvrt_cache_add_tier(NULL, &tc), KVRT_ERR_BAD_HANDLE);
    EXPECT_OK(kvrt_cache_n_tiers(&n, cache));
    EXPECT(n == 1);

    /* Prefill the document and persist: 12 full blocks of 16 (the last token is never cached). */
    EXPECT_OK(kvrt_context_prefill(NULL, ctx, 0, doc, 200));
    EXPECT_OK(kvrt_cache_persist(&blocks, cache));
    EXPECT(blocks == 12);
    EXPECT_OK(kvrt_cache_persist(&blocks, cache));
    EXPECT(blocks == 0); /* already written */
    EXPECT_ERR(kvrt_cache_persist(&blocks, NULL), KVRT_ERR_BAD_HANDLE);
    EXPECT_OK(kvrt_cache_tier_stats_get(&ts, cache, 0));
    EXPECT(ts.kind == KVRT_TIER_DISK);
    EXPECT(ts.puts == 12);
    EXPECT(ts.put_failures == 0);
    EXPECT_ERR(kvrt_cache_tier_stats_get(&ts, cache, 1), KVRT_ERR_OUT_OF_RANGE);
    EXPECT_ERR(kvrt_cache_tier_stats_get(NULL, cache, 0), KVRT_ERR_INVALID_ARGUMENT);
    ts.struct_size = 1;
    EXPECT_ERR(kvrt_cache_tier_stats_get(&ts, cache, 0), KVRT_ERR_INVALID_ARGUMENT);
    kvrt_context_destroy(ctx);

    /* A fresh context (a fresh cache: RAM empty) on the same directory: the prefix comes from disk. */
    ctx = make_ctx(m, &tc, 1, 1);
    EXPECT(ctx != NULL);
    if (!ctx) return 1;
    kvrt_request_stats_init(&st, sizeof st);
    EXPECT_OK(kvrt_context_prefill(&st, ctx, 0, doc, 200));
    EXPECT(st.reused_from_cache == 192);
    EXPECT(st.reused_from_disk == 192);
    EXPECT(st.reused_from_ram == 0);
    EXPECT(st.reused_from_remote == 0);
    EXPECT(st.computed_tokens == 8);
    EXPECT_OK(kvrt_context_get_logits(a, 49152, &w, ctx, 0));
    EXPECT_OK(kvrt_context_get_cache(&cache, ctx));
    kvrt_cache_stats_init(&cs, sizeof cs);
    EXPECT_OK(kvrt_cache_stats_get(&cs, cache));
    EXPECT(cs.n_tiers == 1);
    EXPECT(cs.tier_loaded_tokens_disk == 192);
    kvrt_tier_stats_init(&ts, sizeof ts);
    EXPECT_OK(kvrt_cache_tier_stats_get(&ts, cache, 0));
    EXPECT(ts.hits == 12 && ts.loaded_blocks == 12 && ts.corrupt == 0);
    /* The same prompt again: now from RAM, every position but the last (the 12 whole blocks and
     * the released sequence's tail block, which RAM keeps and the tier does not). */
    EXPECT_OK(kvrt_context_seq_release(ctx, 0));
    EXPECT_OK(kvrt_context_prefill(&st, ctx, 0, doc, 200));
    EXPECT(st.reused_from_ram == 199 && st.reused_from_disk == 0);

    /* Cold: no prefix caching at all. Bit-identical logits. */
    cold = make_ctx(m, NULL, 0, 0);
    EXPECT(cold != NULL);
    if (cold) {
        EXPECT_OK(kvrt_context_prefill(NULL, cold, 0, doc, 200));
        EXPECT_OK(kvrt_context_get_logits(b, 49152, &w, cold, 0));
        EXPECT(memcmp(a, b, w * sizeof(float)) == 0);
        kvrt_context_destroy(cold);
    }
    /* tiers with a shared cache: refused. */
    kvrt_context_config_init(&cc, sizeof cc);
    cc.cache = cache;
    cc.tiers = &tc;
    cc.n_tiers = 1;
    {
        kvrt_context *x = NULL;
        EXPECT_ERR(kvrt_context_create(&x, m, &cc), KVRT_ERR_INVALID_ARGUMENT);
    }
    kvrt_context_destroy(ctx);
    kvrt_model_destroy(m);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) fprintf(stderr, "test_tiers: could not remove %s\n", dir);
    if (failures) fprintf(stderr, "test_tiers: %d failures\n", failures);
    return failures ? 1 : 0;
}
