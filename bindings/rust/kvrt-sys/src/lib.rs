// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

//! Raw declarations of libkvrt's C API, transcribed by hand from
//! `include/kvrt/{common,cache,model,context,ced}.h` (no bindgen: no crates
//! can be fetched). Field order and types follow the headers exactly; the
//! `kvrt` crate's tests compare every struct's size with the C compiler's.
//! Everything here is `unsafe` to call: read the header comments.
#![allow(non_camel_case_types)]
#![no_std]

use core::ffi::{c_char, c_int, c_void};

// ---- common.h ---------------------------------------------------------------

pub const KVRT_VERSION_MAJOR: u32 = 0;
pub const KVRT_VERSION_MINOR: u32 = 5;
pub const KVRT_VERSION_PATCH: u32 = 0;
pub const KVRT_VERSION_NUMBER: u32 =
    (KVRT_VERSION_MAJOR << 16) | (KVRT_VERSION_MINOR << 8) | KVRT_VERSION_PATCH;

/// `kvrt_status`: 0 is success, errors are negative; values only grow.
pub type kvrt_status = c_int;
pub const KVRT_OK: kvrt_status = 0;
pub const KVRT_ERR_INVALID_ARGUMENT: kvrt_status = -1;
pub const KVRT_ERR_OUT_OF_MEMORY: kvrt_status = -2;
pub const KVRT_ERR_CACHE_FULL: kvrt_status = -3;
pub const KVRT_ERR_NOT_FOUND: kvrt_status = -4;
pub const KVRT_ERR_OUT_OF_RANGE: kvrt_status = -5;
pub const KVRT_ERR_BAD_HANDLE: kvrt_status = -6;
pub const KVRT_ERR_IO: kvrt_status = -7;
pub const KVRT_ERR_BAD_FORMAT: kvrt_status = -8;
pub const KVRT_ERR_UNSUPPORTED: kvrt_status = -9;
pub const KVRT_ERR_BUFFER_TOO_SMALL: kvrt_status = -10;
pub const KVRT_ERR_INVALID_STATE: kvrt_status = -11;
pub const KVRT_ERR_OVERFLOW: kvrt_status = -12;
pub const KVRT_ERR_MISMATCH: kvrt_status = -13;
pub const KVRT_ERR_CANCELLED: kvrt_status = -14;
pub const KVRT_ERR_INTERNAL: kvrt_status = -15;

extern "C" {
    pub fn kvrt_status_string(status: kvrt_status) -> *const c_char;
    pub fn kvrt_last_error() -> *const c_char;
    pub fn kvrt_clear_error();
    pub fn kvrt_version() -> u32;
    pub fn kvrt_version_string() -> *const c_char;
}

// ---- cache.h ----------------------------------------------------------------

#[repr(C)]
pub struct kvrt_cache {
    _private: [u8; 0],
}
#[repr(C)]
pub struct kvrt_cache_layout {
    _private: [u8; 0],
}

pub const KVRT_DTYPE_F32: i32 = 0;
pub const KVRT_DTYPE_F16: i32 = 1;
pub const KVRT_DTYPE_BF16: i32 = 2;
pub const KVRT_DTYPE_I8: i32 = 3;
pub const KVRT_DTYPE_FP8_E4M3: i32 = 4;
pub const KVRT_DTYPE_FP4: i32 = 5;

pub const KVRT_LAYER_FULL: i32 = 0;
pub const KVRT_LAYER_WINDOW: i32 = 1;
pub const KVRT_LAYER_BANK_SOURCE: i32 = 2;
pub const KVRT_LAYER_BANK_READER: i32 = 3;
pub const KVRT_LAYER_INDEXER_KEYS: i32 = 4;

pub const KVRT_CACHE_KIND_SLOTS: usize = 8;

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct kvrt_cache_layer_config {
    pub struct_size: usize,
    pub kind: i32,
    pub n_kv_heads: i32,
    pub head_dim: i32,
    pub dtype: i32,
    pub window: i32,
    pub ratio: i32,
    pub source: i32,
    pub shared_kv: i32,
    // Appended in 0.3: the V rows' dtype when it differs (-1: dtype).
    pub v_dtype: i32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct kvrt_cache_config {
    pub struct_size: usize,
    pub budget_bytes: u64,
    pub large_pages: i32,
    pub reserved0: i32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct kvrt_cache_keys {
    pub struct_size: usize,
    pub fingerprint_lo: u64,
    pub fingerprint_hi: u64,
    pub salt: *const c_void,
    pub salt_len: usize,
    pub adapter_id: u64,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct kvrt_cache_seq_info {
    pub struct_size: usize,
    pub length: i64,
    pub computed: i64,
    pub n_blocks: i64,
    pub bytes: u64,
    pub is_pin: i32,
    pub reserved0: i32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct kvrt_cache_layer_info {
    pub struct_size: usize,
    pub kind: i32,
    pub row_layer: i32,
    pub ratio: i32,
    pub rows_per_block: i32,
    pub n_kv_heads: i32,
    pub head_dim: i32,
    pub dtype: i32,
    pub window: i32,
    pub row_bytes: u64,
    pub k_offset: u64,
    pub v_offset: u64,
    pub block_bytes: u64,
    pub separate_v: i32,
    pub manager: i32,
    // Appended in 0.3:
    pub v_dtype: i32,
    pub v_row_bytes: u64,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct kvrt_cache_kind_stats {
    pub n_layers: i32,
    pub reserved0: i32,
    pub blocks_in_use: u64,
    pub bytes_in_use: u64,
    pub blocks_cached: u64,
    pub bytes_cached: u64,
    pub bytes_per_token: f64,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct kvrt_cache_stats {
    pub struct_size: usize,
    pub budget_bytes: u64,
    pub bytes_in_use: u64,
    pub bytes_cached: u64,
    pub bytes_free: u64,
    pub blocks_in_use: u64,
    pub blocks_cached: u64,
    pub blocks_free: u64,
    pub block_set_bytes: u64,
    pub padding_bytes: u64,
    pub n_sequences: u64,
    pub n_pins: u64,
    pub queried_tokens: u64,
    pub hit_tokens: u64,
    pub evictions: u64,
    pub bytes_per_token: f64,
    pub arena_reserved_bytes: u64,
    pub dedicated_arena: i32,
    pub large_pages: i32,
    pub n_managers: i32,
    pub block_tokens: i32,
    pub kinds: [kvrt_cache_kind_stats; KVRT_CACHE_KIND_SLOTS],
    pub n_kinds: i32,
    pub kind_stats_size: i32,
    // Appended in 0.3: lower tiers.
    pub tier_loaded_tokens_disk: u64,
    pub tier_loaded_tokens_remote: u64,
    pub n_tiers: i32,
    pub reserved_tiers: i32,
}

pub const KVRT_TIER_DISK: i32 = 1;
pub const KVRT_TIER_REDIS: i32 = 2;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct kvrt_tier_config {
    pub struct_size: usize,
    pub kind: i32,
    pub timeout_ms: u32,
    pub location: *const c_char,
    pub budget_bytes: u64,
    pub key_prefix: *const c_char,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct kvrt_tier_stats {
    pub struct_size: usize,
    pub kind: i32,
    pub reserved0: i32,
    pub puts: u64,
    pub put_bytes: u64,
    pub put_failures: u64,
    pub gets: u64,
    pub hits: u64,
    pub get_bytes: u64,
    pub misses: u64,
    pub corrupt: u64,
    pub errors: u64,
    pub timeouts: u64,
    pub evictions: u64,
    pub bytes_stored: u64,
    pub loaded_blocks: u64,
}

extern "C" {
    pub fn kvrt_tier_config_init(cfg: *mut kvrt_tier_config, struct_size: usize) -> kvrt_status;
    pub fn kvrt_cache_add_tier(cache: *mut kvrt_cache, cfg: *const kvrt_tier_config) -> kvrt_status;
    pub fn kvrt_cache_persist(out_blocks: *mut u64, cache: *mut kvrt_cache) -> kvrt_status;
    pub fn kvrt_cache_n_tiers(out: *mut usize, cache: *const kvrt_cache) -> kvrt_status;
    pub fn kvrt_tier_stats_init(stats: *mut kvrt_tier_stats, struct_size: usize) -> kvrt_status;
    pub fn kvrt_cache_tier_stats_get(out: *mut kvrt_tier_stats, cache: *const kvrt_cache, index: usize)
                                     -> kvrt_status;
}

extern "C" {
    pub fn kvrt_cache_layer_config_init(cfg: *mut kvrt_cache_layer_config, struct_size: usize) -> kvrt_status;
    pub fn kvrt_cache_layout_create(out: *mut *mut kvrt_cache_layout, block_tokens: i32) -> kvrt_status;
    pub fn kvrt_cache_layout_destroy(layout: *mut kvrt_cache_layout);
    pub fn kvrt_cache_layout_add_layers(out_first: *mut i32, layout: *mut kvrt_cache_layout,
                                        cfg: *const kvrt_cache_layer_config, count: i32) -> kvrt_status;
    pub fn kvrt_cache_layout_n_layers(out: *mut i32, layout: *const kvrt_cache_layout) -> kvrt_status;

    pub fn kvrt_cache_config_init(cfg: *mut kvrt_cache_config, struct_size: usize) -> kvrt_status;
    pub fn kvrt_cache_create(out: *mut *mut kvrt_cache, layout: *const kvrt_cache_layout,
                             cfg: *const kvrt_cache_config) -> kvrt_status;
    pub fn kvrt_cache_destroy(cache: *mut kvrt_cache);

    pub fn kvrt_cache_keys_init(keys: *mut kvrt_cache_keys, struct_size: usize) -> kvrt_status;
    pub fn kvrt_cache_seq_create(out_seq: *mut u64, cache: *mut kvrt_cache, keys: *const kvrt_cache_keys) -> kvrt_status;
    pub fn kvrt_cache_seq_release(cache: *mut kvrt_cache, seq: u64) -> kvrt_status;
    pub fn kvrt_cache_seq_fork(out_child: *mut u64, cache: *mut kvrt_cache, parent: u64) -> kvrt_status;
    pub fn kvrt_cache_seq_truncate(cache: *mut kvrt_cache, seq: u64, pos: i64) -> kvrt_status;
    pub fn kvrt_cache_seq_append(cache: *mut kvrt_cache, seq: u64, tokens: *const i32, n: usize) -> kvrt_status;
    pub fn kvrt_cache_seq_mark_computed(cache: *mut kvrt_cache, seq: u64, n_positions: i64) -> kvrt_status;
    pub fn kvrt_cache_seq_match_prefix(out_hit: *mut i64, cache: *mut kvrt_cache, seq: u64,
                                       tokens: *const i32, n: usize) -> kvrt_status;
    pub fn kvrt_cache_seq_match_prefix_v2(out_hit: *mut i64, cache: *mut kvrt_cache, seq: u64,
                                          tokens: *const i32, n: usize, flags: u32) -> kvrt_status;
    pub fn kvrt_cache_seq_info_init(out: *mut kvrt_cache_seq_info, struct_size: usize) -> kvrt_status;
    pub fn kvrt_cache_seq_info_get(out: *mut kvrt_cache_seq_info, cache: *const kvrt_cache, seq: u64) -> kvrt_status;

    pub fn kvrt_cache_lookup_prefix(out_hit: *mut i64, cache: *const kvrt_cache, keys: *const kvrt_cache_keys,
                                    tokens: *const i32, n: usize) -> kvrt_status;
    pub fn kvrt_cache_lookup_prefix_v2(out_hit: *mut i64, cache: *const kvrt_cache, keys: *const kvrt_cache_keys,
                                       tokens: *const i32, n: usize, flags: u32) -> kvrt_status;
    pub fn kvrt_cache_pin_prefix(out_pin: *mut u64, out_pinned: *mut i64, cache: *mut kvrt_cache,
                                 keys: *const kvrt_cache_keys, tokens: *const i32, n: usize) -> kvrt_status;
    pub fn kvrt_cache_unpin(cache: *mut kvrt_cache, pin: u64) -> kvrt_status;

    pub fn kvrt_cache_layer_info_init(out: *mut kvrt_cache_layer_info, struct_size: usize) -> kvrt_status;
    pub fn kvrt_cache_layer_info_get(out: *mut kvrt_cache_layer_info, cache: *const kvrt_cache, layer: i32) -> kvrt_status;
    #[deprecated(note = "use kvrt_cache_write_rows_v2 (buffer sizes checked)")]
    pub fn kvrt_cache_write_rows(cache: *mut kvrt_cache, seq: u64, layer: i32, first_row: i64, n_rows: i64,
                                 k: *const c_void, v: *const c_void) -> kvrt_status;
    #[deprecated(note = "use kvrt_cache_read_rows_v2 (dst, capacity)")]
    pub fn kvrt_cache_read_rows(k_dst: *mut c_void, v_dst: *mut c_void, cache: *const kvrt_cache, seq: u64,
                                layer: i32, first_row: i64, n_rows: i64) -> kvrt_status;
    pub fn kvrt_cache_write_rows_v2(cache: *mut kvrt_cache, seq: u64, layer: i32, first_row: i64, n_rows: i64,
                                    k: *const c_void, k_bytes: usize, v: *const c_void, v_bytes: usize)
                                    -> kvrt_status;
    pub fn kvrt_cache_read_rows_v2(k_dst: *mut c_void, k_capacity: usize, v_dst: *mut c_void, v_capacity: usize,
                                   cache: *const kvrt_cache, seq: u64, layer: i32, first_row: i64, n_rows: i64)
                                   -> kvrt_status;
    pub fn kvrt_cache_block_table(dst: *mut *const c_void, capacity: usize, written: *mut usize,
                                  cache: *const kvrt_cache, seq: u64, layer: i32) -> kvrt_status;

    pub fn kvrt_cache_save_prefixes(out_blocks: *mut u64, cache: *const kvrt_cache, path: *const c_char,
                                    fingerprint_lo: u64, fingerprint_hi: u64) -> kvrt_status;
    pub fn kvrt_cache_load_prefixes(out_blocks: *mut u64, cache: *mut kvrt_cache, path: *const c_char,
                                    fingerprint_lo: u64, fingerprint_hi: u64) -> kvrt_status;
    pub fn kvrt_cache_seq_save(cache: *const kvrt_cache, seq: u64, path: *const c_char) -> kvrt_status;
    pub fn kvrt_cache_seq_load(out_seq: *mut u64, cache: *mut kvrt_cache, path: *const c_char,
                               fingerprint_lo: u64, fingerprint_hi: u64) -> kvrt_status;

    pub fn kvrt_cache_stats_init(out: *mut kvrt_cache_stats, struct_size: usize) -> kvrt_status;
    pub fn kvrt_cache_stats_get(out: *mut kvrt_cache_stats, cache: *const kvrt_cache) -> kvrt_status;
}

// ---- model.h ------------------------------------------------------------------

#[repr(C)]
pub struct kvrt_model {
    _private: [u8; 0],
}

/// Progress callback: return 0 to continue, non-zero to cancel. Must not unwind.
pub type kvrt_progress_fn =
    Option<unsafe extern "C" fn(fraction: f32, stage: *const c_char, user_data: *mut c_void) -> c_int>;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct kvrt_model_config {
    pub struct_size: usize,
    pub progress: kvrt_progress_fn,
    pub progress_user_data: *mut c_void,
    pub n_threads: i32,
    pub reserved0: i32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct kvrt_model_info {
    pub struct_size: usize,
    pub architecture: *const c_char,
    pub name: *const c_char,
    pub n_layers: u32,
    pub n_vocab: u32,
    pub n_embd: u32,
    pub n_ff: u32,
    pub n_heads: u32,
    pub n_kv_heads: u32,
    pub head_dim: u32,
    pub n_ctx_train: u32,
    pub sliding_window: u32,
    pub n_layers_full: u32,
    pub n_layers_window: u32,
    pub rope_theta: f32,
    pub rms_eps: f32,
    pub bos_token: i32,
    pub eos_token: i32,
    pub eot_token: i32,
    pub n_params: u64,
    pub weight_bytes: u64,
    pub kv_bytes_per_token_full: u64,
    pub kv_bytes_per_token_window: u64,
    pub kv_bytes_per_token: u64,
    pub fingerprint: [u8; 16],
}

pub const KVRT_TOKENIZE_ADD_BOS: u32 = 1;
pub const KVRT_MATCH_WHOLE_BLOCKS: u32 = 0;
pub const KVRT_MATCH_SUB_BLOCK: u32 = 1;
pub const KVRT_TOKENIZE_PARSE_SPECIAL: u32 = 2;
pub const KVRT_DETOKENIZE_SPECIAL: u32 = 1;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct kvrt_chat_message {
    pub role: *const c_char,
    pub content: *const c_char,
}

extern "C" {
    pub fn kvrt_model_config_init(cfg: *mut kvrt_model_config, struct_size: usize) -> kvrt_status;
    pub fn kvrt_model_load(out: *mut *mut kvrt_model, path: *const c_char, cfg: *const kvrt_model_config) -> kvrt_status;
    pub fn kvrt_model_destroy(model: *mut kvrt_model);
    pub fn kvrt_model_info_init(info: *mut kvrt_model_info, struct_size: usize) -> kvrt_status;
    pub fn kvrt_model_get_info(info: *mut kvrt_model_info, model: *const kvrt_model) -> kvrt_status;
    pub fn kvrt_model_meta_string(dst: *mut c_char, capacity: usize, written: *mut usize,
                                  model: *const kvrt_model, key: *const c_char) -> kvrt_status;
    pub fn kvrt_model_meta_count(out: *mut usize, model: *const kvrt_model) -> kvrt_status;
    pub fn kvrt_model_meta_key(dst: *mut c_char, capacity: usize, written: *mut usize,
                               model: *const kvrt_model, index: usize) -> kvrt_status;
    pub fn kvrt_model_tensor_count(out: *mut usize, model: *const kvrt_model) -> kvrt_status;
    pub fn kvrt_model_tensor_info(name: *mut c_char, name_capacity: usize, name_written: *mut usize,
                                  type_name: *mut *const c_char, n_elements: *mut u64, n_bytes: *mut u64,
                                  model: *const kvrt_model, index: usize) -> kvrt_status;
    pub fn kvrt_model_tokenize(dst: *mut i32, capacity: usize, written: *mut usize, model: *const kvrt_model,
                               text: *const c_char, text_len: usize, flags: u32) -> kvrt_status;
    pub fn kvrt_model_detokenize(dst: *mut c_char, capacity: usize, written: *mut usize, model: *const kvrt_model,
                                 tokens: *const i32, n_tokens: usize, flags: u32) -> kvrt_status;
    pub fn kvrt_model_token_is_eog(out: *mut c_int, model: *const kvrt_model, token: i32) -> kvrt_status;
    pub fn kvrt_model_chat_apply(dst: *mut c_char, capacity: usize, written: *mut usize, model: *const kvrt_model,
                                 messages: *const kvrt_chat_message, n_messages: usize,
                                 add_assistant: c_int) -> kvrt_status;
}

// ---- context.h ----------------------------------------------------------------

#[repr(C)]
pub struct kvrt_context {
    _private: [u8; 0],
}
#[repr(C)]
pub struct kvrt_sampler {
    _private: [u8; 0],
}

// kvrt/context.h's KVRT_KV_* (deprecated since 0.3): aliases of the one dtype enum,
// KVRT_DTYPE_* above.
#[deprecated(note = "use KVRT_DTYPE_F32")]
pub const KVRT_KV_F32: i32 = KVRT_DTYPE_F32;
#[deprecated(note = "use KVRT_DTYPE_F16")]
pub const KVRT_KV_F16: i32 = KVRT_DTYPE_F16;
#[deprecated(note = "use KVRT_DTYPE_BF16")]
pub const KVRT_KV_BF16: i32 = KVRT_DTYPE_BF16;
#[deprecated(note = "use KVRT_DTYPE_I8")]
pub const KVRT_KV_I8: i32 = KVRT_DTYPE_I8;
#[deprecated(note = "use KVRT_DTYPE_FP8_E4M3")]
pub const KVRT_KV_FP8_E4M3: i32 = KVRT_DTYPE_FP8_E4M3;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct kvrt_context_config {
    pub struct_size: usize,
    pub n_ctx: u32,
    pub n_seq_max: u32,
    pub n_batch: u32,
    pub n_threads: i32,
    pub kv_dtype: i32,
    pub block_tokens: u32,
    pub cache_bytes: u64,
    pub cache: *mut kvrt_cache,
    pub prefix_caching: i32,
    pub reserved0: i32,
    pub cache_salt: *const c_char,
    pub progress: kvrt_progress_fn,
    pub progress_user_data: *mut c_void,
    // Appended in 0.2 (CED models only; see ced.h):
    pub ced_prefill_mode: i32,
    pub ced_resume: i32,
    // Appended in 0.3: K and V rows of different types (-1: kv_dtype).
    pub k_dtype: i32,
    pub v_dtype: i32,
    // Appended in 0.3: lower tiers of the prefix cache the context creates.
    pub tiers: *const kvrt_tier_config,
    pub n_tiers: usize,
    // Appended in 0.3: activation code width of the quantised weight matmuls (8 or 16).
    pub act_bits: i32,
    // Appended in 0.3: CED bank rows' and indexer keys' kvrt_dtype (-1: from kv_dtype).
    pub bank_dtype: i32,
}

pub const KVRT_STOP_NONE: i32 = 0;
pub const KVRT_STOP_EOG: i32 = 1;
pub const KVRT_STOP_MAX_TOKENS: i32 = 2;
pub const KVRT_STOP_STRING: i32 = 3;
pub const KVRT_STOP_CALLBACK: i32 = 4;
pub const KVRT_STOP_CONTEXT_FULL: i32 = 5;

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct kvrt_request_stats {
    pub struct_size: usize,
    pub prompt_tokens: u64,
    pub reused_tokens: u64,
    pub reused_from_cache: u64,
    pub computed_tokens: u64,
    pub generated_tokens: u64,
    pub time_to_first_token_s: f64,
    pub prefill_s: f64,
    pub decode_s: f64,
    pub decode_tokens_per_s: f64,
    pub kv_bytes: u64,
    pub stop_reason: i32,
    pub reserved0: i32,
    // Appended in 0.3: where reused_from_cache came from.
    pub reused_from_ram: u64,
    pub reused_from_disk: u64,
    pub reused_from_remote: u64,
    // Appended in 0.5: generate's time in the sampler (not in decode_s).
    pub sample_s: f64,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct kvrt_sampler_config {
    pub struct_size: usize,
    pub temperature: f32,
    pub top_k: i32,
    pub top_p: f32,
    pub min_p: f32,
    pub seed: u64,
}

/// Token callback: return 0 to continue, non-zero to stop. Must not unwind.
pub type kvrt_token_fn = Option<
    unsafe extern "C" fn(token: i32, text: *const c_char, text_len: usize, user_data: *mut c_void) -> c_int,
>;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct kvrt_generate_config {
    pub struct_size: usize,
    pub max_tokens: u32,
    pub stop_at_eog: i32,
    pub sampler: *mut kvrt_sampler,
    pub stop_strings: *const *const c_char,
    pub n_stop_strings: usize,
    pub on_token: kvrt_token_fn,
    pub user_data: *mut c_void,
    // appended in 0.2: the answer into caller buffers
    pub tokens_out: *mut i32,
    pub tokens_capacity: usize,
    pub tokens_written: *mut usize,
    pub text_out: *mut c_char,
    pub text_capacity: usize,
    pub text_written: *mut usize,
}

extern "C" {
    pub fn kvrt_context_config_init(cfg: *mut kvrt_context_config, struct_size: usize) -> kvrt_status;
    pub fn kvrt_context_create(out: *mut *mut kvrt_context, model: *const kvrt_model,
                               cfg: *const kvrt_context_config) -> kvrt_status;
    pub fn kvrt_context_destroy(ctx: *mut kvrt_context);
    pub fn kvrt_context_get_cache(out: *mut *mut kvrt_cache, ctx: *const kvrt_context) -> kvrt_status;
    pub fn kvrt_request_stats_init(stats: *mut kvrt_request_stats, struct_size: usize) -> kvrt_status;
    pub fn kvrt_context_prefill(stats: *mut kvrt_request_stats, ctx: *mut kvrt_context, seq_id: i32,
                                tokens: *const i32, n_tokens: usize) -> kvrt_status;
    pub fn kvrt_context_prefill_batch(stats: *mut kvrt_request_stats, ctx: *mut kvrt_context, seq_ids: *const i32,
                                      tokens: *const *const i32, n_tokens: *const usize, n_seqs: usize)
                                      -> kvrt_status;
    pub fn kvrt_context_decode(ctx: *mut kvrt_context, seq_ids: *const i32, tokens: *const i32, n: usize) -> kvrt_status;
    pub fn kvrt_context_get_logits(dst: *mut f32, capacity: usize, written: *mut usize,
                                   ctx: *const kvrt_context, seq_id: i32) -> kvrt_status;
    pub fn kvrt_context_prefill_logits(stats: *mut kvrt_request_stats, ctx: *mut kvrt_context, seq_id: i32,
                                       tokens: *const i32, n_tokens: usize, positions: *const u32,
                                       n_positions: usize) -> kvrt_status;
    pub fn kvrt_context_get_logits_at(dst: *mut f32, capacity: usize, written: *mut usize,
                                      ctx: *const kvrt_context, seq_id: i32, position: usize) -> kvrt_status;
    pub fn kvrt_context_seq_length(out: *mut usize, ctx: *const kvrt_context, seq_id: i32) -> kvrt_status;
    pub fn kvrt_context_seq_kv_bytes(out: *mut u64, ctx: *const kvrt_context, seq_id: i32) -> kvrt_status;
    pub fn kvrt_context_seq_release(ctx: *mut kvrt_context, seq_id: i32) -> kvrt_status;
    pub fn kvrt_context_seq_tokens(dst: *mut i32, capacity: usize, written: *mut usize, ctx: *const kvrt_context,
                                   seq_id: i32) -> kvrt_status;
    pub fn kvrt_context_seq_save(ctx: *const kvrt_context, seq_id: i32, path: *const c_char) -> kvrt_status;
    pub fn kvrt_context_seq_load(ctx: *mut kvrt_context, seq_id: i32, path: *const c_char) -> kvrt_status;
    pub fn kvrt_context_seq_restore(stats: *mut kvrt_request_stats, recomputed: *mut i32, ctx: *mut kvrt_context,
                                    seq_id: i32, path: *const c_char) -> kvrt_status;
    pub fn kvrt_context_seq_fork(ctx: *mut kvrt_context, src_seq: i32, dst_seq: i32) -> kvrt_status;
    pub fn kvrt_context_seq_truncate(ctx: *mut kvrt_context, seq_id: i32, n: usize) -> kvrt_status;

    pub fn kvrt_sampler_config_init(cfg: *mut kvrt_sampler_config, struct_size: usize) -> kvrt_status;
    pub fn kvrt_sampler_create(out: *mut *mut kvrt_sampler, cfg: *const kvrt_sampler_config) -> kvrt_status;
    pub fn kvrt_sampler_destroy(sampler: *mut kvrt_sampler);
    pub fn kvrt_sampler_sample(out: *mut i32, sampler: *mut kvrt_sampler, logits: *const f32, n_logits: usize) -> kvrt_status;

    pub fn kvrt_generate_config_init(cfg: *mut kvrt_generate_config, struct_size: usize) -> kvrt_status;
    pub fn kvrt_context_generate(stats: *mut kvrt_request_stats, ctx: *mut kvrt_context, seq_id: i32,
                                 prompt: *const i32, n_prompt: usize, cfg: *const kvrt_generate_config) -> kvrt_status;
}

// ---- ced.h --------------------------------------------------------------------

/// `kvrt_context_config::act_bits`: 8-bit codes with the residuals of each row's outlier blocks.
pub const KVRT_ACT_BITS_OUTLIERS: i32 = 9;
/// `kvrt_ced_prefill_mode`: values of `kvrt_context_config::ced_prefill_mode`.
pub const KVRT_CED_PREFILL_EXACT: i32 = 0;
pub const KVRT_CED_PREFILL_CED: i32 = 1;
/// `kvrt_ced_resume`: values of `kvrt_context_config::ced_resume`.
pub const KVRT_CED_RESUME_AUTO: i32 = 0;
pub const KVRT_CED_RESUME_CHECKPOINT: i32 = 1;
pub const KVRT_CED_RESUME_BOUNDED_REPLAY: i32 = 2;
pub const KVRT_CED_RESUME_COLD: i32 = 3;

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct kvrt_ced_memory {
    pub struct_size: usize,
    pub n_layers: u32,
    pub n_sources: u32,
    pub window: u32,
    pub elem_bytes: u32,
    pub main_bytes_per_token: f64,
    pub indexer_bytes_per_token: f64,
    pub global_bytes_per_token: f64,
    pub window_bytes_per_sequence: u64,
    pub dense_kv_heads: u32,
    pub dense_head_dim: u32,
    pub dense_bytes_per_token: f64,
}

extern "C" {
    /// `dtype`: a `KVRT_DTYPE_*` value (F32, F16 or BF16).
    pub fn kvrt_ced_memory_init(out: *mut kvrt_ced_memory, struct_size: usize) -> kvrt_status;
    pub fn kvrt_ced_memory_get(out: *mut kvrt_ced_memory, model: *const kvrt_model, dtype: i32) -> kvrt_status;
    pub fn kvrt_ced_memory_source(layer: *mut i32, ratio: *mut i32, main_bytes_per_token: *mut f64,
                                  indexer_bytes_per_token: *mut f64, model: *const kvrt_model,
                                  index: u32, dtype: i32) -> kvrt_status;
}

// ---- 0.2: sampler chains, cancellation, activity (context.h), memory control (cache.h),
// chat template override and model handles (model.h), logging and ISA (process.h) ----

pub const KVRT_STOP_CANCELLED: i32 = 6;
pub const KVRT_SAMPLER_PENALTIES: i32 = 1;
pub const KVRT_SAMPLER_LOGIT_BIAS: i32 = 2;
pub const KVRT_SAMPLER_TOP_K: i32 = 3;
pub const KVRT_SAMPLER_TOP_P: i32 = 4;
pub const KVRT_SAMPLER_MIN_P: i32 = 5;
pub const KVRT_SAMPLER_TEMPERATURE: i32 = 6;
pub const KVRT_SAMPLER_DIST: i32 = 7;
pub const KVRT_SAMPLER_GREEDY: i32 = 8;
pub const KVRT_PHASE_IDLE: i32 = 0;
pub const KVRT_PHASE_PREFILL: i32 = 1;
pub const KVRT_PHASE_DECODE: i32 = 2;
pub const KVRT_LOG_DEBUG: i32 = 0;
pub const KVRT_LOG_INFO: i32 = 1;
pub const KVRT_LOG_WARN: i32 = 2;
pub const KVRT_LOG_ERROR: i32 = 3;
pub const KVRT_LOG_NONE: i32 = 4;
pub const KVRT_ISA_SCALAR: i32 = 0;
pub const KVRT_ISA_AVX2: i32 = 1;
pub const KVRT_ISA_AVXVNNI: i32 = 2;
pub const KVRT_ISA_AVX512: i32 = 3;
pub const KVRT_ISA_AVX512BF16: i32 = 4;
pub const KVRT_ISA_AMX: i32 = 5;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct kvrt_sampler_stage {
    pub struct_size: usize,
    pub type_: i32,
    pub top_k: i32,
    pub p: f32,
    pub temperature: f32,
    pub penalty_last_n: i32,
    pub repeat_penalty: f32,
    pub frequency_penalty: f32,
    pub presence_penalty: f32,
    pub bias_tokens: *const i32,
    pub bias_values: *const f32,
    pub n_bias: usize,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct kvrt_context_activity {
    pub struct_size: usize,
    pub phase: i32,
    pub cancel_pending: i32,
    pub prefill_total: u64,
    pub prefill_done: u64,
    pub generated_tokens: u64,
    pub calls: u64,
}

/// Log callback: level, NUL-terminated message. Must not unwind.
pub type kvrt_log_fn = Option<unsafe extern "C" fn(level: i32, message: *const c_char, user_data: *mut c_void)>;

extern "C" {
    pub fn kvrt_sampler_stage_init(stage: *mut kvrt_sampler_stage, struct_size: usize) -> kvrt_status;
    pub fn kvrt_sampler_chain_create(out: *mut *mut kvrt_sampler, seed: u64) -> kvrt_status;
    pub fn kvrt_sampler_chain_add(sampler: *mut kvrt_sampler, stage: *const kvrt_sampler_stage) -> kvrt_status;
    pub fn kvrt_sampler_accept(sampler: *mut kvrt_sampler, token: i32) -> kvrt_status;
    pub fn kvrt_sampler_reset(sampler: *mut kvrt_sampler) -> kvrt_status;
    pub fn kvrt_context_cancel(ctx: *mut kvrt_context) -> kvrt_status;
    pub fn kvrt_context_activity_init(out: *mut kvrt_context_activity, struct_size: usize) -> kvrt_status;
    pub fn kvrt_context_activity_get(out: *mut kvrt_context_activity, ctx: *const kvrt_context) -> kvrt_status;
    pub fn kvrt_cache_set_budget(cache: *mut kvrt_cache, budget_bytes: u64) -> kvrt_status;
    pub fn kvrt_cache_trim(released: *mut u64, cache: *mut kvrt_cache, keep_bytes: u64) -> kvrt_status;
    pub fn kvrt_model_retain(out: *mut *mut kvrt_model, model: *mut kvrt_model) -> kvrt_status;
    pub fn kvrt_model_chat_apply_template(dst: *mut c_char, capacity: usize, written: *mut usize,
                                          model: *const kvrt_model, chat_template: *const c_char,
                                          messages: *const kvrt_chat_message, n_messages: usize,
                                          add_assistant: c_int) -> kvrt_status;
    pub fn kvrt_set_log_callback(min_level: i32, fn_: kvrt_log_fn, user_data: *mut c_void) -> kvrt_status;
    pub fn kvrt_log_level_name(level: i32) -> *const c_char;
    pub fn kvrt_isa_get(active: *mut i32, detected: *mut i32) -> kvrt_status;
    pub fn kvrt_isa_set(limit: i32) -> kvrt_status;
    pub fn kvrt_isa_name(isa: i32) -> *const c_char;
}
