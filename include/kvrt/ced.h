/*
 * kvrt/ced.h — CED models (causal encoder-decoder, DeepSeek-V4.1-Flash style):
 * the random-weight model generator.
 *
 * No trained CED weights exist at a size a workstation holds, so kvrt writes
 * GGUF files of deterministic random weights from a seed, scaled so that
 * activations stay healthy through every layer. The file depends only on
 * (preset, overrides, seed, weight type). Its metadata keys (`ced.*`) and
 * tensor names are documented in docs/ced_gguf.md; any GGUF with them loads.
 *
 * C99; no varargs, no bitfields, no structs by value.
 */
#ifndef KVRT_CED_H
#define KVRT_CED_H

#include "kvrt/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Element type of the generated weight matrices (norms and sinks are f32). */
typedef enum kvrt_ced_weight_type {
    KVRT_CED_WEIGHTS_F32 = 0,
    KVRT_CED_WEIGHTS_F16 = 1,
    KVRT_CED_WEIGHTS_BF16 = 2,
    KVRT_CED_WEIGHTS_Q8_0 = 3,
    KVRT_CED_WEIGHTS_Q4_0 = 4,
    KVRT_CED_WEIGHTS_Q4_1 = 5
} kvrt_ced_weight_type;

/* Options of kvrt_ced_write_gguf. Initialise with kvrt_ced_init_config_init();
 * fields are only ever appended. */
typedef struct kvrt_ced_init_config {
    size_t struct_size;   /* set by kvrt_ced_init_config_init */
    const char *preset;   /* "tiny" (6 layers, width 64, W = 8: tests) or "base" (~100M
                             parameters, W = 128: benchmarks); NULL means "tiny" */
    uint64_t seed;        /* default 1 */
    int32_t weight_type;  /* a kvrt_ced_weight_type; default F32 */
    int32_t window;       /* sliding window W; 0 keeps the preset's */
    int32_t top_k;        /* rows selected per query; 0 keeps the preset's */
    int32_t n_vocab;      /* vocabulary size; 0 keeps the preset's */
} kvrt_ced_init_config;

/* Fills *cfg with the defaults (preset "tiny", seed 1, f32 weights, no
 * overrides). struct_size must be sizeof(kvrt_ced_init_config) as the caller
 * knows it. Returns KVRT_OK or KVRT_ERR_INVALID_ARGUMENT (NULL cfg, a
 * struct_size this library cannot serve). Thread-safe. O(1). */
KVRT_API kvrt_status kvrt_ced_init_config_init(kvrt_ced_init_config *cfg, size_t struct_size);

/* Number of parameters (tensor elements) of the model cfg describes.
 *   out  receives the count.
 * Returns KVRT_OK, KVRT_ERR_INVALID_ARGUMENT (NULL out/cfg, unknown preset,
 * bad struct_size, an override out of range: the message names the ced.* key).
 * Thread-safe. O(layers). */
KVRT_API kvrt_status kvrt_ced_param_count(uint64_t *out, const kvrt_ced_init_config *cfg);

/* Writes a CED GGUF with deterministic random weights to `path` (through a
 * temporary file renamed into place: no partial file on failure).
 *   path  NUL-terminated file path (overwritten);
 *   cfg   options (NULL = the defaults).
 * Returns KVRT_OK; KVRT_ERR_INVALID_ARGUMENT (NULL path, unknown preset or
 * weight type, an override out of range: the message names the ced.* key);
 * KVRT_ERR_IO (cannot write path); KVRT_ERR_OUT_OF_MEMORY.
 * Thread-safe (calls are independent). Cost: O(parameters): about a second
 * and the file's size in memory for "base" at q8_0. */
KVRT_API kvrt_status kvrt_ced_write_gguf(const char *path, const kvrt_ced_init_config *cfg);

#ifdef __cplusplus
}
#endif

#endif /* KVRT_CED_H */
