/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The kvrt authors */

/* Older callers keep working: every struct with a struct_size accepts the size it
 * had at the version that introduced it (src/api/struct_versions.h pins it), up to
 * the current sizeof, and rejects sizes outside that range with a message.
 *
 * For each struct: its _init at the pinned minimum fills exactly that many bytes
 * (a canary after them survives) and one byte less, or one more than sizeof, is
 * refused; then a struct of the pinned size goes through the call that reads or
 * fills it. Structs that have grown since 0.1 are also declared here as a 0.1
 * binary declared them, and such an old struct is passed as it is. */
#include "expect.h"

#include "../../src/api/struct_versions.h"

#include <stddef.h>
#include <string.h>

/* As a program built against kvrt 0.1 declares them (fields since appended absent). */
typedef struct model_config_v01 {
    size_t struct_size;
    kvrt_progress_fn progress;
    void *progress_user_data;
} model_config_v01;

typedef struct context_config_v01 {
    size_t struct_size;
    uint32_t n_ctx;
    uint32_t n_seq_max;
    uint32_t n_batch;
    int32_t n_threads;
    int32_t kv_dtype;
    uint32_t block_tokens;
    uint64_t cache_bytes;
    kvrt_cache *cache;
    int32_t prefix_caching;
    int32_t reserved0;
    const char *cache_salt;
    kvrt_progress_fn progress;
    void *progress_user_data;
} context_config_v01;

typedef struct generate_config_v01 {
    size_t struct_size;
    uint32_t max_tokens;
    int32_t stop_at_eog;
    kvrt_sampler *sampler;
    const char *const *stop_strings;
    size_t n_stop_strings;
    kvrt_token_fn on_token;
    void *user_data;
} generate_config_v01;

#define CANARY 0xA5

/* Storage for any struct: big enough, aligned, pre-filled with the canary. */
typedef union any_struct {
    unsigned char bytes[4096];
    long double align_ld; /* C99 has no max_align_t */
    uint64_t align_u64;
    void *align_p;
} any_struct;

static void canary(any_struct *s) { memset(s->bytes, CANARY, sizeof s->bytes); }

/* Every byte from `from` to the end of the storage still holds the canary. */
static int untouched_from(const any_struct *s, size_t from) {
    size_t i;
    for (i = from; i < sizeof s->bytes; i++)
        if (s->bytes[i] != CANARY) return 0;
    return 1;
}

typedef kvrt_status (*init_fn)(void *, size_t);

/* _init at min: OK, struct_size == min, nothing written past min; min - 1 and
 * sizeof + 1 refused with a message; sizeof: OK. */
static void check_init(const char *name, init_fn init, size_t min, size_t size) {
    any_struct s;
    size_t got;
    canary(&s);
    kvrt_clear_error();
    if (init(&s, min) != KVRT_OK) {
        fprintf(stderr, "%s_init(%zu) (the pinned minimum) failed: %s\n", name, min, kvrt_last_error());
        failures++;
    }
    memcpy(&got, s.bytes, sizeof got);
    EXPECT(got == min);
    EXPECT(untouched_from(&s, min));
    canary(&s);
    EXPECT_ERR(init(&s, min - 1), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT(untouched_from(&s, 0));
    EXPECT_ERR(init(&s, size + 1), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT(untouched_from(&s, 0));
    EXPECT_OK(init(&s, size));
    EXPECT(untouched_from(&s, size));
}

/* init_<T>(void *, size_t): T's _init behind one signature (no function-pointer casts). */
#define THUNK(T) \
    static kvrt_status init_##T(void *p, size_t n) { return T##_init((T *)p, n); }
THUNK(kvrt_cache_layer_config)
THUNK(kvrt_cache_config)
THUNK(kvrt_cache_keys)
THUNK(kvrt_model_config)
THUNK(kvrt_model_info)
THUNK(kvrt_context_config)
THUNK(kvrt_request_stats)
THUNK(kvrt_sampler_config)
THUNK(kvrt_generate_config)
THUNK(kvrt_cache_seq_info)
THUNK(kvrt_cache_layer_info)
THUNK(kvrt_cache_stats)
THUNK(kvrt_ced_memory)
#define INIT(T) init_##T

int main(void) {
    char path[1024];
    kvrt_model *m = NULL;
    kvrt_context *ctx = NULL;
    kvrt_cache_layout *layout = NULL;
    kvrt_cache *cache = NULL;
    kvrt_sampler *smp = NULL;
    any_struct s;
    int32_t first = -1, prompt[16];
    size_t n = 0;
    uint64_t seq = 0;
    const int32_t toks[3] = {1, 2, 3};

    /* 0.1 structs as declared here match the pins (a pin moved, or a 0.1 field was
     * changed, would break binaries built against 0.1). */
    EXPECT(sizeof(model_config_v01) >= KVRT_MIN_SIZE_kvrt_model_config);
    EXPECT(sizeof(context_config_v01) >= KVRT_MIN_SIZE_kvrt_context_config);
    EXPECT(sizeof(generate_config_v01) >= KVRT_MIN_SIZE_kvrt_generate_config);
    EXPECT(KVRT_MIN_SIZE_kvrt_context_config == offsetof(kvrt_context_config, progress_user_data) + sizeof(void *));
    EXPECT(offsetof(context_config_v01, cache_salt) == offsetof(kvrt_context_config, cache_salt));
    EXPECT(offsetof(generate_config_v01, user_data) == offsetof(kvrt_generate_config, user_data));

    /* ---- _init of every struct at its pinned minimum ---- */
    check_init("kvrt_cache_layer_config", INIT(kvrt_cache_layer_config), KVRT_MIN_SIZE_kvrt_cache_layer_config,
               sizeof(kvrt_cache_layer_config));
    check_init("kvrt_cache_config", INIT(kvrt_cache_config), KVRT_MIN_SIZE_kvrt_cache_config,
               sizeof(kvrt_cache_config));
    check_init("kvrt_cache_keys", INIT(kvrt_cache_keys), KVRT_MIN_SIZE_kvrt_cache_keys, sizeof(kvrt_cache_keys));
    check_init("kvrt_model_config", INIT(kvrt_model_config), KVRT_MIN_SIZE_kvrt_model_config,
               sizeof(kvrt_model_config));
    check_init("kvrt_model_info", INIT(kvrt_model_info), KVRT_MIN_SIZE_kvrt_model_info, sizeof(kvrt_model_info));
    check_init("kvrt_context_config", INIT(kvrt_context_config), KVRT_MIN_SIZE_kvrt_context_config,
               sizeof(kvrt_context_config));
    check_init("kvrt_request_stats", INIT(kvrt_request_stats), KVRT_MIN_SIZE_kvrt_request_stats,
               sizeof(kvrt_request_stats));
    check_init("kvrt_sampler_config", INIT(kvrt_sampler_config), KVRT_MIN_SIZE_kvrt_sampler_config,
               sizeof(kvrt_sampler_config));
    check_init("kvrt_generate_config", INIT(kvrt_generate_config), KVRT_MIN_SIZE_kvrt_generate_config,
               sizeof(kvrt_generate_config));
    /* output structs: their _init prepares them for the call that fills them */
    check_init("kvrt_cache_seq_info", INIT(kvrt_cache_seq_info), KVRT_MIN_SIZE_kvrt_cache_seq_info,
               sizeof(kvrt_cache_seq_info));
    check_init("kvrt_cache_layer_info", INIT(kvrt_cache_layer_info), KVRT_MIN_SIZE_kvrt_cache_layer_info,
               sizeof(kvrt_cache_layer_info));
    check_init("kvrt_cache_stats", INIT(kvrt_cache_stats), KVRT_MIN_SIZE_kvrt_cache_stats, sizeof(kvrt_cache_stats));
    check_init("kvrt_ced_memory", INIT(kvrt_ced_memory), KVRT_MIN_SIZE_kvrt_ced_memory, sizeof(kvrt_ced_memory));
    EXPECT_ERR(kvrt_cache_stats_init(NULL, sizeof(kvrt_cache_stats)), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(kvrt_ced_memory_init(NULL, sizeof(kvrt_ced_memory)), KVRT_ERR_INVALID_ARGUMENT);

    /* ---- the cache's structs through the calls that read or fill them ---- */
    EXPECT_OK(kvrt_cache_layout_create(&layout, 4));
    {
        kvrt_cache_layer_config lc;
        kvrt_cache_config cc;
        kvrt_cache_keys keys;
        EXPECT_OK(kvrt_cache_layer_config_init(&lc, KVRT_MIN_SIZE_kvrt_cache_layer_config));
        lc.n_kv_heads = 2;
        lc.head_dim = 8;
        EXPECT_OK(kvrt_cache_layout_add_layers(&first, layout, &lc, 2));
        EXPECT(first == 0);
        EXPECT_OK(kvrt_cache_config_init(&cc, KVRT_MIN_SIZE_kvrt_cache_config));
        cc.budget_bytes = 1 << 20;
        EXPECT_OK(kvrt_cache_create(&cache, layout, &cc));
        EXPECT_OK(kvrt_cache_keys_init(&keys, KVRT_MIN_SIZE_kvrt_cache_keys));
        EXPECT_OK(kvrt_cache_seq_create(&seq, cache, &keys));
        EXPECT_OK(kvrt_cache_seq_append(cache, seq, toks, 3));
    }
    if (cache) {
        kvrt_cache_seq_info *si = (kvrt_cache_seq_info *)(void *)&s;
        kvrt_cache_layer_info *li = (kvrt_cache_layer_info *)(void *)&s;
        kvrt_cache_stats *st = (kvrt_cache_stats *)(void *)&s;
        canary(&s);
        si->struct_size = KVRT_MIN_SIZE_kvrt_cache_seq_info;
        EXPECT_OK(kvrt_cache_seq_info_get(si, cache, seq));
        EXPECT(si->length == 3 && untouched_from(&s, KVRT_MIN_SIZE_kvrt_cache_seq_info));
        si->struct_size = KVRT_MIN_SIZE_kvrt_cache_seq_info - 1;
        EXPECT_ERR(kvrt_cache_seq_info_get(si, cache, seq), KVRT_ERR_INVALID_ARGUMENT);

        canary(&s);
        li->struct_size = KVRT_MIN_SIZE_kvrt_cache_layer_info;
        EXPECT_OK(kvrt_cache_layer_info_get(li, cache, 1));
        EXPECT(li->n_kv_heads == 2 && li->head_dim == 8 && untouched_from(&s, KVRT_MIN_SIZE_kvrt_cache_layer_info));
        li->struct_size = sizeof(kvrt_cache_layer_info) + 1;
        EXPECT_ERR(kvrt_cache_layer_info_get(li, cache, 1), KVRT_ERR_INVALID_ARGUMENT);

        canary(&s);
        st->struct_size = KVRT_MIN_SIZE_kvrt_cache_stats;
        EXPECT_OK(kvrt_cache_stats_get(st, cache));
        EXPECT(st->budget_bytes == (1 << 20) && untouched_from(&s, KVRT_MIN_SIZE_kvrt_cache_stats));
        st->struct_size = KVRT_MIN_SIZE_kvrt_cache_stats - 1;
        EXPECT_ERR(kvrt_cache_stats_get(st, cache), KVRT_ERR_INVALID_ARGUMENT);
        /* at the current size: the embedded array's count and stride are reported */
        EXPECT_OK(kvrt_cache_stats_init(st, sizeof(kvrt_cache_stats)));
        EXPECT_OK(kvrt_cache_stats_get(st, cache));
        EXPECT(st->n_kinds == KVRT_CACHE_KIND_SLOTS && st->kind_stats_size == (int32_t)sizeof(kvrt_cache_kind_stats));
        EXPECT(st->kinds[KVRT_LAYER_FULL].n_layers == 2);
    }
    kvrt_cache_destroy(cache);
    kvrt_cache_layout_destroy(layout);

    /* ---- the model and context structs, as a 0.1 binary passes them ---- */
    expect_model_path(path, sizeof path);
    {
        model_config_v01 mc;
        memset(&mc, 0, sizeof mc);
        mc.struct_size = sizeof mc;
        if (kvrt_model_load(&m, path, (const kvrt_model_config *)(const void *)&mc) != KVRT_OK) {
            fprintf(stderr, "test_struct_sizes: cannot load %s with a 0.1 kvrt_model_config: %s\n", path,
                    kvrt_last_error());
            return 1;
        }
    }
    {
        kvrt_model_info *mi = (kvrt_model_info *)(void *)&s;
        canary(&s);
        EXPECT_OK(kvrt_model_info_init(mi, KVRT_MIN_SIZE_kvrt_model_info));
        EXPECT_OK(kvrt_model_get_info(mi, m));
        EXPECT(mi->n_layers > 0 && untouched_from(&s, KVRT_MIN_SIZE_kvrt_model_info));
    }
    EXPECT_OK(kvrt_model_tokenize(prompt, 16, &n, m, "Hello there", 11, 0));
    {
        context_config_v01 cc;
        memset(&cc, 0, sizeof cc);
        cc.struct_size = sizeof cc;
        cc.n_ctx = 64;
        cc.n_seq_max = 1;
        cc.n_batch = 32;
        cc.kv_dtype = KVRT_KV_F16;
        cc.block_tokens = 16;
        cc.prefix_caching = 1;
        EXPECT_OK(kvrt_context_create(&ctx, m, (const kvrt_context_config *)(const void *)&cc));
    }
    if (ctx) {
        kvrt_request_stats *rs = (kvrt_request_stats *)(void *)&s;
        kvrt_sampler_config sc;
        generate_config_v01 gc;
        canary(&s);
        EXPECT_OK(kvrt_request_stats_init(rs, KVRT_MIN_SIZE_kvrt_request_stats));
        EXPECT_OK(kvrt_context_prefill(rs, ctx, 0, prompt, n));
        EXPECT(rs->prompt_tokens == n && untouched_from(&s, KVRT_MIN_SIZE_kvrt_request_stats));

        EXPECT_OK(kvrt_sampler_config_init(&sc, KVRT_MIN_SIZE_kvrt_sampler_config));
        EXPECT_OK(kvrt_sampler_create(&smp, &sc));

        memset(&gc, 0, sizeof gc);
        gc.struct_size = sizeof gc;
        gc.max_tokens = 2;
        gc.stop_at_eog = 1;
        gc.sampler = smp;
        canary(&s);
        rs->struct_size = KVRT_MIN_SIZE_kvrt_request_stats;
        EXPECT_OK(kvrt_context_generate(rs, ctx, 0, prompt, n, (const kvrt_generate_config *)(const void *)&gc));
        EXPECT(rs->generated_tokens >= 1 && untouched_from(&s, KVRT_MIN_SIZE_kvrt_request_stats));

        /* 0.4's size (through reused_from_remote): sample_s, appended in 0.5, is not written */
        canary(&s);
        rs->struct_size = offsetof(kvrt_request_stats, sample_s);
        EXPECT_OK(kvrt_context_generate(rs, ctx, 0, prompt, n, (const kvrt_generate_config *)(const void *)&gc));
        EXPECT(rs->generated_tokens >= 1 && untouched_from(&s, offsetof(kvrt_request_stats, sample_s)));
    }
    kvrt_sampler_destroy(smp);
    kvrt_context_destroy(ctx);
    kvrt_model_destroy(m);

    if (failures) fprintf(stderr, "test_struct_sizes: %d failure(s)\n", failures);
    return failures ? 1 : 0;
}
