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
