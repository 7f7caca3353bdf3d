// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

//go:build !kvrt_no_runtime

package kvrt

/*
#include <stdlib.h>
#include <kvrt/kvrt.h>
*/
import "C"

// CacheAddRedisTier adds a Redis tier (a redis://host:port[/db] URL) to the
// context's cache with its Redis-specific options: timeoutMs bounds the connect
// and every command (0 = the default, 200 ms); keyPrefix is put before every
// key ("" = "kvrt:"); budgetBytes caps the bytes this process stores (0 = none).
// A server that is down is not an error: its lookups miss and are counted in
// CacheTierStats. A malformed URL is an error, and the cache is unchanged.
func (c *Context) CacheAddRedisTier(url string, budgetBytes uint64, timeoutMs uint32, keyPrefix string) error {
	return c.addTier(TierRedis, url, budgetBytes, timeoutMs, keyPrefix)
}
