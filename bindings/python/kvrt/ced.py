"""The CED random-weight model generator (kvrt/ced.h)."""
import ctypes
import os

from . import _capi as C
from .errors import check

WEIGHTS_F32, WEIGHTS_F16, WEIGHTS_BF16, WEIGHTS_Q8_0, WEIGHTS_Q4_0, WEIGHTS_Q4_1 = range(6)


def _config(preset, seed, weight_type, window, top_k, n_vocab):
    cfg = C.init_struct(C.ced_init_config, "kvrt_ced_init_config_init")
    cfg.preset = preset.encode()
    cfg.seed, cfg.weight_type, cfg.window, cfg.top_k, cfg.n_vocab = seed, weight_type, window, top_k, n_vocab
    return cfg


def param_count(preset="tiny", seed=1, weight_type=WEIGHTS_F32, window=0, top_k=0, n_vocab=0):
    cfg = _config(preset, seed, weight_type, window, top_k, n_vocab)
    n = ctypes.c_uint64()
    check(C.lib().kvrt_ced_param_count(ctypes.byref(n), ctypes.byref(cfg)))
    return n.value


def write_gguf(path, preset="tiny", seed=1, weight_type=WEIGHTS_F32, window=0, top_k=0, n_vocab=0):
    """Writes a CED GGUF of deterministic random weights to path."""
    cfg = _config(preset, seed, weight_type, window, top_k, n_vocab)
    check(C.lib().kvrt_ced_write_gguf(os.fsencode(path), ctypes.byref(cfg)))


# ---- Running CED models -----------------------------------------------------
import array  # noqa: E402

from ._handle import Handle, create  # noqa: E402

PREFILL_EXACT, PREFILL_CED = 0, 1
RESUME_AUTO, RESUME_CHECKPOINT, RESUME_BOUNDED_REPLAY, RESUME_COLD = range(4)


class CedModel(Handle):
    """A loaded CED GGUF: immutable, shareable between threads and sessions."""
    _destroy = "kvrt_ced_model_destroy"

    def __init__(self, path):
        self._ptr = None
        super().__init__(create(C.lib().kvrt_ced_model_load, os.fsencode(path)))

    def memory(self):
        m = C.init_struct(C.ced_memory)
        check(C.lib().kvrt_ced_memory_get(ctypes.byref(m), self._p))
        return {n: getattr(m, n) for n, _ in C.ced_memory._fields_ if n != "struct_size"}

    def source(self, index):
        """(layer, ratio, main bytes per token, indexer bytes per token) of bank `index`."""
        layer, ratio = ctypes.c_int32(), ctypes.c_int32()
        main, idx = ctypes.c_double(), ctypes.c_double()
        check(C.lib().kvrt_ced_memory_source(ctypes.byref(layer), ctypes.byref(ratio), ctypes.byref(main),
                                             ctypes.byref(idx), self._p, index))
        return layer.value, ratio.value, main.value, idx.value


class CedSession(Handle):
    """A CED runtime and its caches over a CedModel (one thread at a time)."""
    _destroy = "kvrt_ced_session_destroy"

    def __init__(self, model, block_tokens=0, chunk=0, bank_budget_bytes=0, window_budget_bytes=0, cache_dtype=0):
        """cache_dtype: a kvrt_dtype value (0 = f32, 1 = f16, 2 = bf16) for every cached row."""
        self._ptr = None
        cfg = C.init_struct(C.ced_session_config, "kvrt_ced_session_config_init")
        for name, value in (("block_tokens", block_tokens), ("chunk", chunk),
                            ("bank_budget_bytes", bank_budget_bytes), ("window_budget_bytes", window_budget_bytes),
                            ("cache_dtype", cache_dtype)):
            if value:
                setattr(cfg, name, value)
        super().__init__(create(C.lib().kvrt_ced_session_create, model._p, ctypes.byref(cfg)))

    def seq_create(self):
        out = ctypes.c_uint64()
        check(C.lib().kvrt_ced_seq_create(ctypes.byref(out), self._p))
        return out.value

    def seq_release(self, seq):
        check(C.lib().kvrt_ced_seq_release(self._p, seq))

    def seq_fork(self, seq):
        out = ctypes.c_uint64()
        check(C.lib().kvrt_ced_seq_fork(ctypes.byref(out), self._p, seq))
        return out.value

    def seq_truncate(self, seq, pos):
        check(C.lib().kvrt_ced_seq_truncate(self._p, seq, pos))

    def seq_length(self, seq):
        out = ctypes.c_int64()
        check(C.lib().kvrt_ced_seq_length(ctypes.byref(out), self._p, seq))
        return out.value

    def prefill(self, seq, tokens, mode=PREFILL_EXACT, resume=RESUME_AUTO):
        """Runs a prompt on an empty sequence; returns what happened (a dict)."""
        info = C.init_struct(C.ced_prefill_info)
        arr = (ctypes.c_int32 * len(tokens))(*tokens)
        check(C.lib().kvrt_ced_prefill(ctypes.byref(info), self._p, seq, arr, len(tokens), mode, resume))
        return {"hit": info.hit, "exact_resume": bool(info.exact_resume), "replayed": info.replayed,
                "computed": info.computed, "decoded": info.decoded}

    def extend(self, seq, tokens):
        arr = (ctypes.c_int32 * len(tokens))(*tokens)
        check(C.lib().kvrt_ced_extend(self._p, seq, arr, len(tokens)))

    def logits(self, seq):
        """array('f') of n_vocab logits of the last processed position."""
        n = ctypes.c_size_t()
        status = C.lib().kvrt_ced_logits(None, 0, ctypes.byref(n), self._p, seq)
        if status not in (0, -10):
            check(status)
        out = array.array("f", bytes(4 * n.value))
        raw = (ctypes.c_char * (4 * n.value)).from_buffer(out)
        check(C.lib().kvrt_ced_logits(ctypes.addressof(raw), n.value, ctypes.byref(n), self._p, seq))
        return out

    def bytes(self):
        """(bank bytes per token, bank bytes in use, window bytes in use)."""
        a, b, c = ctypes.c_double(), ctypes.c_uint64(), ctypes.c_uint64()
        check(C.lib().kvrt_ced_session_bytes(ctypes.byref(a), ctypes.byref(b), ctypes.byref(c), self._p))
        return a.value, b.value, c.value
