// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

//! What a desktop app needs (kvrt/context.h, cache.h, process.h): stopping a call
//! from another thread, activity, sampler chains with penalties, a token iterator,
//! memory control, logging and the ISA level.
use std::collections::VecDeque;
use std::ffi::{c_char, c_void, CStr};
use std::mem::size_of;
use std::ptr::{self, NonNull};
use std::sync::Mutex;

use kvrt_sys as sys;

use crate::cache::Cache;
use crate::context::{Context, Sampler};
use crate::error::{check, Error, ErrorKind, Result};

// ---- cancellation and activity ---------------------------------------------------

/// What a context is doing (kvrt_context_activity).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Activity {
    /// 0 idle, 1 prefill, 2 decode (sys::KVRT_PHASE_*).
    pub phase: i32,
    pub cancel_pending: bool,
    pub prefill_total: u64,
    pub prefill_done: u64,
    pub generated_tokens: u64,
    pub calls: u64,
}

/// Stops the calls of one context from any thread (`Send + Sync + Clone`). It keeps the
/// context's handle value only: kvrt checks handles, so using it after the context is
/// dropped returns a BadHandle error, never touches freed memory.
#[derive(Clone, Copy, Debug)]
pub struct CancelHandle {
    raw: usize,
}

impl CancelHandle {
    /// Asks the running call (prefill, generate...) to stop: it returns an error of
    /// kind Cancelled and the sequence keeps what was computed. A cancel while nothing
    /// runs is dropped when the next call starts.
    pub fn cancel(&self) -> Result<()> {
        check(unsafe { sys::kvrt_context_cancel(self.raw as *mut sys::kvrt_context) })
    }

    /// What the context is doing now.
    pub fn activity(&self) -> Result<Activity> {
        let mut a = sys::kvrt_context_activity::default();
        check(unsafe { sys::kvrt_context_activity_init(&mut a, size_of::<sys::kvrt_context_activity>()) })?;
        check(unsafe { sys::kvrt_context_activity_get(&mut a, self.raw as *const sys::kvrt_context) })?;
        Ok(Activity {
            phase: a.phase,
            cancel_pending: a.cancel_pending != 0,
            prefill_total: a.prefill_total,
            prefill_done: a.prefill_done,
            generated_tokens: a.generated_tokens,
            calls: a.calls,
        })
    }
}

impl Context {
    /// A handle another thread uses to cancel this context's calls or read its activity.
    pub fn cancel_handle(&self) -> CancelHandle {
        CancelHandle { raw: self.raw.as_ptr() as usize }
    }

    /// What the context is doing (see [`CancelHandle::activity`]).
    pub fn activity(&self) -> Result<Activity> {
        self.cancel_handle().activity()
    }

    fn cache_ptr(&self) -> Result<*mut sys::kvrt_cache> {
        let mut cache: *mut sys::kvrt_cache = ptr::null_mut();
        check(unsafe { sys::kvrt_context_get_cache(&mut cache, self.raw.as_ptr()) })?;
        Ok(cache)
    }

    /// Changes the budget of the context's cache (see [`Cache::set_budget`]).
    pub fn cache_set_budget(&self, budget_bytes: u64) -> Result<()> {
        let c = self.cache_ptr()?;
        check(unsafe { sys::kvrt_cache_set_budget(c, budget_bytes) })
    }

    /// Releases the cached prefix blocks of the context's cache (see [`Cache::trim`]).
    pub fn cache_trim(&self, keep_bytes: u64) -> Result<u64> {
        let c = self.cache_ptr()?;
        let mut n = 0u64;
        check(unsafe { sys::kvrt_cache_trim(&mut n, c, keep_bytes) })?;
        Ok(n)
    }

    /// Generation as a Rust iterator: prefills `prompt` into `seq`, then yields each
    /// token with its text (UTF-8 held back until a character completes) until an
    /// end-of-generation token or `max_tokens`. `sampler`: None = greedy; its history is
    /// set to the prompt and each token yielded. Stop strings: use [`Context::generate`].
    pub fn tokens<'a>(&'a mut self, seq: i32, prompt: &[i32], max_tokens: u32, sampler: Option<&'a mut Sampler>)
                      -> Result<TokenIter<'a>> {
        self.prefill(seq, prompt)?;
        let mut sampler = sampler;
        if let Some(s) = sampler.as_deref_mut() {
            s.reset()?;
            for &t in prompt {
                s.accept(t)?;
            }
        }
        Ok(TokenIter { ctx: self, seq, sampler, left: max_tokens, pending: Vec::new(), first: true, done: false,
                       queue: VecDeque::new() })
    }
}

/// One generated token and the text it completes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Token {
    pub id: i32,
    pub text: String,
}

/// The iterator of [`Context::tokens`]; each step is one sample and (but after the
/// last) one decode. Dropping it early leaves the sequence holding what was decoded.
pub struct TokenIter<'a> {
    ctx: &'a mut Context,
    seq: i32,
    sampler: Option<&'a mut Sampler>,
    left: u32,
    pending: Vec<u8>,
    first: bool,
    done: bool,
    queue: VecDeque<Token>,
}

impl TokenIter<'_> {
    fn step(&mut self) -> Result<Option<Token>> {
        if self.left == 0 {
            return Ok(None);
        }
        let logits = self.ctx.logits(self.seq)?;
        let id = match self.sampler.as_deref_mut() {
            Some(s) => {
                let t = s.sample(&logits)?;
                s.accept(t)?;
                t
            }
            None => logits.iter().enumerate().fold(0usize, |b, (i, &x)| if x > logits[b] { i } else { b }) as i32,
        };
        if self.ctx.model().token_is_eog(id)? {
            return Ok(None);
        }
        self.left -= 1;
        self.first = false;
        self.pending.extend(self.ctx.model().detokenize_bytes(&[id], false)?);
        let cut = match std::str::from_utf8(&self.pending) {
            Ok(_) => self.pending.len(),
            Err(e) if e.error_len().is_none() => e.valid_up_to(), // an incomplete character at the end
            Err(_) => self.pending.len(),
        };
        let text = String::from_utf8_lossy(&self.pending[..cut]).into_owned();
        self.pending.drain(..cut);
        if self.left > 0 {
            self.ctx.decode(&[self.seq], &[id])?;
        }
        Ok(Some(Token { id, text }))
    }
}

impl Iterator for TokenIter<'_> {
    type Item = Result<Token>;

    fn next(&mut self) -> Option<Result<Token>> {
        if let Some(t) = self.queue.pop_front() {
            return Some(Ok(t));
        }
        if self.done {
            return None;
        }
        match self.step() {
            Ok(Some(t)) => Some(Ok(t)),
            Ok(None) => {
                self.done = true;
                if self.pending.is_empty() {
                    None
                } else {
                    let text = String::from_utf8_lossy(&self.pending).into_owned();
                    self.pending.clear();
                    Some(Ok(Token { id: -1, text }))
                }
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

// ---- sampler chains -----------------------------------------------------------------

/// One stage of a sampler chain (kvrt_sampler_stage), applied in the order added.
#[derive(Clone, Debug, PartialEq)]
pub enum Stage {
    /// Over the last `last_n` tokens of the history (-1: all, 0: off): logit /= repeat
    /// when positive, *= repeat otherwise; then -= count x frequency + presence.
    Penalties { last_n: i32, repeat: f32, frequency: f32, presence: f32 },
    /// (token, added logit); -inf bans a token.
    LogitBias(Vec<(i32, f32)>),
    TopK(i32),
    TopP(f32),
    MinP(f32),
    Temperature(f32),
    /// A draw with the chain's seeded PRNG (last stage).
    Dist,
    /// Argmax, ties to the lowest id (last stage).
    Greedy,
}

impl Sampler {
    /// An empty sampler chain (kvrt_sampler_chain_create); without Dist or Greedy at the
    /// end it picks the argmax of what its stages leave.
    pub fn chain(seed: u64) -> Result<Sampler> {
        let mut out: *mut sys::kvrt_sampler = ptr::null_mut();
        check(unsafe { sys::kvrt_sampler_chain_create(&mut out, seed) })?;
        NonNull::new(out)
            .map(|raw| Sampler { raw })
            .ok_or_else(|| Error::new(ErrorKind::Internal, "kvrt_sampler_chain_create returned KVRT_OK and no sampler"))
    }

    /// Appends a stage (errors: InvalidArgument for a value out of its domain,
    /// InvalidState after Dist/Greedy or on a sampler that is not a chain).
    pub fn add(&mut self, stage: Stage) -> Result<&mut Sampler> {
        let mut st = sys::kvrt_sampler_stage {
            struct_size: 0, type_: 0, top_k: 0, p: 0.0, temperature: 0.0, penalty_last_n: 0, repeat_penalty: 0.0,
            frequency_penalty: 0.0, presence_penalty: 0.0, bias_tokens: ptr::null(), bias_values: ptr::null(),
            n_bias: 0,
        };
        check(unsafe { sys::kvrt_sampler_stage_init(&mut st, size_of::<sys::kvrt_sampler_stage>()) })?;
        let (toks, vals): (Vec<i32>, Vec<f32>);
        match &stage {
            Stage::Penalties { last_n, repeat, frequency, presence } => {
                st.type_ = sys::KVRT_SAMPLER_PENALTIES;
                st.penalty_last_n = *last_n;
                st.repeat_penalty = *repeat;
                st.frequency_penalty = *frequency;
                st.presence_penalty = *presence;
            }
            Stage::LogitBias(b) => {
                st.type_ = sys::KVRT_SAMPLER_LOGIT_BIAS;
                toks = b.iter().map(|x| x.0).collect();
                vals = b.iter().map(|x| x.1).collect();
                st.bias_tokens = toks.as_ptr();
                st.bias_values = vals.as_ptr();
                st.n_bias = b.len();
                check(unsafe { sys::kvrt_sampler_chain_add(self.raw.as_ptr(), &st) })?;
                return Ok(self);
            }
            Stage::TopK(k) => {
                st.type_ = sys::KVRT_SAMPLER_TOP_K;
                st.top_k = *k;
            }
            Stage::TopP(p) => {
                st.type_ = sys::KVRT_SAMPLER_TOP_P;
                st.p = *p;
            }
            Stage::MinP(p) => {
                st.type_ = sys::KVRT_SAMPLER_MIN_P;
                st.p = *p;
            }
            Stage::Temperature(t) => {
                st.type_ = sys::KVRT_SAMPLER_TEMPERATURE;
                st.temperature = *t;
            }
            Stage::Dist => st.type_ = sys::KVRT_SAMPLER_DIST,
            Stage::Greedy => st.type_ = sys::KVRT_SAMPLER_GREEDY,
        }
        check(unsafe { sys::kvrt_sampler_chain_add(self.raw.as_ptr(), &st) })?;
        Ok(self)
    }

    /// Appends a token to the history penalty stages look at (your own sampling loop).
    pub fn accept(&mut self, token: i32) -> Result<()> {
        check(unsafe { sys::kvrt_sampler_accept(self.raw.as_ptr(), token) })
    }

    /// Empties the history.
    pub fn reset(&mut self) -> Result<()> {
        check(unsafe { sys::kvrt_sampler_reset(self.raw.as_ptr()) })
    }
}

// ---- memory control -----------------------------------------------------------------

impl Cache {
    /// A new byte budget: shrinking evicts cached prefix blocks; below the bytes
    /// sequences hold it fails (InvalidState) and changes nothing.
    pub fn set_budget(&self, budget_bytes: u64) -> Result<()> {
        check(unsafe { sys::kvrt_cache_set_budget(self.raw.as_ptr(), budget_bytes) })
    }

    /// Releases cached prefix blocks until at most `keep_bytes` remain; the bytes freed.
    pub fn trim(&self, keep_bytes: u64) -> Result<u64> {
        let mut n = 0u64;
        check(unsafe { sys::kvrt_cache_trim(&mut n, self.raw.as_ptr(), keep_bytes) })?;
        Ok(n)
    }
}

// ---- logging and ISA (kvrt/process.h) -----------------------------------------------

/// A log callback: (level: sys::KVRT_LOG_*, message).
pub type LogFn = Box<dyn Fn(i32, &str) + Send + Sync>;

static LOG: Mutex<Option<LogFn>> = Mutex::new(None);

unsafe extern "C" fn log_trampoline(level: i32, message: *const c_char, _user_data: *mut c_void) {
    let msg = if message.is_null() { "".into() } else { unsafe { CStr::from_ptr(message) }.to_string_lossy() };
    // No unwinding into C: a panicking callback is silenced.
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        if let Ok(g) = LOG.lock() {
            if let Some(f) = g.as_ref() {
                f(level, &msg);
            }
        }
    }));
}

/// Routes kvrt's log (messages at `min_level` and above) to `f`; None stops it (the
/// default: kvrt prints nothing). `f` runs on the thread of the kvrt call that logged,
/// as that call returns; it must not call set_log_callback itself.
pub fn set_log_callback(f: Option<LogFn>, min_level: i32) -> Result<()> {
    let mut g = LOG.lock().map_err(|_| Error::new(ErrorKind::Internal, "log mutex poisoned"))?;
    match f {
        None => {
            check(unsafe { sys::kvrt_set_log_callback(sys::KVRT_LOG_NONE, None, ptr::null_mut()) })?;
            *g = None;
        }
        Some(f) => {
            check(unsafe { sys::kvrt_set_log_callback(min_level, Some(log_trampoline), ptr::null_mut()) })?;
            *g = Some(f);
        }
    }
    Ok(())
}

/// (active, detected): the ISA level the kernels use and the CPU's best (sys::KVRT_ISA_*).
pub fn isa_get() -> Result<(i32, i32)> {
    let (mut a, mut d) = (0i32, 0i32);
    check(unsafe { sys::kvrt_isa_get(&mut a, &mut d) })?;
    Ok((a, d))
}

/// Limits the kernels to `limit` (a level above the CPU's gives the CPU's); InvalidState
/// while a context is computing.
pub fn isa_set(limit: i32) -> Result<()> {
    check(unsafe { sys::kvrt_isa_set(limit) })
}

/// The level's name as KVRT_ISA spells it.
pub fn isa_name(isa: i32) -> String {
    unsafe { CStr::from_ptr(sys::kvrt_isa_name(isa)) }.to_string_lossy().into_owned()
}
