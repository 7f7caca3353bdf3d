// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

//! A loaded model (kvrt/model.h): immutable, shareable between threads.
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::mem::{size_of, MaybeUninit};
use std::path::Path;
use std::ptr::{self, NonNull};

use kvrt_sys as sys;

use crate::cache::DType;
use crate::error::{check, Error, ErrorKind, Result};
use crate::util::{cpath, cstring, read_buffer, read_text, Callback};

/// Options of [`Model::load_with`].
#[derive(Default)]
pub struct ModelOptions<'a> {
    /// Threads used to pack the weights; 0 = the OpenMP default.
    pub n_threads: i32,
    /// Called with (fraction in [0,1], stage); return false to cancel the
    /// load (it then fails with [`ErrorKind::Cancelled`]). A panic inside is
    /// caught, cancels the load, and is resumed after kvrt returns.
    pub progress: Option<&'a mut dyn FnMut(f32, &str) -> bool>,
}

/// Facts about a loaded model (kvrt_model_info, strings copied).
#[derive(Clone, Debug, PartialEq)]
pub struct ModelInfo {
    pub architecture: String,
    pub name: String,
    pub n_layers: u32,
    pub n_vocab: u32,
    pub n_embd: u32,
    pub n_ff: u32,
    pub n_heads: u32,
    pub n_kv_heads: u32,
    pub head_dim: u32,
    pub n_ctx_train: u32,
    pub sliding_window: u32,
    pub n_layers_full: u32,
    pub n_layers_window: u32,
    pub rope_theta: f32,
    pub rms_eps: f32,
    /// None when the model has no such token.
    pub bos_token: Option<i32>,
    pub eos_token: Option<i32>,
    pub eot_token: Option<i32>,
    pub n_params: u64,
    pub weight_bytes: u64,
    pub kv_bytes_per_token_full: u64,
    pub kv_bytes_per_token_window: u64,
    pub kv_bytes_per_token: u64,
    pub fingerprint: [u8; 16],
}

/// One tensor of the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorInfo {
    pub name: String,
    pub type_name: String,
    pub n_elements: u64,
    pub n_bytes: u64,
}

/// Tokenizer flags (KVRT_TOKENIZE_*).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TokenizeFlags {
    /// Prepend BOS when the model asks for one.
    pub add_bos: bool,
    /// Special-token text ("<|im_start|>") becomes its special token.
    pub parse_special: bool,
}

impl TokenizeFlags {
    /// Flags for chat-template output: special tokens parsed.
    pub const CHAT: TokenizeFlags = TokenizeFlags { add_bos: false, parse_special: true };
    fn bits(self) -> u32 {
        (if self.add_bos { sys::KVRT_TOKENIZE_ADD_BOS } else { 0 })
            | (if self.parse_special { sys::KVRT_TOKENIZE_PARSE_SPECIAL } else { 0 })
    }
}

/// KV memory of a CED model by component at one element type
/// (kvrt_ced_memory; see kvrt/ced.h), with a dense GQA model beside it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CedMemory {
    pub n_layers: u32,
    /// Number of banks; each is described by [`Model::ced_source`].
    pub n_sources: u32,
    /// The window W.
    pub window: u32,
    /// Bytes of one cached element (of the dtype asked for).
    pub elem_bytes: u32,
    pub main_bytes_per_token: f64,
    pub indexer_bytes_per_token: f64,
    /// main + indexer: the prefix-cacheable KV.
    pub global_bytes_per_token: f64,
    pub window_bytes_per_sequence: u64,
    pub dense_kv_heads: u32,
    pub dense_head_dim: u32,
    pub dense_bytes_per_token: f64,
}

/// One bank of a CED model (kvrt_ced_memory_source).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CedSource {
    pub layer: i32,
    pub ratio: i32,
    pub main_bytes_per_token: f64,
    pub indexer_bytes_per_token: f64,
}

/// One chat message.
#[derive(Clone, Copy, Debug)]
pub struct ChatMessage<'a> {
    pub role: &'a str,
    pub content: &'a str,
}

/// A model loaded from a GGUF file. Immutable: `Send + Sync` (kvrt/model.h:
/// every `const kvrt_model *` function may run on many threads at once).
/// Dropping it releases the caller's reference; contexts keep their own, and
/// the borrow checker keeps the `Model` alive while a [`crate::Context`] uses it.
pub struct Model {
    raw: NonNull<sys::kvrt_model>,
}

// SAFETY: kvrt_model is immutable once loaded and documented thread-safe;
// destruction is reference-counted and thread-safe with respect to contexts.
unsafe impl Send for Model {}
unsafe impl Sync for Model {}

unsafe extern "C" fn progress_trampoline(fraction: f32, stage: *const c_char, user_data: *mut c_void) -> c_int {
    // SAFETY: user_data is the Callback that load_with keeps alive for the call.
    let cb = unsafe { &mut *(user_data as *mut Callback<'_, dyn FnMut(f32, &str) -> bool + '_>) };
    let stage = if stage.is_null() { "" } else { unsafe { CStr::from_ptr(stage) }.to_str().unwrap_or("") };
    cb.call(|f| f(fraction, stage))
}

impl Model {
    /// Loads a GGUF model with the default options.
    pub fn load(path: impl AsRef<Path>) -> Result<Model> {
        Model::load_with(path, ModelOptions::default())
    }

    /// Loads a GGUF model (kvrt_model_load).
    pub fn load_with(path: impl AsRef<Path>, options: ModelOptions<'_>) -> Result<Model> {
        let cpath = cpath(path.as_ref())?;
        let mut cfg = MaybeUninit::<sys::kvrt_model_config>::zeroed();
        // SAFETY: cfg is writable and of the size passed.
        check(unsafe { sys::kvrt_model_config_init(cfg.as_mut_ptr(), size_of::<sys::kvrt_model_config>()) })?;
        let mut cfg = unsafe { cfg.assume_init() };
        cfg.n_threads = options.n_threads;
        let mut out: *mut sys::kvrt_model = ptr::null_mut();
        let status;
        match options.progress {
            Some(f) => {
                let mut cb: Callback<'_, dyn FnMut(f32, &str) -> bool + '_> = Callback::new(f);
                cfg.progress = Some(progress_trampoline);
                cfg.progress_user_data = &mut cb as *mut Callback<'_, _> as *mut c_void;
                // SAFETY: cb outlives the call; kvrt calls back on this thread only.
                status = unsafe { sys::kvrt_model_load(&mut out, cpath.as_ptr(), &cfg) };
                cb.resume();
            }
            None => status = unsafe { sys::kvrt_model_load(&mut out, cpath.as_ptr(), &cfg) },
        }
        check(status)?;
        NonNull::new(out)
            .map(|raw| Model { raw })
            .ok_or_else(|| Error::new(ErrorKind::Internal, "kvrt_model_load returned KVRT_OK and no model"))
    }

    /// The raw handle, for calling kvrt-sys directly. Still owned by `self`.
    pub fn as_ptr(&self) -> *mut sys::kvrt_model {
        self.raw.as_ptr()
    }

    pub fn info(&self) -> Result<ModelInfo> {
        let mut info = MaybeUninit::<sys::kvrt_model_info>::zeroed();
        // SAFETY: info is writable; the model handle is live.
        unsafe {
            check(sys::kvrt_model_info_init(info.as_mut_ptr(), size_of::<sys::kvrt_model_info>()))?;
            check(sys::kvrt_model_get_info(info.as_mut_ptr(), self.raw.as_ptr()))?;
        }
        let i = unsafe { info.assume_init() };
        let s = |p: *const c_char| {
            if p.is_null() { String::new() } else { unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned() }
        };
        let tok = |t: i32| if t < 0 { None } else { Some(t) };
        Ok(ModelInfo {
            architecture: s(i.architecture),
            name: s(i.name),
            n_layers: i.n_layers,
            n_vocab: i.n_vocab,
            n_embd: i.n_embd,
            n_ff: i.n_ff,
            n_heads: i.n_heads,
            n_kv_heads: i.n_kv_heads,
            head_dim: i.head_dim,
            n_ctx_train: i.n_ctx_train,
            sliding_window: i.sliding_window,
            n_layers_full: i.n_layers_full,
            n_layers_window: i.n_layers_window,
            rope_theta: i.rope_theta,
            rms_eps: i.rms_eps,
            bos_token: tok(i.bos_token),
            eos_token: tok(i.eos_token),
            eot_token: tok(i.eot_token),
            n_params: i.n_params,
            weight_bytes: i.weight_bytes,
            kv_bytes_per_token_full: i.kv_bytes_per_token_full,
            kv_bytes_per_token_window: i.kv_bytes_per_token_window,
            kv_bytes_per_token: i.kv_bytes_per_token,
            fingerprint: i.fingerprint,
        })
    }

    /// A GGUF metadata value as text; `Err(NotFound)` for a missing key.
    pub fn meta(&self, key: &str) -> Result<String> {
        let ckey = cstring("metadata key", key)?;
        let buf = read_text(|dst, cap, written| unsafe {
            sys::kvrt_model_meta_string(dst, cap, written, self.raw.as_ptr(), ckey.as_ptr())
        })?;
        Ok(bytes_to_string(&buf))
    }

    /// Every metadata key, in file order.
    pub fn meta_keys(&self) -> Result<Vec<String>> {
        let mut n = 0usize;
        check(unsafe { sys::kvrt_model_meta_count(&mut n, self.raw.as_ptr()) })?;
        (0..n)
            .map(|i| {
                read_text(|dst, cap, written| unsafe {
                    sys::kvrt_model_meta_key(dst, cap, written, self.raw.as_ptr(), i)
                })
                .map(|b| bytes_to_string(&b))
            })
            .collect()
    }

    /// Every tensor of the file.
    pub fn tensors(&self) -> Result<Vec<TensorInfo>> {
        let mut n = 0usize;
        check(unsafe { sys::kvrt_model_tensor_count(&mut n, self.raw.as_ptr()) })?;
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            let mut type_name: *const c_char = ptr::null();
            let (mut n_elements, mut n_bytes) = (0u64, 0u64);
            let name = read_text(|dst, cap, written| unsafe {
                sys::kvrt_model_tensor_info(dst, cap, written, &mut type_name, &mut n_elements, &mut n_bytes,
                                            self.raw.as_ptr(), i)
            })?;
            let type_name = if type_name.is_null() {
                String::new()
            } else {
                unsafe { CStr::from_ptr(type_name) }.to_string_lossy().into_owned()
            };
            out.push(TensorInfo { name: bytes_to_string(&name), type_name, n_elements, n_bytes });
        }
        Ok(out)
    }

    /// Tokenizes UTF-8 text.
    pub fn tokenize(&self, text: &str, flags: TokenizeFlags) -> Result<Vec<i32>> {
        read_buffer::<i32>(|dst, cap, written| unsafe {
            sys::kvrt_model_tokenize(dst, cap, written, self.raw.as_ptr(), text.as_ptr() as *const c_char,
                                     text.len(), flags.bits())
        })
    }

    /// Token ids back to bytes (UTF-8 unless the ids split a character).
    pub fn detokenize_bytes(&self, tokens: &[i32], render_special: bool) -> Result<Vec<u8>> {
        let flags = if render_special { sys::KVRT_DETOKENIZE_SPECIAL } else { 0 };
        let buf = read_text(|dst, cap, written| unsafe {
            sys::kvrt_model_detokenize(dst, cap, written, self.raw.as_ptr(), tokens.as_ptr(), tokens.len(), flags)
        })?;
        Ok(buf.into_iter().map(|c| c as u8).collect())
    }

    /// Token ids back to text (invalid UTF-8 replaced by U+FFFD).
    pub fn detokenize(&self, tokens: &[i32], render_special: bool) -> Result<String> {
        Ok(String::from_utf8_lossy(&self.detokenize_bytes(tokens, render_special)?).into_owned())
    }

    /// Is `token` an end-of-generation token?
    pub fn token_is_eog(&self, token: i32) -> Result<bool> {
        let mut out: c_int = 0;
        check(unsafe { sys::kvrt_model_token_is_eog(&mut out, self.raw.as_ptr(), token) })?;
        Ok(out != 0)
    }

    /// KV memory of a CED model whose cached rows are of element type `dtype`
    /// (kvrt_ced_memory_get). `Err(Unsupported)` for a model of another architecture.
    pub fn ced_memory(&self, dtype: DType) -> Result<CedMemory> {
        let mut m = sys::kvrt_ced_memory::default();
        check(unsafe { sys::kvrt_ced_memory_init(&mut m, size_of::<sys::kvrt_ced_memory>()) })?;
        check(unsafe { sys::kvrt_ced_memory_get(&mut m, self.raw.as_ptr(), dtype.raw()) })?;
        Ok(CedMemory {
            n_layers: m.n_layers,
            n_sources: m.n_sources,
            window: m.window,
            elem_bytes: m.elem_bytes,
            main_bytes_per_token: m.main_bytes_per_token,
            indexer_bytes_per_token: m.indexer_bytes_per_token,
            global_bytes_per_token: m.global_bytes_per_token,
            window_bytes_per_sequence: m.window_bytes_per_sequence,
            dense_kv_heads: m.dense_kv_heads,
            dense_head_dim: m.dense_head_dim,
            dense_bytes_per_token: m.dense_bytes_per_token,
        })
    }

    /// Bank `index` (0..n_sources) of a CED model at element type `dtype`
    /// (kvrt_ced_memory_source). `Err(OutOfRange)` past the last bank.
    pub fn ced_source(&self, index: u32, dtype: DType) -> Result<CedSource> {
        let mut s = CedSource { layer: 0, ratio: 0, main_bytes_per_token: 0.0, indexer_bytes_per_token: 0.0 };
        check(unsafe {
            sys::kvrt_ced_memory_source(&mut s.layer, &mut s.ratio, &mut s.main_bytes_per_token,
                                        &mut s.indexer_bytes_per_token, self.raw.as_ptr(), index, dtype.raw())
        })?;
        Ok(s)
    }

    /// Renders messages with the model's chat template; tokenize the result
    /// with [`TokenizeFlags::CHAT`].
    pub fn chat_apply(&self, messages: &[ChatMessage<'_>], add_assistant: bool) -> Result<String> {
        let (_owned, raw) = chat_messages(messages)?;
        let buf = read_text(|dst, cap, written| unsafe {
            sys::kvrt_model_chat_apply(dst, cap, written, self.raw.as_ptr(), raw.as_ptr(), raw.len(),
                                       add_assistant as c_int)
        })?;
        Ok(bytes_to_string(&buf))
    }
}

/// The C view of messages: the owned strings (keep them alive) and the structs pointing into them.
fn chat_messages(messages: &[ChatMessage<'_>]) -> Result<(Vec<(CString, CString)>, Vec<sys::kvrt_chat_message>)> {
    let owned = messages
        .iter()
        .map(|m| Ok((cstring("chat role", m.role)?, cstring("chat content", m.content)?)))
        .collect::<Result<Vec<_>>>()?;
    let raw = owned.iter().map(|(r, c)| sys::kvrt_chat_message { role: r.as_ptr(), content: c.as_ptr() }).collect();
    Ok((owned, raw))
}

/// Another handle to the same loaded model (kvrt_model_retain): cheap, no copy of
/// the weights; each handle drops its own reference.
impl Clone for Model {
    fn clone(&self) -> Model {
        let mut out: *mut sys::kvrt_model = ptr::null_mut();
        // SAFETY: self's handle is live for the call.
        let status = unsafe { sys::kvrt_model_retain(&mut out, self.raw.as_ptr()) };
        match (status, NonNull::new(out)) {
            (sys::KVRT_OK, Some(raw)) => Model { raw },
            _ => panic!("kvrt_model_retain failed on a live model (status {status})"),
        }
    }
}

impl Model {
    /// Renders messages with a chosen chat template: a family name ("chatml",
    /// "llama2", "llama3", "gemma", "zephyr") or a Jinja template text kvrt
    /// recognises ([`Model::chat_apply`] uses the model's own).
    pub fn chat_apply_template(&self, messages: &[ChatMessage<'_>], add_assistant: bool, template: &str)
                               -> Result<String> {
        let tmpl = cstring("chat template", template)?;
        let (_owned, raw) = chat_messages(messages)?;
        let buf = read_text(|dst, cap, written| unsafe {
            sys::kvrt_model_chat_apply_template(dst, cap, written, self.raw.as_ptr(), tmpl.as_ptr(), raw.as_ptr(),
                                                raw.len(), add_assistant as c_int)
        })?;
        Ok(bytes_to_string(&buf))
    }
}

impl Drop for Model {
    fn drop(&mut self) {
        // SAFETY: the handle is live and dropped exactly once.
        unsafe { sys::kvrt_model_destroy(self.raw.as_ptr()) }
    }
}

/// C text (possibly NUL-terminated inside `buf`) to a String.
pub(crate) fn bytes_to_string(buf: &[c_char]) -> String {
    let bytes: Vec<u8> = buf.iter().map(|&c| c as u8).take_while(|&b| b != 0).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}
