// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

//! Safe Rust API over libkvrt, the embeddable KV-cache runtime for CPU
//! inference. Every handle owns its C object (`NonNull` + `Drop`), every
//! fallible call returns [`Result`] carrying kvrt's status and message,
//! `Send`/`Sync` follow the C headers' thread-safety promises, and no panic
//! ever unwinds through C (callbacks catch it and re-raise it after the C
//! call returned).
//!
//! ```no_run
//! let model = kvrt::Model::load("SmolLM2-135M-Instruct.Q4_1.gguf")?;
//! let mut ctx = kvrt::Context::new(&model, &kvrt::ContextOptions::default())?;
//! let tokens = model.tokenize("The sky is", kvrt::TokenizeFlags::default())?;
//! let stats = ctx.prefill(0, &tokens)?;
//! println!("computed {} tokens", stats.computed_tokens);
//! # Ok::<(), kvrt::Error>(())
//! ```
pub use kvrt_sys as sys;

mod cache;
mod context;
mod embedder;
mod error;
mod model;
mod util;

pub use cache::{Cache, CacheKeys, CacheStats, DType, LayerConfig, LayerInfo, LayerKind, Layout, SeqInfo};
pub use context::{CedPrefillMode, ACT_BITS_OUTLIERS, CedResume, Context, ContextOptions, GenerateOptions, GenerateOutput, KvType, RequestStats, Sampler,
                  SamplerOptions, StopReason};
pub use error::{status_name, Error, ErrorKind, Result};
pub use embedder::{isa_get, isa_name, isa_set, set_log_callback, Activity, CancelHandle, LogFn, Stage, Token, TokenIter};
pub use model::{CedMemory, CedSource, ChatMessage, Model, ModelInfo, ModelOptions, TensorInfo, TokenizeFlags};

use std::ffi::CStr;

/// The header version this crate was written against: (major, minor, patch).
pub const HEADER_VERSION: (u32, u32, u32) = (sys::KVRT_VERSION_MAJOR, sys::KVRT_VERSION_MINOR, sys::KVRT_VERSION_PATCH);

/// The loaded library's version (kvrt_version()) as (major, minor, patch).
pub fn version() -> (u32, u32, u32) {
    let v = unsafe { sys::kvrt_version() };
    (v >> 16, (v >> 8) & 0xff, v & 0xff)
}

/// The loaded library's version string, e.g. "0.1.0".
pub fn version_string() -> String {
    unsafe { CStr::from_ptr(sys::kvrt_version_string()) }.to_string_lossy().into_owned()
}

/// Errors unless the loaded library has the major version this crate was
/// written for and a minor version at least as new.
pub fn check_version() -> Result<()> {
    let (lib, hdr) = (version(), HEADER_VERSION);
    if lib.0 != hdr.0 || lib.1 < hdr.1 {
        return Err(Error::new(ErrorKind::Mismatch,
            format!("libkvrt {}.{}.{} is not compatible with the kvrt crate's headers {}.{}.{}",
                    lib.0, lib.1, lib.2, hdr.0, hdr.1, hdr.2)));
    }
    Ok(())
}
