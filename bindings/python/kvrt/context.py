# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The kvrt authors

"""Running a model (kvrt/context.h): contexts, samplers, generation."""
import array
import contextlib
import ctypes
import functools
import queue
import threading
from dataclasses import dataclass

from . import _capi as C
from ._handle import Callback, Handle, create
from .cache import (DTYPE_BF16, DTYPE_F16, DTYPE_F32, DTYPE_FP8_E4M3, DTYPE_I8, add_tier_of, persist_of, set_budget_of,
                    stats_of, tier_config, tier_stats_of, trim_of)
from .errors import KvrtError, Status, check

# A context's K/V element types are the cache's DTYPE_* (kvrt_dtype, the one dtype enum;
# DTYPE_I8: int8 with an f16 scale per 32 elements of a head, head_dim % 32 == 0;
# DTYPE_FP8_E4M3: fp8 e4m3 with an f16 scale per head of a row). The KV_* names are
# deprecated aliases of the same values (C's KVRT_KV_*), kept for older code.
KV_F32, KV_F16, KV_BF16, KV_I8, KV_FP8_E4M3 = DTYPE_F32, DTYPE_F16, DTYPE_BF16, DTYPE_I8, DTYPE_FP8_E4M3
CED_PREFILL_EXACT, CED_PREFILL_CED = C.CED_PREFILL_EXACT, C.CED_PREFILL_CED
ACT_BITS_OUTLIERS = C.ACT_BITS_OUTLIERS  # act_bits: 8-bit codes plus outlier-block residuals (the default)
CED_RESUME_AUTO, CED_RESUME_CHECKPOINT, CED_RESUME_BOUNDED_REPLAY, CED_RESUME_COLD = (
    C.CED_RESUME_AUTO, C.CED_RESUME_CHECKPOINT, C.CED_RESUME_BOUNDED_REPLAY, C.CED_RESUME_COLD)
STOP_NONE, STOP_EOG, STOP_MAX_TOKENS, STOP_STRING, STOP_CALLBACK, STOP_CONTEXT_FULL, STOP_CANCELLED = range(7)
PHASE_IDLE, PHASE_PREFILL, PHASE_DECODE = range(3)
SAMPLER_PENALTIES, SAMPLER_LOGIT_BIAS, SAMPLER_TOP_K, SAMPLER_TOP_P, SAMPLER_MIN_P, SAMPLER_TEMPERATURE, \
    SAMPLER_DIST, SAMPLER_GREEDY = range(1, 9)


_NO_LOCK = contextlib.nullcontext()


def _locked(method):
    """Serialises calls on one object: ctypes releases the GIL during a C call, and a
    context (or sampler) runs one call at a time (kvrt/context.h). Re-entrant on the
    same thread, so a callback may read the context (kvrt refuses changes with
    INVALID_STATE rather than deadlocking here)."""
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        with self._lock:
            return method(self, *args, **kwargs)
    return wrapper


@dataclass
class Activity:
    """What a context is doing (Context.activity(), readable from any thread)."""
    phase: int
    cancel_pending: bool
    prefill_total: int
    prefill_done: int
    generated_tokens: int
    calls: int


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
    reused_from_ram: int = 0
    reused_from_disk: int = 0
    reused_from_remote: int = 0
    sample_s: float = 0.0

    @classmethod
    def _from(cls, s):
        return cls(*(getattr(s, n) for n in cls.__dataclass_fields__))


def _tokens(tokens):
    return (ctypes.c_int32 * len(tokens))(*tokens), len(tokens)


class Context(Handle):
    """Context(model, n_ctx=0, n_seq_max=1, ..., share_cache_with=None, ced_prefill_mode=CED_PREFILL_EXACT,
    ced_resume=CED_RESUME_AUTO, progress=None).

    Thread-safe here: calls on one Context are serialised by a lock (kvrt runs
    one call at a time per context); cancel() and activity() never wait for it
    and may be called from any thread while another generates. It holds its
    own reference to the model. progress(fraction, stage) reports long prefills;
    returning False cancels (KvrtError CANCELLED). share_cache_with: another Context over the same model whose KV
    cache (and so prefix cache) this one shares. ced_prefill_mode and
    ced_resume apply to CED models only (kvrt/ced.h): exact or CED prefill,
    and how a prefix-cache hit restores the windows. n_threads: 0 (default) up to every core,
    each decode step's count chosen by kvrt from measured step times (fewer when another
    program keeps a core busy); N exactly N; the same results either way. kv_dtype: DTYPE_F32, DTYPE_F16,
    DTYPE_BF16, DTYPE_I8 or DTYPE_FP8_E4M3 (kvrt_dtype); k_dtype / v_dtype (-1: kv_dtype) give the K
    and V rows different types. act_bits: the activation codes of the quantised weight
    matmuls (kvrt_context_config.act_bits): 0 (default, the same as ACT_BITS_OUTLIERS = 9)
    16-bit codes for the K/V projections and 8-bit codes with residual codes for each row's
    outlier blocks elsewhere, 8 everywhere (fastest, ~twice the default's distance from exact
    math) or 16 everywhere (~256x finer activation rounding, closest to exact math); blocks of
    one setting are never reused by another.
    bank_dtype (CED models): the bank rows' and indexer keys' type, DTYPE_F32, DTYPE_F16,
    DTYPE_BF16 or DTYPE_FP4 (4-bit banks); -1 (default): kv_dtype, or f16 when kv_dtype is
    DTYPE_I8 / DTYPE_FP8_E4M3 (which then apply to the window rows only).
    """
    _destroy = "kvrt_context_destroy"

    def __init__(self, model, n_ctx=0, n_seq_max=1, n_batch=512, n_threads=0, kv_dtype=DTYPE_F16, block_tokens=0,
                 cache_bytes=0, prefix_caching=True, cache_salt="", share_cache_with=None,
                 ced_prefill_mode=CED_PREFILL_EXACT, ced_resume=CED_RESUME_AUTO, k_dtype=-1, v_dtype=-1,
                 progress=None, cache_dir=None, cache_redis=None, act_bits=0, bank_dtype=-1):
        self._ptr = None
        self._lock = threading.RLock()
        self._progress = None
        cfg = C.init_struct(C.context_config, "kvrt_context_config_init")
        cfg.n_ctx, cfg.n_seq_max, cfg.n_batch, cfg.n_threads = n_ctx, n_seq_max, n_batch, n_threads
        cfg.kv_dtype, cfg.block_tokens, cfg.cache_bytes = kv_dtype, block_tokens, cache_bytes
        cfg.prefix_caching = 1 if prefix_caching else 0
        cfg.cache_salt = cache_salt.encode()
        cfg.ced_prefill_mode, cfg.ced_resume = ced_prefill_mode, ced_resume
        cfg.k_dtype, cfg.v_dtype = k_dtype, v_dtype  # -1: kv_dtype (K and V rows of different types)
        cfg.act_bits = act_bits
        cfg.bank_dtype = bank_dtype  # -1: from kv_dtype (CED models only)
        if share_cache_with is not None:
            cfg.cache = share_cache_with._cache_ptr()
        if progress is not None:  # kept alive with the context
            pcb = Callback(lambda f, stage: progress(f, stage.decode() if stage else ""))
            self._progress = (pcb, C.progress_fn(lambda f, stage, _ud: pcb.invoke(f, stage)))
            cfg.progress = self._progress[1]
        tiers = []  # lower tiers of the prefix cache: a directory, a redis:// URL
        if cache_dir is not None:
            tiers.append(tier_config(C.TIER_DISK, str(cache_dir)))
        if cache_redis is not None:
            tiers.append(tier_config(C.TIER_REDIS, cache_redis))
        if tiers:
            arr = (C.tier_config * len(tiers))(*tiers)
            cfg.tiers, cfg.n_tiers = ctypes.cast(arr, ctypes.POINTER(C.tier_config)), len(tiers)
        super().__init__(create(C.lib().kvrt_context_create, model._p, ctypes.byref(cfg)))

    def close(self):
        with self._lock:  # waits for a call running on another thread
            super().close()

    def cancel(self):
        """Stops the call running on this context (from any thread, without waiting for
        the lock): it raises KvrtError(CANCELLED); the sequence keeps what was computed.
        A cancel while nothing runs is dropped when the next call starts."""
        check(C.lib().kvrt_context_cancel(self._p))

    def activity(self):
        """What the context is doing now (any thread, no lock): an Activity."""
        a = C.init_struct(C.context_activity, "kvrt_context_activity_init")
        check(C.lib().kvrt_context_activity_get(ctypes.byref(a), self._p))
        return Activity(a.phase, bool(a.cancel_pending), a.prefill_total, a.prefill_done, a.generated_tokens,
                        a.calls)

    def _check_progress(self):
        if self._progress is not None:
            self._progress[0].reraise()

    def _cache_ptr(self):
        out = ctypes.c_void_p()
        check(C.lib().kvrt_context_get_cache(ctypes.byref(out), self._p))
        return out.value

    @_locked
    def prefill(self, seq, tokens):
        """Makes sequence `seq` hold exactly `tokens`; returns RequestStats."""
        s = C.init_struct(C.request_stats, "kvrt_request_stats_init")
        arr, n = _tokens(tokens)
        check(C.lib().kvrt_context_prefill(ctypes.byref(s), self._p, seq, arr, n))
        return RequestStats._from(s)

    @_locked
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

    @_locked
    def decode(self, seqs, tokens):
        """One decode step: appends tokens[i] to sequence seqs[i]."""
        if len(seqs) != len(tokens):
            raise KvrtError(Status.INVALID_ARGUMENT, "%d sequence ids but %d tokens" % (len(seqs), len(tokens)))
        sa, n = _tokens(seqs)
        ta, _ = _tokens(tokens)
        check(C.lib().kvrt_context_decode(self._p, sa, ta, n))

    @_locked
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

    @_locked
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

    @_locked
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

    @_locked
    def seq_kv_bytes(self, seq=0):
        """KV bytes sequence `seq` holds (shared prefix blocks included)."""
        n = ctypes.c_uint64()
        check(C.lib().kvrt_context_seq_kv_bytes(ctypes.byref(n), self._p, seq))
        return n.value

    @_locked
    def seq_release(self, seq=0):
        check(C.lib().kvrt_context_seq_release(self._p, seq))

    @_locked
    def seq_tokens(self, seq=0):
        """The tokens sequence seq holds (a list)."""
        n = ctypes.c_size_t()
        check(C.lib().kvrt_context_seq_tokens(None, 0, ctypes.byref(n), self._p, seq))
        buf = (ctypes.c_int32 * max(1, n.value))()
        check(C.lib().kvrt_context_seq_tokens(buf, n.value, ctypes.byref(n), self._p, seq))
        return list(buf[:n.value])

    @_locked
    def seq_save(self, seq, path):
        """Saves sequence seq (tokens, logits, KV rows) to path, atomically."""
        check(C.lib().kvrt_context_seq_save(self._p, seq, str(path).encode()))

    @_locked
    def seq_load(self, seq, path):
        """Replaces sequence seq with the one saved in path; KvrtError (unchanged) on a mismatch or a bad file."""
        check(C.lib().kvrt_context_seq_load(self._p, seq, str(path).encode()))

    @_locked
    def seq_restore(self, seq, path):
        """Restores the conversation saved in path into sequence seq whatever KV the saving
        context kept: loaded as saved where its rows fit this context, else (another KV type,
        block size, act_bits, or a release that computes them otherwise) its tokens prefilled
        here, so it goes on in this context's arithmetic. Returns (RequestStats, recomputed).
        KvrtError (sequence unchanged) for another model or a bad file."""
        s = C.init_struct(C.request_stats, "kvrt_request_stats_init")
        re = ctypes.c_int32(0)
        check(C.lib().kvrt_context_seq_restore(ctypes.byref(s), ctypes.byref(re), self._p, seq,
                                               str(path).encode()))
        return RequestStats._from(s), bool(re.value)

    @_locked
    def seq_fork(self, src, dst):
        """Makes dst a copy of src sharing its cache blocks."""
        check(C.lib().kvrt_context_seq_fork(self._p, src, dst))

    @_locked
    def seq_truncate(self, seq, n):
        """Keeps the first n positions of seq."""
        check(C.lib().kvrt_context_seq_truncate(self._p, seq, n))

    def cache_add_tier(self, kind, location, budget_bytes=0, timeout_ms=200, key_prefix=None):
        """Adds a lower tier (C.TIER_DISK directory or C.TIER_REDIS URL) to the context's cache."""
        add_tier_of(self._cache_ptr(), kind, location, budget_bytes, timeout_ms, key_prefix)

    def cache_persist(self):
        """Writes every cached prefix block set not yet in the tiers into them; returns how many."""
        return persist_of(self._cache_ptr())

    def cache_tier_stats(self):
        """Per tier a dict of counters (puts, hits, misses, corrupt, errors, timeouts, ...)."""
        return tier_stats_of(self._cache_ptr())

    def cache_stats(self):
        """The statistics of the context's KV cache (a dict)."""
        return stats_of(self._cache_ptr())

    def cache_set_budget(self, budget_bytes):
        """Changes the budget of the context's cache (internally synchronised: no lock)."""
        set_budget_of(self._cache_ptr(), budget_bytes)

    def cache_trim(self, keep_bytes=0):
        """Releases the cached prefix blocks of the context's cache; returns the bytes freed."""
        return trim_of(self._cache_ptr(), keep_bytes)

    @_locked
    def generate(self, seq, prompt, max_tokens=256, stop_at_eog=True, stop_strings=(), sampler=None, on_token=None,
                 result=None):
        """Prefills `prompt`, then samples and decodes. on_token(token, text)
        streams each token (a last call with token -1 flushes text held back
        for a stop string); returning False stops. An exception in on_token
        stops generation and is re-raised here. Returns RequestStats.
        result: None, or a dict that receives "tokens" and "text" (the answer,
        also when on_token is None, through kvrt's output buffers)."""
        cfg = C.init_struct(C.generate_config, "kvrt_generate_config_init")
        if result is not None:
            toks = (ctypes.c_int32 * max(max_tokens, 1))()
            text_cap = 128 * max_tokens + 1
            text = ctypes.create_string_buffer(text_cap)
            tw, xw = ctypes.c_size_t(), ctypes.c_size_t()
            cfg.tokens_out, cfg.tokens_capacity, cfg.tokens_written = toks, max(max_tokens, 1), ctypes.pointer(tw)
            cfg.text_out, cfg.text_capacity = ctypes.cast(text, ctypes.c_void_p), text_cap
            cfg.text_written = ctypes.pointer(xw)
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
            with sampler._lock if sampler is not None else _NO_LOCK:  # the sampler is used by this call
                status = C.lib().kvrt_context_generate(ctypes.byref(s), self._p, seq, arr, n, ctypes.byref(cfg))
        finally:
            if result is not None:  # what was produced, also when the call failed part-way
                result["tokens"] = list(toks[:min(tw.value, max(max_tokens, 1))])
                result["text"] = text.value.decode("utf-8", "replace")
            if cb is not None:
                cb.reraise()
            self._check_progress()
        check(status)
        return RequestStats._from(s)

    def stream(self, seq, prompt, max_tokens=256, stop_at_eog=True, stop_strings=(), sampler=None):
        """generate() as a Python generator: yields (token, text) as they are produced
        (token -1: text held back for a stop string, flushed at the end) and returns the
        RequestStats (StopIteration.value). Generation runs on a worker thread; closing
        the generator early (break, del) cancels it and waits for it to stop.

            for token, text in ctx.stream(0, prompt, max_tokens=64):
                print(text, end="", flush=True)
        """
        q = queue.Queue(maxsize=64)
        done = object()
        box = {}

        def on_token(t, text):
            q.put((t, text))

        def work():
            try:
                box["stats"] = self.generate(seq, prompt, max_tokens, stop_at_eog, stop_strings, sampler, on_token)
            except BaseException as e:  # noqa: B902 - handed to the consumer
                box["error"] = e
            finally:
                q.put(done)

        worker = threading.Thread(target=work, name="kvrt-stream", daemon=True)
        worker.start()
        finished = False
        try:
            while True:
                item = q.get()
                if item is done:
                    finished = True
                    break
                yield item
        finally:
            if not finished:  # the consumer stopped early
                try:
                    self.cancel()
                except KvrtError:
                    pass
                while q.get() is not done:  # unblock the worker's puts
                    pass
            worker.join()
        if "error" in box:
            raise box["error"]
        return box["stats"]


class Sampler(Handle):
    """Sampler(temperature=0 (greedy), top_k=0, top_p=1, min_p=0, seed=0), or a
    composable chain: Sampler.chain(seed).penalties(repeat=1.1).top_k(40).temperature(0.8).dist().
    Calls are serialised by a lock (one thread at a time in C)."""
    _destroy = "kvrt_sampler_destroy"

    def __init__(self, temperature=0.0, top_k=0, top_p=1.0, min_p=0.0, seed=0, _chain=False):
        self._ptr = None
        self._lock = threading.RLock()
        if _chain:
            super().__init__(create(C.lib().kvrt_sampler_chain_create, ctypes.c_uint64(seed)))
            return
        cfg = C.init_struct(C.sampler_config, "kvrt_sampler_config_init")
        cfg.temperature, cfg.top_k, cfg.top_p, cfg.min_p, cfg.seed = temperature, top_k, top_p, min_p, seed
        super().__init__(create(C.lib().kvrt_sampler_create, ctypes.byref(cfg)))

    @classmethod
    def chain(cls, seed=0):
        """An empty sampler chain (stages run in the order added; without dist or
        greedy at the end it picks the argmax). Each stage method returns self."""
        return cls(seed=seed, _chain=True)

    @_locked
    def _add(self, type_, **fields):
        st = C.init_struct(C.sampler_stage, "kvrt_sampler_stage_init")
        st.type = type_
        keep = []
        for k, v in fields.items():
            if k == "bias":
                items = list(v.items())
                toks = (ctypes.c_int32 * max(len(items), 1))(*[t for t, _ in items])
                vals = (ctypes.c_float * max(len(items), 1))(*[b for _, b in items])
                keep += [toks, vals]
                st.bias_tokens, st.bias_values, st.n_bias = toks, vals, len(items)
            else:
                setattr(st, k, v)
        check(C.lib().kvrt_sampler_chain_add(self._p, ctypes.byref(st)))
        return self

    def penalties(self, repeat=1.0, frequency=0.0, presence=0.0, last_n=64):
        """Repetition / frequency / presence penalties over the last `last_n` tokens
        (-1: all) of the history (the prompt and the tokens generated, in generate)."""
        return self._add(SAMPLER_PENALTIES, repeat_penalty=repeat, frequency_penalty=frequency,
                         presence_penalty=presence, penalty_last_n=last_n)

    def logit_bias(self, bias):
        """bias: {token: added logit} (-inf bans a token)."""
        return self._add(SAMPLER_LOGIT_BIAS, bias=bias)

    def top_k(self, k):
        return self._add(SAMPLER_TOP_K, top_k=k)

    def top_p(self, p):
        return self._add(SAMPLER_TOP_P, p=p)

    def min_p(self, p):
        return self._add(SAMPLER_MIN_P, p=p)

    def temperature(self, t):
        return self._add(SAMPLER_TEMPERATURE, temperature=t)

    def dist(self):
        return self._add(SAMPLER_DIST)

    def greedy(self):
        return self._add(SAMPLER_GREEDY)

    @_locked
    def accept(self, token):
        """Appends a token to the history penalties look at (your own sampling loop)."""
        check(C.lib().kvrt_sampler_accept(self._p, token))

    @_locked
    def reset(self):
        check(C.lib().kvrt_sampler_reset(self._p))

    @_locked
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
