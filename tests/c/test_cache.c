/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The kvrt authors */

/* C99 test of kvrt/cache.h: every function's success and failure paths. */
#include <kvrt/kvrt.h>

/* It also tests the deprecated unsized kvrt_cache_write_rows / read_rows, kept for
 * programs built against 0.1 and 0.2 (the _v2 calls: test_cache_rows.c). */
#if defined(__GNUC__) || defined(__clang__)
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif

#include "expect.h"

#include <stdio.h>
#include <string.h>


/* A foreign pointer: a real object of another type, never a kvrt handle. */
static int not_a_handle = 42;
#define FOREIGN_CACHE ((kvrt_cache *)(void *)&not_a_handle)
#define FOREIGN_LAYOUT ((kvrt_cache_layout *)(void *)&not_a_handle)

static kvrt_cache_layer_config layer(int32_t kind, int32_t heads, int32_t dim) {
    kvrt_cache_layer_config c;
    kvrt_cache_layer_config_init(&c, sizeof c);
    c.kind = kind;
    c.n_kv_heads = heads;
    c.head_dim = dim;
    c.dtype = KVRT_DTYPE_F32;
    return c;
}

static void test_configs(void) {
    kvrt_cache_layer_config lc;
    kvrt_cache_config cc;
    kvrt_cache_keys keys;
    EXPECT_OK(kvrt_cache_layer_config_init(&lc, sizeof lc));
    EXPECT(lc.struct_size == sizeof lc && lc.kind == KVRT_LAYER_FULL && lc.dtype == KVRT_DTYPE_F16);
    EXPECT(lc.ratio == 1 && lc.source == -1);
    EXPECT_ERR(kvrt_cache_layer_config_init(NULL, sizeof lc), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(kvrt_cache_layer_config_init(&lc, 3), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_OK(kvrt_cache_config_init(&cc, sizeof cc));
    EXPECT(cc.budget_bytes > 0 && cc.large_pages == 0);
    EXPECT_ERR(kvrt_cache_config_init(NULL, sizeof cc), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(kvrt_cache_config_init(&cc, sizeof cc + 8), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_OK(kvrt_cache_keys_init(&keys, sizeof keys));
    EXPECT(keys.salt == NULL && keys.salt_len == 0 && keys.adapter_id == 0);
    EXPECT_ERR(kvrt_cache_keys_init(NULL, sizeof keys), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(kvrt_cache_keys_init(&keys, 0), KVRT_ERR_INVALID_ARGUMENT);
}

static void test_layouts(void) {
    kvrt_cache_layout *l = NULL;
    kvrt_cache_layer_config c;
    int32_t first = -1, n = -1;
    kvrt_cache *cache = NULL;
    kvrt_cache_config cc;

    EXPECT_ERR(kvrt_cache_layout_create(NULL, 16), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(kvrt_cache_layout_create(&l, 0), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT(l == NULL);
    EXPECT_ERR(kvrt_cache_layout_create(&l, 1 << 20), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_OK(kvrt_cache_layout_create(&l, 16));
    EXPECT(l != NULL);

    /* An empty layout makes no cache. */
    EXPECT_ERR(kvrt_cache_create(&cache, l, NULL), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT(cache == NULL);

    c = layer(KVRT_LAYER_FULL, 0, 64); /* zero heads */
    EXPECT_ERR(kvrt_cache_layout_add_layers(&first, l, &c, 1), KVRT_ERR_INVALID_ARGUMENT);
    c = layer(KVRT_LAYER_FULL, 2, 0); /* zero width */
    EXPECT_ERR(kvrt_cache_layout_add_layers(&first, l, &c, 1), KVRT_ERR_INVALID_ARGUMENT);
    c = layer(KVRT_LAYER_WINDOW, 2, 64); /* window 0 */
    EXPECT_ERR(kvrt_cache_layout_add_layers(&first, l, &c, 1), KVRT_ERR_INVALID_ARGUMENT);
    c = layer(KVRT_LAYER_BANK_SOURCE, 1, 64);
    c.ratio = 0; /* ratio 0 */
    EXPECT_ERR(kvrt_cache_layout_add_layers(&first, l, &c, 1), KVRT_ERR_INVALID_ARGUMENT);
    c.ratio = 3; /* does not divide 16 */
    EXPECT_ERR(kvrt_cache_layout_add_layers(&first, l, &c, 1), KVRT_ERR_INVALID_ARGUMENT);
    c = layer(KVRT_LAYER_BANK_READER, 0, 0); /* no such source */
    c.source = 0;
    EXPECT_ERR(kvrt_cache_layout_add_layers(&first, l, &c, 1), KVRT_ERR_INVALID_ARGUMENT);
    c = layer(7, 2, 64); /* unknown kind */
    EXPECT_ERR(kvrt_cache_layout_add_layers(&first, l, &c, 1), KVRT_ERR_INVALID_ARGUMENT);
    c = layer(KVRT_LAYER_FULL, 2, 64);
    c.dtype = KVRT_DTYPE_FP4; /* reserved */
    EXPECT_ERR(kvrt_cache_layout_add_layers(&first, l, &c, 1), KVRT_ERR_UNSUPPORTED);
    c = layer(KVRT_LAYER_FULL, 1 << 30, 1 << 30); /* row bytes overflow */
    EXPECT_ERR(kvrt_cache_layout_add_layers(&first, l, &c, 1), KVRT_ERR_OVERFLOW);
    c = layer(KVRT_LAYER_FULL, 2, 64);
    EXPECT_ERR(kvrt_cache_layout_add_layers(&first, l, &c, 0), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(kvrt_cache_layout_add_layers(&first, l, &c, 70000), KVRT_ERR_OVERFLOW);
    EXPECT_ERR(kvrt_cache_layout_add_layers(&first, l, NULL, 1), KVRT_ERR_INVALID_ARGUMENT);
    c.struct_size = 4;
    EXPECT_ERR(kvrt_cache_layout_add_layers(&first, l, &c, 1), KVRT_ERR_INVALID_ARGUMENT);
    c.struct_size = sizeof c;
    EXPECT_ERR(kvrt_cache_layout_add_layers(&first, NULL, &c, 1), KVRT_ERR_BAD_HANDLE);
    EXPECT_ERR(kvrt_cache_layout_add_layers(&first, FOREIGN_LAYOUT, &c, 1), KVRT_ERR_BAD_HANDLE);
    /* Nothing of the failures above was added. */
    EXPECT_OK(kvrt_cache_layout_n_layers(&n, l));
    EXPECT(n == 0);
    EXPECT_OK(kvrt_cache_layout_add_layers(&first, l, &c, 3));
    EXPECT(first == 0);
    EXPECT_OK(kvrt_cache_layout_add_layers(NULL, l, &c, 1));
    EXPECT_OK(kvrt_cache_layout_n_layers(&n, l));
    EXPECT(n == 4);
    EXPECT_ERR(kvrt_cache_layout_n_layers(NULL, l), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(kvrt_cache_layout_n_layers(&n, FOREIGN_LAYOUT), KVRT_ERR_BAD_HANDLE);

    /* Bad cache configs. */
    kvrt_cache_config_init(&cc, sizeof cc);
    cc.budget_bytes = 0;
    EXPECT_ERR(kvrt_cache_create(&cache, l, &cc), KVRT_ERR_INVALID_ARGUMENT);
    kvrt_cache_config_init(&cc, sizeof cc);
    cc.reserved0 = 1;
    EXPECT_ERR(kvrt_cache_create(&cache, l, &cc), KVRT_ERR_INVALID_ARGUMENT);
    kvrt_cache_config_init(&cc, sizeof cc);
    cc.struct_size = 1;
    EXPECT_ERR(kvrt_cache_create(&cache, l, &cc), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(kvrt_cache_create(NULL, l, NULL), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(kvrt_cache_create(&cache, NULL, NULL), KVRT_ERR_BAD_HANDLE);
    EXPECT_ERR(kvrt_cache_create(&cache, FOREIGN_LAYOUT, NULL), KVRT_ERR_BAD_HANDLE);
    EXPECT(cache == NULL);

    kvrt_cache_config_init(&cc, sizeof cc);
    cc.budget_bytes = 1 << 20;
    cc.large_pages = 1;
    EXPECT_OK(kvrt_cache_create(&cache, l, &cc));
    kvrt_cache_layout_destroy(l); /* the cache copied it */
    kvrt_cache_layout_destroy(l); /* double destroy is ignored */
    kvrt_cache_layout_destroy(NULL);
    kvrt_cache_layout_destroy(FOREIGN_LAYOUT);
    EXPECT_ERR(kvrt_cache_layout_n_layers(&n, l), KVRT_ERR_BAD_HANDLE);
    {
        kvrt_cache_stats st;
        st.struct_size = sizeof st;
        EXPECT_OK(kvrt_cache_stats_get(&st, cache));
        EXPECT(st.large_pages == 1);
        EXPECT(st.bytes_per_token == 4.0 * 2 * 2 * 64 * 4);
    }
    kvrt_cache_destroy(cache);
    kvrt_cache_destroy(cache); /* double destroy is ignored */
    kvrt_cache_destroy(NULL);
    kvrt_cache_destroy(FOREIGN_CACHE);
}

/* 2 full layers x 2 heads x 4 floats, 4 tokens per block: a block is
 * 2 layers x (K + V) x 4 positions x 32 bytes = 512 bytes. Budget: 6 blocks. */
static kvrt_cache *make_cache(void) {
    kvrt_cache_layout *l = NULL;
    kvrt_cache_layer_config c = layer(KVRT_LAYER_FULL, 2, 4);
    kvrt_cache_config cc;
    kvrt_cache *cache = NULL;
    kvrt_cache_layout_create(&l, 4);
    kvrt_cache_layout_add_layers(NULL, l, &c, 2);
    kvrt_cache_config_init(&cc, sizeof cc);
    cc.budget_bytes = 6 * 512;
    EXPECT_OK(kvrt_cache_create(&cache, l, &cc));
    kvrt_cache_layout_destroy(l);
    return cache;
}

static void fill_rows(float *k, float *v, int n_rows, float base) {
    int i;
    for (i = 0; i < n_rows * 8; i++) {
        k[i] = base + (float)i;
        v[i] = -base - (float)i;
    }
}

static void test_sequences(void) {
    kvrt_cache *cache = make_cache();
    int32_t toks[32];
    uint64_t a = 0, b = 0, c = 0, pin = 0;
    int64_t hit = -1, pinned = -1;
    int i;
    kvrt_cache_seq_info info;
    kvrt_cache_stats st;
    kvrt_cache_keys keys;
    for (i = 0; i < 32; i++) toks[i] = 100 + i;

    /* create */
    EXPECT_OK(kvrt_cache_seq_create(&a, cache, NULL));
    EXPECT(a != 0);
    EXPECT_ERR(kvrt_cache_seq_create(NULL, cache, NULL), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(kvrt_cache_seq_create(&b, NULL, NULL), KVRT_ERR_BAD_HANDLE);
    EXPECT_ERR(kvrt_cache_seq_create(&b, FOREIGN_CACHE, NULL), KVRT_ERR_BAD_HANDLE);
    kvrt_cache_keys_init(&keys, sizeof keys);
    keys.salt_len = 3; /* salt NULL */
    EXPECT_ERR(kvrt_cache_seq_create(&b, cache, &keys), KVRT_ERR_INVALID_ARGUMENT);

    /* append */
    EXPECT_OK(kvrt_cache_seq_append(cache, a, toks, 10));
    EXPECT_OK(kvrt_cache_seq_append(cache, a, toks, 0));
    EXPECT_ERR(kvrt_cache_seq_append(cache, a, NULL, 3), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(kvrt_cache_seq_append(cache, 9999, toks, 3), KVRT_ERR_NOT_FOUND);
    EXPECT_ERR(kvrt_cache_seq_append(FOREIGN_CACHE, a, toks, 3), KVRT_ERR_BAD_HANDLE);
    EXPECT_ERR(kvrt_cache_seq_append(cache, a, toks, (size_t)1 << 40), KVRT_ERR_OVERFLOW);
    /* 10 positions = 3 blocks; 6 more blocks do not fit the 6-block budget. */
    EXPECT_ERR(kvrt_cache_seq_append(cache, a, toks, 24), KVRT_ERR_CACHE_FULL);
    info.struct_size = sizeof info;
    EXPECT_OK(kvrt_cache_seq_info_get(&info, cache, a));
    EXPECT(info.length == 10 && info.computed == 0 && info.n_blocks == 3 && info.bytes == 3 * 512);
    EXPECT_ERR(kvrt_cache_seq_info_get(NULL, cache, a), KVRT_ERR_INVALID_ARGUMENT);
    info.struct_size = 2;
    EXPECT_ERR(kvrt_cache_seq_info_get(&info, cache, a), KVRT_ERR_INVALID_ARGUMENT);
    info.struct_size = sizeof info;
    EXPECT_ERR(kvrt_cache_seq_info_get(&info, cache, 777), KVRT_ERR_NOT_FOUND);
    EXPECT_ERR(kvrt_cache_seq_info_get(&info, NULL, a), KVRT_ERR_BAD_HANDLE);

    /* rows: layer info, write, read, block table */
    {
        kvrt_cache_layer_info li;
        float k[10 * 8], v[10 * 8], k2[10 * 8], v2[10 * 8];
        const void *table[4];
        size_t written = 0;
        li.struct_size = sizeof li;
        EXPECT_OK(kvrt_cache_layer_info_get(&li, cache, 1));
        EXPECT(li.kind == KVRT_LAYER_FULL && li.row_bytes == 32 && li.rows_per_block == 4 && li.separate_v == 1);
        EXPECT(li.block_bytes == 512 && li.k_offset == 256 && li.v_offset == 384);
        EXPECT_ERR(kvrt_cache_layer_info_get(&li, cache, 2), KVRT_ERR_OUT_OF_RANGE);
        EXPECT_ERR(kvrt_cache_layer_info_get(&li, cache, -1), KVRT_ERR_OUT_OF_RANGE);
        EXPECT_ERR(kvrt_cache_layer_info_get(NULL, cache, 0), KVRT_ERR_INVALID_ARGUMENT);
        EXPECT_ERR(kvrt_cache_layer_info_get(&li, FOREIGN_CACHE, 0), KVRT_ERR_BAD_HANDLE);

        fill_rows(k, v, 10, 1.0f);
        EXPECT_OK(kvrt_cache_write_rows(cache, a, 1, 0, 10, k, v));
        EXPECT_OK(kvrt_cache_write_rows(cache, a, 0, 0, 10, k, v));
        EXPECT_OK(kvrt_cache_read_rows(k2, v2, cache, a, 1, 0, 10));
        EXPECT(memcmp(k, k2, sizeof k) == 0 && memcmp(v, v2, sizeof v) == 0);
        EXPECT_OK(kvrt_cache_read_rows(k2, NULL, cache, a, 1, 2, 3));
        EXPECT(memcmp(k + 16, k2, 3 * 32) == 0);
        EXPECT_ERR(kvrt_cache_write_rows(cache, a, 1, 8, 3, k, v), KVRT_ERR_OUT_OF_RANGE); /* row 10 */
        EXPECT_ERR(kvrt_cache_write_rows(cache, a, 1, -1, 1, k, v), KVRT_ERR_OUT_OF_RANGE);
        EXPECT_ERR(kvrt_cache_write_rows(cache, a, 1, 0, 1, k, NULL), KVRT_ERR_INVALID_ARGUMENT);
        EXPECT_ERR(kvrt_cache_write_rows(cache, a, 1, 0, 1, NULL, v), KVRT_ERR_INVALID_ARGUMENT);
        EXPECT_ERR(kvrt_cache_write_rows(cache, a, 5, 0, 1, k, v), KVRT_ERR_OUT_OF_RANGE);
        EXPECT_ERR(kvrt_cache_write_rows(cache, 555, 1, 0, 1, k, v), KVRT_ERR_NOT_FOUND);
        EXPECT_ERR(kvrt_cache_write_rows(NULL, a, 1, 0, 1, k, v), KVRT_ERR_BAD_HANDLE);
        EXPECT_ERR(kvrt_cache_read_rows(NULL, v2, cache, a, 1, 0, 1), KVRT_ERR_INVALID_ARGUMENT);
        EXPECT_ERR(kvrt_cache_read_rows(k2, v2, cache, a, 1, 9, 2), KVRT_ERR_OUT_OF_RANGE);
        EXPECT_ERR(kvrt_cache_read_rows(k2, v2, cache, 555, 1, 0, 1), KVRT_ERR_NOT_FOUND);
        EXPECT_ERR(kvrt_cache_read_rows(k2, v2, FOREIGN_CACHE, a, 1, 0, 1), KVRT_ERR_BAD_HANDLE);
        /* The failed writes changed nothing. */
        EXPECT_OK(kvrt_cache_read_rows(k2, v2, cache, a, 1, 0, 10));
        EXPECT(memcmp(k, k2, sizeof k) == 0);

        EXPECT_ERR(kvrt_cache_block_table(table, 2, &written, cache, a, 0), KVRT_ERR_BUFFER_TOO_SMALL);
        EXPECT(written == 3);
        EXPECT_OK(kvrt_cache_block_table(NULL, 0, &written, cache, a, 0)); /* a size query */
        EXPECT_OK(kvrt_cache_block_table(table, 4, &written, cache, a, 1));
        EXPECT(written == 3 && table[0] != NULL && table[2] != NULL);
        /* Row 5 of layer 1 at table[1] + k_offset + 1 * row_bytes. */
        EXPECT(memcmp((const char *)table[1] + li.k_offset + li.row_bytes, k + 5 * 8, 32) == 0);
        EXPECT(memcmp((const char *)table[1] + li.v_offset + li.row_bytes, v + 5 * 8, 32) == 0);
        EXPECT_ERR(kvrt_cache_block_table(table, 4, NULL, cache, a, 1), KVRT_ERR_INVALID_ARGUMENT);
        EXPECT_ERR(kvrt_cache_block_table(NULL, 4, &written, cache, a, 1), KVRT_ERR_INVALID_ARGUMENT);
        EXPECT_ERR(kvrt_cache_block_table(table, 4, &written, cache, a, 9), KVRT_ERR_OUT_OF_RANGE);
        EXPECT_ERR(kvrt_cache_block_table(table, 4, &written, cache, 4242, 1), KVRT_ERR_NOT_FOUND);
        EXPECT_ERR(kvrt_cache_block_table(table, 4, &written, NULL, a, 1), KVRT_ERR_BAD_HANDLE);
    }

    /* mark computed */
    EXPECT_ERR(kvrt_cache_seq_mark_computed(cache, a, 11), KVRT_ERR_OUT_OF_RANGE);
    EXPECT_ERR(kvrt_cache_seq_mark_computed(cache, a, -1), KVRT_ERR_OUT_OF_RANGE);
    EXPECT_ERR(kvrt_cache_seq_mark_computed(cache, 31337, 1), KVRT_ERR_NOT_FOUND);
    EXPECT_ERR(kvrt_cache_seq_mark_computed(FOREIGN_CACHE, a, 1), KVRT_ERR_BAD_HANDLE);
    EXPECT_ERR(kvrt_cache_seq_fork(&b, cache, a), KVRT_ERR_INVALID_STATE); /* not computed */
    EXPECT_OK(kvrt_cache_seq_mark_computed(cache, a, 10));
    /* Computed full blocks are immutable. */
    {
        float k[8] = {0}, v[8] = {0};
        EXPECT_ERR(kvrt_cache_write_rows(cache, a, 0, 1, 1, k, v), KVRT_ERR_INVALID_STATE);
        EXPECT_OK(kvrt_cache_write_rows(cache, a, 0, 9, 1, k, v)); /* partial last block: private */
    }

    /* lookup / match */
    EXPECT_OK(kvrt_cache_lookup_prefix(&hit, cache, NULL, toks, 10));
    EXPECT(hit == 8);
    EXPECT_OK(kvrt_cache_lookup_prefix(&hit, cache, NULL, toks, 8));
    EXPECT(hit == 4); /* never covers the last token */
    keys.salt = "x";
    keys.salt_len = 1;
    EXPECT_OK(kvrt_cache_lookup_prefix(&hit, cache, &keys, toks, 10));
    EXPECT(hit == 0); /* another salt */
    EXPECT_ERR(kvrt_cache_lookup_prefix(NULL, cache, NULL, toks, 10), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(kvrt_cache_lookup_prefix(&hit, cache, NULL, NULL, 10), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(kvrt_cache_lookup_prefix(&hit, NULL, NULL, toks, 10), KVRT_ERR_BAD_HANDLE);
    EXPECT_ERR(kvrt_cache_lookup_prefix(&hit, cache, NULL, toks, (size_t)1 << 40), KVRT_ERR_OUT_OF_RANGE);

    EXPECT_OK(kvrt_cache_seq_create(&b, cache, NULL));
    EXPECT_OK(kvrt_cache_seq_match_prefix(&hit, cache, b, toks, 12));
    EXPECT(hit == 8);
    EXPECT_ERR(kvrt_cache_seq_match_prefix(&hit, cache, b, toks, 12), KVRT_ERR_INVALID_STATE); /* not empty */
    EXPECT_ERR(kvrt_cache_seq_match_prefix(NULL, cache, b, toks, 12), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(kvrt_cache_seq_match_prefix(&hit, cache, 8888, toks, 12), KVRT_ERR_NOT_FOUND);
    EXPECT_ERR(kvrt_cache_seq_match_prefix(&hit, FOREIGN_CACHE, b, toks, 12), KVRT_ERR_BAD_HANDLE);
    st.struct_size = sizeof st;
    EXPECT_OK(kvrt_cache_stats_get(&st, cache));
    EXPECT(st.queried_tokens == 12 && st.hit_tokens == 8);
    EXPECT(st.blocks_in_use == 3); /* b shares a's two full blocks */
    EXPECT(st.n_sequences == 2);

    /* _v2: whole blocks, or on up to the first changed token (KVRT_MATCH_SUB_BLOCK) */
    {
        int32_t edited[12];
        uint64_t e = 0;
        float k[8] = {0}, v[8] = {0};
        memcpy(edited, toks, sizeof edited);
        edited[6] = 4242; /* inside a's second full block (positions 4..7) */
        EXPECT_OK(kvrt_cache_lookup_prefix_v2(&hit, cache, NULL, edited, 12, KVRT_MATCH_WHOLE_BLOCKS));
        EXPECT(hit == 4);
        EXPECT_OK(kvrt_cache_lookup_prefix_v2(&hit, cache, NULL, edited, 12, KVRT_MATCH_SUB_BLOCK));
        EXPECT(hit == 6);
        EXPECT_OK(kvrt_cache_lookup_prefix_v2(&hit, cache, NULL, toks, 7, KVRT_MATCH_SUB_BLOCK));
        EXPECT(hit == 6); /* never the last token */
        EXPECT_ERR(kvrt_cache_lookup_prefix_v2(&hit, cache, NULL, edited, 12, 2u), KVRT_ERR_INVALID_ARGUMENT);
        EXPECT_ERR(kvrt_cache_lookup_prefix_v2(NULL, cache, NULL, edited, 12, 1u), KVRT_ERR_INVALID_ARGUMENT);
        EXPECT_ERR(kvrt_cache_lookup_prefix_v2(&hit, cache, NULL, NULL, 12, 1u), KVRT_ERR_INVALID_ARGUMENT);
        EXPECT_ERR(kvrt_cache_lookup_prefix_v2(&hit, NULL, NULL, edited, 12, 1u), KVRT_ERR_BAD_HANDLE);
        EXPECT_ERR(kvrt_cache_lookup_prefix_v2(&hit, cache, NULL, edited, (size_t)1 << 40, 1u), KVRT_ERR_OUT_OF_RANGE);
        EXPECT_OK(kvrt_cache_seq_create(&e, cache, NULL));
        EXPECT_ERR(kvrt_cache_seq_match_prefix_v2(&hit, cache, e, edited, 12, 0x80u), KVRT_ERR_INVALID_ARGUMENT);
        EXPECT_OK(kvrt_cache_seq_info_get(&info, cache, e));
        EXPECT(info.length == 0); /* refused: nothing attached */
        EXPECT_ERR(kvrt_cache_seq_match_prefix_v2(NULL, cache, e, edited, 12, 1u), KVRT_ERR_INVALID_ARGUMENT);
        EXPECT_ERR(kvrt_cache_seq_match_prefix_v2(&hit, cache, 8888, edited, 12, 1u), KVRT_ERR_NOT_FOUND);
        EXPECT_ERR(kvrt_cache_seq_match_prefix_v2(&hit, FOREIGN_CACHE, e, edited, 12, 1u), KVRT_ERR_BAD_HANDLE);
        EXPECT_OK(kvrt_cache_seq_match_prefix_v2(&hit, cache, e, edited, 12, KVRT_MATCH_SUB_BLOCK));
        EXPECT(hit == 6);
        EXPECT_ERR(kvrt_cache_seq_match_prefix_v2(&hit, cache, e, edited, 12, 1u), KVRT_ERR_INVALID_STATE);
        EXPECT_OK(kvrt_cache_seq_info_get(&info, cache, e));
        EXPECT(info.length == 6 && info.computed == 6 && info.n_blocks == 2);
        /* a's block, shared: immutable until e's append copies it */
        EXPECT_ERR(kvrt_cache_write_rows(cache, e, 0, 6 - 1, 1, k, v), KVRT_ERR_INVALID_STATE);
        EXPECT_OK(kvrt_cache_seq_append(cache, e, edited + 6, 1));
        EXPECT_OK(kvrt_cache_write_rows(cache, e, 0, 6, 1, k, v));
        EXPECT_OK(kvrt_cache_seq_release(cache, e));
    }

    /* fork */
    EXPECT_OK(kvrt_cache_seq_fork(&c, cache, a));
    EXPECT(c != a && c != b);
    EXPECT_ERR(kvrt_cache_seq_fork(NULL, cache, a), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(kvrt_cache_seq_fork(&c, cache, 6666), KVRT_ERR_NOT_FOUND);
    EXPECT_ERR(kvrt_cache_seq_fork(&c, NULL, a), KVRT_ERR_BAD_HANDLE);
    EXPECT_OK(kvrt_cache_seq_info_get(&info, cache, c));
    EXPECT(info.length == 10 && info.computed == 10);

    /* truncate */
    EXPECT_ERR(kvrt_cache_seq_truncate(cache, c, 11), KVRT_ERR_OUT_OF_RANGE);
    EXPECT_ERR(kvrt_cache_seq_truncate(cache, c, -1), KVRT_ERR_OUT_OF_RANGE);
    EXPECT_ERR(kvrt_cache_seq_truncate(cache, 5555, 1), KVRT_ERR_NOT_FOUND);
    EXPECT_ERR(kvrt_cache_seq_truncate(FOREIGN_CACHE, c, 1), KVRT_ERR_BAD_HANDLE);
    EXPECT_OK(kvrt_cache_seq_truncate(cache, c, 5));
    EXPECT_OK(kvrt_cache_seq_info_get(&info, cache, c));
    EXPECT(info.length == 5 && info.computed == 5 && info.n_blocks == 2);

    /* pin / unpin */
    EXPECT_OK(kvrt_cache_pin_prefix(&pin, &pinned, cache, NULL, toks, 8));
    EXPECT(pinned == 8);
    EXPECT_OK(kvrt_cache_seq_info_get(&info, cache, pin));
    EXPECT(info.is_pin == 1 && info.length == 8);
    EXPECT_ERR(kvrt_cache_pin_prefix(&pin, &pinned, cache, &keys, toks, 8), KVRT_ERR_NOT_FOUND); /* salted: nothing */
    EXPECT_ERR(kvrt_cache_pin_prefix(NULL, &pinned, cache, NULL, toks, 8), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(kvrt_cache_pin_prefix(&pin, &pinned, NULL, NULL, toks, 8), KVRT_ERR_BAD_HANDLE);
    EXPECT_ERR(kvrt_cache_seq_release(cache, pin), KVRT_ERR_NOT_FOUND); /* a pin is not a sequence */
    EXPECT_ERR(kvrt_cache_unpin(cache, a), KVRT_ERR_NOT_FOUND);         /* a sequence is not a pin */
    EXPECT_ERR(kvrt_cache_unpin(NULL, pin), KVRT_ERR_BAD_HANDLE);
    EXPECT_OK(kvrt_cache_unpin(cache, pin));
    EXPECT_ERR(kvrt_cache_unpin(cache, pin), KVRT_ERR_NOT_FOUND);

    /* release: double release and foreign handles */
    EXPECT_OK(kvrt_cache_seq_release(cache, a));
    EXPECT_ERR(kvrt_cache_seq_release(cache, a), KVRT_ERR_NOT_FOUND);
    EXPECT_ERR(kvrt_cache_seq_release(cache, 0), KVRT_ERR_NOT_FOUND);
    EXPECT_ERR(kvrt_cache_seq_release(NULL, b), KVRT_ERR_BAD_HANDLE);
    EXPECT_ERR(kvrt_cache_seq_release(FOREIGN_CACHE, b), KVRT_ERR_BAD_HANDLE);
    EXPECT_OK(kvrt_cache_seq_release(cache, b));
    EXPECT_OK(kvrt_cache_seq_release(cache, c));
    EXPECT_OK(kvrt_cache_stats_get(&st, cache));
    EXPECT(st.bytes_in_use == 0 && st.n_sequences == 0 && st.n_pins == 0);
    /* a's two full computed blocks, and its last block, holding rows 8-9: a released it when no
     * other sequence held it, so it is cached for sub-block hits (a tail block). e's last block
     * is not: a's second block already starts with e's computed rows 4-5. */
    EXPECT(st.bytes_cached == 3 * 512);
    EXPECT(st.bytes_free + st.bytes_cached + st.bytes_in_use == st.budget_bytes);
    EXPECT_ERR(kvrt_cache_stats_get(NULL, cache), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(kvrt_cache_stats_get(&st, NULL), KVRT_ERR_BAD_HANDLE);
    EXPECT_ERR(kvrt_cache_stats_get(&st, FOREIGN_CACHE), KVRT_ERR_BAD_HANDLE);

    /* CACHE_FULL leaves nothing half-written; evictable blocks make room. */
    EXPECT_OK(kvrt_cache_seq_create(&a, cache, NULL));
    EXPECT_OK(kvrt_cache_seq_append(cache, a, toks + 16, 16)); /* 4 blocks: the 3 free, 1 evicted */
    EXPECT_OK(kvrt_cache_stats_get(&st, cache));
    EXPECT(st.evictions == 1 && st.bytes_free == 0 && st.bytes_cached == 2 * 512);
    EXPECT_ERR(kvrt_cache_seq_append(cache, a, toks, 12), KVRT_ERR_CACHE_FULL);
    EXPECT_OK(kvrt_cache_seq_info_get(&info, cache, a));
    EXPECT(info.length == 16);
    EXPECT_OK(kvrt_cache_seq_append(cache, a, toks, 8)); /* evicts the 2 cached blocks left */
    EXPECT_OK(kvrt_cache_stats_get(&st, cache));
    EXPECT(st.evictions == 3 && st.bytes_free == 0 && st.bytes_cached == 0);

    /* A destroyed cache handle is detected. */
    kvrt_cache_destroy(cache);
    EXPECT_ERR(kvrt_cache_seq_append(cache, a, toks, 1), KVRT_ERR_BAD_HANDLE);
    EXPECT_ERR(kvrt_cache_stats_get(&st, cache), KVRT_ERR_BAD_HANDLE);
}

/* Window, bank, reader and indexer layers through the C API. */
static void test_ced_layout(void) {
    kvrt_cache_layout *l = NULL;
    kvrt_cache *cache = NULL;
    kvrt_cache_layer_config c;
    kvrt_cache_stats st;
    kvrt_cache_layer_info li;
    int32_t win = -1, src = -1, rd = -1, ix = -1, shw = -1;
    int32_t toks[64];
    uint64_t s = 0;
    float row[16], out[16];
    const void *table[8];
    size_t written = 0;
    int i;
    for (i = 0; i < 64; i++) toks[i] = i;
    EXPECT_OK(kvrt_cache_layout_create(&l, 8));
    c = layer(KVRT_LAYER_WINDOW, 1, 4);
    c.window = 8;
    EXPECT_OK(kvrt_cache_layout_add_layers(&win, l, &c, 2));
    c = layer(KVRT_LAYER_BANK_SOURCE, 1, 16);
    c.ratio = 2;
    EXPECT_OK(kvrt_cache_layout_add_layers(&src, l, &c, 1));
    c = layer(KVRT_LAYER_BANK_READER, 0, 0);
    c.source = src;
    EXPECT_OK(kvrt_cache_layout_add_layers(&rd, l, &c, 3));
    c = layer(KVRT_LAYER_INDEXER_KEYS, 1, 8);
    c.source = src;
    EXPECT_OK(kvrt_cache_layout_add_layers(&ix, l, &c, 1));
    c.source = win; /* not a bank */
    EXPECT_ERR(kvrt_cache_layout_add_layers(NULL, l, &c, 1), KVRT_ERR_INVALID_ARGUMENT);
    c = layer(KVRT_LAYER_WINDOW, 1, 4);
    c.window = 8;
    c.shared_kv = 2;
    EXPECT_ERR(kvrt_cache_layout_add_layers(NULL, l, &c, 1), KVRT_ERR_INVALID_ARGUMENT);
    c.shared_kv = 1; /* a CED window: one row is K and V */
    EXPECT_OK(kvrt_cache_layout_add_layers(&shw, l, &c, 1));
    EXPECT_OK(kvrt_cache_create(&cache, l, NULL));
    kvrt_cache_layout_destroy(l);
    st.struct_size = sizeof st;
    EXPECT_OK(kvrt_cache_stats_get(&st, cache));
    EXPECT(st.kinds[KVRT_LAYER_WINDOW].bytes_per_token == 2.0 * 2 * 4 * 4 + 4 * 4);
    EXPECT(st.kinds[KVRT_LAYER_BANK_SOURCE].bytes_per_token == 16.0 * 4 / 2);
    EXPECT(st.kinds[KVRT_LAYER_INDEXER_KEYS].bytes_per_token == 8.0 * 4 / 2);
    EXPECT(st.kinds[KVRT_LAYER_BANK_READER].n_layers == 3);
    EXPECT(st.n_managers == 3);
    li.struct_size = sizeof li;
    EXPECT_OK(kvrt_cache_layer_info_get(&li, cache, rd));
    EXPECT(li.kind == KVRT_LAYER_BANK_READER && li.row_layer == src && li.ratio == 2 && li.rows_per_block == 4);
    EXPECT(li.separate_v == 0 && li.k_offset == li.v_offset);

    EXPECT_OK(kvrt_cache_seq_create(&s, cache, NULL));
    EXPECT_OK(kvrt_cache_seq_append(cache, s, toks, 20)); /* 10 bank rows */
    for (i = 0; i < 16; i++) row[i] = (float)i * 0.5f;
    EXPECT_OK(kvrt_cache_write_rows(cache, s, src, 9, 1, row, NULL));
    EXPECT_ERR(kvrt_cache_write_rows(cache, s, src, 10, 1, row, NULL), KVRT_ERR_OUT_OF_RANGE);
    EXPECT_ERR(kvrt_cache_write_rows(cache, s, src, 9, 1, row, row), KVRT_ERR_INVALID_ARGUMENT); /* K = V */
    EXPECT_ERR(kvrt_cache_write_rows(cache, s, rd, 9, 1, row, NULL), KVRT_ERR_INVALID_ARGUMENT); /* reader */
    EXPECT_OK(kvrt_cache_read_rows(out, NULL, cache, s, rd + 1, 9, 1)); /* a reader reads its source */
    EXPECT(memcmp(row, out, sizeof row) == 0);
    EXPECT_ERR(kvrt_cache_read_rows(out, out, cache, s, src, 9, 1), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_OK(kvrt_cache_write_rows(cache, s, ix, 0, 1, row, NULL));
    EXPECT_OK(kvrt_cache_layer_info_get(&li, cache, shw));
    EXPECT(li.separate_v == 0 && li.k_offset == li.v_offset && li.row_bytes == 16);
    EXPECT_OK(kvrt_cache_write_rows(cache, s, shw, 19, 1, row, NULL));
    EXPECT_ERR(kvrt_cache_write_rows(cache, s, shw, 19, 1, row, row), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_OK(kvrt_cache_read_rows(out, NULL, cache, s, shw, 19, 1));
    EXPECT(memcmp(row, out, 16) == 0);
    EXPECT_OK(kvrt_cache_seq_mark_computed(cache, s, 20));
    EXPECT_OK(kvrt_cache_seq_append(cache, s, toks + 20, 20)); /* window 8: blocks before 13 dropped */
    EXPECT_OK(kvrt_cache_block_table(table, 8, &written, cache, s, win));
    EXPECT(written == 5 && table[0] == NULL && table[1] != NULL);
    EXPECT_ERR(kvrt_cache_read_rows(out, NULL, cache, s, win, 2, 1), KVRT_ERR_OUT_OF_RANGE); /* dropped */
    EXPECT_OK(kvrt_cache_block_table(table, 8, &written, cache, s, src));
    EXPECT(written == 5 && table[0] != NULL);
    /* The window no longer holds what a query at 4 needs. */
    EXPECT_ERR(kvrt_cache_seq_truncate(cache, s, 4), KVRT_ERR_INVALID_STATE);
    EXPECT_OK(kvrt_cache_seq_truncate(cache, s, 0));
    kvrt_cache_destroy(cache);
}

/* State files: save/load of the prefix cache and of one sequence. */
static void test_state(void) {
    const char *ppath = "kvrt_c_test_prefixes.kvrt";
    const char *spath = "kvrt_c_test_seq.kvrt";
    kvrt_cache *a = make_cache(), *b = make_cache();
    int32_t toks[12];
    uint64_t s = 0, t = 0, n = 0;
    int64_t hit = 0;
    kvrt_cache_keys keys;
    kvrt_cache_seq_info info;
    float k[8], v[8], k2[8];
    int i;
    FILE *f;
    for (i = 0; i < 12; i++) toks[i] = 7 * i;
    kvrt_cache_keys_init(&keys, sizeof keys);
    keys.fingerprint_lo = 5;
    keys.fingerprint_hi = 6;
    EXPECT_OK(kvrt_cache_seq_create(&s, a, &keys));
    EXPECT_OK(kvrt_cache_seq_append(a, s, toks, 10));
    for (i = 0; i < 10; i++) {
        fill_rows(k, v, 1, (float)i);
        EXPECT_OK(kvrt_cache_write_rows(a, s, 0, i, 1, k, v));
        EXPECT_OK(kvrt_cache_write_rows(a, s, 1, i, 1, k, v));
    }
    EXPECT_OK(kvrt_cache_seq_mark_computed(a, s, 10));

    /* prefixes */
    EXPECT_OK(kvrt_cache_save_prefixes(&n, a, ppath, 5, 6));
    EXPECT(n == 2);
    EXPECT_OK(kvrt_cache_save_prefixes(NULL, a, ppath, 5, 6));
    EXPECT_ERR(kvrt_cache_save_prefixes(&n, a, NULL, 5, 6), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(kvrt_cache_save_prefixes(&n, FOREIGN_CACHE, ppath, 5, 6), KVRT_ERR_BAD_HANDLE);
    EXPECT_ERR(kvrt_cache_save_prefixes(&n, a, "/nonexistent-dir/p.kvrt", 5, 6), KVRT_ERR_IO);
    EXPECT_ERR(kvrt_cache_load_prefixes(&n, b, ppath, 5, 7), KVRT_ERR_MISMATCH);
    EXPECT_ERR(kvrt_cache_load_prefixes(&n, b, "no-such-file.kvrt", 5, 6), KVRT_ERR_NOT_FOUND);
    EXPECT_ERR(kvrt_cache_load_prefixes(&n, b, NULL, 5, 6), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(kvrt_cache_load_prefixes(&n, NULL, ppath, 5, 6), KVRT_ERR_BAD_HANDLE);
    EXPECT_OK(kvrt_cache_lookup_prefix(&hit, b, &keys, toks, 12));
    EXPECT(hit == 0);
    EXPECT_OK(kvrt_cache_load_prefixes(&n, b, ppath, 5, 6));
    EXPECT(n == 2);
    EXPECT_OK(kvrt_cache_lookup_prefix(&hit, b, &keys, toks, 12));
    EXPECT(hit == 8);

    /* sequences */
    EXPECT_OK(kvrt_cache_seq_save(a, s, spath));
    EXPECT_ERR(kvrt_cache_seq_save(a, 999, spath), KVRT_ERR_NOT_FOUND);
    EXPECT_ERR(kvrt_cache_seq_save(a, s, NULL), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(kvrt_cache_seq_save(NULL, s, spath), KVRT_ERR_BAD_HANDLE);
    EXPECT_ERR(kvrt_cache_seq_load(&t, b, spath, 5, 5), KVRT_ERR_MISMATCH);
    EXPECT_ERR(kvrt_cache_seq_load(&t, b, ppath, 5, 6), KVRT_ERR_MISMATCH); /* a prefix file */
    EXPECT_ERR(kvrt_cache_seq_load(NULL, b, spath, 5, 6), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(kvrt_cache_seq_load(&t, b, NULL, 5, 6), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(kvrt_cache_seq_load(&t, FOREIGN_CACHE, spath, 5, 6), KVRT_ERR_BAD_HANDLE);
    EXPECT_OK(kvrt_cache_seq_load(&t, b, spath, 5, 6));
    info.struct_size = sizeof info;
    EXPECT_OK(kvrt_cache_seq_info_get(&info, b, t));
    EXPECT(info.length == 10 && info.computed == 10);
    EXPECT_OK(kvrt_cache_read_rows(k2, NULL, b, t, 1, 9, 1));
    fill_rows(k, v, 1, 9.0f);
    EXPECT(memcmp(k, k2, sizeof k) == 0);
    /* A corrupted file is a clean miss. */
    f = fopen(spath, "r+b");
    EXPECT(f != NULL);
    if (f) {
        fseek(f, 60, SEEK_SET);
        fputc(0xAB, f);
        fclose(f);
    }
    EXPECT_ERR(kvrt_cache_seq_load(&t, b, spath, 5, 6), KVRT_ERR_BAD_FORMAT);
    remove(ppath);
    remove(spath);
    kvrt_cache_destroy(a);
    kvrt_cache_destroy(b);
}

int main(void) {
    test_configs();
    test_state();
    test_layouts();
    test_sequences();
    test_ced_layout();
    if (failures) {
        fprintf(stderr, "test_cache: %d failure(s)\n", failures);
        return 1;
    }
    printf("test_cache: ok\n");
    return 0;
}
