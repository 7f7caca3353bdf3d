// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

//go:build !kvrt_no_runtime

package kvrt

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"
)

func statePrompt() []int32 {
	p := make([]int32, 40)
	for i := range p {
		p[i] = int32((i*7919+13)%1000 + 1)
	}
	return p
}

func argmaxF(l []float32) int32 {
	best := 0
	for i := range l {
		if l[i] > l[best] {
			best = i
		}
	}
	return int32(best)
}

func greedySteps(t *testing.T, ctx *Context, seq int32, n int) [][]float32 {
	t.Helper()
	var out [][]float32
	for i := 0; i < n; i++ {
		l, err := ctx.Logits(seq)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, l)
		if err := ctx.Decode([]int32{seq}, []int32{argmaxF(l)}); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// The saving process (run by TestSeqSaveRestoredEqualsNeverStopped with KVRT_GO_SAVE_TO set).
func TestSeqSaveChild(t *testing.T) {
	path := os.Getenv("KVRT_GO_SAVE_TO")
	if path == "" {
		return // only as a child process
	}
	ctx, err := NewContext(testModel, ContextOptions{NCtx: 512, NSeqMax: 2, Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	if _, err := ctx.Prefill(1, statePrompt()); err != nil {
		t.Fatal(err)
	}
	greedySteps(t, ctx, 1, 4)
	if err := ctx.SeqSave(1, path); err != nil {
		t.Fatal(err)
	}
}

func TestSeqSaveRestoredEqualsNeverStopped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "conv.kvrt")
	cmd := exec.Command(os.Args[0], "-test.run=^TestSeqSaveChild$")
	cmd.Env = append(os.Environ(), "KVRT_GO_SAVE_TO="+path)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("saving process: %v\n%s", err, out)
	}
	ctx, err := NewContext(testModel, ContextOptions{NCtx: 512, NSeqMax: 3, Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	if err := ctx.SeqLoad(2, path); err != nil {
		t.Fatal(err)
	}
	toks, err := ctx.SeqTokens(2)
	if err != nil || len(toks) != 44 || !reflect.DeepEqual(toks[:40], statePrompt()) {
		t.Fatalf("loaded tokens %v (%v)", toks, err)
	}
	restored := greedySteps(t, ctx, 2, 32)
	if _, err := ctx.Prefill(0, statePrompt()); err != nil {
		t.Fatal(err)
	}
	greedySteps(t, ctx, 0, 4)
	reference := greedySteps(t, ctx, 0, 32)
	if !reflect.DeepEqual(restored, reference) {
		t.Fatal("32 decode steps after save, exit, load differ from the uninterrupted run")
	}
	if err := ctx.SeqFork(0, 1); err != nil {
		t.Fatal(err)
	}
	if err := ctx.SeqTruncate(1, 10); err != nil {
		t.Fatal(err)
	}
	if toks, _ := ctx.SeqTokens(1); !reflect.DeepEqual(toks, statePrompt()[:10]) {
		t.Fatalf("truncated fork holds %v", toks)
	}
	if err := ctx.SeqTruncate(1, 1000); err == nil {
		t.Fatal("truncate past the length succeeded")
	}
	if err := ctx.SeqLoad(0, filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Fatal("loading a missing file succeeded")
	}
	if n, _ := ctx.SeqLength(0); n != 40+4+32 {
		t.Fatalf("a failed load changed the sequence: length %d", n)
	}
	other, err := NewContext(testModel, ContextOptions{NCtx: 512, Threads: 2, BlockTokens: 32})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := other.SeqLoad(0, path); err == nil {
		t.Fatal("a file of another block size loaded")
	}
}

func TestSeqRestoreLoadsOrRecomputes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "conv.kvrt")
	a, err := NewContext(testModel, ContextOptions{NCtx: 512, NSeqMax: 2, Threads: 2, BlockTokens: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, err := a.Prefill(0, statePrompt()); err != nil {
		t.Fatal(err)
	}
	saved, _ := a.Logits(0)
	if err := a.SeqSave(0, path); err != nil {
		t.Fatal(err)
	}
	st, re, err := a.SeqRestore(1, path)
	if err != nil || re || st.PromptTokens != 40 || st.ReusedTokens != 40 || st.ComputedTokens != 0 {
		t.Fatalf("restore as saved: %v recomputed=%v %+v", err, re, st)
	}
	if l, _ := a.Logits(1); !reflect.DeepEqual(l, saved) {
		t.Fatal("restored logits differ from the saved ones")
	}
	b, err := NewContext(testModel, ContextOptions{NCtx: 512, NSeqMax: 2, Threads: 2, BlockTokens: 32})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.SeqLoad(0, path); err == nil {
		t.Fatal("a file of another block size loaded")
	}
	st, re, err = b.SeqRestore(0, path)
	if err != nil || !re || st.PromptTokens != 40 || st.ComputedTokens != 40 {
		t.Fatalf("restore by recomputing: %v recomputed=%v %+v", err, re, st)
	}
	restored, _ := b.Logits(0)
	if _, err := b.Prefill(1, statePrompt()); err != nil {
		t.Fatal(err)
	}
	if l, _ := b.Logits(1); !reflect.DeepEqual(l, restored) {
		t.Fatal("recomputed logits differ from a prefill of the same tokens")
	}
	if _, _, err := b.SeqRestore(0, filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Fatal("restoring a missing file succeeded")
	}
	if toks, _ := b.SeqTokens(0); !reflect.DeepEqual(toks, statePrompt()) {
		t.Fatal("a failed restore changed the sequence")
	}
}

func TestDiskTierPrefixSurvivesTheContext(t *testing.T) {
	dir := t.TempDir()
	doc := make([]int32, 200)
	for i := range doc {
		doc[i] = int32(i*37%900 + 20)
	}
	a, err := NewContext(testModel, ContextOptions{NCtx: 512, Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.CacheAddTier(TierDisk, dir, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Prefill(0, doc); err != nil {
		t.Fatal(err)
	}
	if n, err := a.CachePersist(); err != nil || n != 3 { // 3 whole blocks of 64 (the default)
		t.Fatalf("persist: %d, %v", n, err)
	}
	a.Close()
	b, err := NewContext(testModel, ContextOptions{NCtx: 512, Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.CacheAddTier(TierDisk, dir, 0); err != nil {
		t.Fatal(err)
	}
	st, err := b.Prefill(0, doc)
	if err != nil || st.ReusedFromDisk != 192 || st.ReusedFromRAM != 0 {
		t.Fatalf("prefill from disk: %+v, %v", st, err)
	}
	ts, err := b.CacheTierStats()
	if err != nil || len(ts) != 1 || ts[0].LoadedBlocks != 3 || ts[0].Kind != TierDisk {
		t.Fatalf("tier stats %+v, %v", ts, err)
	}
	warm, _ := b.Logits(0)
	cold, err := NewContext(testModel, ContextOptions{NCtx: 512, Threads: 2, NoPrefixCaching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cold.Close()
	if _, err := cold.Prefill(0, doc); err != nil {
		t.Fatal(err)
	}
	if l, _ := cold.Logits(0); !reflect.DeepEqual(l, warm) {
		t.Fatal("logits after a disk-tier hit differ from a cold prefill")
	}
	if err := b.CacheAddTier(TierKind(9), dir, 0); err == nil {
		t.Fatal("an unknown tier kind was accepted")
	}
}
