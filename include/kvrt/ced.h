/*
 * kvrt/ced.h — CED models (causal encoder-decoder, DeepSeek-V4.1-Flash style):
 * the random-weight model generator, loading, memory report and running.
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

/* ---- Running a CED model --------------------------------------------------
 *
 * kvrt_model_load() serves the "llama" architecture; CED models run through
 * the functions below until the generic context API dispatches to them.
 *
 * A kvrt_ced_model is immutable once loaded and may be shared by any number
 * of threads and sessions. A kvrt_ced_session owns a CED runtime and its two
 * caches (global banks + indexer keys, cached per block for prefix reuse; and
 * every layer's sliding window, whose cached blocks are the window
 * checkpoints for exact resumption); use one session from one thread at a
 * time. A session keeps its model alive. Sequences are uint64 ids of a
 * session. Logits are f32, n_vocab of them, of the last position processed.
 */
typedef struct kvrt_ced_model kvrt_ced_model;
typedef struct kvrt_ced_session kvrt_ced_session;

/* Prefill semantics (CED.md): every layer over every prompt token, or CED
 * prefill (encoder over all N tokens, decoder over the last W only). */
typedef enum kvrt_ced_prefill_mode {
    KVRT_CED_PREFILL_EXACT = 0,
    KVRT_CED_PREFILL_CED = 1
} kvrt_ced_prefill_mode;

/* How a prefill may reuse cached prefixes. */
typedef enum kvrt_ced_resume {
    KVRT_CED_RESUME_AUTO = 0,           /* exact from a checkpoint at Hw when the bank hit Hb - Hw <= W + a
                                           block (no more work than a replay), else bounded replay at Hb.
                                           In CED mode checkpoints are used at H <= N - W only. */
    KVRT_CED_RESUME_CHECKPOINT = 1,     /* exact resumption only */
    KVRT_CED_RESUME_BOUNDED_REPLAY = 2, /* bank hit of H, replay [H-W, H) with window floor H-W */
    KVRT_CED_RESUME_COLD = 3            /* no reuse */
} kvrt_ced_resume;

/* Loads a CED GGUF (general.architecture "ced"; keys in docs/ced_gguf.md).
 *   out   receives the model (NULL on failure); release with kvrt_ced_model_destroy;
 *   path  NUL-terminated file path.
 * Returns KVRT_OK, KVRT_ERR_INVALID_ARGUMENT (NULL out/path), KVRT_ERR_NOT_FOUND /
 * KVRT_ERR_IO (file), KVRT_ERR_BAD_FORMAT (malformed file or bad ced.* metadata or
 * tensor: the message names the key or tensor), KVRT_ERR_UNSUPPORTED (another
 * architecture, a tensor type kvrt cannot compute), KVRT_ERR_OUT_OF_MEMORY.
 * Thread-safe. Cost: one pass over the weights (repacking). */
KVRT_API kvrt_status kvrt_ced_model_load(kvrt_ced_model **out, const char *path);

/* Drops the caller's reference (sessions keep the model alive). NULL ignored. */
KVRT_API void kvrt_ced_model_destroy(kvrt_ced_model *model);

/* KV memory of a CED model by component, at the element size kvrt stores
 * (f32), with a dense GQA model of the same width and depth beside it. */
typedef struct kvrt_ced_memory {
    size_t struct_size;
    uint32_t n_layers;
    uint32_t n_sources;                  /* banks; per bank see kvrt_ced_memory_source */
    uint32_t window;                     /* W */
    uint32_t elem_bytes;                 /* 4 */
    double main_bytes_per_token;         /* all banks' main rows (each / its ratio) */
    double indexer_bytes_per_token;      /* all banks' indexer keys */
    double global_bytes_per_token;       /* main + indexer: the prefix-cacheable KV */
    uint64_t window_bytes_per_sequence;  /* per-sequence constant: layers x W rows of the entry width */
    uint32_t dense_kv_heads;             /* the dense GQA reference: 64-wide heads, n_kv = max(1, E/64/4) */
    uint32_t dense_head_dim;
    double dense_bytes_per_token;        /* 2 x layers x n_kv x 64 x elem_bytes */
} kvrt_ced_memory;

/* Fills *out (set out->struct_size first) from the model's config.
 * Returns KVRT_OK, KVRT_ERR_INVALID_ARGUMENT (NULL out / bad struct_size),
 * KVRT_ERR_BAD_HANDLE. Thread-safe. O(layers). */
KVRT_API kvrt_status kvrt_ced_memory_get(kvrt_ced_memory *out, const kvrt_ced_model *model);

/* Bank `index` (0 <= index < n_sources): its source layer, ratio and bytes per
 * token of main rows and indexer keys. Any output may be NULL. Returns
 * KVRT_OK, KVRT_ERR_OUT_OF_RANGE, KVRT_ERR_BAD_HANDLE. Thread-safe. O(1). */
KVRT_API kvrt_status kvrt_ced_memory_source(int32_t *layer, int32_t *ratio, double *main_bytes_per_token,
                                            double *indexer_bytes_per_token, const kvrt_ced_model *model,
                                            uint32_t index);

/* Options of a session. Initialise with kvrt_ced_session_config_init(). */
typedef struct kvrt_ced_session_config {
    size_t struct_size;
    int32_t block_tokens;          /* positions per cache block; a multiple of every ratio (16) */
    int32_t chunk;                 /* prefill positions per pass (256) */
    uint64_t bank_budget_bytes;    /* bank cache budget (256 MiB) */
    uint64_t window_budget_bytes;  /* window cache budget, checkpoints included (256 MiB) */
    /* Appended fields (a struct_size without them keeps their defaults): */
    int32_t cache_dtype;           /* element type of every cached row (bank rows, indexer keys,
                                      windows), a kvrt_dtype value (kvrt/cache.h): 0 = F32 (default),
                                      1 = F16 or 2 = BF16: half the bytes per token and half the bytes
                                      the indexer scans per decode step; rows rounded to nearest even */
    int32_t reserved0;             /* must be 0 */
} kvrt_ced_session_config;

/* Fills the defaults of the fields that struct_size covers. Returns
 * KVRT_ERR_INVALID_ARGUMENT for NULL or a struct_size smaller than the first
 * version's (through window_budget_bytes) or larger than this header's. */
KVRT_API kvrt_status kvrt_ced_session_config_init(kvrt_ced_session_config *cfg, size_t struct_size);

/* Creates a session over model (cfg NULL = defaults). Returns KVRT_OK,
 * KVRT_ERR_INVALID_ARGUMENT (NULL out, bad config: block_tokens not a multiple
 * of a ratio, zero budget, cache_dtype not F32/F16/BF16, reserved0 not 0), KVRT_ERR_BAD_HANDLE, KVRT_ERR_OUT_OF_MEMORY.
 * Thread-safe. Cost: reserves the caches' address space. */
KVRT_API kvrt_status kvrt_ced_session_create(kvrt_ced_session **out, const kvrt_ced_model *model,
                                             const kvrt_ced_session_config *cfg);
/* Frees the session, its sequences and caches. NULL ignored. */
KVRT_API void kvrt_ced_session_destroy(kvrt_ced_session *session);

/* Sequences: create (empty), release, fork (shares cached rows, copies the
 * tail state), truncate (positions >= pos dropped; KVRT_ERR_INVALID_STATE when
 * pos cuts a closed r > 1 group or the windows no longer hold what a query at
 * pos reads — nothing changes then), length. Unknown ids: KVRT_ERR_NOT_FOUND.
 * O(1) except truncate/fork (O(blocks)). */
KVRT_API kvrt_status kvrt_ced_seq_create(uint64_t *out_seq, kvrt_ced_session *session);
KVRT_API kvrt_status kvrt_ced_seq_release(kvrt_ced_session *session, uint64_t seq);
KVRT_API kvrt_status kvrt_ced_seq_fork(uint64_t *out_seq, kvrt_ced_session *session, uint64_t seq);
KVRT_API kvrt_status kvrt_ced_seq_truncate(kvrt_ced_session *session, uint64_t seq, int64_t pos);
KVRT_API kvrt_status kvrt_ced_seq_length(int64_t *out, const kvrt_ced_session *session, uint64_t seq);

/* What a prefill did. */
typedef struct kvrt_ced_prefill_info {
    size_t struct_size;
    int64_t hit;           /* prompt tokens whose bank rows came from the prefix cache */
    int32_t exact_resume;  /* 1: windows came from a checkpoint (exact); 0: replayed or cold */
    int32_t reserved0;
    int64_t replayed;      /* positions replayed (bounded replay) */
    int64_t computed;      /* positions run through the encoder */
    int64_t decoded;       /* positions run through the decoder */
} kvrt_ced_prefill_info;

/* Runs a prompt on an EMPTY sequence.
 *   info    optional (NULL or struct_size set): what happened;
 *   tokens  n_tokens >= 1 ids in [0, n_vocab);
 *   mode    a kvrt_ced_prefill_mode; resume a kvrt_ced_resume.
 * Returns KVRT_OK; KVRT_ERR_INVALID_ARGUMENT (NULL/empty tokens, bad mode or
 * resume); KVRT_ERR_OUT_OF_RANGE (a token id, naming it); KVRT_ERR_INVALID_STATE
 * (sequence not empty); KVRT_ERR_NOT_FOUND; KVRT_ERR_CACHE_FULL; KVRT_ERR_BAD_HANDLE.
 * On failure the sequence stays empty. Cost: O(N x params) exact, about half
 * in CED mode, plus the indexers' O(N^2 / r) scores. */
KVRT_API kvrt_status kvrt_ced_prefill(kvrt_ced_prefill_info *info, kvrt_ced_session *session, uint64_t seq,
                                      const int32_t *tokens, size_t n_tokens, int32_t mode, int32_t resume);

/* Appends tokens through every layer (decode when n_tokens == 1). Returns as
 * kvrt_ced_prefill, with KVRT_ERR_INVALID_STATE for an empty sequence; on
 * failure the sequence keeps its previous length. */
KVRT_API kvrt_status kvrt_ced_extend(kvrt_ced_session *session, uint64_t seq, const int32_t *tokens,
                                     size_t n_tokens);

/* Logits of the sequence's last processed position (n_vocab floats; buffer
 * convention of kvrt/model.h). KVRT_ERR_INVALID_STATE before any prefill. */
KVRT_API kvrt_status kvrt_ced_logits(float *dst, size_t capacity, size_t *written,
                                     const kvrt_ced_session *session, uint64_t seq);

/* The session caches' own accounting: bytes per token of the bank cache
 * (must equal kvrt_ced_memory.global_bytes_per_token), bytes in use in the
 * bank and window caches. Any output may be NULL. */
KVRT_API kvrt_status kvrt_ced_session_bytes(double *bank_bytes_per_token, uint64_t *bank_bytes_in_use,
                                            uint64_t *window_bytes_in_use, const kvrt_ced_session *session);

#ifdef __cplusplus
}
#endif

#endif /* KVRT_CED_H */
