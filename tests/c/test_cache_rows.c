/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The kvrt authors */

#define _POSIX_C_SOURCE 200809L
/* C99 test of the sized row copies kvrt_cache_write_rows_v2 / read_rows_v2
 * (success and every failure: sizes too small by one byte, NULL buffers with a
 * size, V on a K = V layer, bad layer, rows, sequence and handle; nothing is
 * written past the rows or on failure), the deprecated unsized calls still
 * doing what they did (same bytes as _v2), and the one dtype enum: the
 * deprecated KVRT_KV_* names are aliases of kvrt_dtype's values, and a context
 * takes either name (old code keeps compiling and running). */
#include <kvrt/kvrt.h>

/* This file calls the deprecated unsized row functions on purpose. */
#if defined(__GNUC__) || defined(__clang__)
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif

#include "expect.h"

#include <stdio.h>
#include <string.h>

#define CANARY 0xA5

static int all_canary(const unsigned char *p, size_t n) {
    size_t i;
    for (i = 0; i < n; ++i)
        if (p[i] != CANARY) return 0;
    return 1;
}

int main(void) {
    kvrt_cache_layout *lay = NULL;
    kvrt_cache_layer_config lc;
    kvrt_cache_layer_info li, li1;
    kvrt_cache *cache = NULL;
    uint64_t seq = 0;
    int32_t toks[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    unsigned char k[12 * 64], v[12 * 64], k2[12 * 64 + 32], v2[12 * 64 + 32], k3[12 * 64];
    size_t kr, vr, i;
    char path[1024];
    kvrt_model *m = NULL;

    /* Layer 0: K and V rows of 2 heads x 8 f16 (32-byte rows); layer 1: K = V, f32 (32-byte rows);
     * layer 2: K f16 and V f32 (v_row_bytes 64). */
    EXPECT_OK(kvrt_cache_layout_create(&lay, 4));
    kvrt_cache_layer_config_init(&lc, sizeof lc);
    lc.n_kv_heads = 2;
    lc.head_dim = 8;
    EXPECT_OK(kvrt_cache_layout_add_layers(NULL, lay, &lc, 1));
    lc.n_kv_heads = 1;
    lc.dtype = KVRT_DTYPE_F32;
    lc.shared_kv = 1;
    EXPECT_OK(kvrt_cache_layout_add_layers(NULL, lay, &lc, 1));
    lc.n_kv_heads = 2;
    lc.dtype = KVRT_DTYPE_F16;
    lc.shared_kv = 0;
    lc.v_dtype = KVRT_DTYPE_F32;
    EXPECT_OK(kvrt_cache_layout_add_layers(NULL, lay, &lc, 1));
    EXPECT_OK(kvrt_cache_create(&cache, lay, NULL));
    EXPECT_OK(kvrt_cache_seq_create(&seq, cache, NULL));
    EXPECT_OK(kvrt_cache_seq_append(cache, seq, toks, 10));
    kvrt_cache_layer_info_init(&li, sizeof li);
    EXPECT_OK(kvrt_cache_layer_info_get(&li, cache, 0));
    kr = (size_t)li.row_bytes;
    vr = (size_t)li.v_row_bytes;
    EXPECT(kr == 32 && vr == 32 && li.separate_v == 1);
    kvrt_cache_layer_info_init(&li1, sizeof li1);
    EXPECT_OK(kvrt_cache_layer_info_get(&li1, cache, 2));
    EXPECT(li1.row_bytes == 32 && li1.v_row_bytes == 64);
    for (i = 0; i < sizeof k; ++i) {
        k[i] = (unsigned char)(i * 7 + 1);
        v[i] = (unsigned char)(i * 13 + 5);
    }

    /* ---- write_rows_v2: exact sizes succeed; one byte short fails, cache unchanged ---- */
    EXPECT_OK(kvrt_cache_write_rows_v2(cache, seq, 0, 0, 10, k, 10 * kr, v, 10 * vr));
    EXPECT_OK(kvrt_cache_write_rows_v2(cache, seq, 0, 2, 3, k + 512, sizeof k, v + 512, sizeof v - 512)); /* larger is fine */
    EXPECT_ERR(kvrt_cache_write_rows_v2(cache, seq, 0, 0, 4, v, 4 * kr - 1, k, 4 * vr), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT(strstr(kvrt_last_error(), "need") != NULL);
    EXPECT_ERR(kvrt_cache_write_rows_v2(cache, seq, 0, 0, 4, v, 4 * kr, k, 4 * vr - 1), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(kvrt_cache_write_rows_v2(cache, seq, 0, 0, 1, NULL, 0, v, vr), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(kvrt_cache_write_rows_v2(cache, seq, 0, 0, 1, k, kr, NULL, vr), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(kvrt_cache_write_rows_v2(cache, seq, 0, 0, 1, k, kr, NULL, 0), KVRT_ERR_INVALID_ARGUMENT); /* V missing */
    EXPECT_ERR(kvrt_cache_write_rows_v2(cache, seq, 1, 0, 1, k, 32, v, 32), KVRT_ERR_INVALID_ARGUMENT);  /* K = V */
    EXPECT_ERR(kvrt_cache_write_rows_v2(cache, seq, 3, 0, 1, k, kr, v, vr), KVRT_ERR_OUT_OF_RANGE);     /* layer */
    EXPECT_ERR(kvrt_cache_write_rows_v2(cache, seq, -1, 0, 1, k, kr, v, vr), KVRT_ERR_OUT_OF_RANGE);
    EXPECT_ERR(kvrt_cache_write_rows_v2(cache, seq, 0, 9, 2, k, 2 * kr, v, 2 * vr), KVRT_ERR_OUT_OF_RANGE); /* row 10 */
    EXPECT_ERR(kvrt_cache_write_rows_v2(cache, seq, 0, -1, 1, k, kr, v, vr), KVRT_ERR_OUT_OF_RANGE);
    EXPECT_ERR(kvrt_cache_write_rows_v2(cache, seq, 0, 0, -1, k, kr, v, vr), KVRT_ERR_OUT_OF_RANGE);
    EXPECT_ERR(kvrt_cache_write_rows_v2(cache, seq, 0, 0, INT64_MAX, k, SIZE_MAX, v, SIZE_MAX), KVRT_ERR_OUT_OF_RANGE);
    EXPECT_ERR(kvrt_cache_write_rows_v2(cache, seq, 0, 0, INT64_MAX / 2, k, sizeof k, v, sizeof v), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(kvrt_cache_write_rows_v2(cache, 999, 0, 0, 1, k, kr, v, vr), KVRT_ERR_NOT_FOUND);
    EXPECT_ERR(kvrt_cache_write_rows_v2(NULL, seq, 0, 0, 1, k, kr, v, vr), KVRT_ERR_BAD_HANDLE);
    EXPECT_OK(kvrt_cache_write_rows_v2(cache, seq, 0, 0, 0, k, 0, v, 0)); /* no rows: no bytes needed */
    EXPECT_OK(kvrt_cache_write_rows_v2(cache, seq, 1, 0, 10, k, 10 * 32, NULL, 0));
    EXPECT_OK(kvrt_cache_write_rows_v2(cache, seq, 2, 0, 10, k, 10 * 32, v, 10 * 64));
    EXPECT_ERR(kvrt_cache_write_rows_v2(cache, seq, 2, 0, 10, k, 10 * 32, v, 10 * 64 - 1), KVRT_ERR_INVALID_ARGUMENT);

    /* ---- read_rows_v2: the bytes written, nothing past the rows ---- */
    memset(k2, CANARY, sizeof k2);
    memset(v2, CANARY, sizeof v2);
    EXPECT_OK(kvrt_cache_read_rows_v2(k2, 2 * kr, v2, 2 * vr, cache, seq, 0, 0, 2));
    EXPECT(memcmp(k2, k, 2 * kr) == 0 && memcmp(v2, v, 2 * vr) == 0);
    EXPECT(all_canary(k2 + 2 * kr, sizeof k2 - 2 * kr) && all_canary(v2 + 2 * vr, sizeof v2 - 2 * vr));
    EXPECT_OK(kvrt_cache_read_rows_v2(k2, sizeof k2, v2, sizeof v2, cache, seq, 0, 2, 3));
    EXPECT(memcmp(k2, k + 512, 3 * kr) == 0 && memcmp(v2, v + 512, 3 * vr) == 0);
    memset(k2, CANARY, sizeof k2);
    memset(v2, CANARY, sizeof v2);
    EXPECT_ERR(kvrt_cache_read_rows_v2(k2, 2 * kr - 1, v2, 2 * vr, cache, seq, 0, 0, 2), KVRT_ERR_BUFFER_TOO_SMALL);
    EXPECT(strstr(kvrt_last_error(), "64") != NULL); /* names the bytes needed */
    EXPECT_ERR(kvrt_cache_read_rows_v2(k2, 2 * kr, v2, 2 * vr - 1, cache, seq, 0, 0, 2), KVRT_ERR_BUFFER_TOO_SMALL);
    EXPECT_ERR(kvrt_cache_read_rows_v2(k2, 10 * 32, v2, 10 * 64 - 1, cache, seq, 2, 0, 10), KVRT_ERR_BUFFER_TOO_SMALL);
    EXPECT(all_canary(k2, sizeof k2) && all_canary(v2, sizeof v2)); /* nothing written on failure */
    EXPECT_ERR(kvrt_cache_read_rows_v2(NULL, 0, NULL, 0, cache, seq, 0, 0, 1), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(kvrt_cache_read_rows_v2(k2, kr, NULL, vr, cache, seq, 0, 0, 1), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(kvrt_cache_read_rows_v2(k2, 32, v2, 32, cache, seq, 1, 0, 1), KVRT_ERR_INVALID_ARGUMENT); /* K = V */
    EXPECT_ERR(kvrt_cache_read_rows_v2(k2, kr, v2, vr, cache, seq, 3, 0, 1), KVRT_ERR_OUT_OF_RANGE);
    EXPECT_ERR(kvrt_cache_read_rows_v2(k2, 2 * kr, v2, 2 * vr, cache, seq, 0, 9, 2), KVRT_ERR_OUT_OF_RANGE);
    EXPECT_ERR(kvrt_cache_read_rows_v2(k2, kr, v2, vr, cache, 999, 0, 0, 1), KVRT_ERR_NOT_FOUND);
    EXPECT_ERR(kvrt_cache_read_rows_v2(k2, kr, v2, vr, NULL, seq, 0, 0, 1), KVRT_ERR_BAD_HANDLE);
    EXPECT(all_canary(k2, sizeof k2) && all_canary(v2, sizeof v2));
    EXPECT_OK(kvrt_cache_read_rows_v2(k2, 10 * kr, NULL, 0, cache, seq, 0, 0, 10)); /* V skipped */
    EXPECT(all_canary(v2, sizeof v2));
    EXPECT_OK(kvrt_cache_read_rows_v2(k2, 10 * 32, NULL, 0, cache, seq, 1, 0, 10));
    EXPECT(memcmp(k2, k, 10 * 32) == 0);
    EXPECT_OK(kvrt_cache_read_rows_v2(k2, 10 * 32, v2, 10 * 64, cache, seq, 2, 0, 10));
    EXPECT(memcmp(k2, k, 10 * 32) == 0 && memcmp(v2, v, 10 * 64) == 0);

    /* ---- the deprecated unsized calls: same rows, same results ---- */
    EXPECT_OK(kvrt_cache_read_rows(k3, NULL, cache, seq, 0, 0, 10));
    EXPECT_OK(kvrt_cache_read_rows_v2(k2, sizeof k2, NULL, 0, cache, seq, 0, 0, 10));
    EXPECT(memcmp(k2, k3, 10 * kr) == 0);
    EXPECT_OK(kvrt_cache_write_rows(cache, seq, 0, 4, 1, v, k));
    EXPECT_OK(kvrt_cache_read_rows_v2(k2, kr, v2, vr, cache, seq, 0, 4, 1));
    EXPECT(memcmp(k2, v, kr) == 0 && memcmp(v2, k, vr) == 0);
    EXPECT_ERR(kvrt_cache_read_rows(k3, NULL, cache, seq, 0, 9, 2), KVRT_ERR_OUT_OF_RANGE);

    kvrt_cache_destroy(cache);
    kvrt_cache_layout_destroy(lay);

    /* ---- one dtype enum: the KVRT_KV_* names are kvrt_dtype's values ---- */
    EXPECT(KVRT_KV_F32 == KVRT_DTYPE_F32 && KVRT_KV_F16 == KVRT_DTYPE_F16 && KVRT_KV_BF16 == KVRT_DTYPE_BF16);
    EXPECT(KVRT_KV_I8 == KVRT_DTYPE_I8 && KVRT_KV_FP8_E4M3 == KVRT_DTYPE_FP8_E4M3);
    expect_model_path(path, sizeof path);
    if (kvrt_model_load(&m, path, NULL) != KVRT_OK) {
        fprintf(stderr, "test_cache_rows: cannot load %s: %s\n", path, kvrt_last_error());
        return 1;
    }
    {
        kvrt_context_config cc;
        kvrt_context *a = NULL, *b = NULL, *c = NULL;
        kvrt_cache *ca = NULL, *cb = NULL;
        kvrt_cache_layer_info la, lb;
        kvrt_context_config_init(&cc, sizeof cc);
        cc.n_ctx = 64;
        cc.kv_dtype = KVRT_KV_F32; /* the old name */
        EXPECT_OK(kvrt_context_create(&a, m, &cc));
        cc.kv_dtype = KVRT_DTYPE_F32; /* the one enum */
        cc.v_dtype = KVRT_DTYPE_F16;
        EXPECT_OK(kvrt_context_create(&b, m, &cc));
        EXPECT_OK(kvrt_context_get_cache(&ca, a));
        EXPECT_OK(kvrt_context_get_cache(&cb, b));
        kvrt_cache_layer_info_init(&la, sizeof la);
        kvrt_cache_layer_info_init(&lb, sizeof lb);
        EXPECT_OK(kvrt_cache_layer_info_get(&la, ca, 0));
        EXPECT_OK(kvrt_cache_layer_info_get(&lb, cb, 0));
        EXPECT(la.dtype == KVRT_DTYPE_F32 && la.v_dtype == KVRT_DTYPE_F32);
        EXPECT(lb.dtype == KVRT_DTYPE_F32 && lb.v_dtype == KVRT_KV_F16);
        cc.kv_dtype = KVRT_DTYPE_FP4; /* a cache-only dtype: refused for a context */
        cc.v_dtype = -1;
        EXPECT_ERR(kvrt_context_create(&c, m, &cc), KVRT_ERR_INVALID_ARGUMENT);
        EXPECT(c == NULL);
        kvrt_context_destroy(b);
        kvrt_context_destroy(a);
    }
    kvrt_model_destroy(m);
    if (failures) fprintf(stderr, "test_cache_rows: %d failures\n", failures);
    return failures ? 1 : 0;
}
