// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

//go:build !kvrt_no_runtime

package kvrt

import (
	"errors"
	"math"
	"testing"
)

// PrefillLogits / LogitsAt: each requested position's logits equal that prefix's own
// last-position logits, bit for bit; bad positions and unrequested reads fail with the
// C status.
func TestPrefillLogitsEqualEachPrefixAlone(t *testing.T) {
	ctx, err := NewContext(testModel, ContextOptions{NCtx: 128, NBatch: 3, Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	alone, err := NewContext(testModel, ContextOptions{NCtx: 128, Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer alone.Close()
	toks, _ := testModel.Tokenize("The quick brown fox jumps over the lazy dog, then rests in the shade.", 0)
	pos := []uint32{1, 4, uint32(len(toks) - 1)}
	st, err := ctx.PrefillLogits(0, toks, pos)
	if err != nil || st.ComputedTokens != uint64(len(toks)) {
		t.Fatalf("%+v %v", st, err)
	}
	for _, p := range pos {
		got, err := ctx.LogitsAt(0, int(p))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := alone.Prefill(0, toks[:p+1]); err != nil {
			t.Fatal(err)
		}
		want, _ := alone.Logits(0)
		if len(got) != len(want) {
			t.Fatalf("position %d: %d vs %d logits", p, len(got), len(want))
		}
		for i := range want {
			if math.Float32bits(want[i]) != math.Float32bits(got[i]) {
				t.Fatalf("position %d: logit %d differs", p, i)
			}
		}
		alone.SeqRelease(0)
	}
	if _, err := ctx.LogitsAt(0, 2); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unrequested position: %v", err)
	}
	if _, err := ctx.PrefillLogits(0, toks, []uint32{3, 3}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("repeated position: %v", err)
	}
	if _, err := ctx.PrefillLogits(0, toks, []uint32{uint32(len(toks))}); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("position past the prompt: %v", err)
	}
	if _, err := ctx.PrefillLogits(0, toks, nil); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("no positions: %v", err)
	}
	if _, err := ctx.LogitsAt(0, 4); err != nil {
		t.Fatalf("the failed calls changed the sequence: %v", err)
	}
}
