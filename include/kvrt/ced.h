/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The kvrt authors */

/*
 * kvrt/ced.h — what CED models (causal encoder-decoder, DeepSeek-V4.1-Flash
 * style; docs/ced_runtime.md) add to the one model and context API.
 *
 * A CED GGUF (general.architecture "ced"; metadata keys and tensor names in
 * docs/ced_gguf.md) loads with kvrt_model_load() and runs in a kvrt_context
 * like any other model: prefill (keeping the common prefix), decode, logits,
 * sampling, generate, stats, salt, progress. Two context options choose the
 * CED behaviours (kvrt_context_config.ced_prefill_mode / ced_resume, below);
 * the context's KV element type (kv_dtype) is the type of the window rows and,
 * unless kvrt_context_config.bank_dtype says otherwise (e.g. 4-bit banks), of the
 * bank rows and indexer keys. A CED file without a vocabulary (as
 * `kvrt ced-init` writes) runs on token ids; tokenize/chat calls then return
 * KVRT_ERR_UNSUPPORTED. `kvrt ced-init` writes random-weight CED models.
 *
 * C99; no varargs, no bitfields, no structs by value.
 */
#ifndef KVRT_CED_H
#define KVRT_CED_H

#include "kvrt/common.h"
#include "kvrt/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Prefill semantics (CED.md): every layer over every prompt token (exact), or
 * CED prefill (encoder over all N tokens, decoder over the last W only).
 * Values of kvrt_context_config.ced_prefill_mode. */
typedef enum kvrt_ced_prefill_mode {
    KVRT_CED_PREFILL_EXACT = 0,
    KVRT_CED_PREFILL_CED = 1
} kvrt_ced_prefill_mode;

/* How a prefill of a CED model restores the window state on a prefix-cache hit
 * (the prefix cache holds the banks and indexer keys). Values of
 * kvrt_context_config.ced_resume. */
typedef enum kvrt_ced_resume {
    KVRT_CED_RESUME_AUTO = 0,           /* exact from a window checkpoint at Hw when the bank hit Hb - Hw <= W +
                                           a block (no more work than a replay), else bounded replay at Hb.
                                           In CED mode checkpoints are used at H <= N - W only. */
    KVRT_CED_RESUME_CHECKPOINT = 1,     /* exact resumption only */
    KVRT_CED_RESUME_BOUNDED_REPLAY = 2, /* bank hit of H, replay [H-W, H) with window floor H-W (approximate) */
    KVRT_CED_RESUME_COLD = 3            /* no reuse */
} kvrt_ced_resume;

/* KV memory of a CED model by component, at a given element type, with a
 * dense GQA model of the same width and depth beside it. */
typedef struct kvrt_ced_memory {
    size_t struct_size;
    uint32_t n_layers;
    uint32_t n_sources;                  /* banks; per bank see kvrt_ced_memory_source */
    uint32_t window;                     /* W */
    uint32_t elem_bytes;                 /* bytes of one cached element (the dtype asked for; 1 for the
                                            quantised types, whose scales the per-token figures include) */
    double main_bytes_per_token;         /* all banks' main rows (each / its ratio) */
    double indexer_bytes_per_token;      /* all banks' indexer keys */
    double global_bytes_per_token;       /* main + indexer: the prefix-cacheable KV */
    uint64_t window_bytes_per_sequence;  /* per-sequence constant: layers x W rows of the entry width */
    uint32_t dense_kv_heads;             /* the dense GQA reference: 64-wide heads, n_kv = max(1, E/64/4) */
    uint32_t dense_head_dim;
    double dense_bytes_per_token;        /* 2 x layers x n_kv x 64 x elem_bytes */
} kvrt_ced_memory;

/* Prepares *out for kvrt_ced_memory_get: sets out->struct_size = struct_size and
 * zeroes the rest of its first struct_size bytes. struct_size: sizeof(kvrt_ced_memory)
 * as the caller was compiled with (any size from this struct's first published one to
 * the library's). Returns KVRT_OK; KVRT_ERR_INVALID_ARGUMENT (NULL out, another
 * struct_size; nothing written). Thread-safe. O(1). */
KVRT_API kvrt_status kvrt_ced_memory_init(kvrt_ced_memory *out, size_t struct_size);

/* Fills *out (set out->struct_size = sizeof *out first) for a CED model whose
 * cached rows are of element type `dtype` (a kvrt_dtype), as a context with
 * kv_dtype = dtype and the default bank_dtype stores them (kvrt/context.h):
 * KVRT_DTYPE_F32, _F16 or _BF16: every row of that type; _I8 or _FP8_E4M3:
 * windows of that type, banks and indexer keys f16; _FP4: 4-bit banks (288 B per
 * 512-wide row, 68 B per 128-wide indexer key: 890 B per token of global KV for
 * the public V4.1 configuration) beside f16 windows. Rows are counted as the
 * cache stores them, scales included.
 * Returns KVRT_OK; KVRT_ERR_INVALID_ARGUMENT (NULL out, a struct_size outside
 * [its first published size, sizeof(kvrt_ced_memory)]: the first struct_size bytes
 * are filled; a dtype kvrt cannot cache for CED);
 * KVRT_ERR_UNSUPPORTED (the model is not a CED model); KVRT_ERR_BAD_HANDLE.
 * Thread-safe. O(layers). */
KVRT_API kvrt_status kvrt_ced_memory_get(kvrt_ced_memory *out, const kvrt_model *model, int32_t dtype);

/* Bank `index` (0 <= index < n_sources) of a CED model: its source layer,
 * ratio and bytes per token of main rows and indexer keys at element type
 * `dtype` (as kvrt_ced_memory_get reads it). Any output may be NULL. Returns KVRT_OK, KVRT_ERR_OUT_OF_RANGE
 * (index), KVRT_ERR_INVALID_ARGUMENT (dtype), KVRT_ERR_UNSUPPORTED (not a CED
 * model), KVRT_ERR_BAD_HANDLE. Thread-safe. O(1). */
KVRT_API kvrt_status kvrt_ced_memory_source(int32_t *layer, int32_t *ratio, double *main_bytes_per_token,
                                            double *indexer_bytes_per_token, const kvrt_model *model,
                                            uint32_t index, int32_t dtype);

#ifdef __cplusplus
}
#endif

#endif /* KVRT_CED_H */
