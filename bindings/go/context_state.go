// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

//go:build !kvrt_no_runtime

package kvrt

/*
#include <stdlib.h>
#include <kvrt/kvrt.h>
*/
import "C"

import "unsafe"

// TierKind is the kind of a lower tier of the prefix cache.
type TierKind int32

const (
	TierDisk  TierKind = C.KVRT_TIER_DISK  // a directory
	TierRedis TierKind = C.KVRT_TIER_REDIS // a redis://host:port[/db] URL
)

// TierStats are one tier's counters (this process's view).
type TierStats struct {
	Kind                                              TierKind
	Puts, PutBytes, PutFailures, Gets, Hits, GetBytes uint64
	Misses, Corrupt, Errors, Timeouts, Evictions      uint64
	BytesStored, LoadedBlocks                         uint64
}

// SeqTokens returns the tokens sequence seq holds.
func (c *Context) SeqTokens(seq int32) ([]int32, error) {
	var out []int32
	err := c.with(func(p *C.kvrt_context) C.kvrt_status {
		var n C.size_t
		if st := C.kvrt_context_seq_tokens(nil, 0, &n, p, C.int32_t(seq)); st != C.KVRT_OK {
			return st
		}
		out = make([]int32, int(n))
		if n == 0 {
			return C.KVRT_OK
		}
		return C.kvrt_context_seq_tokens((*C.int32_t)(unsafe.Pointer(&out[0])), n, &n, p, C.int32_t(seq))
	})
	return out, err
}

// SeqSave saves sequence seq (tokens, logits, KV rows) to path, atomically.
func (c *Context) SeqSave(seq int32, path string) error {
	cp := C.CString(path)
	defer C.free(unsafe.Pointer(cp))
	return c.with(func(p *C.kvrt_context) C.kvrt_status { return C.kvrt_context_seq_save(p, C.int32_t(seq), cp) })
}

// SeqLoad replaces sequence seq with the one saved in path. On an error
// (another model, dtype, block size or salt; a bad file) seq is unchanged.
func (c *Context) SeqLoad(seq int32, path string) error {
	cp := C.CString(path)
	defer C.free(unsafe.Pointer(cp))
	return c.with(func(p *C.kvrt_context) C.kvrt_status { return C.kvrt_context_seq_load(p, C.int32_t(seq), cp) })
}

// SeqRestore restores the conversation saved in path into sequence seq whatever
// KV the saving context kept: loaded as saved where its rows fit this context
// (recomputed false, every token reused), else (another KV type, block size,
// act_bits or a release that computes them otherwise) its tokens prefilled here,
// so it goes on in this context's arithmetic (recomputed true). Another model or a
// bad file is an error and leaves seq unchanged.
func (c *Context) SeqRestore(seq int32, path string) (stats RequestStats, recomputed bool, err error) {
	cp := C.CString(path)
	defer C.free(unsafe.Pointer(cp))
	var s C.kvrt_request_stats
	var re C.int32_t
	err = c.with(func(p *C.kvrt_context) C.kvrt_status {
		if st := C.kvrt_request_stats_init(&s, C.size_t(unsafe.Sizeof(s))); st != C.KVRT_OK {
			return st
		}
		return C.kvrt_context_seq_restore(&s, &re, p, C.int32_t(seq), cp)
	})
	return statsFrom(&s), re != 0, err
}

// SeqFork makes dst a copy of src sharing its cache blocks.
func (c *Context) SeqFork(src, dst int32) error {
	return c.with(func(p *C.kvrt_context) C.kvrt_status {
		return C.kvrt_context_seq_fork(p, C.int32_t(src), C.int32_t(dst))
	})
}

// SeqTruncate keeps the first n positions of sequence seq.
func (c *Context) SeqTruncate(seq int32, n int) error {
	return c.with(func(p *C.kvrt_context) C.kvrt_status {
		return C.kvrt_context_seq_truncate(p, C.int32_t(seq), C.size_t(n))
	})
}

func (c *Context) withCache(f func(cache *C.kvrt_cache) C.kvrt_status) error {
	return c.with(func(p *C.kvrt_context) C.kvrt_status {
		var cache *C.kvrt_cache
		if st := C.kvrt_context_get_cache(&cache, p); st != C.KVRT_OK {
			return st
		}
		return f(cache)
	})
}

// CacheAddTier adds a lower tier to the context's cache: TierDisk with a
// directory, TierRedis with a redis:// URL; budget 0 = none.
func (c *Context) CacheAddTier(kind TierKind, location string, budgetBytes uint64) error {
	return c.addTier(kind, location, budgetBytes, 0, "")
}

// addTier fills one kvrt_tier_config (timeoutMs 0 and keyPrefix "" keep the defaults).
func (c *Context) addTier(kind TierKind, location string, budgetBytes uint64, timeoutMs uint32, keyPrefix string) error {
	loc := C.CString(location)
	defer C.free(unsafe.Pointer(loc))
	var prefix *C.char
	if keyPrefix != "" {
		prefix = C.CString(keyPrefix)
		defer C.free(unsafe.Pointer(prefix))
	}
	return c.withCache(func(cache *C.kvrt_cache) C.kvrt_status {
		var t C.kvrt_tier_config
		if st := C.kvrt_tier_config_init(&t, C.size_t(unsafe.Sizeof(t))); st != C.KVRT_OK {
			return st
		}
		t.kind = C.int32_t(kind)
		t.location = loc
		t.budget_bytes = C.uint64_t(budgetBytes)
		if timeoutMs != 0 {
			t.timeout_ms = C.uint32_t(timeoutMs)
		}
		if prefix != nil {
			t.key_prefix = prefix
		}
		return C.kvrt_cache_add_tier(cache, &t)
	})
}

// CachePersist writes every cached prefix block set the tiers lack into them; returns how many.
func (c *Context) CachePersist() (uint64, error) {
	var n C.uint64_t
	err := c.withCache(func(cache *C.kvrt_cache) C.kvrt_status { return C.kvrt_cache_persist(&n, cache) })
	return uint64(n), err
}

// CacheTierStats returns each tier's counters, in the order the tiers were added.
func (c *Context) CacheTierStats() ([]TierStats, error) {
	var out []TierStats
	err := c.withCache(func(cache *C.kvrt_cache) C.kvrt_status {
		var n C.size_t
		if st := C.kvrt_cache_n_tiers(&n, cache); st != C.KVRT_OK {
			return st
		}
		for i := C.size_t(0); i < n; i++ {
			var s C.kvrt_tier_stats
			if st := C.kvrt_tier_stats_init(&s, C.size_t(unsafe.Sizeof(s))); st != C.KVRT_OK {
				return st
			}
			if st := C.kvrt_cache_tier_stats_get(&s, cache, i); st != C.KVRT_OK {
				return st
			}
			out = append(out, TierStats{TierKind(s.kind), uint64(s.puts), uint64(s.put_bytes), uint64(s.put_failures),
				uint64(s.gets), uint64(s.hits), uint64(s.get_bytes), uint64(s.misses), uint64(s.corrupt),
				uint64(s.errors), uint64(s.timeouts), uint64(s.evictions), uint64(s.bytes_stored),
				uint64(s.loaded_blocks)})
		}
		return C.KVRT_OK
	})
	return out, err
}
