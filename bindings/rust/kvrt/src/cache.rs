// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

//! The KV cache manager (kvrt/cache.h), for engines that bring their own
//! model and for statistics. A [`Cache`] is internally synchronised
//! (`Send + Sync`); a [`Layout`] is used by one thread at a time.
use std::ffi::c_void;
use std::mem::size_of;
use std::path::Path;
use std::ptr::{self, NonNull};

use kvrt_sys as sys;

use crate::error::{check, Error, ErrorKind, Result};
use crate::util::cpath;

/// Kind of a cache layer (kvrt_layer_kind).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LayerKind {
    Full,
    /// Attends to the last `window` positions.
    Window,
    BankSource,
    BankReader,
    IndexerKeys,
}

impl LayerKind {
    pub(crate) fn raw(self) -> i32 {
        match self {
            LayerKind::Full => sys::KVRT_LAYER_FULL,
            LayerKind::Window => sys::KVRT_LAYER_WINDOW,
            LayerKind::BankSource => sys::KVRT_LAYER_BANK_SOURCE,
            LayerKind::BankReader => sys::KVRT_LAYER_BANK_READER,
            LayerKind::IndexerKeys => sys::KVRT_LAYER_INDEXER_KEYS,
        }
    }
}

/// Element type of a layer's rows and of a context's K/V (`kvrt_dtype`, the one dtype
/// enum of the C API; `KvType` is an alias). The default is F16.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DType {
    F32,
    #[default]
    F16,
    Bf16,
    /// int8, an f16 scale per 32 elements of a head (full and window layers).
    I8,
    /// fp8 e4m3, an f16 scale per head of a row (full and window layers).
    Fp8E4m3,
    /// 4-bit e2m1, a scale per 32 elements (bank source and indexer key layers: CED banks).
    Fp4,
}

impl DType {
    pub(crate) fn raw(self) -> i32 {
        match self {
            DType::F32 => sys::KVRT_DTYPE_F32,
            DType::F16 => sys::KVRT_DTYPE_F16,
            DType::Bf16 => sys::KVRT_DTYPE_BF16,
            DType::I8 => sys::KVRT_DTYPE_I8,
            DType::Fp8E4m3 => sys::KVRT_DTYPE_FP8_E4M3,
            DType::Fp4 => sys::KVRT_DTYPE_FP4,
        }
    }
}

/// One layer of a layout (see kvrt_cache_layer_config).
#[derive(Clone, Copy, Debug)]
pub struct LayerConfig {
    pub kind: LayerKind,
    pub n_kv_heads: i32,
    pub head_dim: i32,
    pub dtype: DType,
    pub window: i32,
    pub ratio: i32,
    pub source: i32,
    pub shared_kv: bool,
    /// The V rows' type when it differs from `dtype` (the K rows'); None: dtype.
    pub v_dtype: Option<DType>,
}

impl LayerConfig {
    /// A full f16 layer.
    pub fn full(n_kv_heads: i32, head_dim: i32) -> LayerConfig {
        LayerConfig { kind: LayerKind::Full, n_kv_heads, head_dim, dtype: DType::F16, window: 0, ratio: 1,
                      source: -1, shared_kv: false, v_dtype: None }
    }
    /// A sliding-window f16 layer of `window` positions.
    pub fn window(n_kv_heads: i32, head_dim: i32, window: i32) -> LayerConfig {
        LayerConfig { kind: LayerKind::Window, window, ..LayerConfig::full(n_kv_heads, head_dim) }
    }
}

/// A cache layout under construction. One thread at a time: `Send`, not `Sync`.
pub struct Layout {
    raw: NonNull<sys::kvrt_cache_layout>,
}

unsafe impl Send for Layout {}

impl Layout {
    /// An empty layout of blocks of `block_tokens` positions (1..=65536).
    pub fn new(block_tokens: i32) -> Result<Layout> {
        let mut out = ptr::null_mut();
        check(unsafe { sys::kvrt_cache_layout_create(&mut out, block_tokens) })?;
        NonNull::new(out)
            .map(|raw| Layout { raw })
            .ok_or_else(|| Error::new(ErrorKind::Internal, "kvrt_cache_layout_create returned no layout"))
    }

    /// Appends `count` identical layers; returns the index of the first.
    pub fn add_layers(&mut self, layer: &LayerConfig, count: i32) -> Result<i32> {
        let mut cfg = sys::kvrt_cache_layer_config::default();
        check(unsafe { sys::kvrt_cache_layer_config_init(&mut cfg, size_of::<sys::kvrt_cache_layer_config>()) })?;
        cfg.kind = layer.kind.raw();
        cfg.n_kv_heads = layer.n_kv_heads;
        cfg.head_dim = layer.head_dim;
        cfg.dtype = layer.dtype.raw();
        cfg.window = layer.window;
        cfg.ratio = layer.ratio;
        cfg.source = layer.source;
        cfg.shared_kv = layer.shared_kv as i32;
        cfg.v_dtype = layer.v_dtype.map_or(-1, DType::raw);
        let mut first = 0i32;
        check(unsafe { sys::kvrt_cache_layout_add_layers(&mut first, self.raw.as_ptr(), &cfg, count) })?;
        Ok(first)
    }

    pub fn n_layers(&self) -> Result<i32> {
        let mut n = 0;
        check(unsafe { sys::kvrt_cache_layout_n_layers(&mut n, self.raw.as_ptr()) })?;
        Ok(n)
    }
}

impl Drop for Layout {
    fn drop(&mut self) {
        unsafe { sys::kvrt_cache_layout_destroy(self.raw.as_ptr()) }
    }
}

/// The keys under which a sequence's prefixes are shared.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CacheKeys {
    pub fingerprint: (u64, u64),
    pub salt: Vec<u8>,
    pub adapter_id: u64,
}

impl CacheKeys {
    fn raw(&self) -> Result<sys::kvrt_cache_keys> {
        let mut k = sys::kvrt_cache_keys {
            struct_size: 0, fingerprint_lo: 0, fingerprint_hi: 0, salt: ptr::null(), salt_len: 0, adapter_id: 0,
        };
        check(unsafe { sys::kvrt_cache_keys_init(&mut k, size_of::<sys::kvrt_cache_keys>()) })?;
        k.fingerprint_lo = self.fingerprint.0;
        k.fingerprint_hi = self.fingerprint.1;
        if !self.salt.is_empty() {
            k.salt = self.salt.as_ptr() as *const c_void;
            k.salt_len = self.salt.len();
        }
        k.adapter_id = self.adapter_id;
        Ok(k)
    }
}

/// State of a sequence or pin.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SeqInfo {
    pub length: i64,
    pub computed: i64,
    pub n_blocks: i64,
    pub bytes: u64,
    pub is_pin: bool,
}

/// Where a layer's rows sit inside a block.
pub type LayerInfo = sys::kvrt_cache_layer_info;

/// Cache statistics (kvrt_cache_stats, as C fills it).
pub type CacheStats = sys::kvrt_cache_stats;

pub(crate) fn stats_of(cache: *const sys::kvrt_cache) -> Result<CacheStats> {
    let mut s = CacheStats::default();
    check(unsafe { sys::kvrt_cache_stats_init(&mut s, size_of::<CacheStats>()) })?;
    check(unsafe { sys::kvrt_cache_stats_get(&mut s, cache) })?;
    Ok(s)
}

/// A KV cache. Internally synchronised (kvrt/cache.h): `Send + Sync`, and
/// every method takes `&self`.
pub struct Cache {
    pub(crate) raw: NonNull<sys::kvrt_cache>,
}

unsafe impl Send for Cache {}
unsafe impl Sync for Cache {}

fn keys_ptr(raw: &Option<sys::kvrt_cache_keys>) -> *const sys::kvrt_cache_keys {
    raw.as_ref().map_or(ptr::null(), |k| k as *const _)
}

impl Cache {
    /// A cache for `layout` (copied) with a byte budget (0 = kvrt's default).
    pub fn new(layout: &Layout, budget_bytes: u64) -> Result<Cache> {
        let mut cfg = sys::kvrt_cache_config::default();
        check(unsafe { sys::kvrt_cache_config_init(&mut cfg, size_of::<sys::kvrt_cache_config>()) })?;
        if budget_bytes != 0 {
            cfg.budget_bytes = budget_bytes;
        }
        let mut out = ptr::null_mut();
        check(unsafe { sys::kvrt_cache_create(&mut out, layout.raw.as_ptr(), &cfg) })?;
        NonNull::new(out)
            .map(|raw| Cache { raw })
            .ok_or_else(|| Error::new(ErrorKind::Internal, "kvrt_cache_create returned no cache"))
    }

    pub fn as_ptr(&self) -> *mut sys::kvrt_cache {
        self.raw.as_ptr()
    }

    /// A new empty sequence (None = default keys).
    pub fn seq_create(&self, keys: Option<&CacheKeys>) -> Result<u64> {
        let k = keys.map(|k| k.raw()).transpose()?;
        let mut seq = 0u64;
        check(unsafe { sys::kvrt_cache_seq_create(&mut seq, self.raw.as_ptr(), keys_ptr(&k)) })?;
        Ok(seq)
    }
    pub fn seq_release(&self, seq: u64) -> Result<()> {
        check(unsafe { sys::kvrt_cache_seq_release(self.raw.as_ptr(), seq) })
    }
    pub fn seq_fork(&self, parent: u64) -> Result<u64> {
        let mut child = 0u64;
        check(unsafe { sys::kvrt_cache_seq_fork(&mut child, self.raw.as_ptr(), parent) })?;
        Ok(child)
    }
    pub fn seq_truncate(&self, seq: u64, pos: i64) -> Result<()> {
        check(unsafe { sys::kvrt_cache_seq_truncate(self.raw.as_ptr(), seq, pos) })
    }
    pub fn seq_append(&self, seq: u64, tokens: &[i32]) -> Result<()> {
        check(unsafe { sys::kvrt_cache_seq_append(self.raw.as_ptr(), seq, tokens.as_ptr(), tokens.len()) })
    }
    pub fn seq_mark_computed(&self, seq: u64, n_positions: i64) -> Result<()> {
        check(unsafe { sys::kvrt_cache_seq_mark_computed(self.raw.as_ptr(), seq, n_positions) })
    }
    /// Attaches the longest cached prefix of `tokens` to the empty sequence; returns its length.
    pub fn seq_match_prefix(&self, seq: u64, tokens: &[i32]) -> Result<i64> {
        let mut hit = 0i64;
        check(unsafe { sys::kvrt_cache_seq_match_prefix(&mut hit, self.raw.as_ptr(), seq, tokens.as_ptr(), tokens.len()) })?;
        Ok(hit)
    }
    /// `seq_match_prefix` going on, after the whole blocks, into a cached block up to the first
    /// changed token (KVRT_MATCH_SUB_BLOCK); the sequence holds that block as its shared, partly
    /// filled last block until its next append copies it.
    pub fn seq_match_prefix_sub_block(&self, seq: u64, tokens: &[i32]) -> Result<i64> {
        let mut hit = 0i64;
        check(unsafe {
            sys::kvrt_cache_seq_match_prefix_v2(&mut hit, self.raw.as_ptr(), seq, tokens.as_ptr(), tokens.len(),
                                                sys::KVRT_MATCH_SUB_BLOCK)
        })?;
        Ok(hit)
    }
    pub fn seq_info(&self, seq: u64) -> Result<SeqInfo> {
        let mut i = sys::kvrt_cache_seq_info::default();
        check(unsafe { sys::kvrt_cache_seq_info_init(&mut i, size_of::<sys::kvrt_cache_seq_info>()) })?;
        check(unsafe { sys::kvrt_cache_seq_info_get(&mut i, self.raw.as_ptr(), seq) })?;
        Ok(SeqInfo { length: i.length, computed: i.computed, n_blocks: i.n_blocks, bytes: i.bytes, is_pin: i.is_pin != 0 })
    }
    pub fn lookup_prefix(&self, keys: Option<&CacheKeys>, tokens: &[i32]) -> Result<i64> {
        let k = keys.map(|k| k.raw()).transpose()?;
        let mut hit = 0i64;
        check(unsafe { sys::kvrt_cache_lookup_prefix(&mut hit, self.raw.as_ptr(), keys_ptr(&k), tokens.as_ptr(), tokens.len()) })?;
        Ok(hit)
    }
    /// The hit `seq_match_prefix_sub_block` would give.
    pub fn lookup_prefix_sub_block(&self, keys: Option<&CacheKeys>, tokens: &[i32]) -> Result<i64> {
        let k = keys.map(|k| k.raw()).transpose()?;
        let mut hit = 0i64;
        check(unsafe {
            sys::kvrt_cache_lookup_prefix_v2(&mut hit, self.raw.as_ptr(), keys_ptr(&k), tokens.as_ptr(), tokens.len(),
                                             sys::KVRT_MATCH_SUB_BLOCK)
        })?;
        Ok(hit)
    }
    /// Pins the longest cached prefix; returns (pin id, pinned length).
    pub fn pin_prefix(&self, keys: Option<&CacheKeys>, tokens: &[i32]) -> Result<(u64, i64)> {
        let k = keys.map(|k| k.raw()).transpose()?;
        let (mut pin, mut pinned) = (0u64, 0i64);
        check(unsafe {
            sys::kvrt_cache_pin_prefix(&mut pin, &mut pinned, self.raw.as_ptr(), keys_ptr(&k), tokens.as_ptr(), tokens.len())
        })?;
        Ok((pin, pinned))
    }
    pub fn unpin(&self, pin: u64) -> Result<()> {
        check(unsafe { sys::kvrt_cache_unpin(self.raw.as_ptr(), pin) })
    }
    pub fn layer_info(&self, layer: i32) -> Result<LayerInfo> {
        let mut i = LayerInfo::default();
        check(unsafe { sys::kvrt_cache_layer_info_init(&mut i, size_of::<LayerInfo>()) })?;
        check(unsafe { sys::kvrt_cache_layer_info_get(&mut i, self.raw.as_ptr(), layer) })?;
        Ok(i)
    }

    fn check_rows(&self, layer: i32, n_rows: i64, k_len: usize, v_len: Option<usize>) -> Result<LayerInfo> {
        let info = self.layer_info(layer)?;
        let rows = n_rows.max(0) as u64;
        // V rows have their own size when the layer's V type differs from K's.
        let v_row = if info.v_row_bytes != 0 { info.v_row_bytes } else { info.row_bytes };
        let (need, vneed) = (rows.checked_mul(info.row_bytes), rows.checked_mul(v_row));
        let bad = |what: &str, len: usize, want: Option<u64>| {
            Error::new(ErrorKind::InvalidArgument,
                       format!("{what} holds {len} bytes; {n_rows} rows of layer {layer} need {}", want.unwrap_or(u64::MAX)))
        };
        if need != Some(k_len as u64) {
            return Err(bad("k", k_len, need));
        }
        if let Some(v) = v_len {
            if vneed != Some(v as u64) {
                return Err(bad("v", v, vneed));
            }
        }
        Ok(info)
    }

    /// Writes `n_rows` rows from `first_row`; `k` (and `v` for layers with
    /// separate V) must hold exactly n_rows x row_bytes bytes.
    pub fn write_rows(&self, seq: u64, layer: i32, first_row: i64, n_rows: i64, k: &[u8], v: Option<&[u8]>) -> Result<()> {
        self.check_rows(layer, n_rows, k.len(), v.map(|v| v.len()))?;
        let (vp, vn) = v.map_or((ptr::null(), 0), |v| (v.as_ptr() as *const c_void, v.len()));
        check(unsafe {
            sys::kvrt_cache_write_rows_v2(self.raw.as_ptr(), seq, layer, first_row, n_rows,
                                          k.as_ptr() as *const c_void, k.len(), vp, vn)
        })
    }

    /// Reads `n_rows` rows from `first_row` into `k` (and `v` when given).
    pub fn read_rows(&self, seq: u64, layer: i32, first_row: i64, n_rows: i64, k: &mut [u8], v: Option<&mut [u8]>) -> Result<()> {
        self.check_rows(layer, n_rows, k.len(), v.as_ref().map(|v| v.len()))?;
        let (vp, vn) = v.map_or((ptr::null_mut(), 0), |v| (v.as_mut_ptr() as *mut c_void, v.len()));
        check(unsafe {
            sys::kvrt_cache_read_rows_v2(k.as_mut_ptr() as *mut c_void, k.len(), vp, vn, self.raw.as_ptr(), seq,
                                         layer, first_row, n_rows)
        })
    }

    /// Saves the prefix index; returns the number of blocks written.
    pub fn save_prefixes(&self, path: impl AsRef<Path>, fingerprint: (u64, u64)) -> Result<u64> {
        let p = cpath(path.as_ref())?;
        let mut n = 0u64;
        check(unsafe { sys::kvrt_cache_save_prefixes(&mut n, self.raw.as_ptr(), p.as_ptr(), fingerprint.0, fingerprint.1) })?;
        Ok(n)
    }
    /// Loads a prefix file; returns the number of blocks added.
    pub fn load_prefixes(&self, path: impl AsRef<Path>, fingerprint: (u64, u64)) -> Result<u64> {
        let p = cpath(path.as_ref())?;
        let mut n = 0u64;
        check(unsafe { sys::kvrt_cache_load_prefixes(&mut n, self.raw.as_ptr(), p.as_ptr(), fingerprint.0, fingerprint.1) })?;
        Ok(n)
    }
    pub fn seq_save(&self, seq: u64, path: impl AsRef<Path>) -> Result<()> {
        let p = cpath(path.as_ref())?;
        check(unsafe { sys::kvrt_cache_seq_save(self.raw.as_ptr(), seq, p.as_ptr()) })
    }
    pub fn seq_load(&self, path: impl AsRef<Path>, fingerprint: (u64, u64)) -> Result<u64> {
        let p = cpath(path.as_ref())?;
        let mut seq = 0u64;
        check(unsafe { sys::kvrt_cache_seq_load(&mut seq, self.raw.as_ptr(), p.as_ptr(), fingerprint.0, fingerprint.1) })?;
        Ok(seq)
    }
    pub fn stats(&self) -> Result<CacheStats> {
        stats_of(self.raw.as_ptr())
    }
}

impl Drop for Cache {
    fn drop(&mut self) {
        unsafe { sys::kvrt_cache_destroy(self.raw.as_ptr()) }
    }
}
