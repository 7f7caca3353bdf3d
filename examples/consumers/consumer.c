/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The kvrt authors */

/* A tiny kvrt consumer: checks the header and library versions agree, then
 * makes a one-layer KV cache and reports its budget. Shared by the CMake and
 * Makefile consumers. Exit code 0 on success. */
#include <stdio.h>
#include <kvrt/kvrt.h>

int main(void) {
    kvrt_cache_layout *layout = NULL;
    kvrt_cache_layer_config layer;
    kvrt_cache *cache = NULL;
    kvrt_cache_stats stats;
    if (kvrt_version() != KVRT_VERSION_NUMBER) {
        fprintf(stderr, "header %d.%d.%d but library %s\n", KVRT_VERSION_MAJOR, KVRT_VERSION_MINOR,
                KVRT_VERSION_PATCH, kvrt_version_string());
        return 1;
    }
    if (kvrt_cache_layout_create(&layout, 16) != KVRT_OK ||
        kvrt_cache_layer_config_init(&layer, sizeof layer) != KVRT_OK) {
        fprintf(stderr, "kvrt: %s\n", kvrt_last_error());
        return 1;
    }
    layer.n_kv_heads = 2;
    layer.head_dim = 64;
    if (kvrt_cache_layout_add_layers(NULL, layout, &layer, 4) != KVRT_OK ||
        kvrt_cache_create(&cache, layout, NULL) != KVRT_OK) {
        fprintf(stderr, "kvrt: %s\n", kvrt_last_error());
        kvrt_cache_layout_destroy(layout);
        return 1;
    }
    kvrt_cache_layout_destroy(layout);
    stats.struct_size = sizeof stats;
    if (kvrt_cache_stats_get(&stats, cache) != KVRT_OK) {
        fprintf(stderr, "kvrt: %s\n", kvrt_last_error());
        kvrt_cache_destroy(cache);
        return 1;
    }
    printf("kvrt %s: cache of %llu bytes, %.0f bytes per token\n", kvrt_version_string(),
           (unsigned long long)stats.budget_bytes, stats.bytes_per_token);
    kvrt_cache_destroy(cache);
    return 0;
}
