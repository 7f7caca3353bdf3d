// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

//go:build !kvrt_no_runtime

package kvrt

import (
	"net"
	"reflect"
	"testing"
)

// A Redis that is down only costs counted misses: the prefill computes, and its
// logits equal a cold prefill's. A malformed URL is refused.
func TestRedisTierDownIsACountedMiss(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0") // a port nothing listens on once closed
	if err != nil {
		t.Fatal(err)
	}
	url := "redis://" + l.Addr().String()
	l.Close()
	doc := make([]int32, 100)
	for i := range doc {
		doc[i] = int32(i*53%800 + 30)
	}
	ctx, err := NewContext(testModel, ContextOptions{NCtx: 512, Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	if err := ctx.CacheAddRedisTier("redis://cache:notaport", 0, 100, ""); err == nil {
		t.Fatal("a malformed Redis URL was accepted")
	}
	if err := ctx.CacheAddRedisTier(url, 1<<20, 100, "kvrt-go-test:"); err != nil {
		t.Fatal(err)
	}
	st, err := ctx.Prefill(0, doc)
	if err != nil || st.ComputedTokens != 100 || st.ReusedFromRemote != 0 {
		t.Fatalf("prefill with Redis down: %+v, %v", st, err)
	}
	if _, err := ctx.CachePersist(); err != nil {
		t.Fatal(err)
	}
	ts, err := ctx.CacheTierStats()
	if err != nil || len(ts) != 1 || ts[0].Kind != TierRedis || ts[0].Errors+ts[0].Timeouts == 0 ||
		ts[0].Hits != 0 || ts[0].Puts != 0 || ts[0].PutFailures == 0 {
		t.Fatalf("tier stats %+v, %v", ts, err)
	}
	warm, _ := ctx.Logits(0)
	cold, err := NewContext(testModel, ContextOptions{NCtx: 512, Threads: 2, NoPrefixCaching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cold.Close()
	if _, err := cold.Prefill(0, doc); err != nil {
		t.Fatal(err)
	}
	if c, _ := cold.Logits(0); !reflect.DeepEqual(c, warm) {
		t.Fatal("logits with a Redis tier that is down differ from a cold prefill")
	}
}
