/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The kvrt authors */

/*
 * kvrt/cache.h — the KV cache manager: arena-allocated KV blocks, sequences,
 * prefix caching, eviction and exact byte accounting.
 *
 * Most programs never call this header: a kvrt_context (kvrt/context.h) owns
 * a cache. It is for engines that bring their own model (they write and read
 * K/V rows here) and for inspecting a context's cache (statistics).
 *
 * Model. A cache is made from a LAYOUT: its layers, each of one kind
 *   KVRT_LAYER_FULL         K and V rows for every position,
 *   KVRT_LAYER_WINDOW       same, but a query at p reads only [p-W+1, p];
 *                           blocks wholly before that return to the pool,
 *   KVRT_LAYER_BANK_SOURCE  a global bank: one row per group g = p / ratio,
 *                           a single vector used as both K and V,
 *   KVRT_LAYER_BANK_READER  reads the bank of `source`; owns no rows,
 *   KVRT_LAYER_INDEXER_KEYS indexer keys of the bank `source` (one row per
 *                           group of that bank; K only),
 * and a block size in positions (block_tokens). A SEQUENCE (uint64 id, never
 * reused) holds positions [0, length). Appending reserves rows in every layer;
 * the caller writes them, then marks them computed: only then do its full
 * blocks enter the prefix index and become shareable with later sequences
 * (same model fingerprint, cache salt and adapter), which attach them with
 * kvrt_cache_seq_match_prefix instead of recomputing. A released sequence's
 * computed full blocks stay cached until the byte budget needs their memory
 * (least recently freed first).
 *
 * Rows. Rows of layer l hold n_kv_heads x head_dim elements of its dtype,
 * head-major. Row r of a full or window layer is position r; of a bank (or its
 * indexer keys) group r = position / ratio. A sequence of length n has
 * ceil(n / ratio) rows. Rows of a computed full block are immutable (it may
 * be shared); an append first copies a shared partial last block.
 *
 * Threading: a kvrt_cache is internally synchronised: any function may be
 * called on one cache from any number of threads at once. A
 * kvrt_cache_layout is used by one thread at a time.
 *
 * Handles: NULL, destroyed and foreign handles are detected and return
 * KVRT_ERR_BAD_HANDLE (no undefined behaviour). Sequence ids of another
 * cache, released ids and never-issued ids return KVRT_ERR_NOT_FOUND.
 * Every failing call leaves the cache exactly as it was, and
 * kvrt_last_error() names the problem.
 *
 * C99; no varargs, no bitfields, no structs by value. Config and output
 * structs carry their size first: initialise them with the matching _init.
 */
#ifndef KVRT_CACHE_H
#define KVRT_CACHE_H

#include "kvrt/common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kvrt_cache kvrt_cache;
typedef struct kvrt_cache_layout kvrt_cache_layout;

/* Element types: the one dtype enum of the API, for cache layers and for a
 * context's K/V (kvrt_context_config.kv_dtype; kvrt/context.h's KVRT_KV_* are
 * deprecated aliases of these values). */
typedef enum kvrt_dtype {
    KVRT_DTYPE_F32 = 0,
    KVRT_DTYPE_F16 = 1,
    KVRT_DTYPE_BF16 = 2,
    /* Quantised, FULL and WINDOW layers only. A head of head_dim elements is stored as
     * head_dim element bytes followed by its f16 scales; element c = raw(c) * scale[c / group].
     * I8: int8 in [-127, 127], group 32 (head_dim % 32 == 0): head_dim + head_dim / 16 bytes.
     * FP8_E4M3: OCP e4m3 (max 448, no infinities), group = head_dim: head_dim + 2 bytes. */
    KVRT_DTYPE_I8 = 3,
    KVRT_DTYPE_FP8_E4M3 = 4,
    /* 4-bit, BANK_SOURCE and INDEXER_KEYS layers only (CED banks; refused with
     * KVRT_ERR_UNSUPPORTED on FULL and WINDOW layers and as a v_dtype); head_dim % 32 == 0.
     * OCP e2m1 elements (0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives), two per byte
     * (element 2i in the low nibble), then one scale per 32 elements:
     *   bank rows: an f16 scale (q4_0's grouping): head_dim / 2 + head_dim / 16 bytes (288 at
     *     512). The rows are attended values as well as keys: an f16 scale puts a group's
     *     largest element within 1/2048 of the grid's top, a power of two only within 2x.
     *   indexer keys: an e8m0 scale (one byte, 2^(e - 127), 0xff = NaN; the MX format):
     *     head_dim / 2 + head_dim / 32 bytes (68 at 128). Keys only rank rows, so the coarser
     *     scale costs little, and applying it is an exponent add.
     * Quantiser: scale = the smallest one with 6 * scale >= the group's largest magnitude (no
     * element overflows the grid); elements rounded to the nearest grid value, ties to even;
     * a NaN or inf element makes its group's scale NaN (a state file or tier block holding a
     * NaN/inf scale is refused as corrupt); finite groups beyond the largest scale saturate. */
    KVRT_DTYPE_FP4 = 5
} kvrt_dtype;

typedef enum kvrt_layer_kind {
    KVRT_LAYER_FULL = 0,
    KVRT_LAYER_WINDOW = 1,
    KVRT_LAYER_BANK_SOURCE = 2,
    KVRT_LAYER_BANK_READER = 3,
    KVRT_LAYER_INDEXER_KEYS = 4
} kvrt_layer_kind;

/* Number of kinds slots in kvrt_cache_stats.kinds (indexed by kvrt_layer_kind). */
#define KVRT_CACHE_KIND_SLOTS 8

/* ---- Layout ------------------------------------------------------------- */

/* One layer of a layout. Fields are only ever appended. */
typedef struct kvrt_cache_layer_config {
    size_t struct_size;
    int32_t kind;       /* kvrt_layer_kind; default KVRT_LAYER_FULL */
    int32_t n_kv_heads; /* > 0 (a bank source: usually 1); ignored for a reader */
    int32_t head_dim;   /* > 0 (a bank source: the entry width D); ignored for a reader */
    int32_t dtype;      /* kvrt_dtype; default KVRT_DTYPE_F16 */
    int32_t window;     /* WINDOW: W > 0 positions (the query's own included) */
    int32_t ratio;      /* BANK_SOURCE: positions per row, > 0, divides block_tokens; default 1 */
    int32_t source;     /* BANK_READER, INDEXER_KEYS: index of an earlier BANK_SOURCE layer; default -1 */
    int32_t shared_kv;  /* FULL, WINDOW: 1 = one row serves as both K and V (MQA with K = V, as
                           CED windows); default 0. Banks and indexer keys always store one row. */
    /* Appended in 0.3 (a struct_size ending at shared_kv keeps the default): */
    int32_t v_dtype;    /* FULL, WINDOW with separate K and V: the V rows' kvrt_dtype when it
                           differs from dtype (the K rows'); -1 (default): dtype */
} kvrt_cache_layer_config;

/* Fills *cfg with the defaults (a full f16 layer with n_kv_heads = head_dim = 0,
 * which the caller must set). struct_size: sizeof(kvrt_cache_layer_config).
 * Returns KVRT_ERR_INVALID_ARGUMENT for NULL or a struct_size this library
 * cannot fill. Thread-safe. O(1). */
KVRT_API kvrt_status kvrt_cache_layer_config_init(kvrt_cache_layer_config *cfg, size_t struct_size);

/* Creates an empty layout whose blocks hold block_tokens positions (1..65536;
 * 16 is a good default).
 *   out  receives the layout (NULL on failure); destroy with kvrt_cache_layout_destroy.
 * Returns KVRT_OK, KVRT_ERR_INVALID_ARGUMENT (NULL out, block_tokens out of
 * range), KVRT_ERR_OUT_OF_MEMORY. Thread-safe. O(1). */
KVRT_API kvrt_status kvrt_cache_layout_create(kvrt_cache_layout **out, int32_t block_tokens);

/* Destroys a layout. NULL and unknown handles are ignored. Caches made from
 * it are unaffected. */
KVRT_API void kvrt_cache_layout_destroy(kvrt_cache_layout *layout);

/* Appends `count` identical layers (count >= 1).
 *   out_first  receives the index of the first one (may be NULL).
 * Returns KVRT_OK; KVRT_ERR_BAD_HANDLE; KVRT_ERR_INVALID_ARGUMENT (NULL cfg,
 * bad struct_size, unknown kind, zero heads or width, window 0 on a window
 * layer, ratio <= 0 or not dividing block_tokens on a bank source, a source
 * that is not an earlier bank source, count < 1, a head_dim the dtype's scale group
 * of 32 does not divide); KVRT_ERR_UNSUPPORTED (a dtype the kind cannot hold: fp4 on a
 * full or window layer or as v_dtype, int8/fp8 on bank and indexer key layers);
 * KVRT_ERR_OVERFLOW (more than 65536 layers, row size
 * overflow). On failure the layout is unchanged. One thread at a time per
 * layout. O(count). */
KVRT_API kvrt_status kvrt_cache_layout_add_layers(int32_t *out_first, kvrt_cache_layout *layout,
                                                  const kvrt_cache_layer_config *cfg, int32_t count);

/* Number of layers added so far. Returns KVRT_ERR_BAD_HANDLE or
 * KVRT_ERR_INVALID_ARGUMENT (NULL out). O(1). */
KVRT_API kvrt_status kvrt_cache_layout_n_layers(int32_t *out, const kvrt_cache_layout *layout);

/* ---- Cache ---------------------------------------------------------------- */

typedef struct kvrt_cache_config {
    size_t struct_size;
    uint64_t budget_bytes; /* the cache never holds more block bytes than this; default 256 MiB */
    int32_t large_pages;   /* 1: try explicit 2 MiB pages (hugetlb) for the arena first; default 0.
                              Either way the arena asks for transparent 2 MiB pages (madvise) and
                              falls back to 4 KiB pages where the OS gives neither */
    int32_t reserved0;     /* must be 0 */
} kvrt_cache_config;

/* Fills *cfg with the defaults. Returns KVRT_ERR_INVALID_ARGUMENT for NULL
 * or an unusable struct_size. Thread-safe. O(1). */
KVRT_API kvrt_status kvrt_cache_config_init(kvrt_cache_config *cfg, size_t struct_size);

/* Creates a cache for `layout` (copied; the layout may be destroyed after).
 *   out     receives the cache (NULL on failure); destroy with kvrt_cache_destroy;
 *   layout  at least one layer;
 *   cfg     NULL for the defaults.
 * Returns KVRT_OK; KVRT_ERR_BAD_HANDLE (layout); KVRT_ERR_INVALID_ARGUMENT
 * (NULL out, empty layout, budget 0, bad cfg); KVRT_ERR_OVERFLOW (a block
 * would exceed 4 GiB); KVRT_ERR_OUT_OF_MEMORY. Thread-safe. Cost: reserves
 * (does not commit) address space of about twice the budget in a dedicated
 * mimalloc arena; memory is committed as blocks are first used. */
KVRT_API kvrt_status kvrt_cache_create(kvrt_cache **out, const kvrt_cache_layout *layout,
                                       const kvrt_cache_config *cfg);

/* Destroys the cache and every sequence in it; all row pointers obtained from
 * it become invalid. NULL, unknown and already destroyed handles are ignored;
 * a cache owned by contexts (kvrt_context_get_cache) is not destroyed (its
 * contexts own it). Must not race with other calls on the same cache. */
KVRT_API void kvrt_cache_destroy(kvrt_cache *cache);

/* ---- Sequences ------------------------------------------------------------ */

/* Extra keys of a sequence: prefixes are shared only between sequences whose
 * keys are all equal. */
typedef struct kvrt_cache_keys {
    size_t struct_size;
    uint64_t fingerprint_lo; /* 128-bit model fingerprint (kvrt/model.h), default 0 */
    uint64_t fingerprint_hi;
    const void *salt;        /* cache salt bytes (copied), NULL = none */
    size_t salt_len;
    uint64_t adapter_id;     /* 0 = no adapter */
} kvrt_cache_keys;

/* Fills *keys with the defaults (all zero, no salt). Returns
 * KVRT_ERR_INVALID_ARGUMENT for NULL or an unusable struct_size. O(1). */
KVRT_API kvrt_status kvrt_cache_keys_init(kvrt_cache_keys *keys, size_t struct_size);

/* Creates an empty sequence.
 *   out_seq  receives its id (> 0, never reused by this cache);
 *   keys     NULL = default keys.
 * Returns KVRT_OK, KVRT_ERR_BAD_HANDLE, KVRT_ERR_INVALID_ARGUMENT (NULL
 * out_seq, bad keys), KVRT_ERR_OUT_OF_MEMORY. Thread-safe. O(salt). */
KVRT_API kvrt_status kvrt_cache_seq_create(uint64_t *out_seq, kvrt_cache *cache, const kvrt_cache_keys *keys);

/* Releases a sequence and its blocks; its computed full blocks stay cached
 * until evicted. Returns KVRT_OK, KVRT_ERR_BAD_HANDLE, KVRT_ERR_NOT_FOUND
 * (unknown or already released id; a pin id). Thread-safe. O(blocks). */
KVRT_API kvrt_status kvrt_cache_seq_release(kvrt_cache *cache, uint64_t seq);

/* Creates a sequence sharing every block of `parent` (reference counts; the
 * partly filled last block is copied when either appends).
 *   out_child  receives the new id.
 * Returns KVRT_OK, KVRT_ERR_BAD_HANDLE, KVRT_ERR_INVALID_ARGUMENT (NULL
 * out_child), KVRT_ERR_NOT_FOUND, KVRT_ERR_INVALID_STATE (parent has appended
 * positions not marked computed), KVRT_ERR_OUT_OF_MEMORY. Never allocates
 * blocks. Thread-safe. O(blocks). */
KVRT_API kvrt_status kvrt_cache_seq_fork(uint64_t *out_child, kvrt_cache *cache, uint64_t parent);

/* Positions >= pos become invalid and their blocks return (0 <= pos <= length).
 * Returns KVRT_OK, KVRT_ERR_BAD_HANDLE, KVRT_ERR_NOT_FOUND,
 * KVRT_ERR_OUT_OF_RANGE (pos < 0 or > length), KVRT_ERR_INVALID_STATE (a
 * window layer already dropped rows a query at pos needs; pos = 0 always
 * works). Thread-safe. O(blocks dropped). */
KVRT_API kvrt_status kvrt_cache_seq_truncate(kvrt_cache *cache, uint64_t seq, int64_t pos);

/* Appends n tokens: reserves their rows in every layer (two phases: if the
 * budget cannot hold them even after evicting every cached block,
 * KVRT_ERR_CACHE_FULL and nothing changed). Window layers drop blocks a
 * query at the old length no longer reads. The new rows are uninitialised
 * until written.
 * Returns KVRT_OK, KVRT_ERR_BAD_HANDLE, KVRT_ERR_NOT_FOUND,
 * KVRT_ERR_INVALID_ARGUMENT (NULL tokens with n > 0, whatever n; seq is a
 * pin), KVRT_ERR_OVERFLOW (length + n would exceed 2^31-1: any n > 2^31-1,
 * e.g. SIZE_MAX, returns it), KVRT_ERR_CACHE_FULL, KVRT_ERR_OUT_OF_MEMORY.
 * Thread-safe. O(n + blocks added), plus one block copy after a fork. */
KVRT_API kvrt_status kvrt_cache_seq_append(kvrt_cache *cache, uint64_t seq, const int32_t *tokens, size_t n);

/* Declares the rows of positions [0, n_positions) written in every layer.
 * Full blocks inside become immutable and enter the prefix index. A smaller
 * n than before is a no-op. Returns KVRT_OK, KVRT_ERR_BAD_HANDLE,
 * KVRT_ERR_NOT_FOUND, KVRT_ERR_OUT_OF_RANGE (n_positions < 0 or > length).
 * Thread-safe. O(new full blocks x block_tokens). */
KVRT_API kvrt_status kvrt_cache_seq_mark_computed(kvrt_cache *cache, uint64_t seq, int64_t n_positions);

/* On an EMPTY sequence: attaches the longest cached prefix of tokens[0, n) in
 * whole blocks, never covering the last token (at most
 * ((n-1)/block_tokens)*block_tokens), that every layer can resume from (a
 * window layer needs its last W positions' blocks). The sequence's length
 * and computed count become the hit.
 *   out_hit  receives the hit length in tokens (may be 0).
 * Returns KVRT_OK, KVRT_ERR_BAD_HANDLE, KVRT_ERR_NOT_FOUND,
 * KVRT_ERR_INVALID_ARGUMENT (NULL out_hit; NULL tokens with n > 0),
 * KVRT_ERR_INVALID_STATE (the sequence is not empty), KVRT_ERR_OUT_OF_RANGE
 * (n > 2^31-1). Counts n queried and the hit in the statistics.
 * (kvrt_cache_seq_match_prefix_v2 with KVRT_MATCH_SUB_BLOCK goes further, as a
 * context's prefill does.)
 * Thread-safe. O(n). */
KVRT_API kvrt_status kvrt_cache_seq_match_prefix(int64_t *out_hit, kvrt_cache *cache, uint64_t seq,
                                                 const int32_t *tokens, size_t n);

/* Flags of the _v2 prefix matches (bits; others are refused). */
typedef enum kvrt_match_flags {
    KVRT_MATCH_WHOLE_BLOCKS = 0, /* as kvrt_cache_seq_match_prefix */
    /* After the whole blocks, the hit goes on into a cached block whose parent
     * is the last whole block hit, up to the first token that differs (at most
     * block_tokens - 1 more, never the last token): rows of position p depend
     * only on tokens [0, p], so that block's first rows are the ones the prompt
     * would compute. Every layer must hold the block. The sequence then holds
     * it as its partly filled last block: shared and immutable (row writes
     * there return KVRT_ERR_INVALID_STATE) until the next append copies it, as
     * after kvrt_cache_seq_fork. A prompt thus recomputes from its first changed
     * token whatever the block size. */
    KVRT_MATCH_SUB_BLOCK = 1
} kvrt_match_flags;

/* kvrt_cache_seq_match_prefix with flags (kvrt_match_flags). Returns as it,
 * and KVRT_ERR_INVALID_ARGUMENT for unknown flag bits. Thread-safe.
 * O(n + log(cached blocks after the hit)). */
KVRT_API kvrt_status kvrt_cache_seq_match_prefix_v2(int64_t *out_hit, kvrt_cache *cache, uint64_t seq,
                                                    const int32_t *tokens, size_t n, uint32_t flags);

typedef struct kvrt_cache_seq_info {
    size_t struct_size;
    int64_t length;   /* positions */
    int64_t computed; /* positions marked computed */
    int64_t n_blocks; /* logical blocks: ceil(length / block_tokens) */
    uint64_t bytes;   /* bytes of the blocks it references (shared blocks counted fully) */
    int32_t is_pin;
    int32_t reserved0;
} kvrt_cache_seq_info;

/* Prepares *out for kvrt_cache_seq_info_get: sets out->struct_size = struct_size
 * and zeroes the rest of its first struct_size bytes (nothing past them).
 * struct_size: sizeof(kvrt_cache_seq_info) as the caller was compiled with; any
 * size from this struct's first published one to the library's is accepted.
 * Returns KVRT_OK; KVRT_ERR_INVALID_ARGUMENT (NULL out, another struct_size;
 * nothing written). Thread-safe. O(1). */
KVRT_API kvrt_status kvrt_cache_seq_info_init(kvrt_cache_seq_info *out, size_t struct_size);

/* Fills *out (set out->struct_size = sizeof *out first) with the state of a
 * sequence or pin. Returns KVRT_OK, KVRT_ERR_BAD_HANDLE, KVRT_ERR_NOT_FOUND,
 * KVRT_ERR_INVALID_ARGUMENT (NULL out, bad struct_size). Thread-safe. O(blocks). */
KVRT_API kvrt_status kvrt_cache_seq_info_get(kvrt_cache_seq_info *out, const kvrt_cache *cache, uint64_t seq);

/* ---- Prefix cache --------------------------------------------------------- */

/* The hit kvrt_cache_seq_match_prefix would give a new sequence with `keys`
 * (NULL = defaults), without attaching anything or counting statistics.
 * Returns as match_prefix (no NOT_FOUND / INVALID_STATE). Thread-safe. O(n). */
KVRT_API kvrt_status kvrt_cache_lookup_prefix(int64_t *out_hit, const kvrt_cache *cache,
                                              const kvrt_cache_keys *keys, const int32_t *tokens, size_t n);

/* The hit kvrt_cache_seq_match_prefix_v2 would give with these flags; returns
 * as kvrt_cache_lookup_prefix, and KVRT_ERR_INVALID_ARGUMENT for unknown flag
 * bits. Thread-safe. O(n + log(cached blocks after the hit)). */
KVRT_API kvrt_status kvrt_cache_lookup_prefix_v2(int64_t *out_hit, const kvrt_cache *cache,
                                                 const kvrt_cache_keys *keys, const int32_t *tokens, size_t n,
                                                 uint32_t flags);

/* Pins the longest cached prefix of tokens[0, n) (whole blocks, may cover
 * all n): its blocks stay in memory until kvrt_cache_unpin.
 *   out_pin     receives the pin id (same id space as sequences);
 *   out_pinned  receives the pinned length in tokens (may be NULL).
 * Returns KVRT_OK, KVRT_ERR_BAD_HANDLE, KVRT_ERR_INVALID_ARGUMENT (NULL
 * out_pin, bad keys, NULL tokens with n > 0), KVRT_ERR_OUT_OF_RANGE
 * (n > 2^31-1), KVRT_ERR_NOT_FOUND (no block of the prefix is cached).
 * Thread-safe. O(n). */
KVRT_API kvrt_status kvrt_cache_pin_prefix(uint64_t *out_pin, int64_t *out_pinned, kvrt_cache *cache,
                                           const kvrt_cache_keys *keys, const int32_t *tokens, size_t n);

/* Releases a pin. Returns KVRT_OK, KVRT_ERR_BAD_HANDLE, KVRT_ERR_NOT_FOUND
 * (unknown or released id, or a sequence id). Thread-safe. O(blocks). */
KVRT_API kvrt_status kvrt_cache_unpin(kvrt_cache *cache, uint64_t pin);

/* ---- Rows (engines that bring their own model) ----------------------------- */

typedef struct kvrt_cache_layer_info {
    size_t struct_size;
    int32_t kind;           /* kvrt_layer_kind */
    int32_t row_layer;      /* the layer owning the rows (the source for a reader) */
    int32_t ratio;          /* positions per row */
    int32_t rows_per_block; /* block_tokens / ratio */
    int32_t n_kv_heads;
    int32_t head_dim;
    int32_t dtype;          /* kvrt_dtype */
    int32_t window;         /* W for a window layer, else 0 */
    uint64_t row_bytes;     /* bytes of one row */
    uint64_t k_offset;      /* byte offset of the K rows inside a block */
    uint64_t v_offset;      /* of the V rows (== k_offset when K = V) */
    uint64_t block_bytes;   /* bytes of one block of this layer's manager (all its layers) */
    int32_t separate_v;     /* 1: K and V rows; 0: one row serves as both */
    int32_t manager;        /* index of the block manager */
    /* Appended in 0.3: */
    int32_t v_dtype;        /* kvrt_dtype of the V rows (== dtype unless set apart) */
    uint64_t v_row_bytes;   /* bytes of one V row (== row_bytes unless v_dtype differs) */
} kvrt_cache_layer_info;

/* Prepares *out for kvrt_cache_layer_info_get, as kvrt_cache_seq_info_init does
 * (struct_size = sizeof(kvrt_cache_layer_info) as the caller knows it). Returns
 * KVRT_OK; KVRT_ERR_INVALID_ARGUMENT (NULL out, another struct_size; nothing
 * written). Thread-safe. O(1). */
KVRT_API kvrt_status kvrt_cache_layer_info_init(kvrt_cache_layer_info *out, size_t struct_size);

/* Where layer `layer`'s rows sit inside a block:
 *   row r of a sequence = table[r / rows_per_block] + k_offset (or v_offset)
 *                         + (r % rows_per_block) * row_bytes.
 * Returns KVRT_OK, KVRT_ERR_BAD_HANDLE, KVRT_ERR_INVALID_ARGUMENT (NULL out,
 * bad struct_size), KVRT_ERR_OUT_OF_RANGE (layer). Thread-safe. O(1). */
KVRT_API kvrt_status kvrt_cache_layer_info_get(kvrt_cache_layer_info *out, const kvrt_cache *cache, int32_t layer);

/* DEPRECATED since 0.3: use kvrt_cache_write_rows_v2, which also takes the
 * sizes of k and v and checks them (this one trusts the caller's buffers to
 * hold n_rows rows). Kept, with unchanged behaviour, for programs built
 * against 0.1 and 0.2; it will be removed no earlier than 1.0.
 * Copies n_rows rows of layer `layer` starting at row first_row from k (and v).
 *   k  n_rows x row_bytes bytes of K rows;
 *   v  the V rows for a full/window layer; must be NULL when K = V.
 * All rows are checked before any is written. Returns KVRT_OK,
 * KVRT_ERR_BAD_HANDLE, KVRT_ERR_NOT_FOUND, KVRT_ERR_INVALID_ARGUMENT (NULL k,
 * v missing or present wrongly, a bank reader layer), KVRT_ERR_OUT_OF_RANGE
 * (layer, rows outside [0, ceil(length/ratio)), rows a window dropped),
 * KVRT_ERR_INVALID_STATE (a row in a shared or prefix-cached block).
 * Thread-safe. O(n_rows x row_bytes). */
KVRT_DEPRECATED("use kvrt_cache_write_rows_v2 (buffer sizes checked)")
KVRT_API kvrt_status kvrt_cache_write_rows(kvrt_cache *cache, uint64_t seq, int32_t layer, int64_t first_row,
                                           int64_t n_rows, const void *k, const void *v);

/* DEPRECATED since 0.3: use kvrt_cache_read_rows_v2, which takes the
 * capacity of each destination and checks it (this one writes n_rows rows
 * wherever k_dst and v_dst point). Kept, with unchanged behaviour, for
 * programs built against 0.1 and 0.2; it will be removed no earlier than 1.0.
 * Copies n_rows rows out (k_dst and, for full/window layers, v_dst, which may
 * be NULL to skip V). Readers read their source. Returns as write_rows, minus
 * INVALID_STATE. Thread-safe. O(n_rows x row_bytes). */
KVRT_DEPRECATED("use kvrt_cache_read_rows_v2 (dst, capacity)")
KVRT_API kvrt_status kvrt_cache_read_rows(void *k_dst, void *v_dst, const kvrt_cache *cache, uint64_t seq,
                                          int32_t layer, int64_t first_row, int64_t n_rows);

/* Copies n_rows rows of layer `layer` starting at row first_row from k (and v),
 * checking that the buffers hold them (replaces kvrt_cache_write_rows).
 *   k, k_bytes  the K rows: k_bytes >= n_rows x row_bytes (kvrt_cache_layer_info);
 *   v, v_bytes  the V rows of a full/window layer with separate V:
 *               v_bytes >= n_rows x v_row_bytes; v must be NULL (and v_bytes 0)
 *               when one row serves as both K and V.
 * Bytes past the rows needed are not read. All rows and sizes are checked
 * before any is written; on failure the cache is unchanged.
 * Returns KVRT_OK; KVRT_ERR_BAD_HANDLE; KVRT_ERR_NOT_FOUND (seq);
 * KVRT_ERR_INVALID_ARGUMENT (NULL k, v missing or present wrongly, NULL k or v
 * with a size > 0, k_bytes or v_bytes smaller than the rows: the message gives
 * both sizes, a bank reader layer); KVRT_ERR_OUT_OF_RANGE (layer, rows outside
 * [0, ceil(length/ratio)), rows a window dropped); KVRT_ERR_INVALID_STATE (a row
 * in a shared or prefix-cached block). Thread-safe. O(n_rows x row_bytes). */
KVRT_API kvrt_status kvrt_cache_write_rows_v2(kvrt_cache *cache, uint64_t seq, int32_t layer, int64_t first_row,
                                              int64_t n_rows, const void *k, size_t k_bytes, const void *v,
                                              size_t v_bytes);

/* Copies n_rows rows of layer `layer` out, into caller buffers whose capacity
 * (in bytes) is checked (replaces kvrt_cache_read_rows). Readers read their
 * source.
 *   k_dst, k_capacity  receives the K rows: k_capacity >= n_rows x row_bytes;
 *   v_dst, v_capacity  NULL (capacity 0) to skip V, else receives the V rows of a
 *                      full/window layer with separate V: v_capacity >= n_rows x
 *                      v_row_bytes; must be NULL when one row serves as both.
 * Nothing is written past n_rows rows, nor anything at all on failure.
 * Returns KVRT_OK; KVRT_ERR_BAD_HANDLE; KVRT_ERR_NOT_FOUND (seq);
 * KVRT_ERR_INVALID_ARGUMENT (NULL k_dst, v_dst on a K = V layer, NULL k_dst or
 * v_dst with a capacity > 0); KVRT_ERR_BUFFER_TOO_SMALL (a capacity below the
 * rows: the message gives the bytes needed, n_rows x row_bytes or x v_row_bytes
 * of kvrt_cache_layer_info); KVRT_ERR_OUT_OF_RANGE (layer, rows outside the
 * sequence or dropped by a window). Thread-safe. O(n_rows x row_bytes). */
KVRT_API kvrt_status kvrt_cache_read_rows_v2(void *k_dst, size_t k_capacity, void *v_dst, size_t v_capacity,
                                             const kvrt_cache *cache, uint64_t seq, int32_t layer,
                                             int64_t first_row, int64_t n_rows);

/* The block table of a sequence for layer `layer`: one address per logical
 * block (NULL for a block a window dropped), for kernels reading rows in
 * place with kvrt_cache_layer_info's offsets. The addresses stay valid until
 * the sequence is appended to, truncated or released.
 *   dst       capacity entries; NULL with capacity 0 is a size query (KVRT_OK;
 *             before 0.3 it returned KVRT_ERR_BUFFER_TOO_SMALL for a non-empty table);
 *   written   receives the number of blocks (also on BUFFER_TOO_SMALL).
 * Returns KVRT_OK, KVRT_ERR_BAD_HANDLE, KVRT_ERR_NOT_FOUND,
 * KVRT_ERR_INVALID_ARGUMENT (NULL written), KVRT_ERR_OUT_OF_RANGE (layer),
 * KVRT_ERR_BUFFER_TOO_SMALL. Thread-safe. O(blocks). */
KVRT_API kvrt_status kvrt_cache_block_table(const void **dst, size_t capacity, size_t *written,
                                            const kvrt_cache *cache, uint64_t seq, int32_t layer);

/* ---- State files ------------------------------------------------------------ */
/* Versioned binary files (magic, version, layout hash, model fingerprint,
 * XXH3 checksum), written to "<path>.tmp.<pid>", fsync'ed and renamed over
 * path, so a reader never sees a torn file. A file that does not match this
 * cache's layout or the given fingerprint, or is truncated or corrupted,
 * loads as a clean miss: an error naming the problem, the cache unchanged. */

/* Saves every block of the prefix index (in use or cached) with its hash.
 *   out_blocks  receives how many blocks were written (may be NULL);
 *   fingerprint the model's 128-bit fingerprint, checked on load.
 * Returns KVRT_OK, KVRT_ERR_BAD_HANDLE, KVRT_ERR_INVALID_ARGUMENT (NULL path),
 * KVRT_ERR_IO, KVRT_ERR_OUT_OF_MEMORY. Thread-safe (copies the blocks under
 * the cache's lock, writes outside it). O(cached bytes). */
KVRT_API kvrt_status kvrt_cache_save_prefixes(uint64_t *out_blocks, const kvrt_cache *cache, const char *path,
                                              uint64_t fingerprint_lo, uint64_t fingerprint_hi);

/* Loads a prefix file: its blocks become cached (evictable) prefix blocks,
 * in free budget bytes only (it never evicts; it stops when the budget is
 * full). Blocks already cached are skipped.
 *   out_blocks  receives how many blocks were added (may be NULL).
 * Returns KVRT_OK, KVRT_ERR_BAD_HANDLE, KVRT_ERR_INVALID_ARGUMENT (NULL path),
 * KVRT_ERR_NOT_FOUND (no such file), KVRT_ERR_IO, KVRT_ERR_MISMATCH (another
 * layout, fingerprint, state kind or version), KVRT_ERR_BAD_FORMAT
 * (malformed, truncated, checksum). Thread-safe. O(file size). */
KVRT_API kvrt_status kvrt_cache_load_prefixes(uint64_t *out_blocks, kvrt_cache *cache, const char *path,
                                              uint64_t fingerprint_lo, uint64_t fingerprint_hi);

/* Saves one sequence: its keys, tokens, computed count and all its rows.
 * Returns KVRT_OK, KVRT_ERR_BAD_HANDLE, KVRT_ERR_NOT_FOUND (unknown id or a
 * pin), KVRT_ERR_INVALID_ARGUMENT (NULL path), KVRT_ERR_IO. Thread-safe.
 * O(the sequence's bytes). */
KVRT_API kvrt_status kvrt_cache_seq_save(const kvrt_cache *cache, uint64_t seq, const char *path);

/* Recreates a saved sequence under a new id (its rows copied into new
 * blocks; its computed full blocks enter the prefix index).
 *   fingerprint  must equal the saved sequence's model fingerprint.
 * Returns KVRT_OK, KVRT_ERR_BAD_HANDLE, KVRT_ERR_INVALID_ARGUMENT (NULL
 * out_seq or path), KVRT_ERR_NOT_FOUND (no such file), KVRT_ERR_IO,
 * KVRT_ERR_MISMATCH, KVRT_ERR_BAD_FORMAT, KVRT_ERR_CACHE_FULL (does not fit
 * even after evicting every cached block; nothing changed). Thread-safe.
 * O(file size). */
KVRT_API kvrt_status kvrt_cache_seq_load(uint64_t *out_seq, kvrt_cache *cache, const char *path,
                                         uint64_t fingerprint_lo, uint64_t fingerprint_hi);

/* ---- Statistics ------------------------------------------------------------ */

typedef struct kvrt_cache_kind_stats {
    int32_t n_layers;
    int32_t reserved0;
    uint64_t blocks_in_use;
    uint64_t bytes_in_use;
    uint64_t blocks_cached;
    uint64_t bytes_cached;
    double bytes_per_token; /* full/window: 2 x layers x heads x dim x element bytes;
                               bank: width x bytes / ratio per source (K = V once);
                               indexer keys: width x bytes / ratio */
} kvrt_cache_kind_stats;

typedef struct kvrt_cache_stats {
    size_t struct_size;
    uint64_t budget_bytes;
    uint64_t bytes_in_use;    /* blocks held by sequences and pins */
    uint64_t bytes_cached;    /* unreferenced prefix blocks, evictable */
    uint64_t bytes_free;      /* budget - in use - cached */
    uint64_t blocks_in_use;
    uint64_t blocks_cached;
    uint64_t blocks_free;     /* block sets (one block of every manager) that fit in bytes_free */
    uint64_t block_set_bytes; /* bytes of one block of every manager: block_tokens positions */
    uint64_t padding_bytes;   /* alignment padding inside one block set (0 for usual shapes) */
    uint64_t n_sequences;
    uint64_t n_pins;
    uint64_t queried_tokens;  /* tokens passed to match_prefix */
    uint64_t hit_tokens;      /* of which served from the prefix cache */
    uint64_t evictions;       /* cached blocks evicted for their memory */
    double bytes_per_token;   /* all layers */
    uint64_t arena_reserved_bytes; /* address space reserved (not committed) */
    int32_t dedicated_arena;  /* 1: blocks live in a mimalloc arena of their own */
    int32_t large_pages;      /* 1: explicit 2 MiB pages were requested (kvrt_cache_config) */
    int32_t n_managers;
    int32_t block_tokens;
    kvrt_cache_kind_stats kinds[KVRT_CACHE_KIND_SLOTS]; /* indexed by kvrt_layer_kind */
    /* Appended in 0.2 (a 0.1 struct_size ends at kinds; these are then not written): */
    int32_t n_kinds;          /* entries of kinds the library filled (KVRT_CACHE_KIND_SLOTS when
                                 both were built with the same header; never more than that) */
    int32_t kind_stats_size;  /* sizeof(kvrt_cache_kind_stats) in the library: the stride of kinds.
                                 A later kvrt that needs more kinds or a larger entry appends a new
                                 array instead of changing this one */
    /* Appended in 0.3 (lower tiers, kvrt_cache_add_tier; an older struct_size does not get them): */
    uint64_t tier_loaded_tokens_disk;   /* positions whose block sets were loaded back from disk tiers */
    uint64_t tier_loaded_tokens_remote; /* ... from remote tiers (Redis) */
    int32_t n_tiers;                    /* tiers added to this cache */
    int32_t reserved_tiers;             /* 0 */
} kvrt_cache_stats;

/* Prepares *out for kvrt_cache_stats_get, as kvrt_cache_seq_info_init does
 * (struct_size = sizeof(kvrt_cache_stats) as the caller knows it). Returns
 * KVRT_OK; KVRT_ERR_INVALID_ARGUMENT (NULL out, another struct_size; nothing
 * written). Thread-safe. O(1). */
KVRT_API kvrt_status kvrt_cache_stats_init(kvrt_cache_stats *out, size_t struct_size);

/* Fills *out (set out->struct_size = sizeof *out first). Returns KVRT_OK,
 * KVRT_ERR_BAD_HANDLE, KVRT_ERR_INVALID_ARGUMENT (NULL out, bad struct_size).
 * Thread-safe. O(layers). */
KVRT_API kvrt_status kvrt_cache_stats_get(kvrt_cache_stats *out, const kvrt_cache *cache);

/* ---- Memory control ------------------------------------------------------ */

/* Changes the byte budget of a live cache (one made by kvrt_cache_create or
 * a context's, from kvrt_context_get_cache). Shrinking evicts cached
 * (unreferenced) prefix blocks, least recently used first, until the cache
 * fits; blocks held by sequences and pins are never touched, so a budget
 * below the bytes they hold (kvrt_cache_stats.bytes_in_use) is refused.
 * Growing takes effect at once (memory is committed as blocks are used; past
 * the arena's address-space reservation blocks come from the default heap).
 * Returns KVRT_OK; KVRT_ERR_BAD_HANDLE; KVRT_ERR_INVALID_ARGUMENT
 * (budget_bytes 0); KVRT_ERR_INVALID_STATE (below the bytes in use: the
 * message says how many; nothing changed). Thread-safe (internally
 * synchronised; contexts may be running). O(blocks evicted). */
KVRT_API kvrt_status kvrt_cache_set_budget(kvrt_cache *cache, uint64_t budget_bytes);

/* Releases cached prefix blocks now (memory pressure, an app going to the
 * background): evicts unreferenced cached blocks, least recently used first,
 * until at most keep_bytes of them remain (0: all), and returns their memory
 * to the cache's arena (mimalloc gives the pages back to the OS shortly
 * after). Sequences and pins keep everything they hold; later prompts simply
 * miss the prefixes released. released (may be NULL) receives the bytes freed.
 * Returns KVRT_OK, KVRT_ERR_BAD_HANDLE. Thread-safe. O(blocks evicted). */
KVRT_API kvrt_status kvrt_cache_trim(uint64_t *released, kvrt_cache *cache, uint64_t keep_bytes);

/* ---- Lower tiers: disk and Redis ------------------------------------------- */
/* Below the RAM block pool a cache may keep full prefix blocks in tiers, searched
 * in the order they were added: a directory (survives restarts; any number of
 * processes may share one) and a Redis server (shared by processes on several
 * hosts). A block set (every layer's block of one block of positions) is written
 * to every tier when it is evicted from RAM and on kvrt_cache_persist; a context's
 * prefill (kvrt_context_prefill, _prefill_batch, _generate) whose prefix RAM does
 * not hold continues block by block in the tiers and loads the blocks back (the
 * low-level kvrt_cache_seq_match_prefix matches RAM only).
 * Keys: the chained block hash (parent chain, tokens, model fingerprint, cache
 * salt, adapter) plus a hash of the layout (KV dtype, block size, every layer's
 * geometry): a block is only ever found by the same prefix of the same model under
 * the same salt. Values: framed with magic, format version, the full key, length
 * and an XXH3-128 checksum. A tier can only miss: a torn, corrupted, foreign or
 * stale entry, an I/O error, a timeout, a server that is down — each is counted
 * (kvrt_tier_stats) and the prefix is computed instead; nothing unverified is
 * ever used, and no tier fault is returned to the caller of a prefill. */

#define KVRT_TIER_DISK 1
#define KVRT_TIER_REDIS 2

/* One tier. Initialise with kvrt_tier_config_init(); fields are only appended. */
typedef struct kvrt_tier_config {
    size_t struct_size;
    int32_t kind;            /* KVRT_TIER_DISK or KVRT_TIER_REDIS; default KVRT_TIER_DISK */
    uint32_t timeout_ms;     /* REDIS: connect and per-command timeout; default 200 */
    const char *location;    /* DISK: a directory (created when missing); REDIS:
                                "redis://host:port[/db]". Copied. Required */
    uint64_t budget_bytes;   /* DISK: cap on the directory's entry bytes, least recently used
                                entries removed first; REDIS: cap on the bytes this process
                                stores. 0 (default): none */
    const char *key_prefix;  /* REDIS: prefix of every key; NULL (default) = "kvrt:" */
} kvrt_tier_config;

/* Fills *cfg with the defaults. Returns KVRT_ERR_INVALID_ARGUMENT for NULL or an
 * unusable struct_size. Thread-safe. O(1). */
KVRT_API kvrt_status kvrt_tier_config_init(kvrt_tier_config *cfg, size_t struct_size);

/* Adds a tier below the cache's RAM (after the tiers added before).
 * Returns KVRT_OK; KVRT_ERR_BAD_HANDLE; KVRT_ERR_INVALID_ARGUMENT (NULL cfg, bad
 * struct_size, unknown kind, NULL or empty location, a malformed Redis URL);
 * KVRT_ERR_IO (the directory cannot be created or written);
 * KVRT_ERR_UNSUPPORTED (KVRT_TIER_REDIS in a library built without hiredis).
 * A Redis server that is down is not an error: its lookups miss and are counted.
 * On failure the cache is unchanged. Thread-safe. Cost: DISK scans the directory
 * once (its size, temporary files of dead writers). */
KVRT_API kvrt_status kvrt_cache_add_tier(kvrt_cache *cache, const kvrt_tier_config *cfg);

/* Writes every indexed block set of the cache (in use or cached) that its tiers
 * were not given yet into every tier ("persist now"), e.g. before a process exits.
 *   out_blocks  receives the number of block sets written (may be NULL).
 * Returns KVRT_OK (also when a tier drops puts: see kvrt_tier_stats.put_failures),
 * KVRT_ERR_BAD_HANDLE, KVRT_ERR_OUT_OF_MEMORY. Thread-safe: copies one block set at
 * a time under the cache's lock and writes outside it. O(cached bytes). */
KVRT_API kvrt_status kvrt_cache_persist(uint64_t *out_blocks, kvrt_cache *cache);

/* Number of tiers. Returns KVRT_OK, KVRT_ERR_BAD_HANDLE, KVRT_ERR_INVALID_ARGUMENT
 * (NULL out). Thread-safe. O(1). */
KVRT_API kvrt_status kvrt_cache_n_tiers(size_t *out, const kvrt_cache *cache);

/* Counters of one tier (this process's view). */
typedef struct kvrt_tier_stats {
    size_t struct_size;
    int32_t kind;            /* KVRT_TIER_DISK or KVRT_TIER_REDIS */
    int32_t reserved0;
    uint64_t puts;           /* entries stored */
    uint64_t put_bytes;
    uint64_t put_failures;   /* puts dropped by a fault or the budget */
    uint64_t gets;           /* lookups */
    uint64_t hits;           /* lookups that returned an entry */
    uint64_t get_bytes;
    uint64_t misses;         /* not present */
    uint64_t corrupt;        /* present but rejected (checksum, key, version, shape); removed */
    uint64_t errors;         /* I/O or connection errors */
    uint64_t timeouts;
    uint64_t evictions;      /* entries removed to stay within the budget */
    uint64_t bytes_stored;   /* bytes the tier holds (as far as this process knows; 0 if unknown) */
    uint64_t loaded_blocks;  /* block sets loaded back into RAM from this tier */
} kvrt_tier_stats;

/* Sets stats->struct_size and zeroes the rest. Returns KVRT_ERR_INVALID_ARGUMENT
 * for NULL or an unusable struct_size. O(1). */
KVRT_API kvrt_status kvrt_tier_stats_init(kvrt_tier_stats *stats, size_t struct_size);

/* Fills *out with the counters of tier `index` (in the order added).
 * Returns KVRT_OK, KVRT_ERR_BAD_HANDLE, KVRT_ERR_INVALID_ARGUMENT (NULL out, bad
 * struct_size), KVRT_ERR_OUT_OF_RANGE (index >= kvrt_cache_n_tiers). Thread-safe. O(1). */
KVRT_API kvrt_status kvrt_cache_tier_stats_get(kvrt_tier_stats *out, const kvrt_cache *cache, size_t index);

#ifdef __cplusplus
}
#endif

#endif /* KVRT_CACHE_H */
