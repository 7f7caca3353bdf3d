/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The kvrt authors */

/*
 * kvrt/process.h — process-wide settings: the log callback and the
 * instruction-set level of the CPU kernels.
 *
 * Logging: kvrt prints nothing by itself. An application that wants to see
 * what the library does (model loads, the ISA chosen, memory reserved for
 * caches, evictions, fallbacks, warnings, and at DEBUG level every failed
 * call's message) installs one callback for the whole process.
 *
 * C99; no varargs, no bitfields, no structs by value.
 */
#ifndef KVRT_PROCESS_H
#define KVRT_PROCESS_H

#include "kvrt/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Logging --------------------------------------------------------------- */

/* Log levels, most verbose first. */
typedef enum kvrt_log_level {
    KVRT_LOG_DEBUG = 0,  /* per call: failed calls' messages, evictions, per-stage timings */
    KVRT_LOG_INFO = 1,   /* per object: model loaded, ISA chosen, cache memory reserved */
    KVRT_LOG_WARN = 2,   /* something degraded: an allocation fallback, an ignored setting */
    KVRT_LOG_ERROR = 3,  /* something failed that no status reports to a caller */
    KVRT_LOG_NONE = 4    /* as min_level: nothing */
} kvrt_log_level;

/* A log message: level (kvrt_log_level), a NUL-terminated UTF-8 line without
 * a trailing newline, valid only during the call (copy it to keep it).
 * Called on the thread of the kvrt call that produced the message, as that
 * call returns (messages are queued during the call, so the callback never
 * runs while kvrt holds a lock; a long generate's messages arrive at its
 * end); calls are serialised (never two at once). It may call any kvrt
 * function, including kvrt_set_log_callback (messages those calls produce
 * are dropped). Must not unwind. */
typedef void (*kvrt_log_fn)(int32_t level, const char *message, void *user_data);

/* Installs fn as the process's log callback for messages at min_level or
 * above (fn NULL, or min_level KVRT_LOG_NONE: nothing is logged, the
 * default). Replaces the previous callback: once this returns the previous one
 * is never called again (a message being delivered to it on another thread
 * finishes first; this call waits for it), so its user_data may be freed.
 * Returns KVRT_OK, KVRT_ERR_INVALID_ARGUMENT (min_level outside
 * [KVRT_LOG_DEBUG, KVRT_LOG_NONE]). Thread-safe. O(1); formatting costs
 * nothing when no callback wants the level. */
KVRT_API kvrt_status kvrt_set_log_callback(int32_t min_level, kvrt_log_fn fn, void *user_data);

/* Static name of a level ("debug", "info", "warn", "error", "none"; "?" for
 * others). Never NULL. Thread-safe. O(1). */
KVRT_API const char *kvrt_log_level_name(int32_t level);

/* ---- Instruction-set level of the CPU kernels ------------------------------ */

/* Levels, each including the ones below. */
typedef enum kvrt_isa {
    KVRT_ISA_SCALAR = 0,     /* portable C++ */
    KVRT_ISA_AVX2 = 1,       /* AVX2 + FMA + F16C */
    KVRT_ISA_AVXVNNI = 2,    /* + AVX-VNNI (the weight matmul has its own path) */
    KVRT_ISA_AVX512 = 3,     /* AVX-512 F/BW/VL/DQ (matmul path also needs AVX512_VNNI) */
    KVRT_ISA_AVX512BF16 = 4, /* + AVX512_BF16 (bf16 KV attention multiplies in bf16 on AMD) */
    KVRT_ISA_AMX = 5         /* + AMX-TILE, AMX-INT8 (prefill weight matmuls on tiles; same bits) */
} kvrt_isa;

/* The ISA levels: *active is what the kernels use now (the detected level
 * lowered by the environment variable KVRT_ISA=scalar|avx2|avxvnni|avx512|
 * avx512bf16|amx, read once, or by kvrt_isa_set), *detected the best the CPU
 * supports. Either pointer may be NULL (not both). Returns KVRT_OK,
 * KVRT_ERR_INVALID_ARGUMENT (both NULL). Thread-safe. O(1) (the CPU is probed
 * once per process). */
KVRT_API kvrt_status kvrt_isa_get(int32_t *active, int32_t *detected);

/* Limits the kernels to `limit` (a kvrt_isa); a limit above the CPU's level
 * gives the CPU's level (kvrt_isa_get says which is active). Process-wide,
 * like KVRT_ISA (which it overrides). Results are deterministic within one
 * level; levels may differ in the last bits. Returns KVRT_OK,
 * KVRT_ERR_INVALID_ARGUMENT (not a kvrt_isa), KVRT_ERR_INVALID_STATE (a
 * prefill, decode or generate is running on some context: switch between
 * calls, not during one). Thread-safe. O(1). */
KVRT_API kvrt_status kvrt_isa_set(int32_t limit);

/* Static name of a level ("scalar", "avx2", "avxvnni", "avx512",
 * "avx512bf16", "amx"; "?" for others), as KVRT_ISA spells it. Never NULL.
 * Thread-safe. O(1). */
KVRT_API const char *kvrt_isa_name(int32_t isa);

#ifdef __cplusplus
}
#endif

#endif /* KVRT_PROCESS_H */
