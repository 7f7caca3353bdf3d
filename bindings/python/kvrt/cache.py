# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The kvrt authors

"""The KV cache manager (kvrt/cache.h): layouts, caches, sequences, rows."""
import ctypes
import os

from . import _capi as C
from ._handle import Handle, create
from .errors import KvrtError, Status, check

LAYER_FULL, LAYER_WINDOW, LAYER_BANK_SOURCE, LAYER_BANK_READER, LAYER_INDEXER_KEYS = range(5)
DTYPE_F32, DTYPE_F16, DTYPE_BF16 = 0, 1, 2
DTYPE_I8, DTYPE_FP8_E4M3 = 3, 4  # quantised rows, full and window layers (kvrt/cache.h)
DTYPE_FP4 = 5  # 4-bit e2m1, a scale per 32: bank source and indexer key layers (CED banks)


def _tokens(tokens):
    arr = (ctypes.c_int32 * len(tokens))(*tokens)
    return arr, len(tokens)


def _keys(salt=None, fingerprint=(0, 0), adapter_id=0):
    if salt is None and fingerprint == (0, 0) and adapter_id == 0:
        return None, None
    k = C.init_struct(C.cache_keys, "kvrt_cache_keys_init")
    k.fingerprint_lo, k.fingerprint_hi = fingerprint
    k.adapter_id = adapter_id
    keep = None
    if salt:
        keep = ctypes.create_string_buffer(bytes(salt), len(salt))
        k.salt, k.salt_len = ctypes.cast(keep, ctypes.c_void_p), len(salt)
    return k, keep


class Layout(Handle):
    """A cache layout under construction (one thread at a time)."""
    _destroy = "kvrt_cache_layout_destroy"

    def __init__(self, block_tokens=16):
        super().__init__(create(C.lib().kvrt_cache_layout_create, block_tokens))

    def add_layers(self, n_kv_heads, head_dim, count=1, kind=LAYER_FULL, dtype=DTYPE_F16, window=0, ratio=1,
                   source=-1, shared_kv=False, v_dtype=-1):
        """Appends `count` identical layers; returns the first one's index. v_dtype: the V rows'
        dtype when it differs from dtype (the K rows'); -1: dtype."""
        cfg = C.init_struct(C.cache_layer_config, "kvrt_cache_layer_config_init")
        cfg.kind, cfg.n_kv_heads, cfg.head_dim, cfg.dtype = kind, n_kv_heads, head_dim, dtype
        cfg.window, cfg.ratio, cfg.source, cfg.shared_kv = window, ratio, source, int(shared_kv)
        cfg.v_dtype = v_dtype
        first = ctypes.c_int32()
        check(C.lib().kvrt_cache_layout_add_layers(ctypes.byref(first), self._p, ctypes.byref(cfg), count))
        return first.value

    @property
    def n_layers(self):
        n = ctypes.c_int32()
        check(C.lib().kvrt_cache_layout_n_layers(ctypes.byref(n), self._p))
        return n.value


def _stats_dict(s):
    out = {name: getattr(s, name) for name, _ in C.cache_stats._fields_
           if name not in ("struct_size", "kinds", "n_kinds", "kind_stats_size")}
    out["kinds"] = [{n: getattr(k, n) for n, _ in C.cache_kind_stats._fields_ if n != "reserved0"}
                    for k in s.kinds[:s.n_kinds]]
    return out


def stats_of(ptr):
    s = C.init_struct(C.cache_stats, "kvrt_cache_stats_init")
    check(C.lib().kvrt_cache_stats_get(ctypes.byref(s), ptr))
    return _stats_dict(s)


def set_budget_of(ptr, budget_bytes):
    check(C.lib().kvrt_cache_set_budget(ptr, budget_bytes))


def tier_config(kind, location, budget_bytes=0, timeout_ms=200, key_prefix=None):
    """A kvrt_tier_config (C.TIER_DISK with a directory, C.TIER_REDIS with a redis:// URL)."""
    t = C.init_struct(C.tier_config, "kvrt_tier_config_init")
    t.kind, t.location, t.budget_bytes, t.timeout_ms = kind, location.encode(), budget_bytes, timeout_ms
    if key_prefix is not None:
        t.key_prefix = key_prefix.encode()
    return t


def add_tier_of(ptr, kind, location, budget_bytes=0, timeout_ms=200, key_prefix=None):
    check(C.lib().kvrt_cache_add_tier(ptr, ctypes.byref(tier_config(kind, location, budget_bytes, timeout_ms,
                                                                    key_prefix))))


def persist_of(ptr):
    n = ctypes.c_uint64()
    check(C.lib().kvrt_cache_persist(ctypes.byref(n), ptr))
    return n.value


def tier_stats_of(ptr):
    """Per tier (in the order added) a dict of its counters."""
    n = ctypes.c_size_t()
    check(C.lib().kvrt_cache_n_tiers(ctypes.byref(n), ptr))
    out = []
    for i in range(n.value):
        s = C.init_struct(C.tier_stats, "kvrt_tier_stats_init")
        check(C.lib().kvrt_cache_tier_stats_get(ctypes.byref(s), ptr, i))
        out.append({f: getattr(s, f) for f, _ in C.tier_stats._fields_ if f not in ("struct_size", "reserved0")})
    return out


def trim_of(ptr, keep_bytes=0):
    n = ctypes.c_uint64()
    check(C.lib().kvrt_cache_trim(ctypes.byref(n), ptr, keep_bytes))
    return n.value


class Cache(Handle):
    """A KV cache; internally synchronised (usable from many threads)."""
    _destroy = "kvrt_cache_destroy"

    def __init__(self, layout, budget_bytes=0):
        cfg = C.init_struct(C.cache_config, "kvrt_cache_config_init")
        if budget_bytes:
            cfg.budget_bytes = budget_bytes
        super().__init__(create(C.lib().kvrt_cache_create, layout._p, ctypes.byref(cfg)))

    def seq_create(self, salt=None, fingerprint=(0, 0), adapter_id=0):
        k, _keep = _keys(salt, fingerprint, adapter_id)
        out = ctypes.c_uint64()
        check(C.lib().kvrt_cache_seq_create(ctypes.byref(out), self._p, ctypes.byref(k) if k else None))
        return out.value

    def seq_release(self, seq):
        check(C.lib().kvrt_cache_seq_release(self._p, seq))

    def seq_fork(self, parent):
        out = ctypes.c_uint64()
        check(C.lib().kvrt_cache_seq_fork(ctypes.byref(out), self._p, parent))
        return out.value

    def seq_truncate(self, seq, pos):
        check(C.lib().kvrt_cache_seq_truncate(self._p, seq, pos))

    def seq_append(self, seq, tokens):
        arr, n = _tokens(tokens)
        check(C.lib().kvrt_cache_seq_append(self._p, seq, arr, n))

    def seq_mark_computed(self, seq, n_positions):
        check(C.lib().kvrt_cache_seq_mark_computed(self._p, seq, n_positions))

    def seq_match_prefix(self, seq, tokens, sub_block=False):
        """sub_block: go on into a cached block up to the first changed token (KVRT_MATCH_SUB_BLOCK)."""
        arr, n = _tokens(tokens)
        hit = ctypes.c_int64()
        check(C.lib().kvrt_cache_seq_match_prefix_v2(ctypes.byref(hit), self._p, seq, arr, n,
                                                     C.MATCH_SUB_BLOCK if sub_block else 0))
        return hit.value

    def lookup_prefix(self, tokens, salt=None, fingerprint=(0, 0), adapter_id=0, sub_block=False):
        k, _keep = _keys(salt, fingerprint, adapter_id)
        arr, n = _tokens(tokens)
        hit = ctypes.c_int64()
        check(C.lib().kvrt_cache_lookup_prefix_v2(ctypes.byref(hit), self._p, ctypes.byref(k) if k else None, arr, n,
                                                  C.MATCH_SUB_BLOCK if sub_block else 0))
        return hit.value

    def pin_prefix(self, tokens, salt=None, fingerprint=(0, 0), adapter_id=0):
        """Returns (pin id, pinned length)."""
        k, _keep = _keys(salt, fingerprint, adapter_id)
        arr, n = _tokens(tokens)
        pin, pinned = ctypes.c_uint64(), ctypes.c_int64()
        check(C.lib().kvrt_cache_pin_prefix(ctypes.byref(pin), ctypes.byref(pinned), self._p,
                                            ctypes.byref(k) if k else None, arr, n))
        return pin.value, pinned.value

    def unpin(self, pin):
        check(C.lib().kvrt_cache_unpin(self._p, pin))

    def seq_info(self, seq):
        i = C.init_struct(C.cache_seq_info, "kvrt_cache_seq_info_init")
        check(C.lib().kvrt_cache_seq_info_get(ctypes.byref(i), self._p, seq))
        return {"length": i.length, "computed": i.computed, "n_blocks": i.n_blocks, "bytes": i.bytes,
                "is_pin": bool(i.is_pin)}

    def layer_info(self, layer):
        i = C.init_struct(C.cache_layer_info, "kvrt_cache_layer_info_init")
        check(C.lib().kvrt_cache_layer_info_get(ctypes.byref(i), self._p, layer))
        return {n: getattr(i, n) for n, _ in C.cache_layer_info._fields_ if n != "struct_size"}

    @staticmethod
    def _rows(what, buf, need):
        mv = memoryview(buf).cast("B")
        if mv.nbytes != need:
            raise KvrtError(Status.INVALID_ARGUMENT, "%s holds %d bytes; the rows need %d" % (what, mv.nbytes, need))
        return mv

    def write_rows(self, seq, layer, first_row, n_rows, k, v=None):
        """Copies n_rows rows from the bytes-like k (and v for layers with separate V)."""
        info = self.layer_info(layer)
        need, vneed = n_rows * info["row_bytes"], n_rows * (info["v_row_bytes"] or info["row_bytes"])
        kd = self._rows("k", k, need).tobytes()
        vd = None if v is None else self._rows("v", v, vneed).tobytes()
        check(C.lib().kvrt_cache_write_rows_v2(self._p, seq, layer, first_row, n_rows, kd, len(kd), vd,
                                               0 if vd is None else len(vd)))

    def read_rows(self, seq, layer, first_row, n_rows, k, v=None):
        """Copies n_rows rows into the writable buffers k (and v, or None to skip V)."""
        info = self.layer_info(layer)
        need, vneed = n_rows * info["row_bytes"], n_rows * (info["v_row_bytes"] or info["row_bytes"])
        kb = (ctypes.c_char * need).from_buffer(self._rows("k", k, need))
        vb = None if v is None else (ctypes.c_char * vneed).from_buffer(self._rows("v", v, vneed))
        check(C.lib().kvrt_cache_read_rows_v2(ctypes.addressof(kb), need,
                                              ctypes.addressof(vb) if vb is not None else None,
                                              vneed if vb is not None else 0, self._p, seq, layer, first_row, n_rows))

    def seq_save(self, seq, path):
        check(C.lib().kvrt_cache_seq_save(self._p, seq, os.fsencode(path)))

    def seq_load(self, path, fingerprint=(0, 0)):
        out = ctypes.c_uint64()
        check(C.lib().kvrt_cache_seq_load(ctypes.byref(out), self._p, os.fsencode(path), *fingerprint))
        return out.value

    def save_prefixes(self, path, fingerprint=(0, 0)):
        n = ctypes.c_uint64()
        check(C.lib().kvrt_cache_save_prefixes(ctypes.byref(n), self._p, os.fsencode(path), *fingerprint))
        return n.value

    def load_prefixes(self, path, fingerprint=(0, 0)):
        n = ctypes.c_uint64()
        check(C.lib().kvrt_cache_load_prefixes(ctypes.byref(n), self._p, os.fsencode(path), *fingerprint))
        return n.value

    def stats(self):
        """kvrt_cache_stats as a dict."""
        return stats_of(self._p)

    def set_budget(self, budget_bytes):
        """A new byte budget: shrinking evicts cached prefix blocks (KvrtError INVALID_STATE
        below the bytes sequences hold)."""
        set_budget_of(self._p, budget_bytes)

    def trim(self, keep_bytes=0):
        """Releases cached prefix blocks until at most keep_bytes remain; returns the bytes freed."""
        return trim_of(self._p, keep_bytes)
