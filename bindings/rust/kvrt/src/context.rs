// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

//! Running a model (kvrt/context.h): contexts, samplers, generation.
use std::ffi::{c_char, c_int, c_void, CString};
use std::mem::{size_of, MaybeUninit};
use std::ptr::{self, NonNull};

use kvrt_sys as sys;

use crate::cache::{stats_of, CacheStats};
use crate::error::{check, Error, ErrorKind, Result};
use crate::model::Model;
use crate::util::{cstring, read_buffer, Callback};

/// Element type of cached K/V rows: the cache's `DType` (one dtype enum, as `kvrt_dtype`
/// in C; this name is kept so that code written before 0.3 compiles). Default F16.
pub type KvType = crate::cache::DType;

/// Prefill semantics of a CED model (kvrt_ced_prefill_mode); ignored for other models.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CedPrefillMode {
    /// Every layer over every prompt token.
    #[default]
    Exact,
    /// CED prefill: the encoder over all N tokens, the decoder over the last W only.
    Ced,
}

impl CedPrefillMode {
    fn raw(self) -> i32 {
        match self {
            CedPrefillMode::Exact => sys::KVRT_CED_PREFILL_EXACT,
            CedPrefillMode::Ced => sys::KVRT_CED_PREFILL_CED,
        }
    }
}

/// How a prefill of a CED model restores the window state on a prefix-cache
/// hit (kvrt_ced_resume); ignored for other models.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CedResume {
    /// A window checkpoint when it costs no more than a replay, else bounded replay.
    #[default]
    Auto,
    /// Exact resumption only.
    Checkpoint,
    /// Replay the last W positions before the hit (approximate).
    BoundedReplay,
    /// No reuse.
    Cold,
}

impl CedResume {
    fn raw(self) -> i32 {
        match self {
            CedResume::Auto => sys::KVRT_CED_RESUME_AUTO,
            CedResume::Checkpoint => sys::KVRT_CED_RESUME_CHECKPOINT,
            CedResume::BoundedReplay => sys::KVRT_CED_RESUME_BOUNDED_REPLAY,
            CedResume::Cold => sys::KVRT_CED_RESUME_COLD,
        }
    }
}

/// `ContextOptions::act_bits`: 8-bit codes with the residuals of each row's outlier blocks
/// (`KVRT_ACT_BITS_OUTLIERS`; the default's computation since 0.3.3).
pub const ACT_BITS_OUTLIERS: i32 = sys::KVRT_ACT_BITS_OUTLIERS;

/// Options of [`Context::new`]; `Default` gives kvrt's defaults.
#[derive(Clone, Debug)]
pub struct ContextOptions {
    /// Positions per sequence; 0 = the model's training context.
    pub n_ctx: u32,
    /// Sequence ids are 0..n_seq_max.
    pub n_seq_max: u32,
    /// Prefill chunk in tokens.
    pub n_batch: u32,
    /// Threads for this context's calls; 0 = up to the OpenMP default, each decode step's
    /// count chosen by kvrt from measured step times; N = exactly N.
    pub n_threads: i32,
    pub kv_type: KvType,
    /// Tokens per cache block; 0 = the library default (64 for decoder models, 16 for CED ones).
    pub block_tokens: u32,
    /// Cache budget in bytes; 0 = kvrt's default.
    pub cache_bytes: u64,
    pub prefix_caching: bool,
    /// Prefixes are shared only between equal salts.
    pub cache_salt: String,
    /// CED models only: exact or CED prefill.
    pub ced_prefill_mode: CedPrefillMode,
    /// CED models only: how a prefix-cache hit restores the windows.
    pub ced_resume: CedResume,
    /// The K rows' type when it differs from `kv_type` (llama.cpp's type_k); None: kv_type.
    pub k_type: Option<KvType>,
    /// The V rows' type when it differs from `kv_type` (llama.cpp's type_v); None: kv_type.
    pub v_type: Option<KvType>,
    /// Activation code width of the quantised weight matmuls (kvrt_context_config.act_bits):
    /// 0 (default, the same as [`ACT_BITS_OUTLIERS`] = 9) 16-bit codes for the K/V projections
    /// and 8-bit codes with residual codes for each row's outlier blocks elsewhere, 8
    /// everywhere (fastest, ~twice the default's distance from exact math) or 16 everywhere
    /// (~256x finer activation rounding, closest to exact math);
    /// blocks computed under one setting are never reused by another.
    pub act_bits: i32,
    /// CED models only: the bank rows' and indexer keys' type (kvrt_context_config.bank_dtype):
    /// F32, F16, Bf16 or Fp4 (4-bit banks); None: kv_type, or f16 when kv_type is I8 / Fp8E4m3
    /// (which then apply to the window rows only).
    pub bank_type: Option<KvType>,
}

impl Default for ContextOptions {
    fn default() -> Self {
        ContextOptions {
            n_ctx: 0,
            n_seq_max: 1,
            n_batch: 512,
            n_threads: 0,
            kv_type: KvType::F16,
            block_tokens: 0,
            cache_bytes: 0,
            prefix_caching: true,
            cache_salt: String::new(),
            ced_prefill_mode: CedPrefillMode::Exact,
            ced_resume: CedResume::Auto,
            k_type: None,
            v_type: None,
            act_bits: 0,
            bank_type: None,
        }
    }
}

/// Why generation stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    None,
    EndOfGeneration,
    MaxTokens,
    StopString,
    Callback,
    ContextFull,
    /// kvrt_context_cancel or the progress callback (the call returned an error of kind Cancelled).
    Cancelled,
    Other(i32),
}

impl StopReason {
    fn from_raw(r: i32) -> StopReason {
        match r {
            sys::KVRT_STOP_NONE => StopReason::None,
            sys::KVRT_STOP_EOG => StopReason::EndOfGeneration,
            sys::KVRT_STOP_MAX_TOKENS => StopReason::MaxTokens,
            sys::KVRT_STOP_STRING => StopReason::StopString,
            sys::KVRT_STOP_CALLBACK => StopReason::Callback,
            sys::KVRT_STOP_CONTEXT_FULL => StopReason::ContextFull,
            sys::KVRT_STOP_CANCELLED => StopReason::Cancelled,
            other => StopReason::Other(other),
        }
    }
}

/// Statistics of one prefill or generate call.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RequestStats {
    pub prompt_tokens: u64,
    /// Prompt positions whose K/V were reused (kept + prefix cache).
    pub reused_tokens: u64,
    /// ... of which came from the shared prefix cache.
    pub reused_from_cache: u64,
    /// Prompt positions computed by this call.
    pub computed_tokens: u64,
    pub generated_tokens: u64,
    pub time_to_first_token_s: f64,
    pub prefill_s: f64,
    pub decode_s: f64,
    pub decode_tokens_per_s: f64,
    pub kv_bytes: u64,
    pub stop_reason: StopReason,
    /// Of reused_from_cache: blocks RAM held, blocks loaded from a disk tier, from a remote tier.
    pub reused_from_ram: u64,
    pub reused_from_disk: u64,
    pub reused_from_remote: u64,
    /// Generate: the time spent picking tokens (not in `decode_s`).
    pub sample_s: f64,
}

fn new_stats() -> Result<sys::kvrt_request_stats> {
    let mut s = sys::kvrt_request_stats::default();
    check(unsafe { sys::kvrt_request_stats_init(&mut s, size_of::<sys::kvrt_request_stats>()) })?;
    Ok(s)
}

impl From<sys::kvrt_request_stats> for RequestStats {
    fn from(s: sys::kvrt_request_stats) -> Self {
        RequestStats {
            prompt_tokens: s.prompt_tokens,
            reused_tokens: s.reused_tokens,
            reused_from_cache: s.reused_from_cache,
            computed_tokens: s.computed_tokens,
            generated_tokens: s.generated_tokens,
            time_to_first_token_s: s.time_to_first_token_s,
            prefill_s: s.prefill_s,
            decode_s: s.decode_s,
            decode_tokens_per_s: s.decode_tokens_per_s,
            kv_bytes: s.kv_bytes,
            stop_reason: StopReason::from_raw(s.stop_reason),
            reused_from_ram: s.reused_from_ram,
            reused_from_disk: s.reused_from_disk,
            reused_from_remote: s.reused_from_remote,
            sample_s: s.sample_s,
        }
    }
}

/// A context running a model over a KV cache. One thread at a time
/// (kvrt/context.h): `Send` but not `Sync`, and every call that changes it
/// takes `&mut self`; [`Context::cancel_handle`] gives a `Send + Sync` handle
/// that stops a running call from another thread. It owns a handle of its
/// [`Model`] (kvrt reference-counts models), so a struct may hold both.
pub struct Context {
    pub(crate) raw: NonNull<sys::kvrt_context>,
    model: Model,
}

// SAFETY: a context may move between threads; it is never used from two at
// once because it is !Sync and its mutating calls take &mut self.
unsafe impl Send for Context {}

impl Context {
    /// Creates a context with its own cache.
    pub fn new(model: &Model, options: &ContextOptions) -> Result<Context> {
        Self::create(model, options, ptr::null_mut())
    }

    /// Creates a context sharing `other`'s KV cache (and so its prefix cache).
    pub fn new_sharing_cache(model: &Model, options: &ContextOptions, other: &Context) -> Result<Context> {
        let mut cache: *mut sys::kvrt_cache = ptr::null_mut();
        check(unsafe { sys::kvrt_context_get_cache(&mut cache, other.raw.as_ptr()) })?;
        Self::create(model, options, cache)
    }

    fn create(model: &Model, o: &ContextOptions, cache: *mut sys::kvrt_cache) -> Result<Context> {
        let model = model.clone(); // a handle of our own (kvrt_model_retain)
        let salt: CString = cstring("cache salt", &o.cache_salt)?;
        let mut cfg = MaybeUninit::<sys::kvrt_context_config>::zeroed();
        check(unsafe { sys::kvrt_context_config_init(cfg.as_mut_ptr(), size_of::<sys::kvrt_context_config>()) })?;
        let mut cfg = unsafe { cfg.assume_init() };
        cfg.n_ctx = o.n_ctx;
        cfg.n_seq_max = o.n_seq_max;
        cfg.n_batch = o.n_batch;
        cfg.n_threads = o.n_threads;
        cfg.kv_dtype = o.kv_type.raw();
        cfg.block_tokens = o.block_tokens;
        cfg.cache_bytes = o.cache_bytes;
        cfg.cache = cache;
        cfg.prefix_caching = o.prefix_caching as i32;
        cfg.cache_salt = salt.as_ptr(); // copied by kvrt_context_create
        cfg.ced_prefill_mode = o.ced_prefill_mode.raw();
        cfg.ced_resume = o.ced_resume.raw();
        cfg.k_dtype = o.k_type.map_or(-1, KvType::raw);
        cfg.v_dtype = o.v_type.map_or(-1, KvType::raw);
        cfg.act_bits = o.act_bits;
        cfg.bank_dtype = o.bank_type.map_or(-1, KvType::raw);
        let mut out: *mut sys::kvrt_context = ptr::null_mut();
        check(unsafe { sys::kvrt_context_create(&mut out, model.as_ptr(), &cfg) })?;
        NonNull::new(out)
            .map(|raw| Context { raw, model })
            .ok_or_else(|| Error::new(ErrorKind::Internal, "kvrt_context_create returned KVRT_OK and no context"))
    }

    /// The raw handle, for calling kvrt-sys directly. Still owned by `self`.
    pub fn as_ptr(&self) -> *mut sys::kvrt_context {
        self.raw.as_ptr()
    }

    /// The model this context runs (its own handle of it).
    pub fn model(&self) -> &Model {
        &self.model
    }

    /// Makes sequence `seq` hold exactly `tokens` (keeping its common prefix,
    /// reusing the prefix cache, computing the rest) and computes the last
    /// token's logits.
    pub fn prefill(&mut self, seq: i32, tokens: &[i32]) -> Result<RequestStats> {
        let mut stats = new_stats()?;
        check(unsafe { sys::kvrt_context_prefill(&mut stats, self.raw.as_ptr(), seq, tokens.as_ptr(), tokens.len()) })?;
        Ok(stats.into())
    }

    /// Prefills several sequences in shared forward passes: `prompts[i] = (seq, tokens)`
    /// ends as `prefill(seq, tokens)` alone would, bit for bit. Every argument is checked
    /// before any sequence changes. Returns one `RequestStats` per prompt, in order.
    pub fn prefill_batch(&mut self, prompts: &[(i32, &[i32])]) -> Result<Vec<RequestStats>> {
        let seqs: Vec<i32> = prompts.iter().map(|p| p.0).collect();
        let ptrs: Vec<*const i32> = prompts.iter().map(|p| p.1.as_ptr()).collect();
        let lens: Vec<usize> = prompts.iter().map(|p| p.1.len()).collect();
        let mut stats = Vec::with_capacity(prompts.len());
        for _ in prompts {
            stats.push(new_stats()?);
        }
        check(unsafe {
            sys::kvrt_context_prefill_batch(stats.as_mut_ptr(), self.raw.as_ptr(), seqs.as_ptr(), ptrs.as_ptr(),
                                            lens.as_ptr(), prompts.len())
        })?;
        Ok(stats.into_iter().map(RequestStats::from).collect())
    }

    /// One decode step: appends `tokens[i]` to sequence `seqs[i]`.
    pub fn decode(&mut self, seqs: &[i32], tokens: &[i32]) -> Result<()> {
        if seqs.len() != tokens.len() {
            return Err(Error::new(ErrorKind::InvalidArgument,
                                  format!("decode: {} sequence ids but {} tokens", seqs.len(), tokens.len())));
        }
        check(unsafe { sys::kvrt_context_decode(self.raw.as_ptr(), seqs.as_ptr(), tokens.as_ptr(), seqs.len()) })
    }

    /// The logits (n_vocab floats) of sequence `seq`'s last computed token.
    pub fn logits(&self, seq: i32) -> Result<Vec<f32>> {
        read_buffer::<f32>(|dst, cap, written| unsafe {
            sys::kvrt_context_get_logits(dst, cap, written, self.raw.as_ptr(), seq)
        })
    }

    /// Copies the logits into `dst` (which must hold n_vocab floats); returns n_vocab.
    pub fn logits_into(&self, seq: i32, dst: &mut [f32]) -> Result<usize> {
        let mut written = 0usize;
        check(unsafe { sys::kvrt_context_get_logits(dst.as_mut_ptr(), dst.len(), &mut written, self.raw.as_ptr(), seq) })?;
        Ok(written)
    }

    /// `prefill` that also computes the logits of `positions` (strictly increasing, each
    /// below `tokens.len()`): position p's logits equal those of prefilling `tokens[..=p]`
    /// alone, bit for bit. Reuse stops at the first position. Read them with `logits_at`.
    pub fn prefill_logits(&mut self, seq: i32, tokens: &[i32], positions: &[u32]) -> Result<RequestStats> {
        let mut stats = new_stats()?;
        check(unsafe {
            sys::kvrt_context_prefill_logits(&mut stats, self.raw.as_ptr(), seq, tokens.as_ptr(), tokens.len(),
                                             positions.as_ptr(), positions.len())
        })?;
        Ok(stats.into())
    }

    /// The logits (n_vocab floats) of a position the last `prefill_logits` of `seq` asked for.
    pub fn logits_at(&self, seq: i32, position: usize) -> Result<Vec<f32>> {
        read_buffer::<f32>(|dst, cap, written| unsafe {
            sys::kvrt_context_get_logits_at(dst, cap, written, self.raw.as_ptr(), seq, position)
        })
    }

    pub fn seq_length(&self, seq: i32) -> Result<usize> {
        let mut n = 0usize;
        check(unsafe { sys::kvrt_context_seq_length(&mut n, self.raw.as_ptr(), seq) })?;
        Ok(n)
    }

    /// KV bytes sequence `seq` holds (shared prefix blocks included).
    pub fn seq_kv_bytes(&self, seq: i32) -> Result<u64> {
        let mut n = 0u64;
        check(unsafe { sys::kvrt_context_seq_kv_bytes(&mut n, self.raw.as_ptr(), seq) })?;
        Ok(n)
    }

    /// Empties sequence `seq` (its full blocks stay in the prefix cache).
    pub fn seq_release(&mut self, seq: i32) -> Result<()> {
        check(unsafe { sys::kvrt_context_seq_release(self.raw.as_ptr(), seq) })
    }

    /// The tokens sequence `seq` holds.
    pub fn seq_tokens(&self, seq: i32) -> Result<Vec<i32>> {
        read_buffer::<i32>(|dst, cap, written| unsafe {
            sys::kvrt_context_seq_tokens(dst, cap, written, self.raw.as_ptr(), seq)
        })
    }

    /// Saves sequence `seq` (tokens, logits, KV rows) to `path`, atomically.
    pub fn seq_save(&mut self, seq: i32, path: &str) -> Result<()> {
        let p = cstring("path", path)?;
        check(unsafe { sys::kvrt_context_seq_save(self.raw.as_ptr(), seq, p.as_ptr()) })
    }

    /// Replaces sequence `seq` with the one saved in `path`; on an error (another model,
    /// dtype, block size or salt; a bad file) the sequence is unchanged.
    pub fn seq_load(&mut self, seq: i32, path: &str) -> Result<()> {
        let p = cstring("path", path)?;
        check(unsafe { sys::kvrt_context_seq_load(self.raw.as_ptr(), seq, p.as_ptr()) })
    }

    /// Restores the conversation saved in `path` into sequence `seq` whatever KV the saving
    /// context kept: loaded as saved where its rows fit this context (`recomputed` false,
    /// every token reused), else (another KV type, block size, act_bits or a release that
    /// computes them otherwise) its tokens prefilled here, so it goes on in this context's
    /// arithmetic (`recomputed` true). Another model or a bad file is an error, the sequence
    /// unchanged.
    pub fn seq_restore(&mut self, seq: i32, path: &str) -> Result<(RequestStats, bool)> {
        let p = cstring("path", path)?;
        let mut stats = new_stats()?;
        let mut recomputed = 0i32;
        check(unsafe {
            sys::kvrt_context_seq_restore(&mut stats, &mut recomputed, self.raw.as_ptr(), seq, p.as_ptr())
        })?;
        Ok((stats.into(), recomputed != 0))
    }

    /// Makes `dst` a copy of `src` sharing its cache blocks.
    pub fn seq_fork(&mut self, src: i32, dst: i32) -> Result<()> {
        check(unsafe { sys::kvrt_context_seq_fork(self.raw.as_ptr(), src, dst) })
    }

    /// Keeps the first `n` positions of sequence `seq`.
    pub fn seq_truncate(&mut self, seq: i32, n: usize) -> Result<()> {
        check(unsafe { sys::kvrt_context_seq_truncate(self.raw.as_ptr(), seq, n) })
    }

    fn tier_cache_ptr(&self) -> Result<*mut sys::kvrt_cache> {
        let mut cache: *mut sys::kvrt_cache = ptr::null_mut();
        check(unsafe { sys::kvrt_context_get_cache(&mut cache, self.raw.as_ptr()) })?;
        Ok(cache)
    }

    /// Adds a lower tier to the context's cache: `sys::KVRT_TIER_DISK` with a directory,
    /// `sys::KVRT_TIER_REDIS` with a redis:// URL; `budget_bytes` 0 = none.
    pub fn cache_add_tier(&mut self, kind: i32, location: &str, budget_bytes: u64) -> Result<()> {
        let loc = cstring("location", location)?;
        let mut t = MaybeUninit::<sys::kvrt_tier_config>::zeroed();
        check(unsafe { sys::kvrt_tier_config_init(t.as_mut_ptr(), size_of::<sys::kvrt_tier_config>()) })?;
        let mut t = unsafe { t.assume_init() };
        t.kind = kind;
        t.location = loc.as_ptr();
        t.budget_bytes = budget_bytes;
        let cache = self.tier_cache_ptr()?;
        check(unsafe { sys::kvrt_cache_add_tier(cache, &t) })
    }

    /// Adds a Redis tier (`redis://host:port[/db]`) to the context's cache with its
    /// Redis-specific options: `timeout_ms` bounds the connect and every command (0 = the
    /// default, 200 ms); `key_prefix` goes before every key (None = "kvrt:");
    /// `budget_bytes` caps the bytes this process stores (0 = none). A server that is down
    /// is not an error (its lookups miss, counted in `cache_tier_stats`); a malformed URL is.
    pub fn cache_add_redis_tier(&mut self, url: &str, budget_bytes: u64, timeout_ms: u32,
                                key_prefix: Option<&str>) -> Result<()> {
        let loc = cstring("url", url)?;
        let prefix = match key_prefix {
            Some(p) => Some(cstring("key_prefix", p)?),
            None => None,
        };
        let mut t = MaybeUninit::<sys::kvrt_tier_config>::zeroed();
        check(unsafe { sys::kvrt_tier_config_init(t.as_mut_ptr(), size_of::<sys::kvrt_tier_config>()) })?;
        let mut t = unsafe { t.assume_init() };
        t.kind = sys::KVRT_TIER_REDIS;
        t.location = loc.as_ptr();
        t.budget_bytes = budget_bytes;
        if timeout_ms != 0 {
            t.timeout_ms = timeout_ms;
        }
        if let Some(p) = &prefix {
            t.key_prefix = p.as_ptr();
        }
        let cache = self.tier_cache_ptr()?;
        check(unsafe { sys::kvrt_cache_add_tier(cache, &t) })
    }

    /// Writes every cached prefix block set the tiers lack into them; returns how many.
    pub fn cache_persist(&mut self) -> Result<u64> {
        let cache = self.tier_cache_ptr()?;
        let mut n = 0u64;
        check(unsafe { sys::kvrt_cache_persist(&mut n, cache) })?;
        Ok(n)
    }

    /// Each tier's counters, in the order the tiers were added.
    pub fn cache_tier_stats(&self) -> Result<Vec<sys::kvrt_tier_stats>> {
        let cache = self.tier_cache_ptr()?;
        let mut n = 0usize;
        check(unsafe { sys::kvrt_cache_n_tiers(&mut n, cache) })?;
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            let mut s = sys::kvrt_tier_stats::default();
            check(unsafe { sys::kvrt_tier_stats_init(&mut s, size_of::<sys::kvrt_tier_stats>()) })?;
            check(unsafe { sys::kvrt_cache_tier_stats_get(&mut s, cache, i) })?;
            out.push(s);
        }
        Ok(out)
    }

    /// Statistics of the context's KV cache.
    pub fn cache_stats(&self) -> Result<CacheStats> {
        let mut cache: *mut sys::kvrt_cache = ptr::null_mut();
        check(unsafe { sys::kvrt_context_get_cache(&mut cache, self.raw.as_ptr()) })?;
        stats_of(cache)
    }

    /// Prefills `prompt`, then samples up to `options.max_tokens` tokens.
    /// `on_token(token, text)` streams each one (a last call with token -1
    /// flushes text held back for a stop string); return false to stop. A
    /// panic inside it stops generation and is resumed once kvrt returned.
    /// `sampler`: None = greedy.
    pub fn generate(
        &mut self,
        seq: i32,
        prompt: &[i32],
        options: &GenerateOptions,
        sampler: Option<&mut Sampler>,
        on_token: Option<&mut dyn FnMut(i32, &str) -> bool>,
    ) -> Result<RequestStats> {
        self.generate_into(seq, prompt, options, sampler, on_token, None)
    }

    /// [`Context::generate`] that also fills `out` with the answer's tokens and text
    /// (through kvrt's output buffers; `on_token` may be None).
    pub fn generate_into(
        &mut self,
        seq: i32,
        prompt: &[i32],
        options: &GenerateOptions,
        sampler: Option<&mut Sampler>,
        on_token: Option<&mut dyn FnMut(i32, &str) -> bool>,
        mut out: Option<&mut GenerateOutput>,
    ) -> Result<RequestStats> {
        let stops = options
            .stop_strings
            .iter()
            .map(|s| cstring("stop string", s))
            .collect::<Result<Vec<_>>>()?;
        let stop_ptrs: Vec<*const c_char> = stops.iter().map(|s| s.as_ptr()).collect();
        let mut cfg = MaybeUninit::<sys::kvrt_generate_config>::zeroed();
        check(unsafe { sys::kvrt_generate_config_init(cfg.as_mut_ptr(), size_of::<sys::kvrt_generate_config>()) })?;
        let mut cfg = unsafe { cfg.assume_init() };
        cfg.max_tokens = options.max_tokens;
        cfg.stop_at_eog = options.stop_at_eog as i32;
        cfg.sampler = sampler.map_or(ptr::null_mut(), |s| s.raw.as_ptr());
        cfg.stop_strings = if stop_ptrs.is_empty() { ptr::null() } else { stop_ptrs.as_ptr() };
        cfg.n_stop_strings = stop_ptrs.len();
        let mut stats = new_stats()?;
        let mut n_tokens = 0usize;
        let mut n_text = 0usize;
        let text_cap = if let Some(o) = out.as_deref_mut() {
            o.tokens.clear();
            o.tokens.resize(options.max_tokens.max(1) as usize, 0);
            o.text_buf.clear();
            o.text_buf.resize(128 * options.max_tokens as usize + 1, 0);
            cfg.tokens_out = o.tokens.as_mut_ptr();
            cfg.tokens_capacity = o.tokens.len();
            cfg.tokens_written = &mut n_tokens;
            cfg.text_out = o.text_buf.as_mut_ptr() as *mut c_char;
            cfg.text_capacity = o.text_buf.len();
            cfg.text_written = &mut n_text;
            o.text_buf.len()
        } else {
            0
        };
        let status = match on_token {
            Some(f) => {
                let mut cb: Callback<'_, dyn FnMut(i32, &str) -> bool + '_> = Callback::new(f);
                cfg.on_token = Some(token_trampoline);
                cfg.user_data = &mut cb as *mut Callback<'_, _> as *mut c_void;
                // SAFETY: cb, stops and the sampler outlive the call.
                let status = unsafe {
                    sys::kvrt_context_generate(&mut stats, self.raw.as_ptr(), seq, prompt.as_ptr(), prompt.len(), &cfg)
                };
                cb.resume();
                status
            }
            None => unsafe {
                sys::kvrt_context_generate(&mut stats, self.raw.as_ptr(), seq, prompt.as_ptr(), prompt.len(), &cfg)
            },
        };
        if let Some(o) = out {
            // What was produced, also when the call failed part-way.
            o.tokens.truncate(n_tokens.min(o.tokens.len()));
            let n = if text_cap > 0 { n_text.min(text_cap - 1) } else { 0 };
            let end = o.text_buf[..n].iter().position(|&b| b == 0).unwrap_or(n);
            o.text = String::from_utf8_lossy(&o.text_buf[..end]).into_owned();
            o.text_buf = Vec::new();
        }
        check(status)?;
        Ok(stats.into())
    }
}

unsafe extern "C" fn token_trampoline(token: i32, text: *const c_char, len: usize, user_data: *mut c_void) -> c_int {
    // SAFETY: user_data is the Callback that generate keeps alive for the call.
    let cb = unsafe { &mut *(user_data as *mut Callback<'_, dyn FnMut(i32, &str) -> bool + '_>) };
    let bytes = if text.is_null() || len == 0 { &[][..] } else { unsafe { std::slice::from_raw_parts(text as *const u8, len) } };
    let text = String::from_utf8_lossy(bytes);
    cb.call(|f| f(token, &text))
}

impl Drop for Context {
    fn drop(&mut self) {
        unsafe { sys::kvrt_context_destroy(self.raw.as_ptr()) }
    }
}

/// The answer of [`Context::generate_into`]: the tokens generated (EOG not included) and
/// their text (stop strings cut; more than 128 bytes a token on average is cut at a
/// character boundary).
#[derive(Clone, Debug, Default)]
pub struct GenerateOutput {
    pub tokens: Vec<i32>,
    pub text: String,
    text_buf: Vec<u8>,
}

/// Options of [`Context::generate`].
#[derive(Clone, Debug)]
pub struct GenerateOptions {
    pub max_tokens: u32,
    /// Stop at EOS / end of turn (the token is not emitted).
    pub stop_at_eog: bool,
    /// Stop when the output contains one of these (not emitted).
    pub stop_strings: Vec<String>,
}

impl Default for GenerateOptions {
    fn default() -> Self {
        GenerateOptions { max_tokens: 256, stop_at_eog: true, stop_strings: Vec::new() }
    }
}

/// Sampling options; `temperature <= 0` is greedy.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SamplerOptions {
    pub temperature: f32,
    pub top_k: i32,
    pub top_p: f32,
    pub min_p: f32,
    pub seed: u64,
}

impl Default for SamplerOptions {
    fn default() -> Self {
        SamplerOptions { temperature: 0.0, top_k: 0, top_p: 1.0, min_p: 0.0, seed: 0 }
    }
}

/// A token sampler. One thread at a time: `Send`, not `Sync`.
pub struct Sampler {
    pub(crate) raw: NonNull<sys::kvrt_sampler>,
}

unsafe impl Send for Sampler {}

impl Sampler {
    pub fn new(o: &SamplerOptions) -> Result<Sampler> {
        let mut cfg = sys::kvrt_sampler_config::default();
        check(unsafe { sys::kvrt_sampler_config_init(&mut cfg, size_of::<sys::kvrt_sampler_config>()) })?;
        cfg.temperature = o.temperature;
        cfg.top_k = o.top_k;
        cfg.top_p = o.top_p;
        cfg.min_p = o.min_p;
        cfg.seed = o.seed;
        let mut out: *mut sys::kvrt_sampler = ptr::null_mut();
        check(unsafe { sys::kvrt_sampler_create(&mut out, &cfg) })?;
        NonNull::new(out)
            .map(|raw| Sampler { raw })
            .ok_or_else(|| Error::new(ErrorKind::Internal, "kvrt_sampler_create returned KVRT_OK and no sampler"))
    }

    /// Picks a token from `logits` (advances the PRNG).
    pub fn sample(&mut self, logits: &[f32]) -> Result<i32> {
        let mut out = 0i32;
        check(unsafe { sys::kvrt_sampler_sample(&mut out, self.raw.as_ptr(), logits.as_ptr(), logits.len()) })?;
        Ok(out)
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        unsafe { sys::kvrt_sampler_destroy(self.raw.as_ptr()) }
    }
}
