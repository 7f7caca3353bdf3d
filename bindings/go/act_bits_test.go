// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

//go:build !kvrt_no_runtime

package kvrt

import (
	"errors"
	"math"
	"testing"
)

func actLogitBits(t *testing.T, c *Context) []uint32 {
	t.Helper()
	l, err := c.Logits(0)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]uint32, len(l))
	for i, x := range l {
		b[i] = math.Float32bits(x)
	}
	return b
}

func sameLogitBits(a, b []uint32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// ContextOptions.ActBits: the default (0: 16-bit codes for the K/V projections), 8 and 16
// are three different computations; 16 is deterministic and keeps prefix hit == cold; a
// value other than 0, 8 or 16 is ErrInvalidArgument.
func TestActBits16IsItsOwnDeterministicMode(t *testing.T) {
	open := func(bits, threads int32, noPrefix bool) *Context {
		c, err := NewContext(testModel, ContextOptions{NCtx: 128, Threads: threads, BlockTokens: 4,
			NoPrefixCaching: noPrefix, ActBits: bits})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	c8, c16, hit, cd := open(8, 2, true), open(16, 2, true), open(16, 1, false), open(0, 2, true)
	defer cd.Close()
	defer c8.Close()
	defer c16.Close()
	defer hit.Close()
	toks, _ := testModel.Tokenize("The lighthouse keeper climbed the stairs and looked out over the sea.", 0)
	for _, c := range []*Context{c8, c16, cd} {
		if _, err := c.Prefill(0, toks); err != nil {
			t.Fatal(err)
		}
	}
	if sameLogitBits(actLogitBits(t, c8), actLogitBits(t, c16)) {
		t.Fatal("act_bits 16 gave the 8-bit logits")
	}
	if d := actLogitBits(t, cd); sameLogitBits(d, actLogitBits(t, c8)) || sameLogitBits(d, actLogitBits(t, c16)) {
		t.Fatal("the default act_bits gave the logits of 8 or 16 everywhere")
	}
	if _, err := hit.Prefill(0, toks[:9]); err != nil {
		t.Fatal(err)
	}
	hit.SeqRelease(0)
	st, err := hit.Prefill(0, toks)
	if err != nil || st.ReusedTokens < 8 {
		t.Fatalf("%+v %v", st, err)
	}
	if !sameLogitBits(actLogitBits(t, hit), actLogitBits(t, c16)) {
		t.Fatal("a prefix hit under act_bits 16 differs from the cold run")
	}
	// The outlier residuals: the default's computation (since 0.3.3), and a prefix hit under it
	// equals its cold run.
	c9, hit9 := open(ActBitsOutliers, 2, true), open(ActBitsOutliers, 1, false)
	defer c9.Close()
	defer hit9.Close()
	if _, err := c9.Prefill(0, toks); err != nil {
		t.Fatal(err)
	}
	if !sameLogitBits(actLogitBits(t, c9), actLogitBits(t, cd)) {
		t.Fatal("ActBitsOutliers and the default gave different logits")
	}
	if _, err := hit9.Prefill(0, toks[:9]); err != nil {
		t.Fatal(err)
	}
	hit9.SeqRelease(0)
	if st, err := hit9.Prefill(0, toks); err != nil || st.ReusedTokens < 8 {
		t.Fatalf("%+v %v", st, err)
	}
	if !sameLogitBits(actLogitBits(t, hit9), actLogitBits(t, c9)) {
		t.Fatal("a prefix hit under ActBitsOutliers differs from the cold run")
	}
	for _, bad := range []int32{4, 10, 12, 32, -8} {
		if _, err := NewContext(testModel, ContextOptions{NCtx: 64, ActBits: bad}); !errors.Is(err, ErrInvalidArgument) {
			t.Fatalf("ActBits %d: %v", bad, err)
		}
	}
}
