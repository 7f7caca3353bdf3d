// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

package kvrt

import (
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestVersionMatchesHeaderMacros(t *testing.T) {
	maj, min, pat := Version()
	if got := maj<<16 | min<<8 | pat; got != HeaderVersion {
		t.Fatalf("kvrt_version() = %#x, headers say %#x", got, HeaderVersion)
	}
	if VersionString() != strings.Join([]string{itoa(maj), itoa(min), itoa(pat)}, ".") {
		t.Fatalf("version string %q", VersionString())
	}
	if err := CheckVersion(); err != nil {
		t.Fatal(err)
	}
}

func itoa(v uint32) string {
	if v == 0 {
		return "0"
	}
	s := ""
	for ; v > 0; v /= 10 {
		s = string(rune('0'+v%10)) + s
	}
	return s
}

func smallCache(t *testing.T) *Cache {
	t.Helper()
	l, err := NewLayout(4)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.AddLayers(FullLayer(2, 8), 2); err != nil {
		t.Fatal(err)
	}
	c, err := NewCache(l, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A hit goes on into a cached block up to the first changed token (KVRT_MATCH_SUB_BLOCK).
func TestCacheSubBlockHit(t *testing.T) {
	c := smallCache(t)
	defer c.Close()
	tokens := []int32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	a, _ := c.SeqCreate()
	if err := c.SeqAppend(a, tokens); err != nil {
		t.Fatal(err)
	}
	if err := c.SeqMarkComputed(a, 10); err != nil {
		t.Fatal(err)
	}
	edited := append([]int32(nil), tokens...)
	edited[6] = 99 // inside the second block of 4
	if hit, err := c.LookupPrefix(edited); err != nil || hit != 4 {
		t.Fatalf("whole blocks: %d, %v", hit, err)
	}
	if hit, err := c.LookupPrefixSubBlock(edited); err != nil || hit != 6 {
		t.Fatalf("sub-block lookup: %d, %v", hit, err)
	}
	b, _ := c.SeqCreate()
	if hit, err := c.SeqMatchPrefixSubBlock(b, edited); err != nil || hit != 6 {
		t.Fatalf("sub-block match: %d, %v", hit, err)
	}
	if _, err := c.SeqMatchPrefixSubBlock(b, edited); !errors.Is(err, ErrInvalidState) {
		t.Fatalf("a second match on a non-empty sequence: %v", err)
	}
	if _, err := c.SeqMatchPrefixSubBlock(12345, edited); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown sequence: %v", err)
	}
}

func TestCachePrefixSharing(t *testing.T) {
	c := smallCache(t)
	defer c.Close()
	tokens := []int32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	a, err := c.SeqCreate()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SeqAppend(a, tokens); err != nil {
		t.Fatal(err)
	}
	rb, err := c.RowBytes(0)
	if err != nil {
		t.Fatal(err)
	}
	rows := make([]byte, 10*rb)
	for i := range rows {
		rows[i] = 9
	}
	for layer := int32(0); layer < 2; layer++ {
		if err := c.WriteRows(a, layer, 0, 10, rows, rows); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.SeqMarkComputed(a, 10); err != nil {
		t.Fatal(err)
	}
	b, _ := c.SeqCreate()
	hit, err := c.SeqMatchPrefix(b, tokens)
	if err != nil || hit != 8 {
		t.Fatalf("hit %d, %v", hit, err)
	}
	k := make([]byte, 8*rb)
	v := make([]byte, 8*rb)
	if err := c.ReadRows(b, 1, 0, 8, k, v); err != nil {
		t.Fatal(err)
	}
	if k[0] != 9 || v[len(v)-1] != 9 {
		t.Fatal("rows read back differ")
	}
	salted, _ := c.SeqCreateSalted([]byte("tenant"))
	if hit, _ := c.SeqMatchPrefix(salted, tokens); hit != 0 {
		t.Fatalf("a salted sequence shares %d tokens", hit)
	}
	st, err := c.Stats()
	if err != nil || st.Sequences != 3 || st.HitTokens != 8 {
		t.Fatalf("stats %+v %v", st, err)
	}
	pin, pinned, err := c.PinPrefix(tokens)
	if err != nil || pinned != 8 {
		t.Fatalf("pin %d of 8: %v", pinned, err)
	}
	if err := c.Unpin(pin); err != nil {
		t.Fatal(err)
	}
	if err := c.Unpin(pin); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second unpin: %v", err)
	}
	dir := t.TempDir()
	if n, err := c.SavePrefixes(filepath.Join(dir, "prefixes.state"), 0, 0); err != nil || n != 2 {
		t.Fatalf("saved %d blocks: %v", n, err)
	}
	if _, err := c.LoadPrefixes(filepath.Join(dir, "prefixes.state"), 5, 5); !errors.Is(err, ErrMismatch) {
		t.Fatalf("load with another fingerprint: %v", err)
	}
	path := filepath.Join(dir, "seq.state")
	if err := c.SeqSave(a, path); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SeqLoad(path, 1, 2); !errors.Is(err, ErrMismatch) {
		t.Fatalf("load with another fingerprint: %v", err)
	}
}

func TestCacheErrorsCarryStatusAndMessage(t *testing.T) {
	c := smallCache(t)
	defer c.Close()
	err := c.SeqRelease(4242)
	var ke *Error
	if !errors.As(err, &ke) || ke.Status != ErrNotFound || ke.Message == "" {
		t.Fatalf("release of an unknown id: %#v", err)
	}
	if !errors.Is(err, ErrNotFound) || !strings.HasPrefix(err.Error(), "KVRT_ERR_NOT_FOUND: ") {
		t.Fatalf("%v", err)
	}
	if _, err := NewLayout(0); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("NewLayout(0): %v", err)
	}
	seq, _ := c.SeqCreate()
	_ = c.SeqAppend(seq, []int32{1, 2})
	if err := c.WriteRows(seq, 0, 0, 2, make([]byte, 3), make([]byte, 3)); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("short rows: %v", err)
	}
	if err := c.SeqTruncate(seq, 9); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("truncate past the end: %v", err)
	}
}

func TestUseAfterCloseIsRefusedAndDoubleCloseHarmless(t *testing.T) {
	c := smallCache(t)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SeqCreate(); err != ErrClosed {
		t.Fatalf("SeqCreate after Close: %v", err)
	}
	if _, err := c.Stats(); err != ErrClosed {
		t.Fatalf("Stats after Close: %v", err)
	}
	l, _ := NewLayout(16)
	l.Close()
	l.Close()
	if _, err := l.AddLayers(FullLayer(1, 8), 1); err != ErrClosed {
		t.Fatalf("AddLayers after Close: %v", err)
	}
	if _, err := NewCache(l, 0); err != ErrClosed {
		t.Fatalf("NewCache from a closed layout: %v", err)
	}
}

func TestCacheFromManyGoroutines(t *testing.T) {
	// 64 MiB budget: each OS thread's mimalloc heap takes whole 32 MiB segments
	// of the cache's arena (2 x budget + 64 MiB), so a 1 MiB cache cannot serve
	// 4 threads (a cache bug, reported; not the binding's).
	l, err := NewLayout(4)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.AddLayers(FullLayer(2, 8), 2); err != nil {
		t.Fatal(err)
	}
	c, err := NewCache(l, 64<<20)
	l.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int32) {
			defer wg.Done()
			for i := int32(0); i < 50; i++ {
				s, err := c.SeqCreate()
				if err == nil {
					err = c.SeqAppend(s, []int32{g, i})
				}
				if err == nil {
					err = c.SeqRelease(s)
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		}(int32(g))
	}
	wg.Wait()
	if st, _ := c.Stats(); st.Sequences != 0 {
		t.Fatalf("%d sequences left", st.Sequences)
	}
}
