/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The kvrt authors */

#define _POSIX_C_SOURCE 200809L
/* C99 misuse sweep of the public API (kvrt/common.h, cache.h, model.h,
 * context.h; not ced.h). Table-driven, so that the whole class is covered
 * rather than one call at a time:
 *   1. every size-prefixed struct: struct_size 0, too small, too large, 4096
 *      and SIZE_MAX, through its _init and through every call that reads it;
 *      the status, a message naming struct_size, and no byte written past the
 *      struct (the struct sits in a larger buffer of guard bytes);
 *   2. every handle parameter: NULL, a destroyed handle (handles are registry
 *      serials, never reused or dereferenced, see src/api/handle_registry.hpp),
 *      a live handle of another type and a foreign address;
 *   3. every count, index and size parameter: 0, negative, INT32_MAX and
 *      SIZE_MAX (as the type allows) where the library must reject it before
 *      touching the caller's buffer;
 *   4. NULL output and required input pointers;
 * each failing call must return its documented status with a non-empty
 * kvrt_last_error(). Finally the objects that took all this must still work:
 * the model + context produce the same greedy tokens as before, the cache,
 * layout and sampler still answer. Uses the real SmolLM2 model (expect.h). */
#include <kvrt/kvrt.h>

/* Every public function, the deprecated ones included (kvrt_cache_write_rows / read_rows). */
#if defined(__GNUC__) || defined(__clang__)
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif

#include "expect.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- fixture ------------------------------------------------------------- */

static struct {
    kvrt_model *model;
    kvrt_context *ctx;      /* n_seq_max 2, n_ctx 256; seq 0 prefilled */
    kvrt_cache *ctx_cache;  /* ctx's cache (owned by the context) */
    kvrt_cache *cache;      /* a standalone cache: 2 full f32 layers, 1 x 8, blocks of 16 */
    kvrt_cache_layout *layout;
    kvrt_sampler *sampler;  /* temperature 0.8, seed 1 */
    uint64_t seq;           /* a sequence of `cache` holding 20 computed positions */
    /* dead handles, one per type */
    kvrt_model *dead_model;
    kvrt_context *dead_ctx;
    kvrt_cache *dead_cache;
    kvrt_cache *dead_weak_cache; /* the cache of a destroyed context */
    kvrt_cache_layout *dead_layout;
    kvrt_sampler *dead_sampler;
    int32_t prompt[64];
    size_t n_prompt;
    uint32_t n_vocab;
    char tmp_path[256];
} G;

static int not_a_handle = 42; /* a foreign address: a real object, never a kvrt handle */

static float logits_buf[49152];

enum htype { H_MODEL, H_CTX, H_CACHE, H_LAYOUT, H_SAMPLER, H_COUNT };
static const char *const htype_name[H_COUNT] = {"model", "context", "cache", "layout", "sampler"};

static void *dead_handle(int t) {
    switch (t) {
        case H_MODEL: return G.dead_model;
        case H_CTX: return G.dead_ctx;
        case H_CACHE: return G.dead_cache;
        case H_LAYOUT: return G.dead_layout;
        default: return G.dead_sampler;
    }
}
/* A live handle of another type. */
static void *other_type_handle(int t) {
    switch (t) {
        case H_MODEL: return G.ctx;
        case H_CTX: return G.cache;
        case H_CACHE: return G.ctx;
        case H_LAYOUT: return G.cache;
        default: return G.model;
    }
}

/* Greedy tokens of G.prompt on sequence `seq` of ctx. */
static int greedy_tokens(kvrt_context *ctx, int32_t seq, int32_t *out, int n) {
    int i;
    size_t w = 0;
    int32_t tok;
    kvrt_sampler *s = NULL;
    kvrt_sampler_config sc;
    kvrt_sampler_config_init(&sc, sizeof sc);
    if (kvrt_sampler_create(&s, &sc) != KVRT_OK) return -1;
    if (kvrt_context_prefill(NULL, ctx, seq, G.prompt, G.n_prompt) != KVRT_OK) return -1;
    for (i = 0; i < n; ++i) {
        if (kvrt_context_get_logits(logits_buf, G.n_vocab, &w, ctx, seq) != KVRT_OK) return -1;
        if (kvrt_sampler_sample(&tok, s, logits_buf, w) != KVRT_OK) return -1;
        out[i] = tok;
        if (kvrt_context_decode(ctx, &seq, &tok, 1) != KVRT_OK) return -1;
    }
    kvrt_sampler_destroy(s);
    return 0;
}

static int fixture_create(void) {
    char path[1024];
    kvrt_context_config cc;
    kvrt_cache_layer_config lc;
    kvrt_cache_config cfg;
    kvrt_sampler_config sc;
    kvrt_model_info info;
    kvrt_context *c2 = NULL;
    int32_t toks[20];
    int i;

    expect_model_path(path, sizeof path);
    if (kvrt_model_load(&G.model, path, NULL) != KVRT_OK) {
        fprintf(stderr, "test_misuse: cannot load %s: %s\n", path, kvrt_last_error());
        return -1;
    }
    /* A destroyed model handle: a second load, destroyed at once. */
    if (kvrt_model_load(&G.dead_model, path, NULL) != KVRT_OK) return -1;
    kvrt_model_destroy(G.dead_model);

    kvrt_model_info_init(&info, sizeof info);
    if (kvrt_model_get_info(&info, G.model) != KVRT_OK) return -1;
    G.n_vocab = info.n_vocab;
    if (G.n_vocab > sizeof logits_buf / sizeof logits_buf[0]) return -1;
    if (kvrt_model_tokenize(G.prompt, 64, &G.n_prompt, G.model, "The capital of France is", 24, 0) != KVRT_OK)
        return -1;

    kvrt_context_config_init(&cc, sizeof cc);
    cc.n_ctx = 256;
    cc.n_seq_max = 2;
    if (kvrt_context_create(&G.ctx, G.model, &cc) != KVRT_OK) return -1;
    if (kvrt_context_get_cache(&G.ctx_cache, G.ctx) != KVRT_OK) return -1;
    if (kvrt_context_create(&c2, G.model, &cc) != KVRT_OK) return -1;
    if (kvrt_context_get_cache(&G.dead_weak_cache, c2) != KVRT_OK) return -1;
    kvrt_context_destroy(c2);
    G.dead_ctx = c2;

    if (kvrt_cache_layout_create(&G.layout, 16) != KVRT_OK) return -1;
    kvrt_cache_layer_config_init(&lc, sizeof lc);
    lc.n_kv_heads = 1;
    lc.head_dim = 8;
    lc.dtype = KVRT_DTYPE_F32;
    if (kvrt_cache_layout_add_layers(NULL, G.layout, &lc, 2) != KVRT_OK) return -1;
    kvrt_cache_config_init(&cfg, sizeof cfg);
    cfg.budget_bytes = 1u << 20;
    if (kvrt_cache_create(&G.cache, G.layout, &cfg) != KVRT_OK) return -1;
    if (kvrt_cache_create(&G.dead_cache, G.layout, &cfg) != KVRT_OK) return -1;
    kvrt_cache_destroy(G.dead_cache);
    if (kvrt_cache_layout_create(&G.dead_layout, 16) != KVRT_OK) return -1;
    kvrt_cache_layout_destroy(G.dead_layout);
    if (kvrt_cache_seq_create(&G.seq, G.cache, NULL) != KVRT_OK) return -1;
    for (i = 0; i < 20; ++i) toks[i] = i;
    if (kvrt_cache_seq_append(G.cache, G.seq, toks, 20) != KVRT_OK) return -1;
    if (kvrt_cache_seq_mark_computed(G.cache, G.seq, 20) != KVRT_OK) return -1;

    kvrt_sampler_config_init(&sc, sizeof sc);
    sc.temperature = 0.8f;
    sc.seed = 1;
    if (kvrt_sampler_create(&G.sampler, &sc) != KVRT_OK) return -1;
    if (kvrt_sampler_create(&G.dead_sampler, &sc) != KVRT_OK) return -1;
    kvrt_sampler_destroy(G.dead_sampler);

    snprintf(G.tmp_path, sizeof G.tmp_path, "/tmp/kvrt_test_misuse_%ld.state", (long)getpid());
    return 0;
}

static void fixture_destroy(void) {
    kvrt_sampler_destroy(G.sampler);
    kvrt_cache_destroy(G.cache);
    kvrt_cache_layout_destroy(G.layout);
    kvrt_context_destroy(G.ctx);
    kvrt_model_destroy(G.model);
    remove(G.tmp_path);
}

/* ---- checking one call ------------------------------------------------------ */

static int n_checked = 0;

/* status must be `want`; a failure must leave a message (containing needle, when given). */
static void check(const char *what, const char *variant, kvrt_status got, kvrt_status want, const char *needle) {
    const char *msg = kvrt_last_error();
    n_checked++;
    if (got != want) {
        fprintf(stderr, "FAIL %s [%s]: got %s, want %s (last error: %s)\n", what, variant, kvrt_status_string(got),
                kvrt_status_string(want), msg);
        failures++;
        return;
    }
    if (want != KVRT_OK && msg[0] == '\0') {
        fprintf(stderr, "FAIL %s [%s]: %s without a message\n", what, variant, kvrt_status_string(got));
        failures++;
    }
    if (want != KVRT_OK && needle && !strstr(msg, needle)) {
        fprintf(stderr, "FAIL %s [%s]: the message does not name '%s': %s\n", what, variant, needle, msg);
        failures++;
    }
}

/* ---- 1. size-prefixed structs -------------------------------------------------- */

/* A struct lives at the start of this buffer; the rest are guard bytes. */
static union {
    unsigned char b[8192];
    uint64_t u;
    double d;
    void *p;
} big;
#define GUARD 0xA5

static int guard_intact(size_t from) {
    size_t i;
    for (i = from; i < sizeof big.b; ++i)
        if (big.b[i] != GUARD) return 0;
    return 1;
}

static void set_size(size_t n) { memcpy(big.b, &n, sizeof n); }

typedef kvrt_status (*init_fn)(void *p, size_t n);
#define INIT_WRAP(fn, T) \
    static kvrt_status w_##fn(void *p, size_t n) { return fn((T *)p, n); }
INIT_WRAP(kvrt_cache_layer_config_init, kvrt_cache_layer_config)
INIT_WRAP(kvrt_cache_config_init, kvrt_cache_config)
INIT_WRAP(kvrt_cache_keys_init, kvrt_cache_keys)
INIT_WRAP(kvrt_model_config_init, kvrt_model_config)
INIT_WRAP(kvrt_model_info_init, kvrt_model_info)
INIT_WRAP(kvrt_context_config_init, kvrt_context_config)
INIT_WRAP(kvrt_request_stats_init, kvrt_request_stats)
INIT_WRAP(kvrt_sampler_config_init, kvrt_sampler_config)
INIT_WRAP(kvrt_generate_config_init, kvrt_generate_config)
INIT_WRAP(kvrt_sampler_stage_init, kvrt_sampler_stage)
INIT_WRAP(kvrt_context_activity_init, kvrt_context_activity)

static const struct {
    const char *name;
    size_t size;
    init_fn init;
} init_cases[] = {
    {"kvrt_cache_layer_config_init", sizeof(kvrt_cache_layer_config), w_kvrt_cache_layer_config_init},
    {"kvrt_cache_config_init", sizeof(kvrt_cache_config), w_kvrt_cache_config_init},
    {"kvrt_cache_keys_init", sizeof(kvrt_cache_keys), w_kvrt_cache_keys_init},
    {"kvrt_model_config_init", sizeof(kvrt_model_config), w_kvrt_model_config_init},
    {"kvrt_model_info_init", sizeof(kvrt_model_info), w_kvrt_model_info_init},
    {"kvrt_context_config_init", sizeof(kvrt_context_config), w_kvrt_context_config_init},
    {"kvrt_request_stats_init", sizeof(kvrt_request_stats), w_kvrt_request_stats_init},
    {"kvrt_sampler_config_init", sizeof(kvrt_sampler_config), w_kvrt_sampler_config_init},
    {"kvrt_generate_config_init", sizeof(kvrt_generate_config), w_kvrt_generate_config_init},
    {"kvrt_sampler_stage_init", sizeof(kvrt_sampler_stage), w_kvrt_sampler_stage_init},
    {"kvrt_context_activity_init", sizeof(kvrt_context_activity), w_kvrt_context_activity_init},
};

/* Calls that read a struct_size: big.b holds the struct, initialised with its
 * _init (so every other field is valid), then struct_size is overwritten. */
static kvrt_status use_layer_config(size_t n) {
    kvrt_cache_layer_config *c = (kvrt_cache_layer_config *)(void *)big.b;
    kvrt_cache_layer_config_init(c, sizeof *c);
    c->n_kv_heads = 1;
    c->head_dim = 8;
    c->dtype = KVRT_DTYPE_F32;
    set_size(n);
    return kvrt_cache_layout_add_layers(NULL, G.layout, c, 1);
}
static kvrt_status use_cache_config(size_t n) {
    kvrt_cache *c = NULL;
    kvrt_status s;
    kvrt_cache_config_init((kvrt_cache_config *)(void *)big.b, sizeof(kvrt_cache_config));
    set_size(n);
    s = kvrt_cache_create(&c, G.layout, (kvrt_cache_config *)(void *)big.b);
    kvrt_cache_destroy(c);
    return s;
}
static kvrt_status use_keys_seq_create(size_t n) {
    uint64_t id = 0;
    kvrt_cache_keys_init((kvrt_cache_keys *)(void *)big.b, sizeof(kvrt_cache_keys));
    set_size(n);
    return kvrt_cache_seq_create(&id, G.cache, (kvrt_cache_keys *)(void *)big.b);
}
static kvrt_status use_keys_lookup(size_t n) {
    int64_t hit = 0;
    int32_t t[4] = {1, 2, 3, 4};
    kvrt_cache_keys_init((kvrt_cache_keys *)(void *)big.b, sizeof(kvrt_cache_keys));
    set_size(n);
    return kvrt_cache_lookup_prefix(&hit, G.cache, (kvrt_cache_keys *)(void *)big.b, t, 4);
}
static kvrt_status use_keys_pin(size_t n) {
    uint64_t pin = 0;
    int32_t t[4] = {1, 2, 3, 4};
    kvrt_cache_keys_init((kvrt_cache_keys *)(void *)big.b, sizeof(kvrt_cache_keys));
    set_size(n);
    return kvrt_cache_pin_prefix(&pin, NULL, G.cache, (kvrt_cache_keys *)(void *)big.b, t, 4);
}
static kvrt_status use_seq_info(size_t n) {
    set_size(n);
    return kvrt_cache_seq_info_get((kvrt_cache_seq_info *)(void *)big.b, G.cache, G.seq);
}
static kvrt_status use_layer_info(size_t n) {
    set_size(n);
    return kvrt_cache_layer_info_get((kvrt_cache_layer_info *)(void *)big.b, G.cache, 0);
}
static kvrt_status use_stats(size_t n) {
    set_size(n);
    return kvrt_cache_stats_get((kvrt_cache_stats *)(void *)big.b, G.cache);
}
static kvrt_status use_ctx_cache_stats(size_t n) {
    set_size(n);
    return kvrt_cache_stats_get((kvrt_cache_stats *)(void *)big.b, G.ctx_cache);
}
static kvrt_status use_model_config(size_t n) {
    kvrt_model *m = NULL;
    kvrt_status s;
    kvrt_model_config_init((kvrt_model_config *)(void *)big.b, sizeof(kvrt_model_config));
    set_size(n);
    /* no such file: an accepted config shows as KVRT_ERR_NOT_FOUND, not as a slow load */
    s = kvrt_model_load(&m, "/nonexistent/kvrt-misuse.gguf", (kvrt_model_config *)(void *)big.b);
    kvrt_model_destroy(m);
    return s;
}
static kvrt_status use_model_info(size_t n) {
    set_size(n);
    return kvrt_model_get_info((kvrt_model_info *)(void *)big.b, G.model);
}
static kvrt_status use_context_config(size_t n) {
    kvrt_context *c = NULL;
    kvrt_status s;
    kvrt_context_config *cc = (kvrt_context_config *)(void *)big.b;
    kvrt_context_config_init(cc, sizeof *cc);
    cc->n_ctx = 64;
    set_size(n);
    s = kvrt_context_create(&c, G.model, cc);
    kvrt_context_destroy(c);
    return s;
}
static kvrt_status use_stats_prefill(size_t n) {
    set_size(n);
    return kvrt_context_prefill((kvrt_request_stats *)(void *)big.b, G.ctx, 1, G.prompt, G.n_prompt);
}
static kvrt_status use_stats_prefill_batch(size_t n) {
    int32_t ids[1] = {1};
    const int32_t *toks[1];
    size_t lens[1];
    toks[0] = G.prompt;
    lens[0] = G.n_prompt;
    set_size(n);
    return kvrt_context_prefill_batch((kvrt_request_stats *)(void *)big.b, G.ctx, ids, toks, lens, 1);
}
static kvrt_status use_stats_prefill_logits(size_t n) {
    uint32_t pos = 0;
    set_size(n);
    return kvrt_context_prefill_logits((kvrt_request_stats *)(void *)big.b, G.ctx, 1, G.prompt, G.n_prompt, &pos, 1);
}
static kvrt_status use_stats_generate(size_t n) {
    set_size(n);
    return kvrt_context_generate((kvrt_request_stats *)(void *)big.b, G.ctx, 1, G.prompt, G.n_prompt, NULL);
}
static kvrt_status use_sampler_config(size_t n) {
    kvrt_sampler *s = NULL;
    kvrt_status st;
    kvrt_sampler_config_init((kvrt_sampler_config *)(void *)big.b, sizeof(kvrt_sampler_config));
    set_size(n);
    st = kvrt_sampler_create(&s, (kvrt_sampler_config *)(void *)big.b);
    kvrt_sampler_destroy(s);
    return st;
}
static kvrt_status use_generate_config(size_t n) {
    kvrt_generate_config *g = (kvrt_generate_config *)(void *)big.b;
    kvrt_generate_config_init(g, sizeof *g);
    g->max_tokens = 1;
    set_size(n);
    return kvrt_context_generate(NULL, G.ctx, 1, G.prompt, G.n_prompt, g);
}

static kvrt_status use_sampler_stage(size_t n) {
    kvrt_sampler *s = NULL;
    kvrt_status st;
    kvrt_sampler_chain_create(&s, 1);
    kvrt_sampler_stage_init((kvrt_sampler_stage *)(void *)big.b, sizeof(kvrt_sampler_stage));
    ((kvrt_sampler_stage *)(void *)big.b)->type = KVRT_SAMPLER_GREEDY;
    set_size(n);
    st = kvrt_sampler_chain_add(s, (kvrt_sampler_stage *)(void *)big.b);
    kvrt_sampler_destroy(s);
    return st;
}
static kvrt_status use_context_activity(size_t n) {
    set_size(n);
    return kvrt_context_activity_get((kvrt_context_activity *)(void *)big.b, G.ctx);
}

static const struct {
    const char *name;
    size_t size;
    kvrt_status (*use)(size_t n);
} use_cases[] = {
    {"kvrt_sampler_chain_add(stage)", sizeof(kvrt_sampler_stage), use_sampler_stage},
    {"kvrt_context_activity_get(out)", sizeof(kvrt_context_activity), use_context_activity},
    {"kvrt_cache_layout_add_layers(cfg)", sizeof(kvrt_cache_layer_config), use_layer_config},
    {"kvrt_cache_create(cfg)", sizeof(kvrt_cache_config), use_cache_config},
    {"kvrt_cache_seq_create(keys)", sizeof(kvrt_cache_keys), use_keys_seq_create},
    {"kvrt_cache_lookup_prefix(keys)", sizeof(kvrt_cache_keys), use_keys_lookup},
    {"kvrt_cache_pin_prefix(keys)", sizeof(kvrt_cache_keys), use_keys_pin},
    {"kvrt_cache_seq_info_get(out)", sizeof(kvrt_cache_seq_info), use_seq_info},
    {"kvrt_cache_layer_info_get(out)", sizeof(kvrt_cache_layer_info), use_layer_info},
    {"kvrt_cache_stats_get(out)", sizeof(kvrt_cache_stats), use_stats},
    {"kvrt_cache_stats_get(out) of a context's cache", sizeof(kvrt_cache_stats), use_ctx_cache_stats},
    {"kvrt_model_load(cfg)", sizeof(kvrt_model_config), use_model_config},
    {"kvrt_model_get_info(info)", sizeof(kvrt_model_info), use_model_info},
    {"kvrt_context_create(cfg)", sizeof(kvrt_context_config), use_context_config},
    {"kvrt_context_prefill(stats)", sizeof(kvrt_request_stats), use_stats_prefill},
    {"kvrt_context_prefill_batch(stats)", sizeof(kvrt_request_stats), use_stats_prefill_batch},
    {"kvrt_context_prefill_logits(stats)", sizeof(kvrt_request_stats), use_stats_prefill_logits},
    {"kvrt_context_generate(stats)", sizeof(kvrt_request_stats), use_stats_generate},
    {"kvrt_sampler_create(cfg)", sizeof(kvrt_sampler_config), use_sampler_config},
    {"kvrt_context_generate(cfg)", sizeof(kvrt_generate_config), use_generate_config},
};

static void test_struct_sizes(void) {
    size_t i, j;
    char variant[64];
    for (i = 0; i < sizeof init_cases / sizeof init_cases[0]; ++i) {
        const size_t T = init_cases[i].size;
        const size_t bad[] = {0, 1, sizeof(size_t), T + 1, T + 8, 4096, SIZE_MAX / 2, SIZE_MAX};
        for (j = 0; j < sizeof bad / sizeof bad[0]; ++j) {
            memset(big.b, GUARD, sizeof big.b);
            kvrt_clear_error();
            snprintf(variant, sizeof variant, "struct_size %zu", bad[j]);
            check(init_cases[i].name, variant, init_cases[i].init(big.b, bad[j]), KVRT_ERR_INVALID_ARGUMENT,
                  "struct_size");
            if (!guard_intact(0)) {
                fprintf(stderr, "FAIL %s [%s]: wrote to a struct it rejected\n", init_cases[i].name, variant);
                failures++;
            }
        }
        kvrt_clear_error();
        check(init_cases[i].name, "NULL", init_cases[i].init(NULL, T), KVRT_ERR_INVALID_ARGUMENT, NULL);
        memset(big.b, GUARD, sizeof big.b);
        check(init_cases[i].name, "sizeof", init_cases[i].init(big.b, T), KVRT_OK, NULL);
        if (!guard_intact(T)) {
            fprintf(stderr, "FAIL %s [sizeof]: wrote past the struct\n", init_cases[i].name);
            failures++;
        }
    }
    for (i = 0; i < sizeof use_cases / sizeof use_cases[0]; ++i) {
        const size_t T = use_cases[i].size;
        const size_t bad[] = {0, 1, sizeof(size_t), T + 1, T + 8, 4096, SIZE_MAX / 2, SIZE_MAX};
        for (j = 0; j < sizeof bad / sizeof bad[0]; ++j) {
            memset(big.b, GUARD, sizeof big.b);
            kvrt_clear_error();
            snprintf(variant, sizeof variant, "struct_size %zu", bad[j]);
            check(use_cases[i].name, variant, use_cases[i].use(bad[j]), KVRT_ERR_INVALID_ARGUMENT, "struct_size");
            if (!guard_intact(T)) {
                fprintf(stderr, "FAIL %s [%s]: wrote past the caller's struct\n", use_cases[i].name, variant);
                failures++;
            }
        }
    }
    /* The output structs at their own size work and stay inside it. */
    for (i = 0; i < sizeof use_cases / sizeof use_cases[0]; ++i) {
        if (strstr(use_cases[i].name, "(out)") == NULL && strstr(use_cases[i].name, "(info)") == NULL) continue;
        memset(big.b, GUARD, sizeof big.b);
        check(use_cases[i].name, "sizeof", use_cases[i].use(use_cases[i].size), KVRT_OK, NULL);
        if (!guard_intact(use_cases[i].size)) {
            fprintf(stderr, "FAIL %s [sizeof]: wrote past the struct\n", use_cases[i].name);
            failures++;
        }
    }
}

/* ---- 2. handles ------------------------------------------------------------------ */

static kvrt_status h_layout_add_layers(void *h) {
    kvrt_cache_layer_config c;
    kvrt_cache_layer_config_init(&c, sizeof c);
    c.n_kv_heads = 1;
    c.head_dim = 8;
    return kvrt_cache_layout_add_layers(NULL, (kvrt_cache_layout *)h, &c, 1);
}
static kvrt_status h_layout_n_layers(void *h) {
    int32_t n;
    return kvrt_cache_layout_n_layers(&n, (const kvrt_cache_layout *)h);
}
static kvrt_status h_cache_create(void *h) {
    kvrt_cache *c = NULL;
    kvrt_status s = kvrt_cache_create(&c, (const kvrt_cache_layout *)h, NULL);
    kvrt_cache_destroy(c);
    return s;
}
static kvrt_status h_seq_create(void *h) {
    uint64_t id;
    return kvrt_cache_seq_create(&id, (kvrt_cache *)h, NULL);
}
static kvrt_status h_seq_release(void *h) { return kvrt_cache_seq_release((kvrt_cache *)h, G.seq); }
static kvrt_status h_seq_fork(void *h) {
    uint64_t id;
    return kvrt_cache_seq_fork(&id, (kvrt_cache *)h, G.seq);
}
static kvrt_status h_seq_truncate(void *h) { return kvrt_cache_seq_truncate((kvrt_cache *)h, G.seq, 0); }
static kvrt_status h_seq_append(void *h) {
    int32_t t = 1;
    return kvrt_cache_seq_append((kvrt_cache *)h, G.seq, &t, 1);
}
static kvrt_status h_seq_mark_computed(void *h) { return kvrt_cache_seq_mark_computed((kvrt_cache *)h, G.seq, 0); }
static kvrt_status h_seq_match_prefix(void *h) {
    int64_t hit;
    int32_t t[2] = {1, 2};
    return kvrt_cache_seq_match_prefix(&hit, (kvrt_cache *)h, G.seq, t, 2);
}
static kvrt_status h_seq_match_prefix_v2(void *h) {
    int64_t hit;
    int32_t t[2] = {1, 2};
    return kvrt_cache_seq_match_prefix_v2(&hit, (kvrt_cache *)h, G.seq, t, 2, KVRT_MATCH_SUB_BLOCK);
}
static kvrt_status h_seq_info_get(void *h) {
    kvrt_cache_seq_info i;
    i.struct_size = sizeof i;
    return kvrt_cache_seq_info_get(&i, (const kvrt_cache *)h, G.seq);
}
static kvrt_status h_lookup_prefix(void *h) {
    int64_t hit;
    int32_t t[2] = {1, 2};
    return kvrt_cache_lookup_prefix(&hit, (const kvrt_cache *)h, NULL, t, 2);
}
static kvrt_status h_lookup_prefix_v2(void *h) {
    int64_t hit;
    int32_t t[2] = {1, 2};
    return kvrt_cache_lookup_prefix_v2(&hit, (const kvrt_cache *)h, NULL, t, 2, KVRT_MATCH_SUB_BLOCK);
}
static kvrt_status h_pin_prefix(void *h) {
    uint64_t pin;
    int32_t t[2] = {1, 2};
    return kvrt_cache_pin_prefix(&pin, NULL, (kvrt_cache *)h, NULL, t, 2);
}
static kvrt_status h_unpin(void *h) { return kvrt_cache_unpin((kvrt_cache *)h, G.seq); }
static kvrt_status h_layer_info_get(void *h) {
    kvrt_cache_layer_info i;
    i.struct_size = sizeof i;
    return kvrt_cache_layer_info_get(&i, (const kvrt_cache *)h, 0);
}
static kvrt_status h_write_rows(void *h) {
    float k[8] = {0}, v[8] = {0};
    return kvrt_cache_write_rows((kvrt_cache *)h, G.seq, 0, 19, 1, k, v);
}
static kvrt_status h_write_rows_v2(void *h) {
    float k[8] = {0}, v[8] = {0};
    return kvrt_cache_write_rows_v2((kvrt_cache *)h, G.seq, 0, 19, 1, k, sizeof k, v, sizeof v);
}
static kvrt_status h_read_rows_v2(void *h) {
    float k[8], v[8];
    return kvrt_cache_read_rows_v2(k, sizeof k, v, sizeof v, (const kvrt_cache *)h, G.seq, 0, 0, 1);
}
static kvrt_status h_read_rows(void *h) {
    float k[8], v[8];
    return kvrt_cache_read_rows(k, v, (const kvrt_cache *)h, G.seq, 0, 0, 1);
}
static kvrt_status h_block_table(void *h) {
    const void *t[8];
    size_t w;
    return kvrt_cache_block_table(t, 8, &w, (const kvrt_cache *)h, G.seq, 0);
}
static kvrt_status h_save_prefixes(void *h) {
    return kvrt_cache_save_prefixes(NULL, (const kvrt_cache *)h, G.tmp_path, 0, 0);
}
static kvrt_status h_load_prefixes(void *h) { return kvrt_cache_load_prefixes(NULL, (kvrt_cache *)h, G.tmp_path, 0, 0); }
static kvrt_status h_seq_save(void *h) { return kvrt_cache_seq_save((const kvrt_cache *)h, G.seq, G.tmp_path); }
static kvrt_status h_seq_load(void *h) {
    uint64_t id;
    return kvrt_cache_seq_load(&id, (kvrt_cache *)h, G.tmp_path, 0, 0);
}
static kvrt_status h_stats_get(void *h) {
    kvrt_cache_stats s;
    s.struct_size = sizeof s;
    return kvrt_cache_stats_get(&s, (const kvrt_cache *)h);
}
static kvrt_status h_model_get_info(void *h) {
    kvrt_model_info i;
    kvrt_model_info_init(&i, sizeof i);
    return kvrt_model_get_info(&i, (const kvrt_model *)h);
}
static kvrt_status h_meta_string(void *h) {
    char b[64];
    size_t w;
    return kvrt_model_meta_string(b, sizeof b, &w, (const kvrt_model *)h, "general.name");
}
static kvrt_status h_meta_count(void *h) {
    size_t n;
    return kvrt_model_meta_count(&n, (const kvrt_model *)h);
}
static kvrt_status h_meta_key(void *h) {
    char b[64];
    size_t w;
    return kvrt_model_meta_key(b, sizeof b, &w, (const kvrt_model *)h, 0);
}
static kvrt_status h_tensor_count(void *h) {
    size_t n;
    return kvrt_model_tensor_count(&n, (const kvrt_model *)h);
}
static kvrt_status h_tensor_info(void *h) {
    char b[128];
    size_t w;
    return kvrt_model_tensor_info(b, sizeof b, &w, NULL, NULL, NULL, (const kvrt_model *)h, 0);
}
static kvrt_status h_tokenize(void *h) {
    int32_t t[16];
    size_t w;
    return kvrt_model_tokenize(t, 16, &w, (const kvrt_model *)h, "hi", 2, 0);
}
static kvrt_status h_detokenize(void *h) {
    char b[64];
    size_t w;
    int32_t t[1] = {100};
    return kvrt_model_detokenize(b, sizeof b, &w, (const kvrt_model *)h, t, 1, 0);
}
static kvrt_status h_token_is_eog(void *h) {
    int e;
    return kvrt_model_token_is_eog(&e, (const kvrt_model *)h, 0);
}
static kvrt_status h_chat_apply(void *h) {
    char b[256];
    size_t w;
    kvrt_chat_message m;
    m.role = "user";
    m.content = "hi";
    return kvrt_model_chat_apply(b, sizeof b, &w, (const kvrt_model *)h, &m, 1, 1);
}
static kvrt_status h_context_create(void *h) {
    kvrt_context *c = NULL;
    kvrt_context_config cc;
    kvrt_status s;
    kvrt_context_config_init(&cc, sizeof cc);
    cc.n_ctx = 64;
    s = kvrt_context_create(&c, (kvrt_model *)h, &cc);
    kvrt_context_destroy(c);
    return s;
}
static kvrt_status h_context_create_cfg_cache(void *h) {
    kvrt_context *c = NULL;
    kvrt_context_config cc;
    kvrt_status s;
    kvrt_context_config_init(&cc, sizeof cc);
    cc.n_ctx = 64;
    cc.cache = (kvrt_cache *)h;
    s = kvrt_context_create(&c, G.model, &cc);
    kvrt_context_destroy(c);
    return s;
}
static kvrt_status h_get_cache(void *h) {
    kvrt_cache *c;
    return kvrt_context_get_cache(&c, (kvrt_context *)h);
}
static kvrt_status h_prefill(void *h) { return kvrt_context_prefill(NULL, (kvrt_context *)h, 1, G.prompt, G.n_prompt); }
static kvrt_status h_prefill_batch(void *h) {
    int32_t ids[1] = {1};
    const int32_t *toks[1];
    size_t lens[1];
    toks[0] = G.prompt;
    lens[0] = G.n_prompt;
    return kvrt_context_prefill_batch(NULL, (kvrt_context *)h, ids, toks, lens, 1);
}
static kvrt_status h_prefill_logits(void *h) {
    uint32_t pos = 0;
    return kvrt_context_prefill_logits(NULL, (kvrt_context *)h, 1, G.prompt, G.n_prompt, &pos, 1);
}
static kvrt_status h_get_logits_at(void *h) {
    size_t w;
    return kvrt_context_get_logits_at(logits_buf, G.n_vocab, &w, (const kvrt_context *)h, 0, 0);
}
static kvrt_status h_decode(void *h) {
    int32_t id = 0, t = 100;
    return kvrt_context_decode((kvrt_context *)h, &id, &t, 1);
}
static kvrt_status h_get_logits(void *h) {
    size_t w;
    return kvrt_context_get_logits(logits_buf, G.n_vocab, &w, (const kvrt_context *)h, 0);
}
static kvrt_status h_seq_length(void *h) {
    size_t n;
    return kvrt_context_seq_length(&n, (const kvrt_context *)h, 0);
}
static kvrt_status h_seq_kv_bytes(void *h) {
    uint64_t n;
    return kvrt_context_seq_kv_bytes(&n, (const kvrt_context *)h, 0);
}
static kvrt_status h_ctx_seq_release(void *h) { return kvrt_context_seq_release((kvrt_context *)h, 0); }
static kvrt_status h_generate(void *h) {
    return kvrt_context_generate(NULL, (kvrt_context *)h, 1, G.prompt, G.n_prompt, NULL);
}
static kvrt_status h_generate_sampler(void *h) {
    kvrt_generate_config g;
    kvrt_generate_config_init(&g, sizeof g);
    g.max_tokens = 1;
    g.sampler = (kvrt_sampler *)h;
    return kvrt_context_generate(NULL, G.ctx, 1, G.prompt, G.n_prompt, &g);
}
static kvrt_status h_sampler_sample(void *h) {
    float l[3] = {0.0f, 1.0f, 2.0f};
    int32_t t;
    return kvrt_sampler_sample(&t, (kvrt_sampler *)h, l, 3);
}

static kvrt_status h_cancel(void *h) { return kvrt_context_cancel((kvrt_context *)h); }
static kvrt_status h_activity_get(void *h) {
    kvrt_context_activity a;
    kvrt_context_activity_init(&a, sizeof a);
    return kvrt_context_activity_get(&a, (const kvrt_context *)h);
}
static kvrt_status h_chain_add(void *h) {
    kvrt_sampler_stage st;
    kvrt_sampler_stage_init(&st, sizeof st);
    st.type = KVRT_SAMPLER_GREEDY;
    return kvrt_sampler_chain_add((kvrt_sampler *)h, &st);
}
static kvrt_status h_sampler_accept(void *h) { return kvrt_sampler_accept((kvrt_sampler *)h, 1); }
static kvrt_status h_sampler_reset(void *h) { return kvrt_sampler_reset((kvrt_sampler *)h); }
static kvrt_status h_cache_set_budget(void *h) { return kvrt_cache_set_budget((kvrt_cache *)h, 1u << 30); }
static kvrt_status h_cache_trim(void *h) {
    uint64_t n = 0;
    return kvrt_cache_trim(&n, (kvrt_cache *)h, 0);
}
static kvrt_status h_model_retain(void *h) {
    kvrt_model *m = NULL;
    kvrt_status st = kvrt_model_retain(&m, (kvrt_model *)h);
    kvrt_model_destroy(m);
    return st;
}
static kvrt_status h_chat_apply_template(void *h) {
    kvrt_chat_message msg;
    char buf[256];
    size_t w = 0;
    msg.role = "user";
    msg.content = "hi";
    return kvrt_model_chat_apply_template(buf, sizeof buf, &w, (const kvrt_model *)h, "chatml", &msg, 1, 1);
}

static const struct {
    const char *name;
    int type;
    int null_is_default; /* NULL is a valid value of this parameter (skip it) */
    kvrt_status (*call)(void *h);
} handle_cases[] = {
    {"kvrt_context_cancel", H_CTX, 0, h_cancel},
    {"kvrt_context_activity_get", H_CTX, 0, h_activity_get},
    {"kvrt_sampler_chain_add", H_SAMPLER, 0, h_chain_add},
    {"kvrt_sampler_accept", H_SAMPLER, 0, h_sampler_accept},
    {"kvrt_sampler_reset", H_SAMPLER, 0, h_sampler_reset},
    {"kvrt_cache_set_budget", H_CACHE, 0, h_cache_set_budget},
    {"kvrt_cache_trim", H_CACHE, 0, h_cache_trim},
    {"kvrt_model_retain", H_MODEL, 0, h_model_retain},
    {"kvrt_model_chat_apply_template", H_MODEL, 0, h_chat_apply_template},
    {"kvrt_cache_layout_add_layers", H_LAYOUT, 0, h_layout_add_layers},
    {"kvrt_cache_layout_n_layers", H_LAYOUT, 0, h_layout_n_layers},
    {"kvrt_cache_create", H_LAYOUT, 0, h_cache_create},
    {"kvrt_cache_seq_create", H_CACHE, 0, h_seq_create},
    {"kvrt_cache_seq_release", H_CACHE, 0, h_seq_release},
    {"kvrt_cache_seq_fork", H_CACHE, 0, h_seq_fork},
    {"kvrt_cache_seq_truncate", H_CACHE, 0, h_seq_truncate},
    {"kvrt_cache_seq_append", H_CACHE, 0, h_seq_append},
    {"kvrt_cache_seq_mark_computed", H_CACHE, 0, h_seq_mark_computed},
    {"kvrt_cache_seq_match_prefix", H_CACHE, 0, h_seq_match_prefix},
    {"kvrt_cache_seq_match_prefix_v2", H_CACHE, 0, h_seq_match_prefix_v2},
    {"kvrt_cache_seq_info_get", H_CACHE, 0, h_seq_info_get},
    {"kvrt_cache_lookup_prefix", H_CACHE, 0, h_lookup_prefix},
    {"kvrt_cache_lookup_prefix_v2", H_CACHE, 0, h_lookup_prefix_v2},
    {"kvrt_cache_pin_prefix", H_CACHE, 0, h_pin_prefix},
    {"kvrt_cache_unpin", H_CACHE, 0, h_unpin},
    {"kvrt_cache_layer_info_get", H_CACHE, 0, h_layer_info_get},
    {"kvrt_cache_write_rows", H_CACHE, 0, h_write_rows},
    {"kvrt_cache_read_rows", H_CACHE, 0, h_read_rows},
    {"kvrt_cache_write_rows_v2", H_CACHE, 0, h_write_rows_v2},
    {"kvrt_cache_read_rows_v2", H_CACHE, 0, h_read_rows_v2},
    {"kvrt_cache_block_table", H_CACHE, 0, h_block_table},
    {"kvrt_cache_save_prefixes", H_CACHE, 0, h_save_prefixes},
    {"kvrt_cache_load_prefixes", H_CACHE, 0, h_load_prefixes},
    {"kvrt_cache_seq_save", H_CACHE, 0, h_seq_save},
    {"kvrt_cache_seq_load", H_CACHE, 0, h_seq_load},
    {"kvrt_cache_stats_get", H_CACHE, 0, h_stats_get},
    {"kvrt_model_get_info", H_MODEL, 0, h_model_get_info},
    {"kvrt_model_meta_string", H_MODEL, 0, h_meta_string},
    {"kvrt_model_meta_count", H_MODEL, 0, h_meta_count},
    {"kvrt_model_meta_key", H_MODEL, 0, h_meta_key},
    {"kvrt_model_tensor_count", H_MODEL, 0, h_tensor_count},
    {"kvrt_model_tensor_info", H_MODEL, 0, h_tensor_info},
    {"kvrt_model_tokenize", H_MODEL, 0, h_tokenize},
    {"kvrt_model_detokenize", H_MODEL, 0, h_detokenize},
    {"kvrt_model_token_is_eog", H_MODEL, 0, h_token_is_eog},
    {"kvrt_model_chat_apply", H_MODEL, 0, h_chat_apply},
    {"kvrt_context_create(model)", H_MODEL, 0, h_context_create},
    {"kvrt_context_create(cfg->cache)", H_CACHE, 1, h_context_create_cfg_cache},
    {"kvrt_context_get_cache", H_CTX, 0, h_get_cache},
    {"kvrt_context_prefill", H_CTX, 0, h_prefill},
    {"kvrt_context_prefill_batch", H_CTX, 0, h_prefill_batch},
    {"kvrt_context_decode", H_CTX, 0, h_decode},
    {"kvrt_context_get_logits", H_CTX, 0, h_get_logits},
    {"kvrt_context_prefill_logits", H_CTX, 0, h_prefill_logits},
    {"kvrt_context_get_logits_at", H_CTX, 0, h_get_logits_at},
    {"kvrt_context_seq_length", H_CTX, 0, h_seq_length},
    {"kvrt_context_seq_kv_bytes", H_CTX, 0, h_seq_kv_bytes},
    {"kvrt_context_seq_release", H_CTX, 0, h_ctx_seq_release},
    {"kvrt_context_generate", H_CTX, 0, h_generate},
    {"kvrt_context_generate(cfg->sampler)", H_SAMPLER, 1, h_generate_sampler},
    {"kvrt_sampler_sample", H_SAMPLER, 0, h_sampler_sample},
};

static void test_handles(void) {
    size_t i;
    int v;
    char variant[64];
    for (i = 0; i < sizeof handle_cases / sizeof handle_cases[0]; ++i) {
        const int t = handle_cases[i].type;
        void *hs[5];
        const char *vn[5];
        int n = 0;
        if (!handle_cases[i].null_is_default) {
            hs[n] = NULL;
            vn[n++] = "NULL";
        }
        hs[n] = dead_handle(t);
        vn[n++] = "destroyed";
        hs[n] = other_type_handle(t);
        vn[n++] = "a live handle of another type";
        hs[n] = &not_a_handle;
        vn[n++] = "a foreign address";
        if (t == H_CACHE) {
            hs[n] = G.dead_weak_cache;
            vn[n++] = "the cache of a destroyed context";
        }
        for (v = 0; v < n; ++v) {
            snprintf(variant, sizeof variant, "%s %s", vn[v], htype_name[t]);
            kvrt_clear_error();
            check(handle_cases[i].name, variant, handle_cases[i].call(hs[v]), KVRT_ERR_BAD_HANDLE, NULL);
        }
    }
    /* Destroy functions ignore NULL, destroyed, foreign and other-type handles
     * (the objects they must not touch are checked at the end). */
    kvrt_cache_destroy(NULL);
    kvrt_cache_destroy(G.dead_cache);
    kvrt_cache_destroy(G.dead_weak_cache);
    kvrt_cache_destroy((kvrt_cache *)(void *)&not_a_handle);
    kvrt_cache_destroy((kvrt_cache *)(void *)G.ctx);
    kvrt_cache_destroy(G.ctx_cache); /* owned by its context: ignored */
    kvrt_cache_layout_destroy(NULL);
    kvrt_cache_layout_destroy(G.dead_layout);
    kvrt_cache_layout_destroy((kvrt_cache_layout *)(void *)G.cache);
    kvrt_model_destroy(NULL);
    kvrt_model_destroy(G.dead_model);
    kvrt_model_destroy((kvrt_model *)(void *)G.ctx);
    kvrt_model_destroy((kvrt_model *)(void *)&not_a_handle);
    kvrt_context_destroy(NULL);
    kvrt_context_destroy(G.dead_ctx);
    kvrt_context_destroy((kvrt_context *)(void *)G.model);
    kvrt_context_destroy((kvrt_context *)(void *)&not_a_handle);
    kvrt_sampler_destroy(NULL);
    kvrt_sampler_destroy(G.dead_sampler);
    kvrt_sampler_destroy((kvrt_sampler *)(void *)G.ctx);
    kvrt_sampler_destroy((kvrt_sampler *)(void *)&not_a_handle);
}

/* ---- 3. counts, indices and sizes ----------------------------------------------- */
/* Each call gets one bad value (s for signed parameters, u for unsigned ones);
 * every other argument is valid. Only values the library must reject before
 * it reads the caller's buffers are used with real buffers. */

typedef kvrt_status (*count_fn)(int64_t s, uint64_t u);

static kvrt_status c_layout_create(int64_t s, uint64_t u) {
    kvrt_cache_layout *l = NULL;
    kvrt_status st = kvrt_cache_layout_create(&l, (int32_t)s);
    (void)u;
    kvrt_cache_layout_destroy(l);
    return st;
}
static kvrt_status c_add_layers_count(int64_t s, uint64_t u) {
    kvrt_cache_layer_config c;
    (void)u;
    kvrt_cache_layer_config_init(&c, sizeof c);
    c.n_kv_heads = 1;
    c.head_dim = 8;
    return kvrt_cache_layout_add_layers(NULL, G.layout, &c, (int32_t)s);
}
/* One field of a layer config (u selects it) set to s. */
static kvrt_status c_layer_field(int64_t s, uint64_t u) {
    kvrt_cache_layer_config c;
    kvrt_cache_layer_config_init(&c, sizeof c);
    c.n_kv_heads = 1;
    c.head_dim = 8;
    switch (u) {
        case 0: c.n_kv_heads = (int32_t)s; break;
        case 1: c.head_dim = (int32_t)s; break;
        case 2: c.kind = KVRT_LAYER_WINDOW; c.window = (int32_t)s; break;
        case 3: c.kind = KVRT_LAYER_BANK_SOURCE; c.ratio = (int32_t)s; break;
        case 4: c.kind = KVRT_LAYER_BANK_READER; c.source = (int32_t)s; break;
        case 5: c.kind = (int32_t)s; break;
        case 6: c.dtype = (int32_t)s; break;
        default: c.shared_kv = (int32_t)s; break;
    }
    return kvrt_cache_layout_add_layers(NULL, G.layout, &c, 1);
}
static kvrt_status c_cache_budget(int64_t s, uint64_t u) {
    kvrt_cache *c = NULL;
    kvrt_cache_config cfg;
    kvrt_status st;
    (void)s;
    kvrt_cache_config_init(&cfg, sizeof cfg);
    cfg.budget_bytes = u;
    st = kvrt_cache_create(&c, G.layout, &cfg);
    if (st == KVRT_OK) { /* a huge budget is only a reservation: the cache must work */
        uint64_t id = 0;
        int32_t t[4] = {1, 2, 3, 4};
        if (kvrt_cache_seq_create(&id, c, NULL) != KVRT_OK || kvrt_cache_seq_append(c, id, t, 4) != KVRT_OK)
            st = KVRT_ERR_INTERNAL;
    }
    kvrt_cache_destroy(c);
    return st;
}
static kvrt_status c_cache_flags(int64_t s, uint64_t u) {
    kvrt_cache *c = NULL;
    kvrt_cache_config cfg;
    kvrt_status st;
    kvrt_cache_config_init(&cfg, sizeof cfg);
    if (u == 0) cfg.large_pages = (int32_t)s;
    else cfg.reserved0 = (int32_t)s;
    st = kvrt_cache_create(&c, G.layout, &cfg);
    kvrt_cache_destroy(c);
    return st;
}
static kvrt_status c_truncate(int64_t s, uint64_t u) {
    (void)u;
    return kvrt_cache_seq_truncate(G.cache, G.seq, s);
}
static kvrt_status c_append(int64_t s, uint64_t u) {
    int32_t t[4] = {1, 2, 3, 4};
    return kvrt_cache_seq_append(G.cache, G.seq, s ? NULL : t, (size_t)u);
}
static kvrt_status c_mark_computed(int64_t s, uint64_t u) {
    (void)u;
    return kvrt_cache_seq_mark_computed(G.cache, G.seq, s);
}
static kvrt_status c_match_prefix(int64_t s, uint64_t u) {
    uint64_t id = 0;
    int64_t hit = 0;
    int32_t t[4] = {1, 2, 3, 4};
    kvrt_status st;
    (void)s;
    if (kvrt_cache_seq_create(&id, G.cache, NULL) != KVRT_OK) return KVRT_ERR_INTERNAL;
    st = kvrt_cache_seq_match_prefix(&hit, G.cache, id, t, (size_t)u);
    kvrt_cache_seq_release(G.cache, id);
    return st;
}
static kvrt_status c_lookup_prefix(int64_t s, uint64_t u) {
    int64_t hit = 0;
    int32_t t[4] = {1, 2, 3, 4};
    (void)s;
    return kvrt_cache_lookup_prefix(&hit, G.cache, NULL, t, (size_t)u);
}
static kvrt_status c_pin_prefix(int64_t s, uint64_t u) {
    uint64_t pin = 0;
    int32_t t[4] = {1, 2, 3, 4};
    (void)s;
    return kvrt_cache_pin_prefix(&pin, NULL, G.cache, NULL, t, (size_t)u);
}
static kvrt_status c_layer_info(int64_t s, uint64_t u) {
    kvrt_cache_layer_info i;
    (void)u;
    i.struct_size = sizeof i;
    return kvrt_cache_layer_info_get(&i, G.cache, (int32_t)s);
}
/* write_rows / read_rows: u selects the bad argument (0 layer, 1 first_row, 2 n_rows, 3 both rows). */
static kvrt_status c_rows(int64_t s, uint64_t u, int write) {
    float k[8] = {0}, v[8] = {0};
    int32_t layer = 0;
    int64_t first = 19, n = 1;
    switch (u) {
        case 0: layer = (int32_t)s; break;
        case 1: first = s; break;
        case 2: n = s; break;
        default: first = s; n = s; break;
    }
    return write ? kvrt_cache_write_rows(G.cache, G.seq, layer, first, n, k, v)
                 : kvrt_cache_read_rows(k, v, G.cache, G.seq, layer, first, n);
}
static kvrt_status c_write_rows(int64_t s, uint64_t u) { return c_rows(s, u, 1); }
static kvrt_status c_read_rows(int64_t s, uint64_t u) { return c_rows(s, u, 0); }
static kvrt_status c_block_table_layer(int64_t s, uint64_t u) {
    const void *t[8];
    size_t w;
    (void)u;
    return kvrt_cache_block_table(t, 8, &w, G.cache, G.seq, (int32_t)s);
}
static kvrt_status c_block_table_capacity(int64_t s, uint64_t u) {
    size_t w = 0;
    kvrt_status st;
    (void)s;
    st = kvrt_cache_block_table(NULL, (size_t)u, &w, G.cache, G.seq, 0);
    if ((st == KVRT_OK || st == KVRT_ERR_BUFFER_TOO_SMALL) && w != 2) return KVRT_ERR_INTERNAL; /* must say how many */
    return st;
}
static kvrt_status c_model_threads(int64_t s, uint64_t u) {
    kvrt_model *m = NULL;
    kvrt_model_config c;
    kvrt_status st;
    kvrt_model_config_init(&c, sizeof c);
    if (u == 0) c.n_threads = (int32_t)s;
    else c.reserved0 = (int32_t)s;
    st = kvrt_model_load(&m, "/nonexistent/kvrt-misuse.gguf", &c);
    kvrt_model_destroy(m);
    return st;
}
static kvrt_status c_meta_key(int64_t s, uint64_t u) {
    char b[64];
    size_t w;
    (void)s;
    return kvrt_model_meta_key(b, sizeof b, &w, G.model, (size_t)u);
}
static kvrt_status c_meta_string_capacity(int64_t s, uint64_t u) {
    size_t w;
    (void)s;
    return kvrt_model_meta_string(NULL, (size_t)u, &w, G.model, "general.name");
}
static kvrt_status c_tensor_info(int64_t s, uint64_t u) {
    (void)s;
    return kvrt_model_tensor_info(NULL, 0, NULL, NULL, NULL, NULL, G.model, (size_t)u);
}
/* tokenize: s = 0 NULL text with text_len u; 1 NULL dst with capacity u; 2 flags u. */
static kvrt_status c_tokenize(int64_t s, uint64_t u) {
    int32_t t[16];
    size_t w;
    if (s == 0) return kvrt_model_tokenize(t, 16, &w, G.model, NULL, (size_t)u, 0);
    if (s == 1) return kvrt_model_tokenize(NULL, (size_t)u, &w, G.model, "hi", 2, 0);
    return kvrt_model_tokenize(t, 16, &w, G.model, "hi", 2, (uint32_t)u);
}
/* detokenize: s = 0 NULL tokens with n u; 1 NULL dst with capacity u; 2 flags u. */
static kvrt_status c_detokenize(int64_t s, uint64_t u) {
    char b[64];
    size_t w;
    int32_t t[1] = {100};
    if (s == 0) return kvrt_model_detokenize(b, sizeof b, &w, G.model, NULL, (size_t)u, 0);
    if (s == 1) return kvrt_model_detokenize(NULL, (size_t)u, &w, G.model, t, 1, 0);
    return kvrt_model_detokenize(b, sizeof b, &w, G.model, t, 1, (uint32_t)u);
}
static kvrt_status c_detokenize_id(int64_t s, uint64_t u) {
    char b[64];
    size_t w;
    int32_t t[2];
    (void)u;
    t[0] = 100;
    t[1] = (int32_t)s;
    return kvrt_model_detokenize(b, sizeof b, &w, G.model, t, 2, 0);
}
static kvrt_status c_token_is_eog(int64_t s, uint64_t u) {
    int e;
    (void)u;
    return kvrt_model_token_is_eog(&e, G.model, (int32_t)s);
}
static kvrt_status c_chat_apply(int64_t s, uint64_t u) {
    char b[64];
    size_t w;
    kvrt_chat_message m;
    m.role = "user";
    m.content = "hi";
    if (s == 0) return kvrt_model_chat_apply(b, sizeof b, &w, G.model, NULL, (size_t)u, 1);
    return kvrt_model_chat_apply(NULL, (size_t)u, &w, G.model, &m, 1, 1);
}
/* One context config field (u selects it) set to s. */
static kvrt_status c_context_field(int64_t s, uint64_t u) {
    kvrt_context *c = NULL;
    kvrt_context_config cc;
    kvrt_status st;
    kvrt_context_config_init(&cc, sizeof cc);
    cc.n_ctx = 64;
    switch (u) {
        case 0: cc.n_ctx = (uint32_t)s; break;
        case 1: cc.n_seq_max = (uint32_t)s; break;
        case 2: cc.n_batch = (uint32_t)s; break;
        case 3: cc.n_threads = (int32_t)s; break;
        case 4: cc.kv_dtype = (int32_t)s; break;
        case 5: cc.block_tokens = (uint32_t)s; break;
        case 6: cc.prefix_caching = (int32_t)s; break;
        case 7: cc.reserved0 = (int32_t)s; break;
        case 8: cc.cache_bytes = UINT64_MAX; break;
        case 10: cc.ced_prefill_mode = (int32_t)s; break;
        case 11: cc.ced_resume = (int32_t)s; break;
        case 12: cc.bank_dtype = (int32_t)s; break;
        default: cc.n_seq_max = (uint32_t)s; cc.n_ctx = 0; break;
    }
    st = kvrt_context_create(&c, G.model, &cc);
    if (st == KVRT_OK && kvrt_context_prefill(NULL, c, 0, G.prompt, G.n_prompt) != KVRT_OK)
        st = KVRT_ERR_INTERNAL; /* an accepted config must give a working context */
    kvrt_context_destroy(c);
    return st;
}
static kvrt_status c_prefill_seq(int64_t s, uint64_t u) {
    (void)u;
    return kvrt_context_prefill(NULL, G.ctx, (int32_t)s, G.prompt, G.n_prompt);
}
static kvrt_status c_prefill_n(int64_t s, uint64_t u) {
    (void)s;
    return kvrt_context_prefill(NULL, G.ctx, 1, G.prompt, (size_t)u);
}
static kvrt_status c_prefill_token(int64_t s, uint64_t u) {
    int32_t t[64];
    (void)u;
    memcpy(t, G.prompt, G.n_prompt * sizeof t[0]);
    t[G.n_prompt - 1] = (int32_t)s;
    return kvrt_context_prefill(NULL, G.ctx, 1, t, G.n_prompt);
}
/* prefill_batch: s = 0 n_seqs u; 1 n_tokens[0] u; 2 seq_ids[0] = (int32_t)u. */
static kvrt_status c_prefill_batch(int64_t s, uint64_t u) {
    int32_t ids[1] = {1};
    const int32_t *toks[1];
    size_t lens[1];
    size_t n = 1;
    toks[0] = G.prompt;
    lens[0] = G.n_prompt;
    if (s == 0) n = (size_t)u; /* only 0 is passed: larger n_seqs would read past these arrays */
    else if (s == 1) lens[0] = (size_t)u;
    else ids[0] = (int32_t)(int64_t)u;
    return kvrt_context_prefill_batch(NULL, G.ctx, ids, toks, lens, n);
}
/* decode: s = 0 n = u (0 only); 1 seq id u; 2 token u. */
static kvrt_status c_decode(int64_t s, uint64_t u) {
    int32_t id = 0, t = 100;
    size_t n = 1;
    if (s == 0) n = (size_t)u;
    else if (s == 1) id = (int32_t)(int64_t)u;
    else t = (int32_t)(int64_t)u;
    return kvrt_context_decode(G.ctx, &id, &t, n);
}
static kvrt_status c_get_logits_seq(int64_t s, uint64_t u) {
    size_t w;
    (void)u;
    return kvrt_context_get_logits(logits_buf, G.n_vocab, &w, G.ctx, (int32_t)s);
}
static kvrt_status c_get_logits_capacity(int64_t s, uint64_t u) {
    size_t w = 0;
    kvrt_status st = kvrt_context_get_logits(s ? logits_buf : NULL, (size_t)u, &w, G.ctx, 0);
    if ((st == KVRT_OK || st == KVRT_ERR_BUFFER_TOO_SMALL) && w != G.n_vocab) return KVRT_ERR_INTERNAL;
    return st;
}
static kvrt_status c_seq_length(int64_t s, uint64_t u) {
    size_t n;
    (void)u;
    return kvrt_context_seq_length(&n, G.ctx, (int32_t)s);
}
static kvrt_status c_seq_kv_bytes(int64_t s, uint64_t u) {
    uint64_t n;
    (void)u;
    return kvrt_context_seq_kv_bytes(&n, G.ctx, (int32_t)s);
}
static kvrt_status c_ctx_seq_release(int64_t s, uint64_t u) {
    (void)u;
    return kvrt_context_seq_release(G.ctx, (int32_t)s);
}
static kvrt_status c_sampler_top_k(int64_t s, uint64_t u) {
    kvrt_sampler *sm = NULL;
    kvrt_sampler_config c;
    kvrt_status st;
    (void)u;
    kvrt_sampler_config_init(&c, sizeof c);
    c.temperature = 1.0f;
    c.top_k = (int32_t)s;
    st = kvrt_sampler_create(&sm, &c);
    kvrt_sampler_destroy(sm);
    return st;
}
static kvrt_status c_sample_n(int64_t s, uint64_t u) {
    float l[3] = {0.0f, 1.0f, 2.0f};
    int32_t t;
    (void)s;
    return kvrt_sampler_sample(&t, G.sampler, l, (size_t)u);
}
/* generate: s = 0 seq id u; 1 n_prompt u; 2 n_stop_strings u with NULL stop_strings. */
static kvrt_status c_generate(int64_t s, uint64_t u) {
    kvrt_generate_config g;
    int32_t seq = 1;
    size_t n = G.n_prompt;
    kvrt_generate_config_init(&g, sizeof g);
    g.max_tokens = 1;
    if (s == 0) seq = (int32_t)(int64_t)u;
    else if (s == 1) n = (size_t)u;
    else g.n_stop_strings = (size_t)u;
    return kvrt_context_generate(NULL, G.ctx, seq, G.prompt, n, &g);
}

#define I32MAX ((int64_t)INT32_MAX)
#define I32MIN ((int64_t)INT32_MIN)
#define BIG31 ((uint64_t)INT32_MAX + 1u)
#define INV KVRT_ERR_INVALID_ARGUMENT
#define OOR KVRT_ERR_OUT_OF_RANGE
#define OVF KVRT_ERR_OVERFLOW

static const struct {
    const char *name;
    count_fn call;
    int64_t s;
    uint64_t u;
    kvrt_status want;
    const char *needle; /* the message must name it (NULL: any message) */
} count_cases[] = {
    /* cache.h */
    {"kvrt_cache_layout_create block_tokens 0", c_layout_create, 0, 0, INV, "block_tokens"},
    {"kvrt_cache_layout_create block_tokens -1", c_layout_create, -1, 0, INV, "block_tokens"},
    {"kvrt_cache_layout_create block_tokens 65537", c_layout_create, 65537, 0, INV, "block_tokens"},
    {"kvrt_cache_layout_create block_tokens INT32_MAX", c_layout_create, I32MAX, 0, INV, "block_tokens"},
    {"kvrt_cache_layout_create block_tokens INT32_MIN", c_layout_create, I32MIN, 0, INV, "block_tokens"},
    {"kvrt_cache_layout_add_layers count 0", c_add_layers_count, 0, 0, INV, "count"},
    {"kvrt_cache_layout_add_layers count -1", c_add_layers_count, -1, 0, INV, "count"},
    {"kvrt_cache_layout_add_layers count INT32_MIN", c_add_layers_count, I32MIN, 0, INV, "count"},
    {"kvrt_cache_layout_add_layers count INT32_MAX", c_add_layers_count, I32MAX, 0, OVF, "layers"},
    {"layer n_kv_heads 0", c_layer_field, 0, 0, INV, "n_kv_heads"},
    {"layer n_kv_heads -1", c_layer_field, -1, 0, INV, "n_kv_heads"},
    {"layer n_kv_heads INT32_MIN", c_layer_field, I32MIN, 0, INV, "n_kv_heads"},
    {"layer n_kv_heads INT32_MAX", c_layer_field, I32MAX, 0, OVF, NULL},
    {"layer head_dim 0", c_layer_field, 0, 1, INV, "head_dim"},
    {"layer head_dim -1", c_layer_field, -1, 1, INV, "head_dim"},
    {"layer head_dim INT32_MAX", c_layer_field, I32MAX, 1, OVF, NULL},
    {"layer window 0", c_layer_field, 0, 2, INV, "window"},
    {"layer window -1", c_layer_field, -1, 2, INV, "window"},
    {"layer window INT32_MIN", c_layer_field, I32MIN, 2, INV, "window"},
    {"layer ratio 0", c_layer_field, 0, 3, INV, "ratio"},
    {"layer ratio -1", c_layer_field, -1, 3, INV, "ratio"},
    {"layer ratio INT32_MAX", c_layer_field, I32MAX, 3, INV, "ratio"},
    {"layer source -1", c_layer_field, -1, 4, INV, "source"},
    {"layer source INT32_MAX", c_layer_field, I32MAX, 4, INV, "source"},
    {"layer kind -1", c_layer_field, -1, 5, INV, "kind"},
    {"layer kind INT32_MAX", c_layer_field, I32MAX, 5, INV, "kind"},
    {"layer dtype -1", c_layer_field, -1, 6, INV, "dtype"},
    {"layer dtype INT32_MAX", c_layer_field, I32MAX, 6, INV, "dtype"},
    {"layer shared_kv 2", c_layer_field, 2, 7, INV, "shared_kv"},
    {"layer shared_kv -1", c_layer_field, -1, 7, INV, "shared_kv"},
    {"kvrt_cache_create budget_bytes 0", c_cache_budget, 0, 0, INV, "budget"},
    {"kvrt_cache_create budget_bytes UINT64_MAX", c_cache_budget, 0, UINT64_MAX, KVRT_OK, NULL},
    {"kvrt_cache_create large_pages 2", c_cache_flags, 2, 0, INV, "large_pages"},
    {"kvrt_cache_create large_pages -1", c_cache_flags, -1, 0, INV, "large_pages"},
    {"kvrt_cache_create reserved0 1", c_cache_flags, 1, 1, INV, "reserved0"},
    {"kvrt_cache_seq_truncate pos -1", c_truncate, -1, 0, OOR, NULL},
    {"kvrt_cache_seq_truncate pos length+1", c_truncate, 21, 0, OOR, NULL},
    {"kvrt_cache_seq_truncate pos INT64_MAX", c_truncate, INT64_MAX, 0, OOR, NULL},
    {"kvrt_cache_seq_truncate pos INT64_MIN", c_truncate, INT64_MIN, 0, OOR, NULL},
    {"kvrt_cache_seq_append n SIZE_MAX", c_append, 0, SIZE_MAX, OVF, "n is"},
    {"kvrt_cache_seq_append n 2^31", c_append, 0, BIG31, OVF, "n is"},
    {"kvrt_cache_seq_append n INT32_MAX (length 20)", c_append, 0, (uint64_t)INT32_MAX, OVF, "2^31-1"},
    {"kvrt_cache_seq_append n INT32_MAX-20 (budget 1 MiB)", c_append, 0, (uint64_t)INT32_MAX - 20u, KVRT_ERR_CACHE_FULL,
     "budget"},
    {"kvrt_cache_seq_append NULL tokens, n SIZE_MAX", c_append, 1, SIZE_MAX, INV, "tokens"},
    {"kvrt_cache_seq_append NULL tokens, n 1", c_append, 1, 1, INV, "tokens"},
    {"kvrt_cache_seq_mark_computed -1", c_mark_computed, -1, 0, OOR, NULL},
    {"kvrt_cache_seq_mark_computed length+1", c_mark_computed, 21, 0, OOR, NULL},
    {"kvrt_cache_seq_mark_computed INT64_MAX", c_mark_computed, INT64_MAX, 0, OOR, NULL},
    {"kvrt_cache_seq_mark_computed INT64_MIN", c_mark_computed, INT64_MIN, 0, OOR, NULL},
    {"kvrt_cache_seq_match_prefix n SIZE_MAX", c_match_prefix, 0, SIZE_MAX, OOR, NULL},
    {"kvrt_cache_seq_match_prefix n 2^31", c_match_prefix, 0, BIG31, OOR, NULL},
    {"kvrt_cache_lookup_prefix n SIZE_MAX", c_lookup_prefix, 0, SIZE_MAX, OOR, NULL},
    {"kvrt_cache_lookup_prefix n 2^31", c_lookup_prefix, 0, BIG31, OOR, NULL},
    {"kvrt_cache_pin_prefix n SIZE_MAX", c_pin_prefix, 0, SIZE_MAX, OOR, NULL},
    {"kvrt_cache_pin_prefix n 2^31", c_pin_prefix, 0, BIG31, OOR, NULL},
    {"kvrt_cache_pin_prefix n 0", c_pin_prefix, 0, 0, KVRT_ERR_NOT_FOUND, NULL},
    {"kvrt_cache_layer_info_get layer -1", c_layer_info, -1, 0, OOR, "layer"},
    {"kvrt_cache_layer_info_get layer n_layers", c_layer_info, 2, 0, OOR, "layer"},
    {"kvrt_cache_layer_info_get layer INT32_MAX", c_layer_info, I32MAX, 0, OOR, "layer"},
    {"kvrt_cache_layer_info_get layer INT32_MIN", c_layer_info, I32MIN, 0, OOR, "layer"},
    {"kvrt_cache_write_rows layer -1", c_write_rows, -1, 0, OOR, "layer"},
    {"kvrt_cache_write_rows layer INT32_MAX", c_write_rows, I32MAX, 0, OOR, "layer"},
    {"kvrt_cache_write_rows first_row -1", c_write_rows, -1, 1, OOR, NULL},
    {"kvrt_cache_write_rows first_row INT64_MAX", c_write_rows, INT64_MAX, 1, OOR, NULL},
    {"kvrt_cache_write_rows first_row INT64_MIN", c_write_rows, INT64_MIN, 1, OOR, NULL},
    {"kvrt_cache_write_rows n_rows -1", c_write_rows, -1, 2, OOR, NULL},
    {"kvrt_cache_write_rows n_rows INT32_MAX", c_write_rows, I32MAX, 2, OOR, NULL},
    {"kvrt_cache_write_rows n_rows INT64_MAX", c_write_rows, INT64_MAX, 2, OOR, NULL},
    {"kvrt_cache_write_rows rows INT64_MAX + INT64_MAX", c_write_rows, INT64_MAX, 3, OOR, NULL},
    {"kvrt_cache_read_rows layer -1", c_read_rows, -1, 0, OOR, "layer"},
    {"kvrt_cache_read_rows layer INT32_MAX", c_read_rows, I32MAX, 0, OOR, "layer"},
    {"kvrt_cache_read_rows first_row -1", c_read_rows, -1, 1, OOR, NULL},
    {"kvrt_cache_read_rows first_row INT64_MAX", c_read_rows, INT64_MAX, 1, OOR, NULL},
    {"kvrt_cache_read_rows n_rows -1", c_read_rows, -1, 2, OOR, NULL},
    {"kvrt_cache_read_rows n_rows INT32_MAX", c_read_rows, I32MAX, 2, OOR, NULL},
    {"kvrt_cache_read_rows n_rows INT64_MAX", c_read_rows, INT64_MAX, 2, OOR, NULL},
    {"kvrt_cache_read_rows rows INT64_MAX + INT64_MAX", c_read_rows, INT64_MAX, 3, OOR, NULL},
    {"kvrt_cache_block_table layer -1", c_block_table_layer, -1, 0, OOR, "layer"},
    {"kvrt_cache_block_table layer INT32_MAX", c_block_table_layer, I32MAX, 0, OOR, "layer"},
    {"kvrt_cache_block_table NULL dst, capacity 0 (a size query)", c_block_table_capacity, 0, 0, KVRT_OK, NULL},
    {"kvrt_cache_block_table NULL dst, capacity SIZE_MAX", c_block_table_capacity, 0, SIZE_MAX, INV, "dst"},
    /* model.h */
    {"kvrt_model_load n_threads -1", c_model_threads, -1, 0, INV, "n_threads"},
    {"kvrt_model_load n_threads INT32_MIN", c_model_threads, I32MIN, 0, INV, "n_threads"},
    {"kvrt_model_load n_threads 1025", c_model_threads, 1025, 0, INV, "n_threads"},
    {"kvrt_model_load n_threads 100000", c_model_threads, 100000, 0, INV, "n_threads"},
    {"kvrt_model_load n_threads INT32_MAX", c_model_threads, I32MAX, 0, INV, "n_threads"},
    {"kvrt_model_load reserved0 1", c_model_threads, 1, 1, INV, "reserved0"},
    {"kvrt_model_load reserved0 -1", c_model_threads, -1, 1, INV, "reserved0"},
    {"kvrt_model_load missing file", c_model_threads, 0, 0, KVRT_ERR_NOT_FOUND, "kvrt-misuse.gguf"},
    {"kvrt_model_meta_key index SIZE_MAX", c_meta_key, 0, SIZE_MAX, OOR, NULL},
    {"kvrt_model_meta_key index 2^31", c_meta_key, 0, BIG31, OOR, NULL},
    {"kvrt_model_meta_string NULL dst, capacity SIZE_MAX", c_meta_string_capacity, 0, SIZE_MAX, INV, "dst"},
    {"kvrt_model_tensor_info index SIZE_MAX", c_tensor_info, 0, SIZE_MAX, OOR, NULL},
    {"kvrt_model_tokenize NULL text, text_len SIZE_MAX", c_tokenize, 0, SIZE_MAX, INV, "text"},
    {"kvrt_model_tokenize NULL dst, capacity SIZE_MAX", c_tokenize, 1, SIZE_MAX, INV, "dst"},
    {"kvrt_model_tokenize flags UINT32_MAX", c_tokenize, 2, UINT32_MAX, INV, "flags"},
    {"kvrt_model_detokenize NULL tokens, n SIZE_MAX", c_detokenize, 0, SIZE_MAX, INV, "tokens"},
    {"kvrt_model_detokenize NULL dst, capacity SIZE_MAX", c_detokenize, 1, SIZE_MAX, INV, "dst"},
    {"kvrt_model_detokenize flags UINT32_MAX", c_detokenize, 2, UINT32_MAX, INV, "flags"},
    {"kvrt_model_detokenize token -1", c_detokenize_id, -1, 0, OOR, NULL},
    {"kvrt_model_detokenize token INT32_MIN", c_detokenize_id, I32MIN, 0, OOR, NULL},
    {"kvrt_model_detokenize token INT32_MAX", c_detokenize_id, I32MAX, 0, OOR, NULL},
    {"kvrt_model_token_is_eog -1", c_token_is_eog, -1, 0, OOR, NULL},
    {"kvrt_model_token_is_eog INT32_MIN", c_token_is_eog, I32MIN, 0, OOR, NULL},
    {"kvrt_model_token_is_eog INT32_MAX", c_token_is_eog, I32MAX, 0, OOR, NULL},
    {"kvrt_model_chat_apply NULL messages, n SIZE_MAX", c_chat_apply, 0, SIZE_MAX, INV, "messages"},
    {"kvrt_model_chat_apply NULL dst, capacity SIZE_MAX", c_chat_apply, 1, SIZE_MAX, INV, "dst"},
    /* context.h */
    {"kvrt_context_create n_ctx UINT32_MAX", c_context_field, (int64_t)UINT32_MAX, 0, INV, "n_ctx"},
    {"kvrt_context_create n_seq_max 0", c_context_field, 0, 1, INV, "n_seq_max"},
    {"kvrt_context_create n_seq_max 4097", c_context_field, 4097, 1, INV, "n_seq_max"},
    {"kvrt_context_create n_seq_max UINT32_MAX", c_context_field, (int64_t)UINT32_MAX, 1, INV, "n_seq_max"},
    {"kvrt_context_create n_batch 65537", c_context_field, 65537, 2, INV, "n_batch"},
    {"kvrt_context_create n_batch UINT32_MAX", c_context_field, (int64_t)UINT32_MAX, 2, INV, "n_batch"},
    {"kvrt_context_create n_threads -1", c_context_field, -1, 3, INV, "n_threads"},
    {"kvrt_context_create n_threads INT32_MIN", c_context_field, I32MIN, 3, INV, "n_threads"},
    {"kvrt_context_create n_threads 1025", c_context_field, 1025, 3, INV, "n_threads"},
    {"kvrt_context_create n_threads 100000", c_context_field, 100000, 3, INV, "n_threads"},
    {"kvrt_context_create n_threads INT32_MAX", c_context_field, I32MAX, 3, INV, "n_threads"},
    {"kvrt_context_create kv_dtype -1", c_context_field, -1, 4, INV, "kv_dtype"},
    {"kvrt_context_create kv_dtype 5 (fp4: banks only)", c_context_field, 5, 4, INV, "kv_dtype"},
    {"kvrt_context_create kv_dtype 6", c_context_field, 6, 4, INV, "kv_dtype"},
    {"kvrt_context_create kv_dtype INT32_MAX", c_context_field, I32MAX, 4, INV, "kv_dtype"},
    {"kvrt_context_create bank_dtype -2", c_context_field, -2, 12, INV, "bank_dtype"},
    {"kvrt_context_create bank_dtype 3 (int8: windows only)", c_context_field, 3, 12, INV, "bank_dtype"},
    {"kvrt_context_create bank_dtype 6", c_context_field, 6, 12, INV, "bank_dtype"},
    {"kvrt_context_create block_tokens 4097", c_context_field, 4097, 5, INV, "block_tokens"},
    {"kvrt_context_create block_tokens UINT32_MAX", c_context_field, (int64_t)UINT32_MAX, 5, INV, "block_tokens"},
    {"kvrt_context_create prefix_caching 2", c_context_field, 2, 6, INV, "prefix_caching"},
    {"kvrt_context_create prefix_caching -1", c_context_field, -1, 6, INV, "prefix_caching"},
    {"kvrt_context_create reserved0 1", c_context_field, 1, 7, INV, "reserved0"},
    {"kvrt_context_create cache_bytes UINT64_MAX", c_context_field, -1, 8, KVRT_OK, NULL},
    {"kvrt_context_create n_seq_max 4096, n_ctx 0 (the model's)", c_context_field, 4096, 9, KVRT_OK, NULL},
    {"kvrt_context_create ced_prefill_mode -1", c_context_field, -1, 10, INV, "ced_prefill_mode"},
    {"kvrt_context_create ced_prefill_mode INT32_MAX", c_context_field, I32MAX, 10, INV, "ced_prefill_mode"},
    {"kvrt_context_create ced_resume -1", c_context_field, -1, 11, INV, "ced_resume"},
    {"kvrt_context_create ced_resume INT32_MAX", c_context_field, I32MAX, 11, INV, "ced_resume"},
    {"kvrt_context_create n_batch 65536 (the largest)", c_context_field, 65536, 2, KVRT_OK, NULL},
    {"kvrt_context_create block_tokens 4096 (the largest)", c_context_field, 4096, 5, KVRT_OK, NULL},
    {"kvrt_context_prefill seq -1", c_prefill_seq, -1, 0, OOR, NULL},
    {"kvrt_context_prefill seq n_seq_max", c_prefill_seq, 2, 0, OOR, NULL},
    {"kvrt_context_prefill seq INT32_MAX", c_prefill_seq, I32MAX, 0, OOR, NULL},
    {"kvrt_context_prefill seq INT32_MIN", c_prefill_seq, I32MIN, 0, OOR, NULL},
    {"kvrt_context_prefill n_tokens 0", c_prefill_n, 0, 0, INV, "n_tokens"},
    {"kvrt_context_prefill n_tokens n_ctx+1", c_prefill_n, 0, 257, OOR, "n_ctx"},
    {"kvrt_context_prefill n_tokens INT32_MAX", c_prefill_n, 0, (uint64_t)INT32_MAX, OOR, "n_ctx"},
    {"kvrt_context_prefill n_tokens SIZE_MAX", c_prefill_n, 0, SIZE_MAX, OOR, "n_ctx"},
    {"kvrt_context_prefill token -1", c_prefill_token, -1, 0, OOR, NULL},
    {"kvrt_context_prefill token INT32_MIN", c_prefill_token, I32MIN, 0, OOR, NULL},
    {"kvrt_context_prefill token INT32_MAX", c_prefill_token, I32MAX, 0, OOR, NULL},
    {"kvrt_context_prefill_batch n_seqs 0", c_prefill_batch, 0, 0, INV, "n_seqs"},
    {"kvrt_context_prefill_batch n_tokens[0] 0", c_prefill_batch, 1, 0, INV, "n_tokens"},
    {"kvrt_context_prefill_batch n_tokens[0] SIZE_MAX", c_prefill_batch, 1, SIZE_MAX, OOR, "n_ctx"},
    {"kvrt_context_prefill_batch n_tokens[0] INT32_MAX", c_prefill_batch, 1, (uint64_t)INT32_MAX, OOR, "n_ctx"},
    {"kvrt_context_prefill_batch seq_ids[0] -1", c_prefill_batch, 2, (uint64_t)-1, OOR, NULL},
    {"kvrt_context_prefill_batch seq_ids[0] INT32_MAX", c_prefill_batch, 2, (uint64_t)INT32_MAX, OOR, NULL},
    {"kvrt_context_decode n 0", c_decode, 0, 0, INV, NULL},
    {"kvrt_context_decode seq -1", c_decode, 1, (uint64_t)-1, OOR, NULL},
    {"kvrt_context_decode seq n_seq_max", c_decode, 1, 2, OOR, NULL},
    {"kvrt_context_decode seq INT32_MAX", c_decode, 1, (uint64_t)INT32_MAX, OOR, NULL},
    {"kvrt_context_decode token -1", c_decode, 2, (uint64_t)-1, OOR, NULL},
    {"kvrt_context_decode token INT32_MAX", c_decode, 2, (uint64_t)INT32_MAX, OOR, NULL},
    {"kvrt_context_get_logits seq -1", c_get_logits_seq, -1, 0, OOR, NULL},
    {"kvrt_context_get_logits seq INT32_MAX", c_get_logits_seq, I32MAX, 0, OOR, NULL},
    {"kvrt_context_get_logits NULL dst, capacity 0 (size query)", c_get_logits_capacity, 0, 0, KVRT_OK, NULL},
    {"kvrt_context_get_logits NULL dst, capacity SIZE_MAX", c_get_logits_capacity, 0, SIZE_MAX, INV, "dst"},
    {"kvrt_context_get_logits capacity 1", c_get_logits_capacity, 1, 1, KVRT_ERR_BUFFER_TOO_SMALL, NULL},
    {"kvrt_context_seq_length seq -1", c_seq_length, -1, 0, OOR, NULL},
    {"kvrt_context_seq_length seq INT32_MAX", c_seq_length, I32MAX, 0, OOR, NULL},
    {"kvrt_context_seq_length seq INT32_MIN", c_seq_length, I32MIN, 0, OOR, NULL},
    {"kvrt_context_seq_kv_bytes seq -1", c_seq_kv_bytes, -1, 0, OOR, NULL},
    {"kvrt_context_seq_kv_bytes seq INT32_MAX", c_seq_kv_bytes, I32MAX, 0, OOR, NULL},
    {"kvrt_context_seq_release seq -1", c_ctx_seq_release, -1, 0, OOR, NULL},
    {"kvrt_context_seq_release seq INT32_MAX", c_ctx_seq_release, I32MAX, 0, OOR, NULL},
    {"kvrt_sampler_create top_k -1", c_sampler_top_k, -1, 0, INV, "top_k"},
    {"kvrt_sampler_create top_k INT32_MIN", c_sampler_top_k, I32MIN, 0, INV, "top_k"},
    {"kvrt_sampler_create top_k INT32_MAX", c_sampler_top_k, I32MAX, 0, KVRT_OK, NULL},
    {"kvrt_sampler_sample n_logits 0", c_sample_n, 0, 0, INV, "n_logits"},
    {"kvrt_sampler_sample n_logits 2^31", c_sample_n, 0, BIG31, OVF, "n_logits"},
    {"kvrt_sampler_sample n_logits SIZE_MAX", c_sample_n, 0, SIZE_MAX, OVF, "n_logits"},
    {"kvrt_context_generate seq -1", c_generate, 0, (uint64_t)-1, OOR, NULL},
    {"kvrt_context_generate seq INT32_MAX", c_generate, 0, (uint64_t)INT32_MAX, OOR, NULL},
    {"kvrt_context_generate n_prompt 0", c_generate, 1, 0, INV, "n_prompt"},
    {"kvrt_context_generate n_prompt INT32_MAX", c_generate, 1, (uint64_t)INT32_MAX, OOR, "n_ctx"},
    {"kvrt_context_generate n_prompt SIZE_MAX", c_generate, 1, SIZE_MAX, OOR, "n_ctx"},
    {"kvrt_context_generate NULL stop_strings, n SIZE_MAX", c_generate, 2, SIZE_MAX, INV, "stop_strings"},
};

static void test_counts(void) {
    size_t i;
    for (i = 0; i < sizeof count_cases / sizeof count_cases[0]; ++i) {
        kvrt_clear_error();
        check(count_cases[i].name, "count", count_cases[i].call(count_cases[i].s, count_cases[i].u),
              count_cases[i].want, count_cases[i].needle);
    }
}

/* ---- 4. NULL pointers ----------------------------------------------------------- */
/* Every required pointer argument (outputs, inputs) NULL, all else valid:
 * KVRT_ERR_INVALID_ARGUMENT. */

static kvrt_status n_layout_create(void) { return kvrt_cache_layout_create(NULL, 16); }
static kvrt_status n_layout_n_layers(void) { return kvrt_cache_layout_n_layers(NULL, G.layout); }
static kvrt_status n_add_layers(void) { return kvrt_cache_layout_add_layers(NULL, G.layout, NULL, 1); }
static kvrt_status n_cache_create(void) { return kvrt_cache_create(NULL, G.layout, NULL); }
static kvrt_status n_seq_create(void) { return kvrt_cache_seq_create(NULL, G.cache, NULL); }
static kvrt_status n_keys_salt(void) {
    uint64_t id;
    kvrt_cache_keys k;
    kvrt_cache_keys_init(&k, sizeof k);
    k.salt_len = 5;
    return kvrt_cache_seq_create(&id, G.cache, &k);
}
static kvrt_status n_seq_fork(void) { return kvrt_cache_seq_fork(NULL, G.cache, G.seq); }
static kvrt_status n_match_prefix_out(void) {
    uint64_t id = 0;
    int32_t t[2] = {1, 2};
    kvrt_status st;
    kvrt_cache_seq_create(&id, G.cache, NULL);
    st = kvrt_cache_seq_match_prefix(NULL, G.cache, id, t, 2);
    kvrt_cache_seq_release(G.cache, id);
    return st;
}
static kvrt_status n_match_prefix_tokens(void) {
    uint64_t id = 0;
    int64_t hit;
    kvrt_status st;
    kvrt_cache_seq_create(&id, G.cache, NULL);
    st = kvrt_cache_seq_match_prefix(&hit, G.cache, id, NULL, 2);
    kvrt_cache_seq_release(G.cache, id);
    return st;
}
static kvrt_status n_seq_info(void) { return kvrt_cache_seq_info_get(NULL, G.cache, G.seq); }
static kvrt_status n_lookup_out(void) {
    int32_t t[2] = {1, 2};
    return kvrt_cache_lookup_prefix(NULL, G.cache, NULL, t, 2);
}
static kvrt_status n_lookup_tokens(void) {
    int64_t hit;
    return kvrt_cache_lookup_prefix(&hit, G.cache, NULL, NULL, 2);
}
static kvrt_status n_pin_out(void) {
    int32_t t[2] = {1, 2};
    return kvrt_cache_pin_prefix(NULL, NULL, G.cache, NULL, t, 2);
}
static kvrt_status n_pin_tokens(void) {
    uint64_t pin;
    return kvrt_cache_pin_prefix(&pin, NULL, G.cache, NULL, NULL, 2);
}
static kvrt_status n_layer_info(void) { return kvrt_cache_layer_info_get(NULL, G.cache, 0); }
static kvrt_status n_write_rows_k(void) {
    float v[8] = {0};
    return kvrt_cache_write_rows(G.cache, G.seq, 0, 19, 1, NULL, v);
}
static kvrt_status n_write_rows_v(void) {
    float k[8] = {0};
    return kvrt_cache_write_rows(G.cache, G.seq, 0, 19, 1, k, NULL);
}
static kvrt_status n_read_rows_k(void) { return kvrt_cache_read_rows(NULL, NULL, G.cache, G.seq, 0, 0, 1); }
static kvrt_status n_block_table_written(void) {
    const void *t[8];
    return kvrt_cache_block_table(t, 8, NULL, G.cache, G.seq, 0);
}
static kvrt_status n_save_prefixes(void) { return kvrt_cache_save_prefixes(NULL, G.cache, NULL, 0, 0); }
static kvrt_status n_load_prefixes(void) { return kvrt_cache_load_prefixes(NULL, G.cache, NULL, 0, 0); }
static kvrt_status n_seq_save(void) { return kvrt_cache_seq_save(G.cache, G.seq, NULL); }
static kvrt_status n_seq_load_out(void) { return kvrt_cache_seq_load(NULL, G.cache, G.tmp_path, 0, 0); }
static kvrt_status n_seq_load_path(void) {
    uint64_t id;
    return kvrt_cache_seq_load(&id, G.cache, NULL, 0, 0);
}
static kvrt_status n_stats(void) { return kvrt_cache_stats_get(NULL, G.cache); }
static kvrt_status n_model_load_out(void) { return kvrt_model_load(NULL, "/nonexistent/kvrt-misuse.gguf", NULL); }
static kvrt_status n_model_load_path(void) {
    kvrt_model *m = NULL;
    return kvrt_model_load(&m, NULL, NULL);
}
static kvrt_status n_get_info(void) { return kvrt_model_get_info(NULL, G.model); }
static kvrt_status n_meta_string_written(void) {
    char b[64];
    return kvrt_model_meta_string(b, sizeof b, NULL, G.model, "general.name");
}
static kvrt_status n_meta_string_key(void) {
    char b[64];
    size_t w;
    return kvrt_model_meta_string(b, sizeof b, &w, G.model, NULL);
}
static kvrt_status n_meta_count(void) { return kvrt_model_meta_count(NULL, G.model); }
static kvrt_status n_meta_key(void) {
    char b[64];
    return kvrt_model_meta_key(b, sizeof b, NULL, G.model, 0);
}
static kvrt_status n_tensor_count(void) { return kvrt_model_tensor_count(NULL, G.model); }
static kvrt_status n_tensor_info(void) {
    char b[128];
    return kvrt_model_tensor_info(b, sizeof b, NULL, NULL, NULL, NULL, G.model, 0);
}
static kvrt_status n_tokenize(void) {
    int32_t t[16];
    return kvrt_model_tokenize(t, 16, NULL, G.model, "hi", 2, 0);
}
static kvrt_status n_detokenize(void) {
    char b[64];
    int32_t t[1] = {100};
    return kvrt_model_detokenize(b, sizeof b, NULL, G.model, t, 1, 0);
}
static kvrt_status n_token_is_eog(void) { return kvrt_model_token_is_eog(NULL, G.model, 0); }
static kvrt_status n_chat_written(void) {
    char b[256];
    kvrt_chat_message m;
    m.role = "user";
    m.content = "hi";
    return kvrt_model_chat_apply(b, sizeof b, NULL, G.model, &m, 1, 1);
}
static kvrt_status n_chat_role(void) {
    char b[256];
    size_t w;
    kvrt_chat_message m;
    m.role = NULL;
    m.content = "hi";
    return kvrt_model_chat_apply(b, sizeof b, &w, G.model, &m, 1, 1);
}
static kvrt_status n_chat_content(void) {
    char b[256];
    size_t w;
    kvrt_chat_message m;
    m.role = "user";
    m.content = NULL;
    return kvrt_model_chat_apply(b, sizeof b, &w, G.model, &m, 1, 1);
}
static kvrt_status n_context_create(void) { return kvrt_context_create(NULL, G.model, NULL); }
static kvrt_status n_get_cache(void) { return kvrt_context_get_cache(NULL, G.ctx); }
static kvrt_status n_prefill(void) { return kvrt_context_prefill(NULL, G.ctx, 1, NULL, 4); }
static kvrt_status n_prefill_batch(int which) {
    int32_t ids[1] = {1};
    const int32_t *toks[1];
    size_t lens[1];
    toks[0] = which == 3 ? NULL : G.prompt;
    lens[0] = G.n_prompt;
    return kvrt_context_prefill_batch(NULL, G.ctx, which == 0 ? NULL : ids, which == 1 ? NULL : toks,
                                      which == 2 ? NULL : lens, 1);
}
static kvrt_status n_prefill_batch_ids(void) { return n_prefill_batch(0); }
static kvrt_status n_prefill_batch_tokens(void) { return n_prefill_batch(1); }
static kvrt_status n_prefill_batch_lens(void) { return n_prefill_batch(2); }
static kvrt_status n_prefill_batch_prompt(void) { return n_prefill_batch(3); }
static kvrt_status n_decode_ids(void) {
    int32_t t = 100;
    return kvrt_context_decode(G.ctx, NULL, &t, 1);
}
static kvrt_status n_decode_tokens(void) {
    int32_t id = 0;
    return kvrt_context_decode(G.ctx, &id, NULL, 1);
}
static kvrt_status n_get_logits(void) { return kvrt_context_get_logits(logits_buf, G.n_vocab, NULL, G.ctx, 0); }
static kvrt_status n_seq_length(void) { return kvrt_context_seq_length(NULL, G.ctx, 0); }
static kvrt_status n_seq_kv_bytes(void) { return kvrt_context_seq_kv_bytes(NULL, G.ctx, 0); }
static kvrt_status n_sampler_create_out(void) {
    kvrt_sampler_config c;
    kvrt_sampler_config_init(&c, sizeof c);
    return kvrt_sampler_create(NULL, &c);
}
static kvrt_status n_sample_out(void) {
    float l[2] = {0.0f, 1.0f};
    return kvrt_sampler_sample(NULL, G.sampler, l, 2);
}
static kvrt_status n_sample_logits(void) {
    int32_t t;
    return kvrt_sampler_sample(&t, G.sampler, NULL, 2);
}
static kvrt_status n_generate_prompt(void) { return kvrt_context_generate(NULL, G.ctx, 1, NULL, 4, NULL); }
static kvrt_status n_generate_stop_string(void) {
    kvrt_generate_config g;
    const char *stops[1];
    stops[0] = NULL;
    kvrt_generate_config_init(&g, sizeof g);
    g.max_tokens = 1;
    g.stop_strings = stops;
    g.n_stop_strings = 1;
    return kvrt_context_generate(NULL, G.ctx, 1, G.prompt, G.n_prompt, &g);
}

static const struct {
    const char *name;
    kvrt_status (*call)(void);
} null_cases[] = {
    {"kvrt_cache_layout_create(out)", n_layout_create},
    {"kvrt_cache_layout_n_layers(out)", n_layout_n_layers},
    {"kvrt_cache_layout_add_layers(cfg)", n_add_layers},
    {"kvrt_cache_create(out)", n_cache_create},
    {"kvrt_cache_seq_create(out_seq)", n_seq_create},
    {"kvrt_cache_seq_create(keys->salt, salt_len 5)", n_keys_salt},
    {"kvrt_cache_seq_fork(out_child)", n_seq_fork},
    {"kvrt_cache_seq_match_prefix(out_hit)", n_match_prefix_out},
    {"kvrt_cache_seq_match_prefix(tokens, n 2)", n_match_prefix_tokens},
    {"kvrt_cache_seq_info_get(out)", n_seq_info},
    {"kvrt_cache_lookup_prefix(out_hit)", n_lookup_out},
    {"kvrt_cache_lookup_prefix(tokens, n 2)", n_lookup_tokens},
    {"kvrt_cache_pin_prefix(out_pin)", n_pin_out},
    {"kvrt_cache_pin_prefix(tokens, n 2)", n_pin_tokens},
    {"kvrt_cache_layer_info_get(out)", n_layer_info},
    {"kvrt_cache_write_rows(k)", n_write_rows_k},
    {"kvrt_cache_write_rows(v) of a layer with V rows", n_write_rows_v},
    {"kvrt_cache_read_rows(k_dst)", n_read_rows_k},
    {"kvrt_cache_block_table(written)", n_block_table_written},
    {"kvrt_cache_save_prefixes(path)", n_save_prefixes},
    {"kvrt_cache_load_prefixes(path)", n_load_prefixes},
    {"kvrt_cache_seq_save(path)", n_seq_save},
    {"kvrt_cache_seq_load(out_seq)", n_seq_load_out},
    {"kvrt_cache_seq_load(path)", n_seq_load_path},
    {"kvrt_cache_stats_get(out)", n_stats},
    {"kvrt_model_load(out)", n_model_load_out},
    {"kvrt_model_load(path)", n_model_load_path},
    {"kvrt_model_get_info(info)", n_get_info},
    {"kvrt_model_meta_string(written)", n_meta_string_written},
    {"kvrt_model_meta_string(key)", n_meta_string_key},
    {"kvrt_model_meta_count(out)", n_meta_count},
    {"kvrt_model_meta_key(written)", n_meta_key},
    {"kvrt_model_tensor_count(out)", n_tensor_count},
    {"kvrt_model_tensor_info(name_written with a name buffer)", n_tensor_info},
    {"kvrt_model_tokenize(written)", n_tokenize},
    {"kvrt_model_detokenize(written)", n_detokenize},
    {"kvrt_model_token_is_eog(out)", n_token_is_eog},
    {"kvrt_model_chat_apply(written)", n_chat_written},
    {"kvrt_model_chat_apply(messages[0].role)", n_chat_role},
    {"kvrt_model_chat_apply(messages[0].content)", n_chat_content},
    {"kvrt_context_create(out)", n_context_create},
    {"kvrt_context_get_cache(out)", n_get_cache},
    {"kvrt_context_prefill(tokens)", n_prefill},
    {"kvrt_context_prefill_batch(seq_ids)", n_prefill_batch_ids},
    {"kvrt_context_prefill_batch(tokens)", n_prefill_batch_tokens},
    {"kvrt_context_prefill_batch(n_tokens)", n_prefill_batch_lens},
    {"kvrt_context_prefill_batch(tokens[0])", n_prefill_batch_prompt},
    {"kvrt_context_decode(seq_ids)", n_decode_ids},
    {"kvrt_context_decode(tokens)", n_decode_tokens},
    {"kvrt_context_get_logits(written)", n_get_logits},
    {"kvrt_context_seq_length(out)", n_seq_length},
    {"kvrt_context_seq_kv_bytes(out)", n_seq_kv_bytes},
    {"kvrt_sampler_create(out)", n_sampler_create_out},
    {"kvrt_sampler_sample(out)", n_sample_out},
    {"kvrt_sampler_sample(logits)", n_sample_logits},
    {"kvrt_context_generate(prompt)", n_generate_prompt},
    {"kvrt_context_generate(cfg->stop_strings[0])", n_generate_stop_string},
};

static void test_nulls(void) {
    size_t i;
    for (i = 0; i < sizeof null_cases / sizeof null_cases[0]; ++i) {
        kvrt_clear_error();
        check(null_cases[i].name, "NULL", null_cases[i].call(), KVRT_ERR_INVALID_ARGUMENT, NULL);
    }
}

/* ---- 5. floats: sampler parameters and non-finite logits ----------------------- */

static void test_floats(void) {
    const float inf = (float)INFINITY, nan = (float)NAN;
    const float bad_top_p[] = {0.0f, -0.5f, 1.5f, nan, inf, -inf};
    const float bad_min_p[] = {-0.1f, 1.1f, nan, inf, -inf};
    const float bad_temp[] = {nan, inf};
    kvrt_sampler_config c;
    kvrt_sampler *s = NULL, *greedy = NULL;
    size_t i;
    int k, hits[4] = {0, 0, 0, 0};
    int32_t t = -1;
    float one_inf[4] = {5.0f, 1.0f, inf, 4.0f};
    float two_inf[4] = {inf, 1.0f, nan, inf};
    float nan_and_finite[3] = {nan, -1.0f, nan};
    float all_neg_inf[3] = {-inf, -inf, -inf};
    float all_nan[3] = {nan, nan, nan};
    float nan_neg_inf[2] = {nan, -inf};

    for (i = 0; i < sizeof bad_top_p / sizeof bad_top_p[0]; ++i) {
        kvrt_sampler_config_init(&c, sizeof c);
        c.temperature = 1.0f;
        c.top_p = bad_top_p[i];
        kvrt_clear_error();
        check("kvrt_sampler_create top_p", "out of (0, 1]", kvrt_sampler_create(&s, &c), INV, "top_p");
    }
    for (i = 0; i < sizeof bad_min_p / sizeof bad_min_p[0]; ++i) {
        kvrt_sampler_config_init(&c, sizeof c);
        c.temperature = 1.0f;
        c.min_p = bad_min_p[i];
        kvrt_clear_error();
        check("kvrt_sampler_create min_p", "out of [0, 1]", kvrt_sampler_create(&s, &c), INV, NULL);
    }
    for (i = 0; i < sizeof bad_temp / sizeof bad_temp[0]; ++i) {
        kvrt_sampler_config_init(&c, sizeof c);
        c.temperature = bad_temp[i];
        kvrt_clear_error();
        check("kvrt_sampler_create temperature", "NaN/inf", kvrt_sampler_create(&s, &c), INV, "temperature");
    }
    EXPECT(s == NULL);

    /* +inf wins; NaN and -inf are never drawn; nothing drawable is an error. */
    kvrt_sampler_config_init(&c, sizeof c);
    EXPECT_OK(kvrt_sampler_create(&greedy, &c));
    c.temperature = 1.0f;
    c.seed = 3;
    EXPECT_OK(kvrt_sampler_create(&s, &c));
    for (k = 0; k < 200; ++k) {
        EXPECT_OK(kvrt_sampler_sample(&t, s, one_inf, 4));
        EXPECT(t == 2);
        EXPECT_OK(kvrt_sampler_sample(&t, s, two_inf, 4));
        EXPECT(t == 0 || t == 3);
        if (t == 0 || t == 3) hits[t]++;
        EXPECT_OK(kvrt_sampler_sample(&t, s, nan_and_finite, 3));
        EXPECT(t == 1);
    }
    EXPECT(hits[0] > 50 && hits[3] > 50); /* uniform among the +inf ids */
    EXPECT_OK(kvrt_sampler_sample(&t, greedy, one_inf, 4));
    EXPECT(t == 2);
    EXPECT_OK(kvrt_sampler_sample(&t, greedy, two_inf, 4));
    EXPECT(t == 0); /* greedy: ties to the lowest id */
    EXPECT_OK(kvrt_sampler_sample(&t, greedy, nan_and_finite, 3));
    EXPECT(t == 1);
    for (k = 0; k < 2; ++k) {
        kvrt_sampler *sm = k ? s : greedy;
        kvrt_clear_error();
        check("kvrt_sampler_sample all -inf", k ? "sampling" : "greedy", kvrt_sampler_sample(&t, sm, all_neg_inf, 3),
              INV, "NaN or -inf");
        check("kvrt_sampler_sample all NaN", k ? "sampling" : "greedy", kvrt_sampler_sample(&t, sm, all_nan, 3), INV,
              "NaN or -inf");
        check("kvrt_sampler_sample NaN and -inf", k ? "sampling" : "greedy",
              kvrt_sampler_sample(&t, sm, nan_neg_inf, 2), INV, "NaN or -inf");
        check("kvrt_sampler_sample one NaN", k ? "sampling" : "greedy", kvrt_sampler_sample(&t, sm, all_nan, 1), INV,
              "NaN or -inf");
    }
    kvrt_sampler_destroy(s);
    kvrt_sampler_destroy(greedy);
}

/* ---- common.h ------------------------------------------------------------------ */

static void test_common(void) {
    const int codes[] = {0, -1, -15, -16, 1, -100, INT32_MIN, INT32_MAX};
    size_t i;
    for (i = 0; i < sizeof codes / sizeof codes[0]; ++i) {
        const char *s = kvrt_status_string((kvrt_status)codes[i]);
        EXPECT(s != NULL && strncmp(s, "KVRT_", 5) == 0);
    }
    EXPECT(strcmp(kvrt_status_string((kvrt_status)-16), "KVRT_ERR_UNKNOWN") == 0);
    kvrt_clear_error();
    EXPECT(kvrt_last_error() != NULL && kvrt_last_error()[0] == '\0');
}

/* ---- everything still works -------------------------------------------------------- */

static void test_still_working(const int32_t *before, int n) {
    int32_t after[8];
    int32_t nl = -1;
    int i;
    kvrt_cache_seq_info si;
    kvrt_cache_stats st;
    kvrt_model_info mi;
    uint64_t id = 0;
    int32_t toks[4] = {7, 8, 9, 10}, t;
    float l[3] = {0.0f, 1.0f, 2.0f};

    EXPECT_OK(kvrt_context_seq_release(G.ctx, 0));
    EXPECT_OK(kvrt_context_seq_release(G.ctx, 1));
    EXPECT(greedy_tokens(G.ctx, 0, after, n) == 0);
    for (i = 0; i < n; ++i) EXPECT(after[i] == before[i]);
    /* and on the second sequence too */
    EXPECT(greedy_tokens(G.ctx, 1, after, n) == 0);
    for (i = 0; i < n; ++i) EXPECT(after[i] == before[i]);

    EXPECT_OK(kvrt_cache_layout_n_layers(&nl, G.layout));
    EXPECT(nl == 2); /* no rejected add_layers added anything */
    si.struct_size = sizeof si;
    EXPECT_OK(kvrt_cache_seq_info_get(&si, G.cache, G.seq));
    EXPECT(si.length == 20 && si.computed == 20); /* no rejected call changed the sequence */
    EXPECT_OK(kvrt_cache_seq_create(&id, G.cache, NULL));
    EXPECT_OK(kvrt_cache_seq_append(G.cache, id, toks, 4));
    EXPECT_OK(kvrt_cache_seq_release(G.cache, id));
    st.struct_size = sizeof st;
    EXPECT_OK(kvrt_cache_stats_get(&st, G.cache));
    EXPECT_OK(kvrt_cache_stats_get(&st, G.ctx_cache)); /* kvrt_cache_destroy ignored it */
    kvrt_model_info_init(&mi, sizeof mi);
    EXPECT_OK(kvrt_model_get_info(&mi, G.model));
    EXPECT(mi.n_vocab == G.n_vocab);
    EXPECT_OK(kvrt_sampler_sample(&t, G.sampler, l, 3));
    EXPECT(t >= 0 && t < 3);
}

int main(void) {
    int32_t before[8];
    const int n = 6;
    memset(&G, 0, sizeof G);
    if (fixture_create() != 0) {
        fprintf(stderr, "test_misuse: fixture: %s\n", kvrt_last_error());
        return 1;
    }
    if (greedy_tokens(G.ctx, 0, before, n) != 0) {
        fprintf(stderr, "test_misuse: baseline generation failed: %s\n", kvrt_last_error());
        return 1;
    }
    test_common();
    test_struct_sizes();
    test_handles();
    test_counts();
    test_nulls();
    test_floats();
    test_still_working(before, n);
    fixture_destroy();
    if (failures) fprintf(stderr, "test_misuse: %d failure(s) in %d checked calls\n", failures, n_checked);
    else printf("test_misuse: %d misuse calls checked, all rejected as documented\n", n_checked);
    return failures ? 1 : 0;
}
