/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The kvrt authors */

/*
 * kvrt/context.h — running a model: contexts over a KV cache, prefill and
 * decode of sequences, logits, sampling and generation, per-request stats.
 *
 * Threading: a kvrt_context is used by ONE thread at a time (calls on one
 * context must not overlap; different contexts may run in parallel, each
 * using its own OpenMP threads). A kvrt_sampler likewise. The model a
 * context runs is shared and immutable; the context holds a reference to it
 * (kvrt/model.h), so destroying the model first is safe. Exceptions, safe
 * from any thread at any time: kvrt_context_cancel and
 * kvrt_context_activity_get (see "Cancellation and activity" below). A call
 * that changes a context while another runs on it (from a second thread, or
 * from inside one of its callbacks) returns KVRT_ERR_INVALID_STATE.
 *
 * Cancellation, one rule for every call: kvrt_context_cancel (any thread) or
 * a progress callback returning non-zero stops prefill, prefill_batch,
 * decode and generate with KVRT_ERR_CANCELLED; the sequence keeps every
 * position computed before the stop (prefill: whole chunks; decode: nothing,
 * it is all-or-nothing; generate: the prompt and the tokens decoded), and
 * the stats of prefill and generate, when given, say how far the call got,
 * with stop_reason KVRT_STOP_CANCELLED (prefill_batch leaves its stats
 * unset on any failure). A token
 * callback returning non-zero is not a cancellation but a stop condition, as
 * a stop string: KVRT_OK with KVRT_STOP_CALLBACK.
 *
 * Sequences: a context holds up to n_seq_max sequences, named by the caller
 * with ids in [0, n_seq_max). A sequence is the token list whose K/V the cache
 * holds. kvrt_context_prefill(seq, tokens) makes the sequence hold exactly
 * `tokens`: it keeps the longest common prefix with what the sequence held
 * (an appended chat turn keeps everything; an edit keeps the positions before
 * the first changed token and recomputes from there), reuses the prefix
 * cache for the rest (every cached full block of the exact token prefix with
 * the same model fingerprint and cache salt, then the rows of a cached block
 * up to the first token that differs: a cache hit, too, recomputes from the
 * first changed token; CED models resume in whole blocks), computes the remaining
 * positions in chunks, and leaves the logits of the last token readable.
 *
 * Buffers follow kvrt/model.h's (dst, capacity, written) convention.
 * C99; no varargs, no bitfields, no structs by value.
 */
#ifndef KVRT_CONTEXT_H
#define KVRT_CONTEXT_H

#include "kvrt/cache.h"
#include "kvrt/ced.h"
#include "kvrt/common.h"
#include "kvrt/model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kvrt_context kvrt_context;

/* K/V element types are kvrt/cache.h's kvrt_dtype, the one dtype enum of the API
 * (kvrt_context_config.kv_dtype, k_dtype and v_dtype take KVRT_DTYPE_*: F32, F16,
 * BF16, and the quantised I8 = int8 with one f16 scale per 32 elements of a head,
 * head_dim a multiple of 32, and FP8_E4M3 = fp8 e4m3 with one f16 scale per head;
 * the attention kernels read the quantised ones directly, decoder models only).
 * Under a quantised K type, a decoder layer whose K projection has a bias with outliers
 * (largest |b| >= 16 and >= 8 x its median |b|: Qwen2.5's layers 0-4 and 8) keeps its K
 * rows in F16, where int8 or fp8 would flip whole attention rows; V keeps the asked type.
 * kvrt_cache_layer_info_get reports each layer's dtype and v_dtype.
 * DEPRECATED since 0.3: the KVRT_KV_* names, kept as aliases equal to the
 * kvrt_dtype values so that older code compiles; they will be removed no
 * earlier than 1.0. */
#define KVRT_KV_F32 KVRT_DTYPE_F32
#define KVRT_KV_F16 KVRT_DTYPE_F16
#define KVRT_KV_BF16 KVRT_DTYPE_BF16
#define KVRT_KV_I8 KVRT_DTYPE_I8
#define KVRT_KV_FP8_E4M3 KVRT_DTYPE_FP8_E4M3

/* Options of kvrt_context_create. Initialise with kvrt_context_config_init();
 * fields are only ever appended. */
/* kvrt_context_config.act_bits: 8-bit activation codes with the residuals of each row's outlier
 * blocks (see there); the default's computation since 0.3.3. */
#define KVRT_ACT_BITS_OUTLIERS 9

typedef struct kvrt_context_config {
    size_t struct_size;
    uint32_t n_ctx;             /* positions per sequence; 0 = the model's training context, or
                                   less when that cannot be afforded: see cache_bytes */
    uint32_t n_seq_max;         /* sequence ids [0, n_seq_max); default 1 */
    uint32_t n_batch;           /* prefill chunk in tokens; default 512 */
    int32_t n_threads;          /* threads for this context's calls, 0..1024. 0 = up to the OpenMP
                                   default, and each decode step's count chosen by kvrt from the
                                   measured times of earlier steps (fewer threads when another
                                   program keeps a core busy: every phase of a step waits for its
                                   slowest thread); N = exactly N. Results are the same bits on
                                   any count */
    int32_t kv_dtype;           /* kvrt_dtype; default KVRT_DTYPE_F16. KVRT_DTYPE_BF16 on AMD CPUs
                                   with AVX512_BF16 (Zen 4/5): attention multiplies in bf16 (the
                                   query and the softmax weights rounded to bf16, f32 sums), ~1.3x
                                   faster prefill; Intel CPUs keep f32 products (faster there);
                                   KVRT_BF16_DOT=on|off or KVRT_ISA=avx512 override the choice */
    uint32_t block_tokens;      /* tokens per cache block when the context creates its cache;
                                   0 (default since 0.3.2; 16 before) = 64 for decoder models,
                                   16 for CED models. Prefix hits reach the first changed token
                                   whatever the size (CED: whole blocks); longer blocks read
                                   faster in decode at long contexts (a layer's rows of a block
                                   are one contiguous run: decode attention beyond the last-level
                                   cache took 6-24% longer with 16-token blocks than 64), shorter
                                   ones waste less of a sequence's last block. A saved
                                   conversation loads only into a context of its block size
                                   (kvrt_context_seq_restore recomputes it in another). */
    uint64_t cache_bytes;       /* budget of a cache the context creates (change it later with
                                   kvrt_cache_set_budget). 0 = a default the machine can afford:
                                   room for n_seq_max sequences of n_ctx positions plus as much
                                   again for cached prefixes, capped at a quarter of physical
                                   memory but never below the n_seq_max sequences; when n_ctx is
                                   also 0, the training context is halved (not below 512) until
                                   n_seq_max full sequences fit in that quarter (e.g. an 8B model
                                   with a 128K context, 128 KiB of f16 K/V per token: 16 GiB a
                                   sequence; on a 24 GiB machine n_ctx becomes 32768, budget 6 GiB).
                                   Memory is committed only as blocks are used; the budget bounds
                                   it. The choice is logged at KVRT_LOG_INFO (kvrt/process.h) */
    kvrt_cache *cache;          /* NULL: the context creates its cache. Else a cache to share:
                                   kvrt_context_get_cache() of another context over the same
                                   model (the usual way), or one from kvrt_cache_create() whose
                                   layout matches the model (one FULL layer per model layer, or
                                   WINDOW(W) for window layers; n_kv_heads, head_dim, kv_dtype as
                                   the model's). Contexts sharing a cache share one prefix cache. */
    int32_t prefix_caching;     /* 1 (default): reuse and publish cached prefixes; 0: never */
    int32_t reserved0;          /* must be 0 */
    const char *cache_salt;     /* NUL-terminated; prefixes are only shared between equal salts.
                                   NULL = "" (copied at create) */
    kvrt_progress_fn progress;  /* progress of long prefills (stage "prefill"); NULL: none */
    void *progress_user_data;
    /* Appended in 0.2 (a struct_size of 0.1's kvrt_context_config, which ends at
     * progress_user_data, keeps their defaults). CED models only (kvrt/ced.h); ignored for others: */
    int32_t ced_prefill_mode;   /* a kvrt_ced_prefill_mode; default KVRT_CED_PREFILL_EXACT */
    int32_t ced_resume;         /* a kvrt_ced_resume: how a prefix-cache hit restores the windows;
                                   default KVRT_CED_RESUME_AUTO (prefix_caching = 0 means COLD) */
    /* Appended in 0.3 (a struct_size ending at ced_resume keeps their defaults): K and V rows
     * of different types (llama.cpp's type_k / type_v). */
    int32_t k_dtype;            /* kvrt_dtype of the K rows; -1 (default): kv_dtype */
    int32_t v_dtype;            /* kvrt_dtype of the V rows; -1 (default): kv_dtype */
    /* Appended in 0.3 (an older struct_size keeps their defaults): lower tiers of the prefix
     * cache the context creates (kvrt/cache.h, "Lower tiers"), searched in array order.
     * Refused (INVALID_ARGUMENT) together with cfg->cache: give a shared cache its tiers with
     * kvrt_cache_add_tier. The array and its strings are read during create only. CED models:
     * tiers hold the bank cache's blocks (written on eviction and kvrt_cache_persist). */
    const kvrt_tier_config *tiers; /* n_tiers entries, each initialised by kvrt_tier_config_init; default NULL */
    size_t n_tiers;                /* default 0 */
    /* Appended in 0.3 (an older struct_size keeps the default): the width of the activation
     * codes the quantised weight matmuls multiply with (the CLI's --act-bits). Each block of
     * 32 activations gets an f32 scale and integer codes:
     *   0 (default) = 9 (KVRT_ACT_BITS_OUTLIERS, since 0.3.3): 16-bit codes for the K and V
     *      projections (the rows the KV cache keeps and every later token reads); for the other
     *      matmuls and the output head 8-bit codes, and each block whose scale exceeds 3x its
     *      row's mean and whose squared scale is at least a fifth of the row's sum of squared
     *      scales (an outlier channel's block: 0.4-3% of the blocks of the real models) also
     *      gets the 8-bit codes of its rounding error, whose products over those blocks are
     *      added after the 8-bit ones. On the three real models this puts kvrt's mean KL
     *      divergence from a float64 forward at 0.20-0.44x llama.cpp's, for 2-5% of prefill
     *      and 1.5-3% of decode time (AMD Zen 4, AVX-512 and AVX2 paths). Releases 0.3.1-0.3.2
     *      defaulted to the 16-bit K/V codes alone (0.34-0.80x); prefix blocks and state files
     *      of 0 and 9 from before 0.3.3 are not reused.
     *   8: 8-bit codes everywhere (as llama.cpp's Q8_1): the fastest, and the default of
     *      releases before 0.3.1.
     *   16: 16-bit codes everywhere (scale amax/32767): the activation rounding, which is all
     *       of kvrt's distance from exact math on the models measured, shrinks ~256x.
     * The KL divergences and the speed of each are in scripts/reference/README.md ("16-bit
     * activation codes", "Which matmuls", "Outlier residuals", "The default since 0.3.3").
     * Every guarantee holds in each (cached == uncached, prefix hit == cold, any thread count
     * gives the same bits, and so does
     * every ISA path of the weight matmuls; attention's summation order follows the CPU's vector
     * width, so logits differ in their last bits between AVX2 and AVX-512 CPUs); blocks computed
     * under one setting are never reused under another (they key the prefix cache and state
     * files as a salt does). CED models have 8-bit codes only: 0 means 8 there, 9 and 16 are
     * KVRT_ERR_UNSUPPORTED; other values KVRT_ERR_INVALID_ARGUMENT. */
    int32_t act_bits;
    /* Appended in 0.3 (an older struct_size keeps the default). CED models only (ignored for
     * others): the kvrt_dtype of the bank rows and indexer keys, the prefix-cacheable global KV
     * (kvrt/ced.h). kv_dtype (k_dtype) is then the type of the window rows.
     *   -1 (default): kv_dtype when it is F32, F16 or BF16 (every cached row one type, as
     *       before); F16 when kv_dtype is I8 or FP8_E4M3 (windows quantised, banks f16).
     *   KVRT_DTYPE_F32, _F16, _BF16: that type.
     *   KVRT_DTYPE_FP4: 4-bit e2m1 elements (two per byte) with one scale per 32 elements:
     *       an f16 scale on bank rows (D/2 + D/16 bytes: 288 at D = 512) and a power-of-two
     *       e8m0 scale on indexer keys (D/2 + D/32 bytes: 68 at 128), the 890 bytes per token
     *       of global KV of the public DeepSeek-V4.1 configuration (kvrt_ced_memory_get).
     *       Rows are quantised as they are written (round to nearest even on the e2m1 grid,
     *       scale = amax / 6 rounded up: kvrt/cache.h's kvrt_dtype has the format); the sparse
     *       attention and the indexer scan read them directly. The bank width and indexer key
     *       width must be multiples of 32.
     * I8 / FP8_E4M3 here, or any other value: KVRT_ERR_INVALID_ARGUMENT at create. Prefixes
     * cached under one bank type are never reused under another (they live in the context's
     * own bank cache; a saved sequence of another type is refused with KVRT_ERR_MISMATCH). */
    int32_t bank_dtype;
} kvrt_context_config;

/* Fills *cfg with the defaults. Returns KVRT_ERR_INVALID_ARGUMENT for NULL or
 * an unusable struct_size. Thread-safe. O(1). */
KVRT_API kvrt_status kvrt_context_config_init(kvrt_context_config *cfg, size_t struct_size);

/* Creates a context that runs `model`.
 *   out    receives the context (NULL on failure); destroy with kvrt_context_destroy;
 *   model  the model (const: the context only reads it); the context takes a
 *          reference (the model outlives it);
 *   cfg    options or NULL for the defaults.
 * Returns KVRT_OK; KVRT_ERR_BAD_HANDLE (NULL model); KVRT_ERR_INVALID_ARGUMENT
 * (bad cfg: struct_size, n_ctx above the model's limit, n_seq_max outside
 * 1..4096, n_batch above 65536, block_tokens above 4096, n_threads outside
 * 0..1024, unknown kv_dtype, reserved0 != 0, ...);
 * KVRT_ERR_MISMATCH (cfg->cache was made for another model or KV layout);
 * KVRT_ERR_OUT_OF_MEMORY. Thread-safe. Cost: allocates scratch buffers and,
 * without cfg->cache, the cache's arena reservation. */
KVRT_API kvrt_status kvrt_context_create(kvrt_context **out, const kvrt_model *model, const kvrt_context_config *cfg);

/* Releases the context's sequences (their full blocks stay in the prefix
 * cache while it lives), its cache reference and its model reference. NULL,
 * destroyed and foreign handles are ignored. Not concurrently with other calls
 * on the same context. */
KVRT_API void kvrt_context_destroy(kvrt_context *ctx);

/* The context's cache, for sharing with another context over the same model
 * (kvrt_context_config.cache) and for kvrt/cache.h's queries (statistics).
 * Ownership: a cache the context created is owned by the contexts that use it
 * (it lives while any of them lives; kvrt_cache_destroy ignores it); a cache
 * the caller passed in stays the caller's, who destroys it after the contexts.
 * Returns KVRT_OK, KVRT_ERR_BAD_HANDLE (ctx), KVRT_ERR_INVALID_ARGUMENT (NULL
 * out). Thread-safe with respect to other contexts. O(contexts). */
KVRT_API kvrt_status kvrt_context_get_cache(kvrt_cache **out, const kvrt_context *ctx);

/* ---- Per-request statistics -------------------------------------------- */

/* Why generation stopped. */
typedef enum kvrt_stop_reason {
    KVRT_STOP_NONE = 0,        /* not a generation, or it has not stopped */
    KVRT_STOP_EOG = 1,         /* the model produced an end-of-generation token */
    KVRT_STOP_MAX_TOKENS = 2,  /* max_tokens were generated */
    KVRT_STOP_STRING = 3,      /* a stop string appeared in the output */
    KVRT_STOP_CALLBACK = 4,    /* the token callback returned non-zero */
    KVRT_STOP_CONTEXT_FULL = 5,/* the sequence reached n_ctx positions */
    KVRT_STOP_CANCELLED = 6    /* kvrt_context_cancel or the progress callback (the call returned
                                  KVRT_ERR_CANCELLED) */
} kvrt_stop_reason;

/* Statistics of one prefill or generate call. Set struct_size (or call
 * kvrt_request_stats_init); fields are only ever appended. */
typedef struct kvrt_request_stats {
    size_t struct_size;
    uint64_t prompt_tokens;           /* tokens of the prompt */
    uint64_t reused_tokens;           /* prompt positions whose K/V were reused (kept + prefix cache) */
    uint64_t reused_from_cache;       /* ... of which came from the shared prefix cache */
    uint64_t computed_tokens;         /* prompt positions computed by this call */
    uint64_t generated_tokens;        /* tokens sampled (generate only) */
    double time_to_first_token_s;     /* call entry to the first sampled token (generate), or
                                         to the last prompt token's logits (prefill) */
    double prefill_s;                 /* time spent computing prompt positions */
    double decode_s;                  /* time spent in decode steps */
    double decode_tokens_per_s;       /* decoded tokens / decode_s; 0 when none */
    uint64_t kv_bytes;                /* KV bytes the sequence holds after the call */
    int32_t stop_reason;              /* kvrt_stop_reason */
    int32_t reserved0;
    /* Appended in 0.3 (an older struct_size does not get them): where reused_from_cache came
     * from. ram + disk + remote == reused_from_cache; computed_tokens stays what was computed. */
    uint64_t reused_from_ram;         /* blocks the RAM prefix cache held */
    uint64_t reused_from_disk;        /* blocks loaded back from a disk tier (kvrt/cache.h) */
    uint64_t reused_from_remote;      /* blocks loaded back from a remote tier (Redis) */
    /* Appended in 0.5: the time kvrt_context_generate spent picking tokens (the sampler,
     * between decode steps, on the calling thread); decode_s and decode_tokens_per_s leave it
     * out. 0 for prefill calls. */
    double sample_s;
} kvrt_request_stats;

/* Sets stats->struct_size and zeroes the rest. */
KVRT_API kvrt_status kvrt_request_stats_init(kvrt_request_stats *stats, size_t struct_size);

/* ---- Prefill, decode, logits -------------------------------------------- */

/* Makes sequence seq_id hold exactly tokens[0, n_tokens) (see the top of
 * this header: keep the common prefix, reuse the prefix cache, compute the
 * rest in n_batch chunks), and computes the logits of the last token.
 *   stats  NULL or filled (struct_size set by the caller);
 *   n_tokens >= 1.
 * Returns KVRT_OK; KVRT_ERR_BAD_HANDLE; KVRT_ERR_INVALID_ARGUMENT (NULL
 * tokens, n_tokens == 0); KVRT_ERR_OUT_OF_RANGE (seq_id outside
 * [0, n_seq_max), a token id outside [0, n_vocab), n_tokens > n_ctx: the
 * message names the value); KVRT_ERR_CACHE_FULL; KVRT_ERR_CANCELLED
 * (progress callback). On failure the sequence holds its common prefix with
 * `tokens` (never rows that were not computed) and its logits are unset.
 * One thread at a time per context. Cost: O(computed tokens x model). */
KVRT_API kvrt_status kvrt_context_prefill(kvrt_request_stats *stats, kvrt_context *ctx, int32_t seq_id,
                                          const int32_t *tokens, size_t n_tokens);

/* Prefills several sequences in shared forward passes: sequence seq_ids[i]
 * is made to hold tokens[i][0, n_tokens[i]) exactly as kvrt_context_prefill
 * would (common prefix kept, prefix cache reused, logits of the last token),
 * but the positions to compute are taken in rounds of up to n_batch rows
 * across all the prompts, so one pass over the weights serves them all.
 * Each sequence's logits are bit-identical to prefilling it alone. A prompt
 * that extends what its sequence holds by one token computes that one row,
 * so sequences being decoded and new prompts can share one call (continuous
 * batching: one pass over the weights for the decode steps and the prompts'
 * first rows; bench/mixed_rounds.py).
 *   stats   NULL, or an array of n_seqs entries, each with struct_size set
 *           to the same value (kvrt_request_stats_init);
 *   seq_ids n_seqs distinct ids; tokens[i] and n_tokens[i] >= 1 its prompt.
 * Returns KVRT_OK; KVRT_ERR_BAD_HANDLE; KVRT_ERR_INVALID_ARGUMENT (NULL
 * arrays, n_seqs == 0, a NULL prompt or n_tokens[i] == 0, a repeated id);
 * KVRT_ERR_OUT_OF_RANGE (an id, a token or a prompt length out of range: the
 * message names it); KVRT_ERR_CACHE_FULL; KVRT_ERR_CANCELLED. Every argument
 * is checked before any sequence changes; a failure while computing leaves
 * each sequence holding a computed prefix of its prompt, logits unset.
 * One thread at a time per context. Cost: O(computed tokens x model), the
 * weights read once per round of n_batch rows. */
KVRT_API kvrt_status kvrt_context_prefill_batch(kvrt_request_stats *stats, kvrt_context *ctx,
                                                const int32_t *seq_ids, const int32_t *const *tokens,
                                                const size_t *n_tokens, size_t n_seqs);

/* One decode step for a batch: appends tokens[i] to sequence seq_ids[i] (each
 * id at most once, each sequence non-empty) and computes each one's logits.
 * All-or-nothing: on failure no sequence changes (CED models: every argument
 * is checked first, then the sequences run one after another through the CED
 * runtime, so a resource failure part-way, such as KVRT_ERR_CACHE_FULL,
 * leaves the earlier ones advanced). Returns KVRT_OK,
 * KVRT_ERR_BAD_HANDLE, KVRT_ERR_INVALID_ARGUMENT (NULL arrays, n == 0, n >
 * n_seq_max, a repeated or empty sequence), KVRT_ERR_OUT_OF_RANGE (bad id or
 * token, a sequence at n_ctx), KVRT_ERR_CACHE_FULL. Cost: one pass over the
 * weights for the whole batch plus each sequence's KV (CED: one pass per sequence). */
KVRT_API kvrt_status kvrt_context_decode(kvrt_context *ctx, const int32_t *seq_ids, const int32_t *tokens,
                                         size_t n);

/* Copies the logits (n_vocab floats) of sequence seq_id's last computed token.
 * Returns KVRT_OK, KVRT_ERR_BUFFER_TOO_SMALL (*written = n_vocab),
 * KVRT_ERR_INVALID_STATE (no logits: the sequence is empty or its last call
 * failed), KVRT_ERR_OUT_OF_RANGE (seq_id), KVRT_ERR_BAD_HANDLE,
 * KVRT_ERR_INVALID_ARGUMENT (NULL written). O(n_vocab). */
KVRT_API kvrt_status kvrt_context_get_logits(float *dst, size_t capacity, size_t *written,
                                             const kvrt_context *ctx, int32_t seq_id);

/* Logits at chosen positions (perplexity, speculative decoding, scoring).
 * Makes sequence seq_id hold exactly tokens[0, n_tokens) as kvrt_context_prefill
 * does, and also computes the logits of each position in positions[0,
 * n_positions): the logits of position p are the distribution of the token
 * after tokens[p], and equal bit for bit the last-position logits of
 * prefilling tokens[0, p] alone. Every requested position is computed: reuse
 * (the common prefix the sequence held, the prefix cache) stops at
 * positions[0], so positions after it are recomputed even when they were
 * cached. The last position's logits are also left for
 * kvrt_context_get_logits, requested or not.
 *   stats      NULL or filled (reused/computed count what this call did);
 *   positions  strictly increasing, each < n_tokens; n_positions >= 1;
 *              positions are uint32_t (n_ctx is at most 2^32-1).
 * The rows are kept by the context until the sequence's next
 * kvrt_context_prefill_logits, its release, or the context's destruction,
 * and read with kvrt_context_get_logits_at.
 * CED models (kvrt/ced.h) compute logits for the prompt's last position
 * only: any other position returns KVRT_ERR_UNSUPPORTED.
 * Returns KVRT_OK; KVRT_ERR_BAD_HANDLE; KVRT_ERR_INVALID_ARGUMENT (NULL tokens
 * or positions, n_tokens or n_positions 0, positions not strictly
 * increasing); KVRT_ERR_OUT_OF_RANGE (as kvrt_context_prefill, or a position
 * >= n_tokens: the message names it); KVRT_ERR_UNSUPPORTED (CED, see above);
 * KVRT_ERR_CACHE_FULL; KVRT_ERR_CANCELLED; KVRT_ERR_OUT_OF_MEMORY (the rows
 * need n_positions x n_vocab x 4 bytes). Arguments are checked before the
 * sequence changes; a later failure leaves it as a failed kvrt_context_prefill
 * does, with no position logits readable. One thread at a time per context.
 * Cost: O(computed tokens x model) plus O(n_positions x n_vocab x n_embd) for
 * the output head (a 262K vocabulary makes the head the larger part: ask for
 * the positions you read, in chunks if memory matters). */
KVRT_API kvrt_status kvrt_context_prefill_logits(kvrt_request_stats *stats, kvrt_context *ctx, int32_t seq_id,
                                                 const int32_t *tokens, size_t n_tokens,
                                                 const uint32_t *positions, size_t n_positions);

/* Copies the logits (n_vocab floats) of a position requested by sequence
 * seq_id's last kvrt_context_prefill_logits. They stay readable while the
 * sequence holds the tokens [0, position] they were computed from (a decode or
 * an appended prefill keeps them; an edit before position, a truncation or a
 * release does not). Returns KVRT_OK, KVRT_ERR_BUFFER_TOO_SMALL (*written =
 * n_vocab), KVRT_ERR_NOT_FOUND (the position was not requested),
 * KVRT_ERR_INVALID_STATE (the sequence's tokens changed since),
 * KVRT_ERR_OUT_OF_RANGE (seq_id), KVRT_ERR_BAD_HANDLE,
 * KVRT_ERR_INVALID_ARGUMENT (NULL written). One thread at a time per context
 * (as every call on it). O(n_vocab + position). */
KVRT_API kvrt_status kvrt_context_get_logits_at(float *dst, size_t capacity, size_t *written,
                                                const kvrt_context *ctx, int32_t seq_id, size_t position);

/* Number of tokens sequence seq_id holds. Returns KVRT_OK,
 * KVRT_ERR_OUT_OF_RANGE (seq_id), KVRT_ERR_BAD_HANDLE,
 * KVRT_ERR_INVALID_ARGUMENT (NULL out). O(1). */
KVRT_API kvrt_status kvrt_context_seq_length(size_t *out, const kvrt_context *ctx, int32_t seq_id);

/* KV bytes sequence seq_id holds in the cache (every block it references,
 * shared prefix blocks included). Returns KVRT_OK, KVRT_ERR_OUT_OF_RANGE,
 * KVRT_ERR_BAD_HANDLE, KVRT_ERR_INVALID_ARGUMENT (NULL out). O(blocks). */
KVRT_API kvrt_status kvrt_context_seq_kv_bytes(uint64_t *out, const kvrt_context *ctx, int32_t seq_id);

/* Empties sequence seq_id. Its full blocks stay in the prefix cache (when
 * prefix caching is on) until evicted. Releasing an empty sequence is a no-op.
 * Returns KVRT_OK, KVRT_ERR_OUT_OF_RANGE, KVRT_ERR_BAD_HANDLE. */
KVRT_API kvrt_status kvrt_context_seq_release(kvrt_context *ctx, int32_t seq_id);

/* ---- One sequence saved, restored, forked, cut ----------------------------- */

/* Copies the tokens sequence seq_id holds (its computed positions) into dst.
 *   dst/capacity  capacity int32 entries (dst may be NULL with capacity 0: a size query);
 *   written       receives the token count (also on BUFFER_TOO_SMALL).
 * Returns KVRT_OK, KVRT_ERR_BAD_HANDLE, KVRT_ERR_INVALID_ARGUMENT (NULL written, NULL dst
 * with capacity > 0), KVRT_ERR_OUT_OF_RANGE (seq_id), KVRT_ERR_BUFFER_TOO_SMALL.
 * One thread at a time per context. O(tokens). */
KVRT_API kvrt_status kvrt_context_seq_tokens(int32_t *dst, size_t capacity, size_t *written,
                                             const kvrt_context *ctx, int32_t seq_id);

/* Saves sequence seq_id to `path`: its tokens, the logits of its last token (when
 * set), every KV row it holds and whatever the architecture keeps beside them (CED:
 * the window rings and the tail state of open bank groups), with the model
 * fingerprint, the cache salt, the KV dtype, the block size, a format version and
 * an XXH3 checksum. The file is written to "<path>.tmp.<pid>.<n>", fsync'ed,
 * renamed over path and the directory fsync'ed: a reader or a crash sees the old
 * file or the new one. An empty sequence saves as an empty conversation.
 * Returns KVRT_OK, KVRT_ERR_BAD_HANDLE, KVRT_ERR_INVALID_ARGUMENT (NULL path),
 * KVRT_ERR_OUT_OF_RANGE (seq_id), KVRT_ERR_IO (the message names the step),
 * KVRT_ERR_OUT_OF_MEMORY. One thread at a time per context (other contexts on a
 * shared cache may run). Cost: O(the sequence's KV bytes) of copying and writing. */
KVRT_API kvrt_status kvrt_context_seq_save(const kvrt_context *ctx, int32_t seq_id, const char *path);

/* Replaces sequence seq_id with the one saved in `path` (by kvrt_context_seq_save
 * in this or another process): afterwards the sequence holds the saved tokens and
 * KV rows (its full blocks enter the prefix cache) and the saved logits, so the
 * next decode step gives the same logits, bit for bit, as if the saving context
 * had never stopped.
 * Returns KVRT_OK; KVRT_ERR_BAD_HANDLE; KVRT_ERR_INVALID_ARGUMENT (NULL path);
 * KVRT_ERR_OUT_OF_RANGE (seq_id; more tokens than n_ctx); KVRT_ERR_NOT_FOUND (no
 * such file); KVRT_ERR_IO; KVRT_ERR_MISMATCH (saved from another model, KV dtype,
 * block size, cache salt or architecture, or by another format version: the
 * message names which); KVRT_ERR_BAD_FORMAT (not a saved sequence, truncated,
 * corrupted: checksum); KVRT_ERR_CACHE_FULL (the rows do not fit even after
 * evicting every cached block; release sequences first). On any failure the
 * sequence is exactly as it was. One thread at a time per context.
 * Cost: O(file size): reads and verifies the whole file before the cache changes. */
KVRT_API kvrt_status kvrt_context_seq_load(kvrt_context *ctx, int32_t seq_id, const char *path);

/* Since 0.4. Restores a conversation saved by kvrt_context_seq_save whatever KV the
 * saving context kept: kvrt_context_seq_load where the file's rows fit this context
 * as saved; where only their KV dtype, block size or cache salt differ (another
 * k_dtype / v_dtype, block_tokens or act_bits, or a kvrt release whose default
 * arithmetic changed: such a file is refused by kvrt_context_seq_load), the sequence
 * is made to hold the saved tokens as kvrt_context_prefill would (common prefix kept,
 * prefix cache reused, the rest computed), so the conversation goes on in this
 * context's arithmetic: its next logits are those of a cold prefill of the same tokens
 * here, not the saving context's. An empty saved conversation empties the sequence.
 * A file saved under another cache_salt is recomputed too: the salt keeps prefix
 * caches apart, and the caller chose the file (its tokens are in it in the clear).
 *   stats     NULL or filled (struct_size set): loaded as saved, prompt_tokens ==
 *             reused_tokens == the saved tokens and computed_tokens == 0; recomputed,
 *             as kvrt_context_prefill fills it;
 *   recomputed NULL or set to 1 when the rows were recomputed, 0 when loaded as saved
 *             (also set on KVRT_ERR_CACHE_FULL / KVRT_ERR_CANCELLED during the recompute).
 * Returns KVRT_OK; KVRT_ERR_BAD_HANDLE; KVRT_ERR_INVALID_ARGUMENT (NULL path);
 * KVRT_ERR_OUT_OF_RANGE (seq_id; more tokens than n_ctx); KVRT_ERR_NOT_FOUND;
 * KVRT_ERR_IO; KVRT_ERR_MISMATCH (saved from another model or architecture, or by
 * another file format version); KVRT_ERR_BAD_FORMAT (not a saved sequence, truncated,
 * corrupted, a token outside the vocabulary); KVRT_ERR_CACHE_FULL; KVRT_ERR_CANCELLED
 * (progress callback). Every check on the file comes first: then the sequence is
 * exactly as it was. A failed recompute leaves it as a failed kvrt_context_prefill
 * does (its common prefix with the saved tokens, logits unset).
 * One thread at a time per context. Cost: O(file size), plus a prefill of the tokens
 * that are not in the prefix cache when the rows are recomputed. */
KVRT_API kvrt_status kvrt_context_seq_restore(kvrt_request_stats *stats, int32_t *recomputed, kvrt_context *ctx,
                                              int32_t seq_id, const char *path);

/* Makes sequence dst_seq a copy of src_seq (tokens, logits, KV rows) that shares
 * src's cache blocks by reference count (a partly filled last block is copied when
 * either appends): a conversation branches without recomputing. What dst held is
 * released first. src_seq == dst_seq is a no-op; an empty src empties dst.
 * Returns KVRT_OK, KVRT_ERR_BAD_HANDLE, KVRT_ERR_OUT_OF_RANGE (either id),
 * KVRT_ERR_OUT_OF_MEMORY (dst unchanged). One thread at a time per context.
 * Never allocates cache blocks. O(blocks). */
KVRT_API kvrt_status kvrt_context_seq_fork(kvrt_context *ctx, int32_t src_seq, int32_t dst_seq);

/* Keeps positions [0, n) of sequence seq_id (n <= its length) and returns the
 * blocks of the rest; n = 0 empties it. The logits are unset afterwards unless n
 * equals the length (the next prefill or decode computes them).
 * Returns KVRT_OK, KVRT_ERR_BAD_HANDLE, KVRT_ERR_OUT_OF_RANGE (seq_id, n above the
 * length), KVRT_ERR_INVALID_STATE (a sliding window already dropped rows a query at
 * n needs, or a CED sequence cannot be cut there: truncate to 0 or later; nothing
 * changed). One thread at a time per context. O(blocks dropped). */
KVRT_API kvrt_status kvrt_context_seq_truncate(kvrt_context *ctx, int32_t seq_id, size_t n);

/* ---- Sampling ------------------------------------------------------------ */

typedef struct kvrt_sampler kvrt_sampler;

/* Sampling options. temperature <= 0 means greedy (argmax; ties go to the
 * lowest id) and the other fields are ignored. Otherwise the chain is:
 * top-k (0 = off), then top-p (1 = off), then min-p (0 = off; keep tokens
 * with p >= min_p x p_max), then temperature, then a draw from a 64-bit PRNG
 * seeded with `seed` (same seed, same logits => same tokens). */
typedef struct kvrt_sampler_config {
    size_t struct_size;
    float temperature;  /* default 0 (greedy) */
    int32_t top_k;      /* default 0 */
    float top_p;        /* default 1 */
    float min_p;        /* default 0 */
    uint64_t seed;      /* default 0 */
} kvrt_sampler_config;

/* Fills *cfg with the defaults (greedy). struct_size: sizeof(kvrt_sampler_config) as
 * the caller was compiled with (any size from this struct's first published one up).
 * Returns KVRT_OK; KVRT_ERR_INVALID_ARGUMENT (NULL cfg, another struct_size; nothing
 * written). Thread-safe. O(1). */
KVRT_API kvrt_status kvrt_sampler_config_init(kvrt_sampler_config *cfg, size_t struct_size);

/* Creates a sampler (cfg NULL: the defaults, greedy); destroy it with
 * kvrt_sampler_destroy. Returns KVRT_ERR_INVALID_ARGUMENT for a NULL out,
 * a bad cfg->struct_size, a negative top_k, top_p outside (0, 1], min_p outside [0, 1], a NaN or
 * infinite temperature; the message names the field. */
KVRT_API kvrt_status kvrt_sampler_create(kvrt_sampler **out, const kvrt_sampler_config *cfg);
/* NULL, destroyed and foreign handles are ignored. */
KVRT_API void kvrt_sampler_destroy(kvrt_sampler *sampler);

/* Picks a token from n_logits logits. Advances the sampler's PRNG. Non-finite
 * logits: NaN and -inf are never picked; +inf wins (greedy: the lowest +inf
 * id; otherwise uniformly among the +inf ids, one PRNG draw). Returns
 * KVRT_OK, KVRT_ERR_BAD_HANDLE, KVRT_ERR_INVALID_ARGUMENT (NULL logits or
 * out, n_logits == 0, every logit NaN or -inf), KVRT_ERR_OVERFLOW (n_logits
 * > 2^31-1). One thread at a time per sampler. Cost: O(n) (greedy: one vectorised
 * scan) plus sorting the candidates the rules read, largest first (k for top-k;
 * top-p's nucleus and a draw's walk otherwise, usually a few hundred). */
KVRT_API kvrt_status kvrt_sampler_sample(int32_t *out, kvrt_sampler *sampler, const float *logits,
                                         size_t n_logits);

/* ---- Generation ----------------------------------------------------------- */

/* Called once per generated token with the token and the text it completes
 * (UTF-8; may be empty while a multi-byte character or a possible stop string
 * is held back). After the last token, text still held back (a partial stop
 * string that never completed) is flushed in one more call with token = -1.
 * Return 0 to continue, non-zero to stop (KVRT_STOP_CALLBACK, KVRT_OK).
 * Contract: it runs on the thread that called kvrt_context_generate, inside
 * that call; `text` is valid only until the callback returns (copy it to
 * keep it) and is not NUL-terminated (use text_len). It may call read-only
 * functions of the context (kvrt_context_get_logits, seq_length,
 * seq_kv_bytes, activity_get), kvrt_context_cancel, and anything on other
 * objects; a call that would change this context (prefill, decode,
 * generate, seq_release, ...) returns KVRT_ERR_INVALID_STATE. Must not
 * unwind (no C++ exception, Rust panic or longjmp through kvrt). The
 * progress callback (kvrt_progress_fn) follows the same contract. */
typedef int (*kvrt_token_fn)(int32_t token, const char *text, size_t text_len, void *user_data);

typedef struct kvrt_generate_config {
    size_t struct_size;
    uint32_t max_tokens;                /* default 256 */
    int32_t stop_at_eog;                /* default 1: stop at EOS / end of turn (not emitted) */
    kvrt_sampler *sampler;              /* NULL: greedy */
    const char *const *stop_strings;    /* stop when the output contains one (not emitted) */
    size_t n_stop_strings;
    kvrt_token_fn on_token;             /* NULL: no streaming */
    void *user_data;
    /* Appended in 0.2 (a struct_size of 0.1's kvrt_generate_config, which ends at
     * user_data, keeps these NULL): the answer into caller buffers, with or without
     * on_token. Each is updated after every token, so it holds what was produced even
     * when the call fails or is cancelled part-way. */
    int32_t *tokens_out;                /* NULL or tokens_capacity entries: the first
                                           tokens_capacity generated tokens (EOG not included) */
    size_t tokens_capacity;
    size_t *tokens_written;             /* NULL or receives how many tokens were generated in
                                           all; more than tokens_capacity = truncated */
    char *text_out;                     /* NULL or text_capacity bytes: the answer's text as
                                           streamed (stop strings cut), always NUL-terminated,
                                           cut at a UTF-8 character boundary when it does not fit */
    size_t text_capacity;
    size_t *text_written;               /* NULL or receives the answer's length in bytes plus 1
                                           (the NUL counts, as in every text buffer: kvrt/model.h);
                                           > text_capacity = truncated. Before 0.3 the NUL was
                                           excluded */
} kvrt_generate_config;

/* Fills *cfg with the defaults (256 tokens, stop at end of generation, greedy, no
 * callback or buffers). struct_size: sizeof(kvrt_generate_config) as the caller was
 * compiled with (0.1's size keeps the fields appended since at their defaults).
 * Returns KVRT_OK; KVRT_ERR_INVALID_ARGUMENT (NULL cfg, another struct_size; nothing
 * written). Thread-safe. O(1). */
KVRT_API kvrt_status kvrt_generate_config_init(kvrt_generate_config *cfg, size_t struct_size);

/* Prefills sequence seq_id with prompt (as kvrt_context_prefill), then
 * samples and decodes up to max_tokens tokens, streaming each through
 * on_token and into the output buffers, until a stop condition. A sampler
 * with penalty stages (kvrt_sampler_chain_create) sees the prompt's tokens
 * and then each token sampled (its history is set at the start of the call). Afterwards the sequence holds the prompt
 * and every generated token but the last one sampled (its K/V are only needed
 * by a further step), so a following prefill of prompt + answer + next turn
 * reuses all of it and computes from the last answer token on. stats (NULL or filled)
 * reports reuse, time to first token, decode speed and the stop reason.
 * Returns KVRT_OK (for every stop reason but KVRT_STOP_CANCELLED) or the errors of
 * kvrt_context_prefill / kvrt_context_decode / kvrt_sampler_sample (logits
 * all NaN or -inf); KVRT_ERR_CANCELLED (kvrt_context_cancel: checked before
 * each sample and each decode step; stats say how far it got);
 * KVRT_ERR_INVALID_ARGUMENT also for a NULL tokens_out or text_out with a
 * non-zero capacity; KVRT_ERR_INVALID_STATE when called from one of this
 * context's callbacks. One thread at a time. */
KVRT_API kvrt_status kvrt_context_generate(kvrt_request_stats *stats, kvrt_context *ctx, int32_t seq_id,
                                           const int32_t *prompt, size_t n_prompt,
                                           const kvrt_generate_config *cfg);

/* ---- Sampler chains: penalties, logit bias and composable stages ---------- */

/* Stage types of a sampler chain, applied in the order added. */
typedef enum kvrt_sampler_stage_type {
    KVRT_SAMPLER_PENALTIES = 1,   /* repetition / frequency / presence penalties over a window */
    KVRT_SAMPLER_LOGIT_BIAS = 2,  /* logit[t] += bias for listed tokens (-inf bans one) */
    KVRT_SAMPLER_TOP_K = 3,       /* keep the top_k largest (0 = off) */
    KVRT_SAMPLER_TOP_P = 4,       /* keep the smallest set with probability >= p (1 = off) */
    KVRT_SAMPLER_MIN_P = 5,       /* keep probability >= p x the largest (0 = off) */
    KVRT_SAMPLER_TEMPERATURE = 6, /* logits /= temperature; <= 0 keeps only the largest */
    KVRT_SAMPLER_DIST = 7,        /* draw from the softmax with the chain's seeded PRNG; last stage */
    KVRT_SAMPLER_GREEDY = 8       /* argmax, ties to the lowest id; last stage */
} kvrt_sampler_stage_type;

/* One stage of a chain. Initialise with kvrt_sampler_stage_init(), set type and
 * the fields that type reads; fields are only ever appended.
 * Penalties (as llama.cpp's): over the last penalty_last_n tokens of the
 * sampler's history (-1 = all of it, 0 = off), every token t that occurs c > 0
 * times gets logit /= repeat_penalty when logit > 0, else logit *=
 * repeat_penalty, then logit -= c x frequency_penalty + presence_penalty. */
typedef struct kvrt_sampler_stage {
    size_t struct_size;
    int32_t type;               /* kvrt_sampler_stage_type; default 0 (must be set) */
    int32_t top_k;              /* TOP_K: >= 0; default 40 */
    float p;                    /* TOP_P: (0, 1]; MIN_P: [0, 1]; default 1 (top-p off: set it
                                   for MIN_P, where 1 keeps only the most probable) */
    float temperature;          /* TEMPERATURE: finite; default 0.8 */
    int32_t penalty_last_n;     /* PENALTIES: window, -1 or >= 0; default 64 */
    float repeat_penalty;       /* PENALTIES: finite, > 0; default 1 (off) */
    float frequency_penalty;    /* PENALTIES: finite; default 0 (off) */
    float presence_penalty;     /* PENALTIES: finite; default 0 (off) */
    const int32_t *bias_tokens; /* LOGIT_BIAS: n_bias token ids >= 0 (copied by chain_add) */
    const float *bias_values;   /* LOGIT_BIAS: n_bias biases, not NaN (copied) */
    size_t n_bias;              /* LOGIT_BIAS: at most 2^24 */
} kvrt_sampler_stage;

/* Fills *stage with the defaults above. Returns KVRT_ERR_INVALID_ARGUMENT for
 * NULL or an unknown struct_size. Thread-safe. O(1). */
KVRT_API kvrt_status kvrt_sampler_stage_init(kvrt_sampler_stage *stage, size_t struct_size);

/* Creates an empty sampler chain: a kvrt_sampler usable wherever one is
 * (kvrt_sampler_sample, kvrt_generate_config.sampler), whose stages are added
 * with kvrt_sampler_chain_add. A chain without a DIST or GREEDY stage picks the
 * argmax of what its stages leave. seed seeds the DIST draws (same seed, same
 * logits, same history => same tokens). Destroy with kvrt_sampler_destroy.
 * Returns KVRT_OK, KVRT_ERR_INVALID_ARGUMENT (NULL out), KVRT_ERR_OUT_OF_MEMORY.
 * Thread-safe. O(1). */
KVRT_API kvrt_status kvrt_sampler_chain_create(kvrt_sampler **out, uint64_t seed);

/* Appends a copy of *stage to the chain (bias arrays are copied; the caller's
 * may be freed after the call). Returns KVRT_OK; KVRT_ERR_BAD_HANDLE;
 * KVRT_ERR_INVALID_ARGUMENT (NULL stage, unknown struct_size or type, a field
 * outside its domain: the message names it; NULL bias arrays with n_bias > 0);
 * KVRT_ERR_INVALID_STATE (the sampler is not a chain, or the chain already
 * ends in DIST or GREEDY). On failure the chain is unchanged. One thread at a
 * time per sampler. O(n_bias). */
KVRT_API kvrt_status kvrt_sampler_chain_add(kvrt_sampler *sampler, const kvrt_sampler_stage *stage);

/* Appends token to the sampler's history (what penalty stages look at). Call
 * it with each token sampled when running your own loop over
 * kvrt_sampler_sample; kvrt_context_generate does it itself (and sets the
 * history to the prompt first). A plain sampler (kvrt_sampler_create) keeps
 * no history: a no-op. Returns KVRT_OK, KVRT_ERR_BAD_HANDLE,
 * KVRT_ERR_OUT_OF_RANGE (negative token). One thread at a time. O(1) amortised. */
KVRT_API kvrt_status kvrt_sampler_accept(kvrt_sampler *sampler, int32_t token);

/* Empties the sampler's history (the PRNG state is kept). Returns KVRT_OK,
 * KVRT_ERR_BAD_HANDLE. One thread at a time. O(1). */
KVRT_API kvrt_status kvrt_sampler_reset(kvrt_sampler *sampler);

/* ---- Cancellation and activity (safe from any thread) -------------------- */

/* Asks the call running on ctx to stop: it returns KVRT_ERR_CANCELLED as
 * described at the top of this header, at its next check (prefill: before
 * each chunk of n_batch tokens and each layer of a chunk of more than 16
 * rows; generate: before each sample and each decode step; decode: between
 * layers of a batch of more than 16 sequences, else a step runs to its end,
 * a few milliseconds; CED models: between chunks). The request
 * is cleared when the next call on ctx starts, so a cancel that arrives while
 * no call runs is dropped (a UI that stops "the current answer" cannot stop
 * the next one by accident). Thread-safe: may be called from any thread,
 * including from a callback of the running call. Returns KVRT_OK,
 * KVRT_ERR_BAD_HANDLE. O(1), never blocks. */
KVRT_API kvrt_status kvrt_context_cancel(kvrt_context *ctx);

/* What a context is doing (kvrt_context_activity_get). */
typedef enum kvrt_context_phase {
    KVRT_PHASE_IDLE = 0,
    KVRT_PHASE_PREFILL = 1,  /* computing prompt positions */
    KVRT_PHASE_DECODE = 2    /* generate's sample/decode loop */
} kvrt_context_phase;

/* A snapshot of a context's activity, readable from another thread while it
 * works (progress bars, watchdogs). Counters are of the running call, or of
 * the last one when idle. Fields are only ever appended. */
typedef struct kvrt_context_activity {
    size_t struct_size;
    int32_t phase;              /* kvrt_context_phase */
    int32_t cancel_pending;     /* 1: a cancel was asked and the running call has not stopped yet */
    uint64_t prefill_total;     /* positions the call's prefill computes (after reuse) */
    uint64_t prefill_done;      /* ... of which are computed */
    uint64_t generated_tokens;  /* tokens generate has sampled so far */
    uint64_t calls;             /* calls started on this context since it was created */
} kvrt_context_activity;

/* Sets struct_size and zeroes the rest. KVRT_ERR_INVALID_ARGUMENT for NULL
 * or an unknown size. */
KVRT_API kvrt_status kvrt_context_activity_init(kvrt_context_activity *out, size_t struct_size);

/* Fills *out (struct_size set by the caller) with ctx's activity. Each field
 * is read atomically; together they may be a few microseconds apart. The
 * per-request kvrt_request_stats stay the calling thread's (filled when the
 * call returns); the cache's kvrt_cache_stats_get is also safe from any
 * thread. Returns KVRT_OK, KVRT_ERR_BAD_HANDLE, KVRT_ERR_INVALID_ARGUMENT (NULL
 * out or unknown struct_size). Thread-safe, any time. O(1). */
KVRT_API kvrt_status kvrt_context_activity_get(kvrt_context_activity *out, const kvrt_context *ctx);

#ifdef __cplusplus
}
#endif

#endif /* KVRT_CONTEXT_H */
