/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The kvrt authors */

/* Prints "<struct> <sizeof> <alignof>" for every public struct, as the C
 * compiler lays them out. bindings.install writes this to a file that the Rust
 * and Python tests compare with their hand-written declarations. */
#include <stdio.h>
#include <stddef.h>
#include <kvrt/kvrt.h>

#define ROW(T) printf("%s %zu\n", #T, sizeof(T))

int main(void) {
    ROW(kvrt_cache_layer_config);
    ROW(kvrt_cache_config);
    ROW(kvrt_cache_keys);
    ROW(kvrt_cache_seq_info);
    ROW(kvrt_cache_layer_info);
    ROW(kvrt_cache_kind_stats);
    ROW(kvrt_cache_stats);
    ROW(kvrt_model_config);
    ROW(kvrt_model_info);
    ROW(kvrt_chat_message);
    ROW(kvrt_context_config);
    ROW(kvrt_request_stats);
    ROW(kvrt_sampler_config);
    ROW(kvrt_generate_config);
    ROW(kvrt_ced_memory);
    ROW(kvrt_sampler_stage);
    ROW(kvrt_tier_config);
    ROW(kvrt_tier_stats);
    ROW(kvrt_context_activity);
    printf("version %u\n", (unsigned)KVRT_VERSION_NUMBER);
    return 0;
}
