/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The kvrt authors */

/*
 * kvrt/model.h — loading a model from a GGUF file; model facts, tokenizer and
 * chat template.
 *
 * A kvrt_model is immutable once loaded: every function here that takes a
 * `const kvrt_model *` may be called from any number of threads at once.
 * Internally the model is reference-counted: a context (kvrt/context.h)
 * holds a reference, so kvrt_model_destroy() while contexts still use the
 * model only drops the caller's reference — the weights are freed when the
 * last context is destroyed; contexts keep working. Handles are checked, never
 * dereferenced: a NULL, destroyed or foreign model handle returns
 * KVRT_ERR_BAD_HANDLE (kvrt_model_destroy ignores it).
 *
 * Buffers follow one convention, the whole API over: (dst, capacity, written).
 *   - dst == NULL with capacity == 0 is a size query: KVRT_OK, *written = the
 *     number of elements needed;
 *   - capacity too small: KVRT_ERR_BUFFER_TOO_SMALL, *written = the number
 *     needed, dst unspecified (it may hold a partial result);
 *   - success: KVRT_OK, *written = the number of elements written;
 *   - dst == NULL with capacity > 0, or a NULL written: KVRT_ERR_INVALID_ARGUMENT.
 * So the *written of a size query is exactly the capacity that succeeds.
 * Text buffers (every `char *dst` of the API: metadata, tensor names,
 * kvrt_model_detokenize, kvrt_model_chat_apply*, the text_out of
 * kvrt_generate_config) hold NUL-terminated UTF-8 and the terminating NUL is
 * one of the elements: *written counts it in all three cases above, so the
 * text is *written - 1 bytes long and a buffer of *written bytes holds it.
 * (Detokenized text may contain NUL bytes of its own, from byte tokens: take
 * *written - 1 as its length rather than strlen.) Capacity 0 with a non-NULL
 * dst is always too small for text. Integer and float buffers (token ids,
 * logits, block tables) count elements of their type.
 *
 * C99; no varargs, no bitfields, no structs by value.
 */
#ifndef KVRT_MODEL_H
#define KVRT_MODEL_H

#include "kvrt/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A loaded model: config, packed weights, tokenizer. Opaque. */
typedef struct kvrt_model kvrt_model;

/* Progress of a long operation (model load, long prefill).
 *   fraction   in [0, 1], non-decreasing within one operation;
 *   stage      static, NUL-terminated name of the step ("load", "pack", "prefill");
 *   user_data  as given in the config.
 * Return 0 to continue, non-zero to cancel (the operation then fails with
 * KVRT_ERR_CANCELLED and leaves no partial state). Called on the thread that
 * made the call; it must not unwind and must not call back into the object
 * that reports the progress. */
typedef int (*kvrt_progress_fn)(float fraction, const char *stage, void *user_data);

/* Options of kvrt_model_load. Initialise with kvrt_model_config_init(); fields
 * are only ever appended. */
typedef struct kvrt_model_config {
    size_t struct_size;          /* set by kvrt_model_config_init */
    kvrt_progress_fn progress;   /* NULL: no progress reports */
    void *progress_user_data;    /* passed to progress */
    int32_t n_threads;           /* threads used to pack weights, 0..1024; 0 = the OpenMP default */
    int32_t reserved0;           /* must be 0 (else KVRT_ERR_INVALID_ARGUMENT) */
} kvrt_model_config;

/* Fills *cfg with the defaults (no progress callback, default threads).
 * struct_size must be sizeof(kvrt_model_config) as the caller knows it.
 * Returns KVRT_ERR_INVALID_ARGUMENT for a NULL cfg or a struct_size this
 * library cannot serve. Thread-safe. O(1). */
KVRT_API kvrt_status kvrt_model_config_init(kvrt_model_config *cfg, size_t struct_size);

/* Loads a GGUF (v2/v3) model file.
 *   out   receives the new model (set to NULL on failure); the caller owns it
 *         and releases it with kvrt_model_destroy();
 *   path  NUL-terminated file path;
 *   cfg   options, or NULL for the defaults.
 * The file is memory-mapped, every offset, size, count and string is
 * bounds-checked, weights are repacked for the matmul kernels, and a 128-bit
 * fingerprint of the tensor data and metadata is computed (it keys the prefix
 * cache, so two files with equal content share cached prefixes).
 * Returns KVRT_OK; KVRT_ERR_INVALID_ARGUMENT (NULL out/path, bad cfg:
 * struct_size, n_threads outside 0..1024, reserved0 != 0); KVRT_ERR_NOT_FOUND
 * (no file at path); KVRT_ERR_IO (cannot open/map: a directory, no
 * permission...); KVRT_ERR_BAD_FORMAT (truncated, malformed or
 * hostile file: the message names the field); KVRT_ERR_UNSUPPORTED (an
 * architecture other than "llama", or a tensor type kvrt cannot compute);
 * KVRT_ERR_CANCELLED (progress returned non-zero); KVRT_ERR_OUT_OF_MEMORY.
 * Thread-safe (loads are independent). Cost: one pass over the file
 * (hash + repack), ~0.1-1 s for 100 MB. */
KVRT_API kvrt_status kvrt_model_load(kvrt_model **out, const char *path, const kvrt_model_config *cfg);

/* Drops the caller's reference. The model is freed once no context uses it.
 * NULL is ignored. Thread-safe with respect to contexts using the model. */
KVRT_API void kvrt_model_destroy(kvrt_model *model);

/* A new handle to the same loaded model: one more reference, dropped by
 * kvrt_model_destroy on the new handle (each handle is destroyed once; the
 * weights live while any handle or context holds them). For bindings whose
 * objects each own their handle (a Rust Context owning its Model). Returns
 * KVRT_OK, KVRT_ERR_INVALID_ARGUMENT (NULL out), KVRT_ERR_BAD_HANDLE (NULL,
 * destroyed or foreign model; *out = NULL). Thread-safe. O(1). */
KVRT_API kvrt_status kvrt_model_retain(kvrt_model **out, kvrt_model *model);

/* Facts about a loaded model. Initialise struct_size (or use
 * kvrt_model_info_init); fields are only ever appended. String pointers are
 * owned by the model and valid until it is freed. */
typedef struct kvrt_model_info {
    size_t struct_size;
    const char *architecture;    /* GGUF general.architecture, e.g. "llama" */
    const char *name;            /* general.name, "" when absent */
    uint32_t n_layers;
    uint32_t n_vocab;
    uint32_t n_embd;             /* hidden width */
    uint32_t n_ff;               /* FFN inner width */
    uint32_t n_heads;            /* query heads */
    uint32_t n_kv_heads;         /* key/value heads (GQA when < n_heads) */
    uint32_t head_dim;
    uint32_t n_ctx_train;        /* context length the model was trained for */
    uint32_t sliding_window;     /* window W of window layers; 0 = none */
    uint32_t n_layers_full;      /* layers attending to every position */
    uint32_t n_layers_window;    /* layers attending to their last W positions */
    float rope_theta;
    float rms_eps;
    int32_t bos_token;           /* -1 when the model has none */
    int32_t eos_token;           /* end of sequence; -1 when none */
    int32_t eot_token;           /* end of turn (chat), -1 when none */
    uint64_t n_params;           /* parameters in the file */
    uint64_t weight_bytes;       /* bytes of tensor data in the file */
    /* KV bytes per token at 16-bit KV elements (f16/bf16): per layer kind and
     * in total (2 x layers x KV heads x head width x 2 bytes for full layers).
     * A window layer holds at most W tokens, so its per-sequence cost is
     * capped at W x kv_bytes_per_token_window. CED models: _full is the global
     * banks' bytes per token (main rows + indexer keys, rounded), _window one
     * K = V window row per layer (kvrt/ced.h has the exact breakdown). */
    uint64_t kv_bytes_per_token_full;
    uint64_t kv_bytes_per_token_window;
    uint64_t kv_bytes_per_token;
    uint8_t fingerprint[16];     /* 128-bit hash of tensor data and metadata */
} kvrt_model_info;

/* Sets info->struct_size (and zeroes the rest). Returns
 * KVRT_ERR_INVALID_ARGUMENT for NULL or an unusable struct_size. O(1). */
KVRT_API kvrt_status kvrt_model_info_init(kvrt_model_info *info, size_t struct_size);

/* Fills *info (whose struct_size the caller set). Returns KVRT_OK,
 * KVRT_ERR_INVALID_ARGUMENT (NULL info or bad struct_size),
 * KVRT_ERR_BAD_HANDLE (NULL model). Thread-safe. O(1). */
KVRT_API kvrt_status kvrt_model_get_info(kvrt_model_info *info, const kvrt_model *model);

/* Looks up a GGUF metadata value by key ("general.name",
 * "llama.context_length", ...) and writes it as text (the text-buffer
 * convention at the top of this header: NUL-terminated, *written counts the
 * NUL; numbers in decimal, booleans as "true"/"false", arrays as
 * "[array of N <type>]"). Returns KVRT_OK, KVRT_ERR_NOT_FOUND (no such key),
 * KVRT_ERR_BUFFER_TOO_SMALL (*written = the bytes needed),
 * KVRT_ERR_INVALID_ARGUMENT (NULL written or key, NULL dst with capacity > 0),
 * KVRT_ERR_BAD_HANDLE. Thread-safe. O(keys). */
KVRT_API kvrt_status kvrt_model_meta_string(char *dst, size_t capacity, size_t *written,
                                            const kvrt_model *model, const char *key);

/* Number of metadata entries, and the key of entry i (for listing; as
 * kvrt_model_meta_string, plus KVRT_ERR_OUT_OF_RANGE for index >= count). */
KVRT_API kvrt_status kvrt_model_meta_count(size_t *out, const kvrt_model *model);
/* The key of metadata entry `index` (file order), written as kvrt_model_meta_string
 * writes values (the text-buffer convention: NUL-terminated, *written counts the
 * NUL). Returns KVRT_OK, KVRT_ERR_OUT_OF_RANGE (index >=
 * kvrt_model_meta_count), KVRT_ERR_BUFFER_TOO_SMALL, KVRT_ERR_INVALID_ARGUMENT,
 * KVRT_ERR_BAD_HANDLE. Thread-safe. O(1). */
KVRT_API kvrt_status kvrt_model_meta_key(char *dst, size_t capacity, size_t *written,
                                         const kvrt_model *model, size_t index);

/* Number of tensors, and tensor i's name, ggml type name ("q4_1", "f32"...),
 * element count and bytes. Any output pointer may be NULL, except
 * name_written when name is given (else KVRT_ERR_INVALID_ARGUMENT). Returns KVRT_OK,
 * KVRT_ERR_OUT_OF_RANGE (index >= count), KVRT_ERR_BUFFER_TOO_SMALL (name),
 * KVRT_ERR_BAD_HANDLE. Thread-safe. O(1). */
KVRT_API kvrt_status kvrt_model_tensor_count(size_t *out, const kvrt_model *model);
/* Tensor `index` (file order): its name into (name, name_capacity, name_written)
 * as the text-buffer convention says, a static ggml type name, its element count
 * and bytes; see kvrt_model_tensor_count above for the statuses. The type name
 * lives as long as the library. Thread-safe. O(1). */
KVRT_API kvrt_status kvrt_model_tensor_info(char *name, size_t name_capacity, size_t *name_written,
                                            const char **type_name, uint64_t *n_elements,
                                            uint64_t *n_bytes, const kvrt_model *model, size_t index);

/* ---- Tokenizer ---------------------------------------------------------- */

/* Flags of kvrt_model_tokenize. */
#define KVRT_TOKENIZE_ADD_BOS 1u       /* prepend BOS when the model asks for one */
#define KVRT_TOKENIZE_PARSE_SPECIAL 2u /* "<|im_start|>" in the text becomes its special token */

/* Tokenizes text (UTF-8, text_len bytes, not necessarily NUL-terminated)
 * with the model's tokenizer into dst (capacity token ids; see the buffer
 * convention). Returns KVRT_OK, KVRT_ERR_BUFFER_TOO_SMALL,
 * KVRT_ERR_INVALID_ARGUMENT (NULL text with text_len > 0, NULL written,
 * unknown flags), KVRT_ERR_UNSUPPORTED (the model has no vocabulary: a CED
 * file from `kvrt ced-init`; such a model runs on token ids),
 * KVRT_ERR_BAD_HANDLE. Thread-safe. O(text_len log). */
KVRT_API kvrt_status kvrt_model_tokenize(int32_t *dst, size_t capacity, size_t *written,
                                         const kvrt_model *model, const char *text, size_t text_len,
                                         uint32_t flags);

/* Flags of kvrt_model_detokenize. */
#define KVRT_DETOKENIZE_SPECIAL 1u /* render special tokens ("<|im_end|>") instead of dropping them */

/* Turns token ids back into UTF-8 text, NUL-terminated as every text buffer
 * (the convention at the top of this header: *written counts the NUL; the
 * text is *written - 1 bytes and may itself contain NUL bytes from byte
 * tokens). Before 0.3 the text was not terminated and *written excluded the
 * NUL. A token id outside [0, n_vocab) returns KVRT_ERR_OUT_OF_RANGE and
 * names it. Other returns as kvrt_model_tokenize. Thread-safe. O(n). */
KVRT_API kvrt_status kvrt_model_detokenize(char *dst, size_t capacity, size_t *written,
                                           const kvrt_model *model, const int32_t *tokens, size_t n_tokens,
                                           uint32_t flags);

/* Is token an end-of-generation token (EOS, end of turn)? Writes 1 or 0.
 * Returns KVRT_ERR_OUT_OF_RANGE for an id past the vocabulary. */
KVRT_API kvrt_status kvrt_model_token_is_eog(int *out, const kvrt_model *model, int32_t token);

/* One chat message: role ("system", "user", "assistant") and content, both
 * NUL-terminated UTF-8. This struct is fixed (never extended). */
typedef struct kvrt_chat_message {
    const char *role;
    const char *content;
} kvrt_chat_message;

/* Renders messages with the model's chat template (tokenizer.chat_template;
 * kvrt recognises the common template families — ChatML, Llama 3, ... — and
 * returns KVRT_ERR_UNSUPPORTED for a template it does not know). A GGUF
 * without tokenizer.chat_template (or without a vocabulary) gives
 * KVRT_ERR_UNSUPPORTED too, with a message saying so: kvrt never guesses a
 * template; choose one with kvrt_model_chat_apply_template (e.g. "chatml").
 * add_assistant != 0 appends the opening of the assistant's turn. Writes
 * NUL-terminated text as the text-buffer convention says (*written counts the
 * NUL in a size query, on BUFFER_TOO_SMALL and on success). Tokenize the result with KVRT_TOKENIZE_PARSE_SPECIAL. Returns KVRT_OK,
 * KVRT_ERR_BUFFER_TOO_SMALL, KVRT_ERR_INVALID_ARGUMENT (NULL message field),
 * KVRT_ERR_UNSUPPORTED, KVRT_ERR_BAD_HANDLE. Thread-safe. O(text). */
KVRT_API kvrt_status kvrt_model_chat_apply(char *dst, size_t capacity, size_t *written,
                                           const kvrt_model *model, const kvrt_chat_message *messages,
                                           size_t n_messages, int add_assistant);

/* As kvrt_model_chat_apply with a template chosen by the caller:
 *   chat_template  NULL: the model's own (exactly kvrt_model_chat_apply);
 *                  a family name: "chatml", "llama2", "llama3", "gemma" or
 *                  "zephyr" (rendered natively, no default system prompt;
 *                  BOS/EOS text from the model's vocabulary);
 *                  anything else: a Jinja template text, recognised by
 *                  signature as the model's is (kvrt does not run Jinja).
 * Returns KVRT_OK, KVRT_ERR_BUFFER_TOO_SMALL, KVRT_ERR_INVALID_ARGUMENT (NULL
 * written or message field, an empty chat_template, roles the family has no
 * place for), KVRT_ERR_UNSUPPORTED (a template text of no known family: the
 * message names the families), KVRT_ERR_BAD_HANDLE. Thread-safe. O(text). */
KVRT_API kvrt_status kvrt_model_chat_apply_template(char *dst, size_t capacity, size_t *written,
                                                    const kvrt_model *model, const char *chat_template,
                                                    const kvrt_chat_message *messages, size_t n_messages,
                                                    int add_assistant);

#ifdef __cplusplus
}
#endif

#endif /* KVRT_MODEL_H */
