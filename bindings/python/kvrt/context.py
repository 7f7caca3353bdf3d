"""Running a model (kvrt/context.h): contexts, samplers, generation."""
import array
import ctypes
from dataclasses import dataclass

from . import _capi as C
from ._handle import Callback, Handle, create
from .cache import stats_of
from .errors import KvrtError, Status, check

KV_F32, KV_F16, KV_BF16 = 0, 1, 2
CED_PREFILL_EXACT, CED_PREFILL_CED = C.CED_PREFILL_EXACT, C.CED_PREFILL_CED
CED_RESUME_AUTO, CED_RESUME_CHECKPOINT, CED_RESUME_BOUNDED_REPLAY, CED_RESUME_COLD = (
    C.CED_RESUME_AUTO, C.CED_RESUME_CHECKPOINT, C.CED_RESUME_BOUNDED_REPLAY, C.CED_RESUME_COLD)
STOP_NONE, STOP_EOG, STOP_MAX_TOKENS, STOP_STRING, STOP_CALLBACK, STOP_CONTEXT_FULL = range(6)


@dataclass
class RequestStats:
    prompt_tokens: int
    reused_tokens: int
    reused_from_cache: int
    computed_tokens: int
    generated_tokens: int
    time_to_first_token_s: float
    prefill_s: float
    decode_s: float
    decode_tokens_per_s: float
    kv_bytes: int
    stop_reason: int

    @classmethod
    def _from(cls, s):
        return cls(*(getattr(s, n) for n in cls.__dataclass_fields__))


def _tokens(tokens):
    return (ctypes.c_int32 * len(tokens))(*tokens), len(tokens)


class Context(Handle):
    """Context(model, n_ctx=0, n_seq_max=1, ..., share_cache_with=None, ced_prefill_mode=CED_PREFILL_EXACT,
    ced_resume=CED_RESUME_AUTO).

    One thread at a time (kvrt/context.h). It holds its own reference to the
    model. share_cache_with: another Context over the same model whose KV
    cache (and so prefix cache) this one shares. ced_prefill_mode and
    ced_resume apply to CED models only (kvrt/ced.h): exact or CED prefill,
    and how a prefix-cache hit restores the windows.
    """
    _destroy = "kvrt_context_destroy"

    def __init__(self, model, n_ctx=0, n_seq_max=1, n_batch=512, n_threads=0, kv_dtype=KV_F16, block_tokens=16,
                 cache_bytes=0, prefix_caching=True, cache_salt="", share_cache_with=None,
                 ced_prefill_mode=CED_PREFILL_EXACT, ced_resume=CED_RESUME_AUTO):
        self._ptr = None
        cfg = C.init_struct(C.context_config, "kvrt_context_config_init")
        cfg.n_ctx, cfg.n_seq_max, cfg.n_batch, cfg.n_threads = n_ctx, n_seq_max, n_batch, n_threads
        cfg.kv_dtype, cfg.block_tokens, cfg.cache_bytes = kv_dtype, block_tokens, cache_bytes
        cfg.prefix_caching = 1 if prefix_caching else 0
        cfg.cache_salt = cache_salt.encode()
        cfg.ced_prefill_mode, cfg.ced_resume = ced_prefill_mode, ced_resume
        if share_cache_with is not None:
            cfg.cache = share_cache_with._cache_ptr()
        super().__init__(create(C.lib().kvrt_context_create, model._p, ctypes.byref(cfg)))

    def _cache_ptr(self):
        out = ctypes.c_void_p()
        check(C.lib().kvrt_context_get_cache(ctypes.byref(out), self._p))
        return out.value

    def prefill(self, seq, tokens):
        """Makes sequence `seq` hold exactly `tokens`; returns RequestStats."""
        s = C.init_struct(C.request_stats, "kvrt_request_stats_init")
        arr, n = _tokens(tokens)
        check(C.lib().kvrt_context_prefill(ctypes.byref(s), self._p, seq, arr, n))
        return RequestStats._from(s)

    def prefill_batch(self, prompts):
        """Prefills several sequences in shared forward passes. prompts: a list of
        (seq, tokens); each sequence ends as prefill(seq, tokens) alone would leave it,
        bit for bit. Every argument is checked before any sequence changes. Returns a
        list of RequestStats, in order."""
        n = len(prompts)
        arrays = [_tokens(t) for _, t in prompts]  # kept alive for the call
        seqs = (ctypes.c_int32 * n)(*[s for s, _ in prompts])
        ptrs = (C._i32p * n)(*[ctypes.cast(a, C._i32p) for a, _ in arrays])
        lens = (ctypes.c_size_t * n)(*[k for _, k in arrays])
        stats = (C.request_stats * n)()
        for s in stats:
            check(C.lib().kvrt_request_stats_init(ctypes.byref(s), ctypes.sizeof(C.request_stats)))
        check(C.lib().kvrt_context_prefill_batch(stats if n else None, self._p, seqs, ptrs, lens, n))
        return [RequestStats._from(s) for s in stats]

    def decode(self, seqs, tokens):
        """One decode step: appends tokens[i] to sequence seqs[i]."""
        if len(seqs) != len(tokens):
            raise KvrtError(Status.INVALID_ARGUMENT, "%d sequence ids but %d tokens" % (len(seqs), len(tokens)))
        sa, n = _tokens(seqs)
        ta, _ = _tokens(tokens)
        check(C.lib().kvrt_context_decode(self._p, sa, ta, n))

    def logits(self, seq=0):
        """The last computed token's logits as array.array('f') (n_vocab floats;
        memoryview(result) gives a zero-copy view)."""
        n = ctypes.c_size_t()
        status = C.lib().kvrt_context_get_logits(None, 0, ctypes.byref(n), self._p, seq)
        if status not in (0, int(Status.BUFFER_TOO_SMALL)):
            check(status)
        out = array.array("f", bytes(4 * n.value))
        self.logits_into(out, seq)
        return out

    def logits_into(self, buf, seq=0):
        """Writes the logits into a writable float32 buffer (array('f'),
        bytearray, memoryview...) of at least n_vocab floats; returns n_vocab."""
        mv = memoryview(buf).cast("B")
        if mv.readonly:
            raise KvrtError(Status.INVALID_ARGUMENT, "logits_into needs a writable buffer")
        cap = mv.nbytes // 4
        raw = (ctypes.c_char * mv.nbytes).from_buffer(mv) if mv.nbytes else None
        n = ctypes.c_size_t()
        check(C.lib().kvrt_context_get_logits(ctypes.addressof(raw) if raw is not None else None, cap,
                                              ctypes.byref(n), self._p, seq))
        return n.value

    def prefill_logits(self, seq, tokens, positions):
        """prefill() that also computes the logits of `positions` (strictly increasing, each
        below len(tokens)): position p's logits equal those of prefilling tokens[:p + 1]
        alone, bit for bit. Reuse stops at the first position. Returns RequestStats; read
        the rows with logits_at()."""
        s = C.init_struct(C.request_stats, "kvrt_request_stats_init")
        arr, n = _tokens(tokens)
        pos = (ctypes.c_uint32 * len(positions))(*positions)
        check(C.lib().kvrt_context_prefill_logits(ctypes.byref(s), self._p, seq, arr, n, pos, len(positions)))
        return RequestStats._from(s)

    @_locked
    def logits_at(self, seq, position):
        """The logits (array('f'), n_vocab floats) of a position the last prefill_logits()
        of `seq` asked for."""
        if position < 0:
            raise KvrtError(Status.OUT_OF_RANGE, "position %d is negative" % position)
        n = ctypes.c_size_t()
        status = C.lib().kvrt_context_get_logits_at(None, 0, ctypes.byref(n), self._p, seq, position)
        if status not in (0, int(Status.BUFFER_TOO_SMALL)):
            check(status)
        out = array.array("f", bytes(4 * n.value))
        raw = (ctypes.c_char * (4 * n.value)).from_buffer(out)
        check(C.lib().kvrt_context_get_logits_at(ctypes.addressof(raw), n.value, ctypes.byref(n), self._p, seq,
                                                 position))
        return out

    @_locked
    def seq_length(self, seq=0):
        n = ctypes.c_size_t()
        check(C.lib().kvrt_context_seq_length(ctypes.byref(n), self._p, seq))
        return n.value

    def seq_kv_bytes(self, seq=0):
        """KV bytes sequence `seq` holds (shared prefix blocks included)."""
        n = ctypes.c_uint64()
        check(C.lib().kvrt_context_seq_kv_bytes(ctypes.byref(n), self._p, seq))
        return n.value

    def seq_release(self, seq=0):
        check(C.lib().kvrt_context_seq_release(self._p, seq))

    def cache_stats(self):
        """The statistics of the context's KV cache (a dict)."""
        return stats_of(self._cache_ptr())

    def generate(self, seq, prompt, max_tokens=256, stop_at_eog=True, stop_strings=(), sampler=None, on_token=None):
        """Prefills `prompt`, then samples and decodes. on_token(token, text)
        streams each token (a last call with token -1 flushes text held back
        for a stop string); returning False stops. An exception in on_token
        stops generation and is re-raised here. Returns RequestStats."""
        cfg = C.init_struct(C.generate_config, "kvrt_generate_config_init")
        cfg.max_tokens = max_tokens
        cfg.stop_at_eog = 1 if stop_at_eog else 0
        if sampler is not None:
            cfg.sampler = sampler._p
        stops = (ctypes.c_char_p * max(len(stop_strings), 1))(*[s.encode() for s in stop_strings])
        if stop_strings:
            cfg.stop_strings, cfg.n_stop_strings = stops, len(stop_strings)
        cb = None
        if on_token is not None:
            cb = Callback(lambda t, text: on_token(t, text.decode("utf-8", "replace")))
            cfg.on_token = C.token_fn(lambda t, text, n, _ud: cb.invoke(t, ctypes.string_at(text, n) if n else b""))
        s = C.init_struct(C.request_stats, "kvrt_request_stats_init")
        arr, n = _tokens(prompt)
        try:
            status = C.lib().kvrt_context_generate(ctypes.byref(s), self._p, seq, arr, n, ctypes.byref(cfg))
        finally:
            if cb is not None:
                cb.reraise()
        check(status)
        return RequestStats._from(s)


class Sampler(Handle):
    """Sampler(temperature=0 (greedy), top_k=0, top_p=1, min_p=0, seed=0)."""
    _destroy = "kvrt_sampler_destroy"

    def __init__(self, temperature=0.0, top_k=0, top_p=1.0, min_p=0.0, seed=0):
        self._ptr = None
        cfg = C.init_struct(C.sampler_config, "kvrt_sampler_config_init")
        cfg.temperature, cfg.top_k, cfg.top_p, cfg.min_p, cfg.seed = temperature, top_k, top_p, min_p, seed
        super().__init__(create(C.lib().kvrt_sampler_create, ctypes.byref(cfg)))

    def sample(self, logits):
        """Picks a token from float32 logits (array('f'), memoryview, list)."""
        if isinstance(logits, (list, tuple)):
            logits = array.array("f", logits)
        mv = memoryview(logits).cast("B")
        data = (ctypes.c_char * mv.nbytes).from_buffer_copy(mv) if mv.nbytes else None
        out = ctypes.c_int32()
        check(C.lib().kvrt_sampler_sample(ctypes.byref(out), self._p,
                                          ctypes.cast(data, ctypes.POINTER(ctypes.c_float)) if data else None,
                                          mv.nbytes // 4))
        return out.value
