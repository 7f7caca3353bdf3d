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

// CacheAddRedisTier adds a Redis tier (a redis://host:port[/db] URL) to the
// context's cache with its Redis-specific options: timeoutMs bounds the connect
// and every command (0 = the default, 200 ms); keyPrefix is put before every
// key ("" = "kvrt:"); budgetBytes caps the bytes this process stores (0 = none).
// A server that is down is not an error: its lookups miss and are counted in
// CacheTierStats. A malformed URL is an error, and the cache is unchanged.
func (c *Context) CacheAddRedisTier(url string, budgetBytes uint64, timeoutMs uint32, keyPrefix string) error {
	loc := C.CString(url)
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
		t.kind = C.int32_t(TierRedis)
		t.location = loc
		t.budget_bytes = C.uint64_t(budgetBytes)
		if timeoutMs != 0 {
			t.timeout_ms = C.uint32_t(timeoutMs)
		}
		t.key_prefix = prefix
		return C.kvrt_cache_add_tier(cache, &t)
	})
}
