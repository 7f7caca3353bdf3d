// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

package kvrt

/*
#include <stdlib.h>
#include <kvrt/kvrt.h>
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// LayerKind is a kvrt_layer_kind.
type LayerKind int32

const (
	LayerFull        LayerKind = C.KVRT_LAYER_FULL
	LayerWindow      LayerKind = C.KVRT_LAYER_WINDOW
	LayerBankSource  LayerKind = C.KVRT_LAYER_BANK_SOURCE
	LayerBankReader  LayerKind = C.KVRT_LAYER_BANK_READER
	LayerIndexerKeys LayerKind = C.KVRT_LAYER_INDEXER_KEYS
)

// DType is a kvrt_dtype.
type DType int32

const (
	DTypeF32  DType = C.KVRT_DTYPE_F32
	DTypeF16  DType = C.KVRT_DTYPE_F16
	DTypeBF16 DType = C.KVRT_DTYPE_BF16
	// Quantised rows, full and window layers only (kvrt/cache.h).
	DTypeI8      DType = C.KVRT_DTYPE_I8
	DTypeFP8E4M3 DType = C.KVRT_DTYPE_FP8_E4M3
	// 4-bit e2m1 with a scale per 32 elements: bank source and indexer key layers only.
	DTypeFP4 DType = C.KVRT_DTYPE_FP4
)

// LayerConfig describes one layer of a layout (kvrt_cache_layer_config).
type LayerConfig struct {
	Kind     LayerKind
	KVHeads  int32
	HeadDim  int32
	DType    DType
	Window   int32
	Ratio    int32
	Source   int32
	SharedKV bool
	// VDType: the V rows' type when it differs from DType (the K rows'); nil: DType.
	VDType *DType
}

// FullLayer is a full f16 layer.
func FullLayer(kvHeads, headDim int32) LayerConfig {
	return LayerConfig{Kind: LayerFull, KVHeads: kvHeads, HeadDim: headDim, DType: DTypeF16, Ratio: 1, Source: -1}
}

// Layout is a cache layout under construction (one goroutine at a time).
type Layout struct {
	handle[C.kvrt_cache_layout]
}

// NewLayout creates an empty layout of blocks of blockTokens positions.
func NewLayout(blockTokens int32) (*Layout, error) {
	var p *C.kvrt_cache_layout
	if err := call(func() C.kvrt_status { return C.kvrt_cache_layout_create(&p, C.int32_t(blockTokens)) }); err != nil {
		return nil, err
	}
	l := &Layout{handle[C.kvrt_cache_layout]{p: p}}
	runtime.SetFinalizer(l, (*Layout).Close)
	return l, nil
}

// Close destroys the layout; further calls return ErrClosed. Idempotent.
func (l *Layout) Close() error {
	if l.release(func(p *C.kvrt_cache_layout) { C.kvrt_cache_layout_destroy(p) }) {
		runtime.SetFinalizer(l, nil)
	}
	return nil
}

// AddLayers appends count identical layers and returns the first one's index.
func (l *Layout) AddLayers(cfg LayerConfig, count int32) (int32, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.p == nil {
		return 0, ErrClosed
	}
	var c C.kvrt_cache_layer_config
	var first C.int32_t
	err := call(func() C.kvrt_status {
		if st := C.kvrt_cache_layer_config_init(&c, C.size_t(unsafe.Sizeof(c))); st != C.KVRT_OK {
			return st
		}
		c.kind = C.int32_t(cfg.Kind)
		c.n_kv_heads = C.int32_t(cfg.KVHeads)
		c.head_dim = C.int32_t(cfg.HeadDim)
		c.dtype = C.int32_t(cfg.DType)
		c.window = C.int32_t(cfg.Window)
		c.ratio = C.int32_t(cfg.Ratio)
		c.source = C.int32_t(cfg.Source)
		if cfg.SharedKV {
			c.shared_kv = 1
		}
		if cfg.VDType != nil {
			c.v_dtype = C.int32_t(*cfg.VDType)
		}
		return C.kvrt_cache_layout_add_layers(&first, l.p, &c, C.int32_t(count))
	})
	return int32(first), err
}

// NumLayers is the number of layers added so far.
func (l *Layout) NumLayers() (int32, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.p == nil {
		return 0, ErrClosed
	}
	var n C.int32_t
	err := call(func() C.kvrt_status { return C.kvrt_cache_layout_n_layers(&n, l.p) })
	return int32(n), err
}

// Cache is a KV cache (internally synchronised: safe from many goroutines).
type Cache struct {
	handle[C.kvrt_cache]
}

// NewCache creates a cache for layout with a byte budget (0 = kvrt's default).
func NewCache(layout *Layout, budgetBytes uint64) (*Cache, error) {
	layout.mu.Lock()
	defer layout.mu.Unlock()
	if layout.p == nil {
		return nil, ErrClosed
	}
	var cfg C.kvrt_cache_config
	var p *C.kvrt_cache
	err := call(func() C.kvrt_status {
		if st := C.kvrt_cache_config_init(&cfg, C.size_t(unsafe.Sizeof(cfg))); st != C.KVRT_OK {
			return st
		}
		if budgetBytes != 0 {
			cfg.budget_bytes = C.uint64_t(budgetBytes)
		}
		return C.kvrt_cache_create(&p, layout.p, &cfg)
	})
	if err != nil {
		return nil, err
	}
	c := &Cache{handle[C.kvrt_cache]{p: p}}
	runtime.SetFinalizer(c, (*Cache).Close)
	return c, nil
}

// Close destroys the cache and its sequences. Idempotent.
func (c *Cache) Close() error {
	if c.release(func(p *C.kvrt_cache) { C.kvrt_cache_destroy(p) }) {
		runtime.SetFinalizer(c, nil)
	}
	return nil
}

func (c *Cache) with(f func(p *C.kvrt_cache) C.kvrt_status) error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.p == nil {
		return ErrClosed
	}
	return call(func() C.kvrt_status { return f(c.p) })
}

func tokensPtr(t []int32) *C.int32_t {
	if len(t) == 0 {
		return nil
	}
	return (*C.int32_t)(unsafe.Pointer(&t[0]))
}

// SeqCreate creates an empty sequence with the default keys.
func (c *Cache) SeqCreate() (uint64, error) {
	var id C.uint64_t
	err := c.with(func(p *C.kvrt_cache) C.kvrt_status { return C.kvrt_cache_seq_create(&id, p, nil) })
	return uint64(id), err
}

// SeqCreateSalted creates an empty sequence whose prefixes are shared only
// with sequences of the same salt.
func (c *Cache) SeqCreateSalted(salt []byte) (uint64, error) {
	var id C.uint64_t
	err := c.with(func(p *C.kvrt_cache) C.kvrt_status {
		var k C.kvrt_cache_keys
		if st := C.kvrt_cache_keys_init(&k, C.size_t(unsafe.Sizeof(k))); st != C.KVRT_OK {
			return st
		}
		cs := C.CBytes(salt) // kvrt copies the salt; C memory, not a Go pointer
		defer C.free(cs)
		k.salt = cs
		k.salt_len = C.size_t(len(salt))
		return C.kvrt_cache_seq_create(&id, p, &k)
	})
	return uint64(id), err
}

func (c *Cache) SeqRelease(seq uint64) error {
	return c.with(func(p *C.kvrt_cache) C.kvrt_status { return C.kvrt_cache_seq_release(p, C.uint64_t(seq)) })
}

func (c *Cache) SeqFork(parent uint64) (uint64, error) {
	var id C.uint64_t
	err := c.with(func(p *C.kvrt_cache) C.kvrt_status { return C.kvrt_cache_seq_fork(&id, p, C.uint64_t(parent)) })
	return uint64(id), err
}

func (c *Cache) SeqTruncate(seq uint64, pos int64) error {
	return c.with(func(p *C.kvrt_cache) C.kvrt_status {
		return C.kvrt_cache_seq_truncate(p, C.uint64_t(seq), C.int64_t(pos))
	})
}

func (c *Cache) SeqAppend(seq uint64, tokens []int32) error {
	return c.with(func(p *C.kvrt_cache) C.kvrt_status {
		return C.kvrt_cache_seq_append(p, C.uint64_t(seq), tokensPtr(tokens), C.size_t(len(tokens)))
	})
}

func (c *Cache) SeqMarkComputed(seq uint64, n int64) error {
	return c.with(func(p *C.kvrt_cache) C.kvrt_status {
		return C.kvrt_cache_seq_mark_computed(p, C.uint64_t(seq), C.int64_t(n))
	})
}

// SeqMatchPrefix attaches the longest cached prefix of tokens to an empty sequence.
func (c *Cache) SeqMatchPrefix(seq uint64, tokens []int32) (int64, error) {
	var hit C.int64_t
	err := c.with(func(p *C.kvrt_cache) C.kvrt_status {
		return C.kvrt_cache_seq_match_prefix(&hit, p, C.uint64_t(seq), tokensPtr(tokens), C.size_t(len(tokens)))
	})
	return int64(hit), err
}

// SeqMatchPrefixSubBlock is SeqMatchPrefix going on, after the whole blocks, into a cached
// block up to the first changed token (KVRT_MATCH_SUB_BLOCK): the sequence holds that block as
// its shared, partly filled last block until its next append copies it.
func (c *Cache) SeqMatchPrefixSubBlock(seq uint64, tokens []int32) (int64, error) {
	var hit C.int64_t
	err := c.with(func(p *C.kvrt_cache) C.kvrt_status {
		return C.kvrt_cache_seq_match_prefix_v2(&hit, p, C.uint64_t(seq), tokensPtr(tokens), C.size_t(len(tokens)),
			C.KVRT_MATCH_SUB_BLOCK)
	})
	return int64(hit), err
}

// LookupPrefixSubBlock is the hit SeqMatchPrefixSubBlock would give (default keys).
func (c *Cache) LookupPrefixSubBlock(tokens []int32) (int64, error) {
	var hit C.int64_t
	err := c.with(func(p *C.kvrt_cache) C.kvrt_status {
		return C.kvrt_cache_lookup_prefix_v2(&hit, p, nil, tokensPtr(tokens), C.size_t(len(tokens)), C.KVRT_MATCH_SUB_BLOCK)
	})
	return int64(hit), err
}

// LookupPrefix is the hit SeqMatchPrefix would give (default keys).
func (c *Cache) LookupPrefix(tokens []int32) (int64, error) {
	var hit C.int64_t
	err := c.with(func(p *C.kvrt_cache) C.kvrt_status {
		return C.kvrt_cache_lookup_prefix(&hit, p, nil, tokensPtr(tokens), C.size_t(len(tokens)))
	})
	return int64(hit), err
}

// SeqInfo is the state of a sequence or pin.
type SeqInfo struct {
	Length, Computed, Blocks int64
	Bytes                    uint64
	IsPin                    bool
}

func (c *Cache) SeqInfo(seq uint64) (SeqInfo, error) {
	var i C.kvrt_cache_seq_info
	if err := call(func() C.kvrt_status { return C.kvrt_cache_seq_info_init(&i, C.size_t(unsafe.Sizeof(i))) }); err != nil {
		return SeqInfo{}, err
	}
	err := c.with(func(p *C.kvrt_cache) C.kvrt_status { return C.kvrt_cache_seq_info_get(&i, p, C.uint64_t(seq)) })
	return SeqInfo{int64(i.length), int64(i.computed), int64(i.n_blocks), uint64(i.bytes), i.is_pin != 0}, err
}

// RowBytes is the size of one row of layer.
func (c *Cache) RowBytes(layer int32) (int, error) {
	k, _, err := c.rowSizes(layer)
	return k, err
}

// rowSizes gives the sizes of one K row and one V row of layer (they differ when
// the layer's V type differs from K's).
func (c *Cache) rowSizes(layer int32) (int, int, error) {
	var i C.kvrt_cache_layer_info
	if err := call(func() C.kvrt_status { return C.kvrt_cache_layer_info_init(&i, C.size_t(unsafe.Sizeof(i))) }); err != nil {
		return 0, 0, err
	}
	err := c.with(func(p *C.kvrt_cache) C.kvrt_status { return C.kvrt_cache_layer_info_get(&i, p, C.int32_t(layer)) })
	v := int(i.v_row_bytes)
	if v == 0 {
		v = int(i.row_bytes)
	}
	return int(i.row_bytes), v, err
}

func (c *Cache) checkRows(layer int32, nRows int64, k, v []byte) error {
	kb, vb, err := c.rowSizes(layer)
	if err != nil {
		return err
	}
	need, vneed := int64(kb)*nRows, int64(vb)*nRows
	if int64(len(k)) != need || (v != nil && int64(len(v)) != vneed) {
		return bindingError(ErrInvalidArgument, "%d rows of layer %d need %d bytes of K and %d of V (k %d, v %d)",
			nRows, layer, need, vneed, len(k), len(v))
	}
	return nil
}

// WriteRows copies nRows rows from k (and v, nil when K = V). kvrt copies
// them during the call and keeps no pointer.
func (c *Cache) WriteRows(seq uint64, layer int32, firstRow, nRows int64, k, v []byte) error {
	if err := c.checkRows(layer, nRows, k, v); err != nil {
		return err
	}
	return c.with(func(p *C.kvrt_cache) C.kvrt_status {
		var vp unsafe.Pointer
		if v != nil {
			vp = unsafe.Pointer(&v[0])
		}
		return C.kvrt_cache_write_rows_v2(p, C.uint64_t(seq), C.int32_t(layer), C.int64_t(firstRow), C.int64_t(nRows),
			unsafe.Pointer(&k[0]), C.size_t(len(k)), vp, C.size_t(len(v)))
	})
}

// ReadRows copies nRows rows into k (and v when non-nil).
func (c *Cache) ReadRows(seq uint64, layer int32, firstRow, nRows int64, k, v []byte) error {
	if err := c.checkRows(layer, nRows, k, v); err != nil {
		return err
	}
	return c.with(func(p *C.kvrt_cache) C.kvrt_status {
		var vp unsafe.Pointer
		if v != nil {
			vp = unsafe.Pointer(&v[0])
		}
		return C.kvrt_cache_read_rows_v2(unsafe.Pointer(&k[0]), C.size_t(len(k)), vp, C.size_t(len(v)), p,
			C.uint64_t(seq), C.int32_t(layer), C.int64_t(firstRow), C.int64_t(nRows))
	})
}

// BlockTable returns the addresses of a sequence's blocks for one layer (0 for
// a block a window dropped), for code that reads rows in place with the
// layer's offsets. They stay valid until the sequence changes.
func (c *Cache) BlockTable(seq uint64, layer int32) ([]uintptr, error) {
	var n C.size_t
	err := c.with(func(p *C.kvrt_cache) C.kvrt_status {
		st := C.kvrt_cache_block_table(nil, 0, &n, p, C.uint64_t(seq), C.int32_t(layer))
		if st == C.KVRT_ERR_BUFFER_TOO_SMALL {
			return C.KVRT_OK
		}
		return st
	})
	if err != nil || n == 0 {
		return nil, err
	}
	buf := make([]unsafe.Pointer, int(n))
	err = c.with(func(p *C.kvrt_cache) C.kvrt_status {
		return C.kvrt_cache_block_table(&buf[0], n, &n, p, C.uint64_t(seq), C.int32_t(layer))
	})
	if err != nil {
		return nil, err
	}
	out := make([]uintptr, int(n))
	for i := range out {
		out[i] = uintptr(buf[i])
	}
	return out, nil
}

// SeqSave writes one sequence to a state file.
func (c *Cache) SeqSave(seq uint64, path string) error {
	cp := C.CString(path)
	defer C.free(unsafe.Pointer(cp))
	return c.with(func(p *C.kvrt_cache) C.kvrt_status { return C.kvrt_cache_seq_save(p, C.uint64_t(seq), cp) })
}

// SeqLoad recreates a saved sequence under a new id.
func (c *Cache) SeqLoad(path string, fpLo, fpHi uint64) (uint64, error) {
	cp := C.CString(path)
	defer C.free(unsafe.Pointer(cp))
	var id C.uint64_t
	err := c.with(func(p *C.kvrt_cache) C.kvrt_status {
		return C.kvrt_cache_seq_load(&id, p, cp, C.uint64_t(fpLo), C.uint64_t(fpHi))
	})
	return uint64(id), err
}

// CacheStats is a subset of kvrt_cache_stats.
type CacheStats struct {
	BudgetBytes, BytesInUse, BytesCached, BytesFree uint64
	Sequences, Pins, QueriedTokens, HitTokens       uint64
	Evictions                                       uint64
	BytesPerToken                                   float64
	BlockTokens                                     int32
}

func statsOf(p *C.kvrt_cache) (CacheStats, error) {
	var s C.kvrt_cache_stats
	if err := call(func() C.kvrt_status { return C.kvrt_cache_stats_init(&s, C.size_t(unsafe.Sizeof(s))) }); err != nil {
		return CacheStats{}, err
	}
	err := call(func() C.kvrt_status { return C.kvrt_cache_stats_get(&s, p) })
	return CacheStats{uint64(s.budget_bytes), uint64(s.bytes_in_use), uint64(s.bytes_cached), uint64(s.bytes_free),
		uint64(s.n_sequences), uint64(s.n_pins), uint64(s.queried_tokens), uint64(s.hit_tokens),
		uint64(s.evictions), float64(s.bytes_per_token), int32(s.block_tokens)}, err
}

func (c *Cache) Stats() (CacheStats, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.p == nil {
		return CacheStats{}, ErrClosed
	}
	return statsOf(c.p)
}

// PinPrefix pins the longest cached prefix of tokens (default keys); it
// returns the pin id and the pinned length.
func (c *Cache) PinPrefix(tokens []int32) (pin uint64, pinned int64, err error) {
	var id C.uint64_t
	var n C.int64_t
	err = c.with(func(p *C.kvrt_cache) C.kvrt_status {
		return C.kvrt_cache_pin_prefix(&id, &n, p, nil, tokensPtr(tokens), C.size_t(len(tokens)))
	})
	return uint64(id), int64(n), err
}

// Unpin releases a pin.
func (c *Cache) Unpin(pin uint64) error {
	return c.with(func(p *C.kvrt_cache) C.kvrt_status { return C.kvrt_cache_unpin(p, C.uint64_t(pin)) })
}

// SavePrefixes writes the prefix index to a state file; returns the blocks written.
func (c *Cache) SavePrefixes(path string, fpLo, fpHi uint64) (uint64, error) {
	cp := C.CString(path)
	defer C.free(unsafe.Pointer(cp))
	var n C.uint64_t
	err := c.with(func(p *C.kvrt_cache) C.kvrt_status {
		return C.kvrt_cache_save_prefixes(&n, p, cp, C.uint64_t(fpLo), C.uint64_t(fpHi))
	})
	return uint64(n), err
}

// LoadPrefixes loads a prefix state file; returns the blocks added.
func (c *Cache) LoadPrefixes(path string, fpLo, fpHi uint64) (uint64, error) {
	cp := C.CString(path)
	defer C.free(unsafe.Pointer(cp))
	var n C.uint64_t
	err := c.with(func(p *C.kvrt_cache) C.kvrt_status {
		return C.kvrt_cache_load_prefixes(&n, p, cp, C.uint64_t(fpLo), C.uint64_t(fpHi))
	})
	return uint64(n), err
}
