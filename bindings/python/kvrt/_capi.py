# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The kvrt authors

"""The C ABI as ctypes declarations, transcribed from include/kvrt/*.h.

The library is found, in order, at $KVRT_LIBRARY (a file path), in the
libdir `pkg-config --variable=libdir kvrt` names, then by the dynamic
loader's search (LD_LIBRARY_PATH, ldconfig). Functions are bound on first
use, so a library lacking some part of the API still serves the rest.
"""
import ctypes
import os
import shutil
import subprocess
from ctypes import (CFUNCTYPE, POINTER, Structure, c_char, c_char_p, c_double, c_float, c_int, c_int32,
                    c_int64, c_size_t, c_uint8, c_uint32, c_uint64, c_void_p)

VERSION_MAJOR, VERSION_MINOR, VERSION_PATCH = 0, 5, 0
VERSION_NUMBER = (VERSION_MAJOR << 16) | (VERSION_MINOR << 8) | VERSION_PATCH
SONAME = "libkvrt.so.%d" % VERSION_MAJOR

status_t = c_int

# ---- cache.h -----------------------------------------------------------------
CACHE_KIND_SLOTS = 8
MATCH_SUB_BLOCK = 1  # kvrt_match_flags


class cache_layer_config(Structure):
    _fields_ = [("struct_size", c_size_t), ("kind", c_int32), ("n_kv_heads", c_int32), ("head_dim", c_int32),
                ("dtype", c_int32), ("window", c_int32), ("ratio", c_int32), ("source", c_int32),
                ("shared_kv", c_int32),
                # appended in 0.3: the V rows' dtype when it differs (-1: dtype)
                ("v_dtype", c_int32)]


class cache_config(Structure):
    _fields_ = [("struct_size", c_size_t), ("budget_bytes", c_uint64), ("large_pages", c_int32),
                ("reserved0", c_int32)]


class cache_keys(Structure):
    _fields_ = [("struct_size", c_size_t), ("fingerprint_lo", c_uint64), ("fingerprint_hi", c_uint64),
                ("salt", c_void_p), ("salt_len", c_size_t), ("adapter_id", c_uint64)]


class cache_seq_info(Structure):
    _fields_ = [("struct_size", c_size_t), ("length", c_int64), ("computed", c_int64), ("n_blocks", c_int64),
                ("bytes", c_uint64), ("is_pin", c_int32), ("reserved0", c_int32)]


class cache_layer_info(Structure):
    _fields_ = [("struct_size", c_size_t), ("kind", c_int32), ("row_layer", c_int32), ("ratio", c_int32),
                ("rows_per_block", c_int32), ("n_kv_heads", c_int32), ("head_dim", c_int32), ("dtype", c_int32),
                ("window", c_int32), ("row_bytes", c_uint64), ("k_offset", c_uint64), ("v_offset", c_uint64),
                ("block_bytes", c_uint64), ("separate_v", c_int32), ("manager", c_int32),
                # appended in 0.3
                ("v_dtype", c_int32), ("v_row_bytes", c_uint64)]


class cache_kind_stats(Structure):
    _fields_ = [("n_layers", c_int32), ("reserved0", c_int32), ("blocks_in_use", c_uint64),
                ("bytes_in_use", c_uint64), ("blocks_cached", c_uint64), ("bytes_cached", c_uint64),
                ("bytes_per_token", c_double)]


class cache_stats(Structure):
    _fields_ = [("struct_size", c_size_t)] + [(n, c_uint64) for n in (
        "budget_bytes", "bytes_in_use", "bytes_cached", "bytes_free", "blocks_in_use", "blocks_cached",
        "blocks_free", "block_set_bytes", "padding_bytes", "n_sequences", "n_pins", "queried_tokens",
        "hit_tokens", "evictions")] + [
        ("bytes_per_token", c_double), ("arena_reserved_bytes", c_uint64), ("dedicated_arena", c_int32),
        ("large_pages", c_int32), ("n_managers", c_int32), ("block_tokens", c_int32),
        ("kinds", cache_kind_stats * CACHE_KIND_SLOTS), ("n_kinds", c_int32), ("kind_stats_size", c_int32),
        # appended in 0.3: lower tiers
        ("tier_loaded_tokens_disk", c_uint64), ("tier_loaded_tokens_remote", c_uint64), ("n_tiers", c_int32),
        ("reserved_tiers", c_int32)]


TIER_DISK, TIER_REDIS = 1, 2


class tier_config(Structure):
    _fields_ = [("struct_size", c_size_t), ("kind", c_int32), ("timeout_ms", c_uint32), ("location", c_char_p),
                ("budget_bytes", c_uint64), ("key_prefix", c_char_p)]


class tier_stats(Structure):
    _fields_ = [("struct_size", c_size_t), ("kind", c_int32), ("reserved0", c_int32)] + [(n, c_uint64) for n in (
        "puts", "put_bytes", "put_failures", "gets", "hits", "get_bytes", "misses", "corrupt", "errors", "timeouts",
        "evictions", "bytes_stored", "loaded_blocks")]


# ---- model.h -----------------------------------------------------------------
progress_fn = CFUNCTYPE(c_int, c_float, c_char_p, c_void_p)


class model_config(Structure):
    _fields_ = [("struct_size", c_size_t), ("progress", progress_fn), ("progress_user_data", c_void_p),
                ("n_threads", c_int32), ("reserved0", c_int32)]


class model_info(Structure):
    _fields_ = [("struct_size", c_size_t), ("architecture", c_char_p), ("name", c_char_p)] + [
        (n, c_uint32) for n in ("n_layers", "n_vocab", "n_embd", "n_ff", "n_heads", "n_kv_heads", "head_dim",
                                "n_ctx_train", "sliding_window", "n_layers_full", "n_layers_window")] + [
        ("rope_theta", c_float), ("rms_eps", c_float), ("bos_token", c_int32), ("eos_token", c_int32),
        ("eot_token", c_int32), ("n_params", c_uint64), ("weight_bytes", c_uint64),
        ("kv_bytes_per_token_full", c_uint64), ("kv_bytes_per_token_window", c_uint64),
        ("kv_bytes_per_token", c_uint64), ("fingerprint", c_uint8 * 16)]


class chat_message(Structure):
    _fields_ = [("role", c_char_p), ("content", c_char_p)]


# ---- context.h ---------------------------------------------------------------
token_fn = CFUNCTYPE(c_int, c_int32, POINTER(c_char), c_size_t, c_void_p)


class context_config(Structure):
    _fields_ = [("struct_size", c_size_t), ("n_ctx", c_uint32), ("n_seq_max", c_uint32), ("n_batch", c_uint32),
                ("n_threads", c_int32), ("kv_dtype", c_int32), ("block_tokens", c_uint32),
                ("cache_bytes", c_uint64), ("cache", c_void_p), ("prefix_caching", c_int32),
                ("reserved0", c_int32), ("cache_salt", c_char_p), ("progress", progress_fn),
                ("progress_user_data", c_void_p),
                # appended in 0.2 (CED models only, see ced.h)
                ("ced_prefill_mode", c_int32), ("ced_resume", c_int32),
                # appended in 0.3: K and V rows of different types (-1: kv_dtype)
                ("k_dtype", c_int32), ("v_dtype", c_int32),
                # appended in 0.3: lower tiers of the prefix cache
                ("tiers", POINTER(tier_config)), ("n_tiers", c_size_t),
                # appended in 0.3: activation code width of the quantised matmuls (8 or 16)
                ("act_bits", c_int32),
                # appended in 0.3: CED bank rows' and indexer keys' type (-1: from kv_dtype)
                ("bank_dtype", c_int32)]


class request_stats(Structure):
    _fields_ = [("struct_size", c_size_t)] + [(n, c_uint64) for n in (
        "prompt_tokens", "reused_tokens", "reused_from_cache", "computed_tokens", "generated_tokens")] + [
        (n, c_double) for n in ("time_to_first_token_s", "prefill_s", "decode_s", "decode_tokens_per_s")] + [
        ("kv_bytes", c_uint64), ("stop_reason", c_int32), ("reserved0", c_int32),
        # appended in 0.3: where reused_from_cache came from
        ("reused_from_ram", c_uint64), ("reused_from_disk", c_uint64), ("reused_from_remote", c_uint64),
        # appended in 0.5: generate's time in the sampler (not in decode_s)
        ("sample_s", c_double)]


class sampler_config(Structure):
    _fields_ = [("struct_size", c_size_t), ("temperature", c_float), ("top_k", c_int32), ("top_p", c_float),
                ("min_p", c_float), ("seed", c_uint64)]


class generate_config(Structure):
    _fields_ = [("struct_size", c_size_t), ("max_tokens", c_uint32), ("stop_at_eog", c_int32),
                ("sampler", c_void_p), ("stop_strings", POINTER(c_char_p)), ("n_stop_strings", c_size_t),
                ("on_token", token_fn), ("user_data", c_void_p),
                # appended in 0.2: the answer into caller buffers
                ("tokens_out", POINTER(c_int32)), ("tokens_capacity", c_size_t), ("tokens_written", POINTER(c_size_t)),
                ("text_out", c_void_p), ("text_capacity", c_size_t), ("text_written", POINTER(c_size_t))]


class sampler_stage(Structure):
    _fields_ = [("struct_size", c_size_t), ("type", c_int32), ("top_k", c_int32), ("p", c_float),
                ("temperature", c_float), ("penalty_last_n", c_int32), ("repeat_penalty", c_float),
                ("frequency_penalty", c_float), ("presence_penalty", c_float), ("bias_tokens", POINTER(c_int32)),
                ("bias_values", POINTER(c_float)), ("n_bias", c_size_t)]


class context_activity(Structure):
    _fields_ = [("struct_size", c_size_t), ("phase", c_int32), ("cancel_pending", c_int32),
                ("prefill_total", c_uint64), ("prefill_done", c_uint64), ("generated_tokens", c_uint64),
                ("calls", c_uint64)]


# ---- process.h -----------------------------------------------------------------
log_fn = CFUNCTYPE(None, c_int32, c_char_p, c_void_p)


# ---- ced.h -------------------------------------------------------------------
CED_PREFILL_EXACT, CED_PREFILL_CED = 0, 1
ACT_BITS_OUTLIERS = 9  # KVRT_ACT_BITS_OUTLIERS
CED_RESUME_AUTO, CED_RESUME_CHECKPOINT, CED_RESUME_BOUNDED_REPLAY, CED_RESUME_COLD = 0, 1, 2, 3


class ced_memory(Structure):
    _fields_ = [("struct_size", c_size_t), ("n_layers", c_uint32), ("n_sources", c_uint32), ("window", c_uint32),
                ("elem_bytes", c_uint32), ("main_bytes_per_token", c_double), ("indexer_bytes_per_token", c_double),
                ("global_bytes_per_token", c_double), ("window_bytes_per_sequence", c_uint64),
                ("dense_kv_heads", c_uint32), ("dense_head_dim", c_uint32), ("dense_bytes_per_token", c_double)]


STRUCTS = {
    "kvrt_cache_layer_config": cache_layer_config, "kvrt_cache_config": cache_config,
    "kvrt_cache_keys": cache_keys, "kvrt_cache_seq_info": cache_seq_info,
    "kvrt_cache_layer_info": cache_layer_info, "kvrt_cache_kind_stats": cache_kind_stats,
    "kvrt_cache_stats": cache_stats, "kvrt_model_config": model_config, "kvrt_model_info": model_info,
    "kvrt_chat_message": chat_message, "kvrt_context_config": context_config,
    "kvrt_request_stats": request_stats, "kvrt_sampler_config": sampler_config,
    "kvrt_generate_config": generate_config, "kvrt_ced_memory": ced_memory,
    "kvrt_sampler_stage": sampler_stage, "kvrt_context_activity": context_activity,
    "kvrt_tier_config": tier_config, "kvrt_tier_stats": tier_stats,
}

P = c_void_p
_i32p, _i64p, _u64p, _szp = POINTER(c_int32), POINTER(c_int64), POINTER(c_uint64), POINTER(c_size_t)
_floatp = POINTER(c_float)

# name: (restype, argtypes)
SIGNATURES = {
    "kvrt_status_string": (c_char_p, [status_t]),
    "kvrt_last_error": (c_char_p, []),
    "kvrt_clear_error": (None, []),
    "kvrt_version": (c_uint32, []),
    "kvrt_version_string": (c_char_p, []),

    "kvrt_cache_layer_config_init": (status_t, [POINTER(cache_layer_config), c_size_t]),
    "kvrt_cache_layout_create": (status_t, [POINTER(P), c_int32]),
    "kvrt_cache_layout_destroy": (None, [P]),
    "kvrt_cache_layout_add_layers": (status_t, [_i32p, P, POINTER(cache_layer_config), c_int32]),
    "kvrt_cache_layout_n_layers": (status_t, [_i32p, P]),
    "kvrt_cache_config_init": (status_t, [POINTER(cache_config), c_size_t]),
    "kvrt_cache_create": (status_t, [POINTER(P), P, POINTER(cache_config)]),
    "kvrt_cache_destroy": (None, [P]),
    "kvrt_cache_keys_init": (status_t, [POINTER(cache_keys), c_size_t]),
    "kvrt_cache_seq_create": (status_t, [_u64p, P, POINTER(cache_keys)]),
    "kvrt_cache_seq_release": (status_t, [P, c_uint64]),
    "kvrt_cache_seq_fork": (status_t, [_u64p, P, c_uint64]),
    "kvrt_cache_seq_truncate": (status_t, [P, c_uint64, c_int64]),
    "kvrt_cache_seq_append": (status_t, [P, c_uint64, _i32p, c_size_t]),
    "kvrt_cache_seq_mark_computed": (status_t, [P, c_uint64, c_int64]),
    "kvrt_cache_seq_match_prefix": (status_t, [_i64p, P, c_uint64, _i32p, c_size_t]),
    "kvrt_cache_seq_match_prefix_v2": (status_t, [_i64p, P, c_uint64, _i32p, c_size_t, c_uint32]),
    "kvrt_cache_seq_info_init": (status_t, [POINTER(cache_seq_info), c_size_t]),
    "kvrt_cache_seq_info_get": (status_t, [POINTER(cache_seq_info), P, c_uint64]),
    "kvrt_cache_lookup_prefix": (status_t, [_i64p, P, POINTER(cache_keys), _i32p, c_size_t]),
    "kvrt_cache_lookup_prefix_v2": (status_t, [_i64p, P, POINTER(cache_keys), _i32p, c_size_t, c_uint32]),
    "kvrt_cache_pin_prefix": (status_t, [_u64p, _i64p, P, POINTER(cache_keys), _i32p, c_size_t]),
    "kvrt_cache_unpin": (status_t, [P, c_uint64]),
    "kvrt_cache_layer_info_init": (status_t, [POINTER(cache_layer_info), c_size_t]),
    "kvrt_cache_layer_info_get": (status_t, [POINTER(cache_layer_info), P, c_int32]),
    "kvrt_cache_write_rows": (status_t, [P, c_uint64, c_int32, c_int64, c_int64, c_void_p, c_void_p]),
    "kvrt_cache_read_rows": (status_t, [c_void_p, c_void_p, P, c_uint64, c_int32, c_int64, c_int64]),  # deprecated
    "kvrt_cache_write_rows_v2": (status_t, [P, c_uint64, c_int32, c_int64, c_int64, c_void_p, c_size_t, c_void_p,
                                            c_size_t]),
    "kvrt_cache_read_rows_v2": (status_t, [c_void_p, c_size_t, c_void_p, c_size_t, P, c_uint64, c_int32, c_int64,
                                           c_int64]),
    "kvrt_cache_block_table": (status_t, [POINTER(c_void_p), c_size_t, _szp, P, c_uint64, c_int32]),
    "kvrt_cache_save_prefixes": (status_t, [_u64p, P, c_char_p, c_uint64, c_uint64]),
    "kvrt_cache_load_prefixes": (status_t, [_u64p, P, c_char_p, c_uint64, c_uint64]),
    "kvrt_cache_seq_save": (status_t, [P, c_uint64, c_char_p]),
    "kvrt_cache_seq_load": (status_t, [_u64p, P, c_char_p, c_uint64, c_uint64]),
    "kvrt_cache_stats_init": (status_t, [POINTER(cache_stats), c_size_t]),
    "kvrt_cache_stats_get": (status_t, [POINTER(cache_stats), P]),

    "kvrt_model_config_init": (status_t, [POINTER(model_config), c_size_t]),
    "kvrt_model_load": (status_t, [POINTER(P), c_char_p, POINTER(model_config)]),
    "kvrt_model_destroy": (None, [P]),
    "kvrt_model_info_init": (status_t, [POINTER(model_info), c_size_t]),
    "kvrt_model_get_info": (status_t, [POINTER(model_info), P]),
    "kvrt_model_meta_string": (status_t, [c_void_p, c_size_t, _szp, P, c_char_p]),
    "kvrt_model_meta_count": (status_t, [_szp, P]),
    "kvrt_model_meta_key": (status_t, [c_void_p, c_size_t, _szp, P, c_size_t]),
    "kvrt_model_tensor_count": (status_t, [_szp, P]),
    "kvrt_model_tensor_info": (status_t, [c_void_p, c_size_t, _szp, POINTER(c_char_p), _u64p, _u64p, P,
                                          c_size_t]),
    "kvrt_model_tokenize": (status_t, [c_void_p, c_size_t, _szp, P, c_char_p, c_size_t, c_uint32]),
    "kvrt_model_detokenize": (status_t, [c_void_p, c_size_t, _szp, P, _i32p, c_size_t, c_uint32]),
    "kvrt_model_token_is_eog": (status_t, [POINTER(c_int), P, c_int32]),
    "kvrt_model_chat_apply": (status_t, [c_void_p, c_size_t, _szp, P, POINTER(chat_message), c_size_t, c_int]),

    "kvrt_context_config_init": (status_t, [POINTER(context_config), c_size_t]),
    "kvrt_context_create": (status_t, [POINTER(P), P, POINTER(context_config)]),
    "kvrt_context_destroy": (None, [P]),
    "kvrt_context_get_cache": (status_t, [POINTER(P), P]),
    "kvrt_request_stats_init": (status_t, [POINTER(request_stats), c_size_t]),
    "kvrt_context_prefill": (status_t, [POINTER(request_stats), P, c_int32, _i32p, c_size_t]),
    "kvrt_context_prefill_batch": (status_t, [POINTER(request_stats), P, _i32p, POINTER(_i32p), _szp, c_size_t]),
    "kvrt_context_decode": (status_t, [P, _i32p, _i32p, c_size_t]),
    "kvrt_context_get_logits": (status_t, [c_void_p, c_size_t, _szp, P, c_int32]),
    "kvrt_context_prefill_logits": (status_t, [POINTER(request_stats), P, c_int32, _i32p, c_size_t,
                                               POINTER(ctypes.c_uint32), c_size_t]),
    "kvrt_context_get_logits_at": (status_t, [c_void_p, c_size_t, _szp, P, c_int32, c_size_t]),
    "kvrt_context_seq_length": (status_t, [_szp, P, c_int32]),
    "kvrt_context_seq_kv_bytes": (status_t, [_u64p, P, c_int32]),
    "kvrt_context_seq_release": (status_t, [P, c_int32]),
    "kvrt_sampler_config_init": (status_t, [POINTER(sampler_config), c_size_t]),
    "kvrt_sampler_create": (status_t, [POINTER(P), POINTER(sampler_config)]),
    "kvrt_sampler_destroy": (None, [P]),
    "kvrt_sampler_sample": (status_t, [_i32p, P, _floatp, c_size_t]),
    "kvrt_generate_config_init": (status_t, [POINTER(generate_config), c_size_t]),
    "kvrt_context_generate": (status_t, [POINTER(request_stats), P, c_int32, _i32p, c_size_t,
                                         POINTER(generate_config)]),

    # context.h: sampler chains, cancellation, activity (0.2)
    "kvrt_sampler_stage_init": (status_t, [POINTER(sampler_stage), c_size_t]),
    "kvrt_sampler_chain_create": (status_t, [POINTER(P), c_uint64]),
    "kvrt_sampler_chain_add": (status_t, [P, POINTER(sampler_stage)]),
    "kvrt_sampler_accept": (status_t, [P, c_int32]),
    "kvrt_sampler_reset": (status_t, [P]),
    "kvrt_context_cancel": (status_t, [P]),
    "kvrt_context_activity_init": (status_t, [POINTER(context_activity), c_size_t]),
    "kvrt_context_activity_get": (status_t, [POINTER(context_activity), P]),
    # cache.h: memory control; model.h: chat template override; process.h
    "kvrt_cache_set_budget": (status_t, [P, c_uint64]),
    "kvrt_cache_trim": (status_t, [_u64p, P, c_uint64]),
    "kvrt_tier_config_init": (status_t, [POINTER(tier_config), c_size_t]),
    "kvrt_cache_add_tier": (status_t, [P, POINTER(tier_config)]),
    "kvrt_cache_persist": (status_t, [_u64p, P]),
    "kvrt_cache_n_tiers": (status_t, [_szp, P]),
    "kvrt_tier_stats_init": (status_t, [POINTER(tier_stats), c_size_t]),
    "kvrt_cache_tier_stats_get": (status_t, [POINTER(tier_stats), P, c_size_t]),
    "kvrt_context_seq_tokens": (status_t, [_i32p, c_size_t, _szp, P, c_int32]),
    "kvrt_context_seq_save": (status_t, [P, c_int32, c_char_p]),
    "kvrt_context_seq_load": (status_t, [P, c_int32, c_char_p]),
    "kvrt_context_seq_restore": (status_t, [POINTER(request_stats), _i32p, P, c_int32, c_char_p]),
    "kvrt_context_seq_fork": (status_t, [P, c_int32, c_int32]),
    "kvrt_context_seq_truncate": (status_t, [P, c_int32, c_size_t]),
    "kvrt_model_chat_apply_template": (status_t, [c_void_p, c_size_t, _szp, P, c_char_p, POINTER(chat_message),
                                                  c_size_t, c_int]),
    "kvrt_model_retain": (status_t, [POINTER(P), P]),
    "kvrt_set_log_callback": (status_t, [c_int32, log_fn, c_void_p]),
    "kvrt_log_level_name": (c_char_p, [c_int32]),
    "kvrt_isa_get": (status_t, [POINTER(c_int32), POINTER(c_int32)]),
    "kvrt_isa_set": (status_t, [c_int32]),
    "kvrt_isa_name": (c_char_p, [c_int32]),
    "kvrt_ced_memory_init": (status_t, [POINTER(ced_memory), c_size_t]),
    "kvrt_ced_memory_get": (status_t, [POINTER(ced_memory), P, c_int32]),
    "kvrt_ced_memory_source": (status_t, [_i32p, _i32p, POINTER(c_double), POINTER(c_double), P, c_uint32,
                                          c_int32]),
}


def _candidates():
    env = os.environ.get("KVRT_LIBRARY")
    if env:
        yield env
        return
    if shutil.which("pkg-config"):
        try:
            libdir = subprocess.run(["pkg-config", "--variable=libdir", "kvrt"], capture_output=True, text=True,
                                    check=True).stdout.strip()
            if libdir:
                yield os.path.join(libdir, SONAME)
        except (OSError, subprocess.CalledProcessError):
            pass
    yield SONAME


class _Lib:
    """The loaded libkvrt; attribute `kvrt_x` is the bound C function."""

    def __init__(self):
        errors = []
        for path in _candidates():
            try:
                self._dll = ctypes.CDLL(path)
                self.path = path
                break
            except OSError as e:
                errors.append("%s: %s" % (path, e))
        else:
            raise OSError("cannot load libkvrt (set KVRT_LIBRARY, or PKG_CONFIG_PATH to <prefix>/lib/pkgconfig, "
                          "or LD_LIBRARY_PATH): " + "; ".join(errors))

    def __getattr__(self, name):
        sig = SIGNATURES.get(name)
        if sig is None:
            raise AttributeError(name)
        try:
            fn = getattr(self._dll, name)
        except AttributeError:
            raise AttributeError("%s does not export %s (a newer kvrt is needed)" % (self.path, name)) from None
        fn.restype, fn.argtypes = sig
        setattr(self, name, fn)
        return fn


_lib = None


def lib():
    global _lib
    if _lib is None:
        _lib = _Lib()
    return _lib


def init_struct(cls, init_name=None):
    """A struct with struct_size set (and kvrt's defaults when an _init exists)."""
    s = cls()
    s.struct_size = ctypes.sizeof(cls)
    if init_name is not None:
        from .errors import check
        check(getattr(lib(), init_name)(ctypes.byref(s), ctypes.sizeof(cls)))
    return s
