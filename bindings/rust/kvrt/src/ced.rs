//! The CED random-weight model generator (kvrt/ced.h).
use std::ffi::CString;
use std::mem::{size_of, MaybeUninit};
use std::path::Path;

use kvrt_sys as sys;

use crate::error::{check, Result};
use crate::util::{cpath, cstring};

/// Options of [`write_gguf`]; zero overrides keep the preset's values.
#[derive(Clone, Debug)]
pub struct CedOptions {
    /// "tiny" or "base".
    pub preset: String,
    pub seed: u64,
    /// A `KVRT_CED_WEIGHTS_*` value.
    pub weight_type: i32,
    pub window: i32,
    pub top_k: i32,
    pub n_vocab: i32,
}

impl Default for CedOptions {
    fn default() -> Self {
        CedOptions { preset: "tiny".into(), seed: 1, weight_type: sys::KVRT_CED_WEIGHTS_F32, window: 0, top_k: 0, n_vocab: 0 }
    }
}

fn raw(o: &CedOptions, preset: &CString) -> Result<sys::kvrt_ced_init_config> {
    let mut cfg = MaybeUninit::<sys::kvrt_ced_init_config>::zeroed();
    check(unsafe { sys::kvrt_ced_init_config_init(cfg.as_mut_ptr(), size_of::<sys::kvrt_ced_init_config>()) })?;
    let mut cfg = unsafe { cfg.assume_init() };
    cfg.preset = preset.as_ptr();
    cfg.seed = o.seed;
    cfg.weight_type = o.weight_type;
    cfg.window = o.window;
    cfg.top_k = o.top_k;
    cfg.n_vocab = o.n_vocab;
    Ok(cfg)
}

/// Number of parameters of the model `options` describe.
pub fn param_count(options: &CedOptions) -> Result<u64> {
    let preset = cstring("preset", &options.preset)?;
    let cfg = raw(options, &preset)?;
    let mut n = 0u64;
    check(unsafe { sys::kvrt_ced_param_count(&mut n, &cfg) })?;
    Ok(n)
}

/// Writes a CED GGUF of deterministic random weights to `path`.
pub fn write_gguf(path: impl AsRef<Path>, options: &CedOptions) -> Result<()> {
    let preset = cstring("preset", &options.preset)?;
    let cfg = raw(options, &preset)?;
    let p = cpath(path.as_ref())?;
    check(unsafe { sys::kvrt_ced_write_gguf(p.as_ptr(), &cfg) })
}

// ---- Running CED models ---------------------------------------------------------

use std::marker::PhantomData;
use std::ptr::{self, NonNull};

use crate::error::{Error, ErrorKind};
use crate::util::read_buffer;

/// Prefill semantics: every layer over every token, or CED prefill.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrefillMode {
    Exact,
    Ced,
}

/// How a prefill may reuse cached prefixes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resume {
    Auto,
    Checkpoint,
    BoundedReplay,
    Cold,
}

/// KV memory of a CED model by component (kvrt_ced_memory).
pub type CedMemory = sys::kvrt_ced_memory;

/// One bank of a CED model.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CedSource {
    pub layer: i32,
    pub ratio: i32,
    pub main_bytes_per_token: f64,
    pub indexer_bytes_per_token: f64,
}

/// What a CED prefill did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CedPrefillInfo {
    pub hit: i64,
    pub exact_resume: bool,
    pub replayed: i64,
    pub computed: i64,
    pub decoded: i64,
}

/// A loaded CED model: immutable, `Send + Sync`.
pub struct CedModel {
    raw: NonNull<sys::kvrt_ced_model>,
}

unsafe impl Send for CedModel {}
unsafe impl Sync for CedModel {}

impl CedModel {
    pub fn load(path: impl AsRef<Path>) -> Result<CedModel> {
        let p = cpath(path.as_ref())?;
        let mut out = ptr::null_mut();
        check(unsafe { sys::kvrt_ced_model_load(&mut out, p.as_ptr()) })?;
        NonNull::new(out)
            .map(|raw| CedModel { raw })
            .ok_or_else(|| Error::new(ErrorKind::Internal, "kvrt_ced_model_load returned no model"))
    }

    pub fn memory(&self) -> Result<CedMemory> {
        let mut m = CedMemory { struct_size: size_of::<CedMemory>(), ..Default::default() };
        check(unsafe { sys::kvrt_ced_memory_get(&mut m, self.raw.as_ptr()) })?;
        Ok(m)
    }

    pub fn source(&self, index: u32) -> Result<CedSource> {
        let mut s = CedSource { layer: 0, ratio: 0, main_bytes_per_token: 0.0, indexer_bytes_per_token: 0.0 };
        check(unsafe {
            sys::kvrt_ced_memory_source(&mut s.layer, &mut s.ratio, &mut s.main_bytes_per_token,
                                        &mut s.indexer_bytes_per_token, self.raw.as_ptr(), index)
        })?;
        Ok(s)
    }
}

impl Drop for CedModel {
    fn drop(&mut self) {
        unsafe { sys::kvrt_ced_model_destroy(self.raw.as_ptr()) }
    }
}

/// Options of a CED session; zeros keep kvrt's defaults.
#[derive(Clone, Copy, Debug, Default)]
pub struct CedSessionOptions {
    pub block_tokens: i32,
    pub chunk: i32,
    pub bank_budget_bytes: u64,
    pub window_budget_bytes: u64,
    /// Element type of every cached row, a `kvrt_dtype` value: 0 = f32, 1 = f16, 2 = bf16.
    pub cache_dtype: i32,
}

/// A CED runtime with its caches; one thread at a time (`Send`, not `Sync`).
pub struct CedSession<'m> {
    raw: NonNull<sys::kvrt_ced_session>,
    _model: PhantomData<&'m CedModel>,
}

unsafe impl Send for CedSession<'_> {}

impl<'m> CedSession<'m> {
    pub fn new(model: &'m CedModel, o: &CedSessionOptions) -> Result<CedSession<'m>> {
        let mut cfg = MaybeUninit::<sys::kvrt_ced_session_config>::zeroed();
        check(unsafe { sys::kvrt_ced_session_config_init(cfg.as_mut_ptr(), size_of::<sys::kvrt_ced_session_config>()) })?;
        let mut cfg = unsafe { cfg.assume_init() };
        if o.block_tokens != 0 { cfg.block_tokens = o.block_tokens; }
        if o.chunk != 0 { cfg.chunk = o.chunk; }
        if o.bank_budget_bytes != 0 { cfg.bank_budget_bytes = o.bank_budget_bytes; }
        if o.window_budget_bytes != 0 { cfg.window_budget_bytes = o.window_budget_bytes; }
        if o.cache_dtype != 0 { cfg.cache_dtype = o.cache_dtype; }
        let mut out = ptr::null_mut();
        check(unsafe { sys::kvrt_ced_session_create(&mut out, model.raw.as_ptr(), &cfg) })?;
        NonNull::new(out)
            .map(|raw| CedSession { raw, _model: PhantomData })
            .ok_or_else(|| Error::new(ErrorKind::Internal, "kvrt_ced_session_create returned no session"))
    }

    pub fn seq_create(&mut self) -> Result<u64> {
        let mut s = 0u64;
        check(unsafe { sys::kvrt_ced_seq_create(&mut s, self.raw.as_ptr()) })?;
        Ok(s)
    }
    pub fn seq_release(&mut self, seq: u64) -> Result<()> {
        check(unsafe { sys::kvrt_ced_seq_release(self.raw.as_ptr(), seq) })
    }
    pub fn seq_fork(&mut self, seq: u64) -> Result<u64> {
        let mut s = 0u64;
        check(unsafe { sys::kvrt_ced_seq_fork(&mut s, self.raw.as_ptr(), seq) })?;
        Ok(s)
    }
    pub fn seq_truncate(&mut self, seq: u64, pos: i64) -> Result<()> {
        check(unsafe { sys::kvrt_ced_seq_truncate(self.raw.as_ptr(), seq, pos) })
    }
    pub fn seq_length(&self, seq: u64) -> Result<i64> {
        let mut n = 0i64;
        check(unsafe { sys::kvrt_ced_seq_length(&mut n, self.raw.as_ptr(), seq) })?;
        Ok(n)
    }

    /// Runs a prompt on an empty sequence.
    pub fn prefill(&mut self, seq: u64, tokens: &[i32], mode: PrefillMode, resume: Resume) -> Result<CedPrefillInfo> {
        let mut i = sys::kvrt_ced_prefill_info { struct_size: size_of::<sys::kvrt_ced_prefill_info>(), ..Default::default() };
        let mode = match mode { PrefillMode::Exact => sys::KVRT_CED_PREFILL_EXACT, PrefillMode::Ced => sys::KVRT_CED_PREFILL_CED };
        let resume = match resume {
            Resume::Auto => sys::KVRT_CED_RESUME_AUTO,
            Resume::Checkpoint => sys::KVRT_CED_RESUME_CHECKPOINT,
            Resume::BoundedReplay => sys::KVRT_CED_RESUME_BOUNDED_REPLAY,
            Resume::Cold => sys::KVRT_CED_RESUME_COLD,
        };
        check(unsafe { sys::kvrt_ced_prefill(&mut i, self.raw.as_ptr(), seq, tokens.as_ptr(), tokens.len(), mode, resume) })?;
        Ok(CedPrefillInfo { hit: i.hit, exact_resume: i.exact_resume != 0, replayed: i.replayed, computed: i.computed,
                            decoded: i.decoded })
    }

    /// Appends tokens through every layer (decode when one token).
    pub fn extend(&mut self, seq: u64, tokens: &[i32]) -> Result<()> {
        check(unsafe { sys::kvrt_ced_extend(self.raw.as_ptr(), seq, tokens.as_ptr(), tokens.len()) })
    }

    pub fn logits(&self, seq: u64) -> Result<Vec<f32>> {
        read_buffer::<f32>(|dst, cap, written| unsafe { sys::kvrt_ced_logits(dst, cap, written, self.raw.as_ptr(), seq) })
    }

    /// (bank bytes per token, bank bytes in use, window bytes in use).
    pub fn bytes(&self) -> Result<(f64, u64, u64)> {
        let (mut a, mut b, mut c) = (0f64, 0u64, 0u64);
        check(unsafe { sys::kvrt_ced_session_bytes(&mut a, &mut b, &mut c, self.raw.as_ptr()) })?;
        Ok((a, b, c))
    }
}

impl Drop for CedSession<'_> {
    fn drop(&mut self) {
        unsafe { sys::kvrt_ced_session_destroy(self.raw.as_ptr()) }
    }
}
