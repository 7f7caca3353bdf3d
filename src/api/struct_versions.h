/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The kvrt authors */

/* The smallest struct_size kvrt accepts for each struct that carries one: the
 * struct's size at the version that introduced it, measured as the end of its last
 * field then (a caller's sizeof may add trailing padding; every size from this
 * minimum up to the current sizeof is accepted). Fields are only ever appended, so a
 * binary built against an older header keeps working: its smaller struct_size
 * selects the fields it knows and the rest take their defaults.
 *
 * One line per struct; scripts/check_api.py (ctest abi.api_conventions) checks that
 * every struct of include/kvrt with a struct_size has one, and tests/c/
 * test_struct_sizes.c passes a struct of each pinned size to the library. When a
 * field is appended, this file does not change; a new struct gets a line naming its
 * last field at the version that adds it.
 *
 * C99 and C++ (the C tests include it too). */
#ifndef KVRT_SRC_API_STRUCT_VERSIONS_H
#define KVRT_SRC_API_STRUCT_VERSIONS_H

#include <stddef.h>

#include "kvrt/kvrt.h"

/* Bytes of T up to and including `field`. */
#define KVRT_STRUCT_END(T, field) (offsetof(T, field) + sizeof(((T *)0)->field))

/* ---- 0.1 ---- */
#define KVRT_MIN_SIZE_kvrt_cache_layer_config KVRT_STRUCT_END(kvrt_cache_layer_config, shared_kv)
#define KVRT_MIN_SIZE_kvrt_cache_config KVRT_STRUCT_END(kvrt_cache_config, reserved0)
#define KVRT_MIN_SIZE_kvrt_cache_keys KVRT_STRUCT_END(kvrt_cache_keys, adapter_id)
#define KVRT_MIN_SIZE_kvrt_cache_seq_info KVRT_STRUCT_END(kvrt_cache_seq_info, reserved0)
#define KVRT_MIN_SIZE_kvrt_cache_layer_info KVRT_STRUCT_END(kvrt_cache_layer_info, manager)
#define KVRT_MIN_SIZE_kvrt_cache_stats KVRT_STRUCT_END(kvrt_cache_stats, kinds)
#define KVRT_MIN_SIZE_kvrt_ced_memory KVRT_STRUCT_END(kvrt_ced_memory, dense_bytes_per_token)
#define KVRT_MIN_SIZE_kvrt_model_config KVRT_STRUCT_END(kvrt_model_config, progress_user_data)
#define KVRT_MIN_SIZE_kvrt_model_info KVRT_STRUCT_END(kvrt_model_info, fingerprint)
#define KVRT_MIN_SIZE_kvrt_context_config KVRT_STRUCT_END(kvrt_context_config, progress_user_data)
#define KVRT_MIN_SIZE_kvrt_request_stats KVRT_STRUCT_END(kvrt_request_stats, reserved0)
#define KVRT_MIN_SIZE_kvrt_sampler_config KVRT_STRUCT_END(kvrt_sampler_config, seed)
#define KVRT_MIN_SIZE_kvrt_generate_config KVRT_STRUCT_END(kvrt_generate_config, user_data)

/* ---- 0.2 ---- */
#define KVRT_MIN_SIZE_kvrt_sampler_stage KVRT_STRUCT_END(kvrt_sampler_stage, n_bias)
#define KVRT_MIN_SIZE_kvrt_context_activity KVRT_STRUCT_END(kvrt_context_activity, calls)
#define KVRT_MIN_SIZE_kvrt_tier_config KVRT_STRUCT_END(kvrt_tier_config, key_prefix)
#define KVRT_MIN_SIZE_kvrt_tier_stats KVRT_STRUCT_END(kvrt_tier_stats, loaded_blocks)

#endif /* KVRT_SRC_API_STRUCT_VERSIONS_H */
