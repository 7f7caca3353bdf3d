/*
 * kvrt/context.h — running a model: contexts over a KV cache, prefill and
 * decode of sequences, logits, sampling and generation, per-request stats.
 *
 * Threading: a kvrt_context is used by ONE thread at a time (calls on one
 * context must not overlap; different contexts may run in parallel, each
 * using its own OpenMP threads). A kvrt_sampler likewise. The model a
 * context runs is shared and immutable; the context holds a reference to it
 * (kvrt/model.h), so destroying the model first is safe.
 *
 * Sequences: a context holds up to n_seq_max sequences, named by the caller
 * with ids in [0, n_seq_max). A sequence is the token list whose K/V the cache
 * holds. kvrt_context_prefill(seq, tokens) makes the sequence hold exactly
 * `tokens`: it keeps the longest common prefix with what the sequence held
 * (an appended chat turn keeps everything; an edit keeps the positions before
 * the first changed token and recomputes from there), reuses the prefix
 * cache for the rest (every cached full block of the exact token prefix with
 * the same model fingerprint and cache salt), computes the remaining
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

/* Element type of cached K/V rows (values equal kvrt/cache.h's KVRT_DTYPE_*). */
#define KVRT_KV_F32 0
#define KVRT_KV_F16 1
#define KVRT_KV_BF16 2

/* Options of kvrt_context_create. Initialise with kvrt_context_config_init();
 * fields are only ever appended. */
typedef struct kvrt_context_config {
    size_t struct_size;
    uint32_t n_ctx;             /* positions per sequence; 0 = the model's training context */
    uint32_t n_seq_max;         /* sequence ids [0, n_seq_max); default 1 */
    uint32_t n_batch;           /* prefill chunk in tokens; default 512 */
    int32_t n_threads;          /* threads for this context's calls, 0..1024; 0 = the OpenMP default */
    int32_t kv_dtype;           /* KVRT_KV_*; default KVRT_KV_F16. KVRT_KV_BF16 on CPUs with
                                   AVX512_BF16: attention multiplies in bf16 (the query and the
                                   softmax weights rounded to bf16, f32 sums), ~1.3x faster
                                   prefill; KVRT_ISA=avx512 keeps f32 products */
    uint32_t block_tokens;      /* tokens per cache block when the context creates its cache; default 16.
                                   Cached prefixes are shared in whole blocks; longer blocks (64)
                                   read faster in decode at long contexts (longer contiguous runs) */
    uint64_t cache_bytes;       /* budget of a cache the context creates; 0 = room for
                                   n_seq_max full sequences plus as much again for cached prefixes */
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
} kvrt_context_config;

/* Fills *cfg with the defaults. Returns KVRT_ERR_INVALID_ARGUMENT for NULL or
 * an unusable struct_size. Thread-safe. O(1). */
KVRT_API kvrt_status kvrt_context_config_init(kvrt_context_config *cfg, size_t struct_size);

/* Creates a context that runs `model`.
 *   out    receives the context (NULL on failure); destroy with kvrt_context_destroy;
 *   model  the model; the context takes a reference (the model outlives it);
 *   cfg    options or NULL for the defaults.
 * Returns KVRT_OK; KVRT_ERR_BAD_HANDLE (NULL model); KVRT_ERR_INVALID_ARGUMENT
 * (bad cfg: struct_size, n_ctx above the model's limit, n_seq_max outside
 * 1..4096, n_batch above 65536, block_tokens above 4096, n_threads outside
 * 0..1024, unknown kv_dtype, reserved0 != 0, ...);
 * KVRT_ERR_MISMATCH (cfg->cache was made for another model or KV layout);
 * KVRT_ERR_OUT_OF_MEMORY. Thread-safe. Cost: allocates scratch buffers and,
 * without cfg->cache, the cache's arena reservation. */
KVRT_API kvrt_status kvrt_context_create(kvrt_context **out, kvrt_model *model, const kvrt_context_config *cfg);

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
KVRT_API kvrt_status kvrt_context_get_cache(kvrt_cache **out, kvrt_context *ctx);

/* ---- Per-request statistics -------------------------------------------- */

/* Why generation stopped. */
typedef enum kvrt_stop_reason {
    KVRT_STOP_NONE = 0,        /* not a generation, or it has not stopped */
    KVRT_STOP_EOG = 1,         /* the model produced an end-of-generation token */
    KVRT_STOP_MAX_TOKENS = 2,  /* max_tokens were generated */
    KVRT_STOP_STRING = 3,      /* a stop string appeared in the output */
    KVRT_STOP_CALLBACK = 4,    /* the token callback returned non-zero */
    KVRT_STOP_CONTEXT_FULL = 5 /* the sequence reached n_ctx positions */
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
 * Each sequence's logits are bit-identical to prefilling it alone.
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

KVRT_API kvrt_status kvrt_sampler_config_init(kvrt_sampler_config *cfg, size_t struct_size);

/* Creates a sampler. Returns KVRT_ERR_INVALID_ARGUMENT for a NULL out or cfg,
 * a negative top_k, top_p outside (0, 1], min_p outside [0, 1], a NaN or
 * infinite temperature; the message names the field. */
KVRT_API kvrt_status kvrt_sampler_create(kvrt_sampler **out, const kvrt_sampler_config *cfg);
/* NULL, destroyed and foreign handles are ignored. */
KVRT_API void kvrt_sampler_destroy(kvrt_sampler *sampler);

/* Picks a token from n_logits logits. Advances the sampler's PRNG. Non-finite
 * logits: NaN and -inf are never picked; +inf wins (greedy: the lowest +inf
 * id; otherwise uniformly among the +inf ids, one PRNG draw). Returns
 * KVRT_OK, KVRT_ERR_BAD_HANDLE, KVRT_ERR_INVALID_ARGUMENT (NULL logits or
 * out, n_logits == 0, every logit NaN or -inf), KVRT_ERR_OVERFLOW (n_logits
 * > 2^31-1). One thread at a time per sampler. O(n log k). */
KVRT_API kvrt_status kvrt_sampler_sample(int32_t *out, kvrt_sampler *sampler, const float *logits,
                                         size_t n_logits);

/* ---- Generation ----------------------------------------------------------- */

/* Called once per generated token with the token and the text it completes
 * (UTF-8; may be empty while a multi-byte character or a possible stop string
 * is held back). After the last token, text still held back (a partial stop
 * string that never completed) is flushed in one more call with token = -1.
 * Return 0 to continue, non-zero to stop. Must not unwind. */
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
} kvrt_generate_config;

KVRT_API kvrt_status kvrt_generate_config_init(kvrt_generate_config *cfg, size_t struct_size);

/* Prefills sequence seq_id with prompt (as kvrt_context_prefill), then
 * samples and decodes up to max_tokens tokens, streaming each through
 * on_token, until a stop condition. Afterwards the sequence holds the prompt
 * and every generated token but the last one sampled (its K/V are only needed
 * by a further step), so a following prefill of prompt + answer + next turn
 * reuses all of it and computes from the last answer token on. stats (NULL or filled)
 * reports reuse, time to first token, decode speed and the stop reason.
 * Returns KVRT_OK (for every stop reason) or the errors of
 * kvrt_context_prefill / kvrt_context_decode / kvrt_sampler_sample (logits
 * all NaN or -inf). One thread at a time. */
KVRT_API kvrt_status kvrt_context_generate(kvrt_request_stats *stats, kvrt_context *ctx, int32_t seq_id,
                                           const int32_t *prompt, size_t n_prompt,
                                           const kvrt_generate_config *cfg);

#ifdef __cplusplus
}
#endif

#endif /* KVRT_CONTEXT_H */
