// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

//go:build !kvrt_no_runtime

package kvrt

import (
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// kvrtCLI is the installed `kvrt` program: $KVRT_CLI, else $KVRT_PREFIX/bin/kvrt.
// An empty $KVRT_CLI (kvrt built without its program) skips the test.
func kvrtCLI(t *testing.T) string {
	if p, set := os.LookupEnv("KVRT_CLI"); set {
		if p == "" {
			t.Skip("KVRT_CLI is empty: kvrt was built without its program")
		}
		return p
	}
	prefix := os.Getenv("KVRT_PREFIX")
	if prefix == "" {
		t.Fatal("set KVRT_CLI or KVRT_PREFIX (ctest sets them)")
	}
	return filepath.Join(prefix, "bin", "kvrt")
}

// tinyCedModel writes the tiny CED preset (6 layers, vocab 256, 2 banks,
// window 8, no vocabulary) with `kvrt ced-init` and loads it.
func tinyCedModel(t *testing.T) *Model {
	path := filepath.Join(t.TempDir(), "ced_tiny.gguf")
	out, err := exec.Command(kvrtCLI(t), "ced-init", "--preset", "tiny", "-o", path).CombinedOutput()
	if err != nil {
		t.Fatalf("kvrt ced-init: %v\n%s", err, out)
	}
	m, err := LoadModel(path)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func cedContext(t *testing.T, m *Model, mode CedPrefillMode, resume CedResume, noPrefixCaching bool) *Context {
	ctx, err := NewContext(m, ContextOptions{NCtx: 256, NSeqMax: 2, Threads: 2, BlockTokens: 4, KVType: KVF32,
		NoPrefixCaching: noPrefixCaching, CedPrefillMode: mode, CedResume: resume})
	if err != nil {
		t.Fatal(err)
	}
	return ctx
}

func sameBits(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

func TestCedModelThroughModelAndContext(t *testing.T) {
	m := tinyCedModel(t)
	defer m.Close()
	info, err := m.Info()
	if err != nil || info.Architecture != "ced" || info.Layers != 6 || info.Vocab != 256 {
		t.Fatalf("%+v %v", info, err)
	}
	if _, err := m.Tokenize("hi", 0); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("tokenize without a vocabulary: %v", err)
	}

	mem, err := m.CedMemory(DTypeF32)
	if err != nil || mem.Layers != 6 || mem.Sources != 2 || mem.Window != 8 || mem.ElemBytes != 4 {
		t.Fatalf("%+v %v", mem, err)
	}
	if mem.GlobalBytesPerToken != mem.MainBytesPerToken+mem.IndexerBytesPerToken ||
		mem.GlobalBytesPerToken >= mem.DenseBytesPerToken {
		t.Fatalf("%+v", mem)
	}
	if bf, err := m.CedMemory(DTypeBF16); err != nil || bf.ElemBytes != 2 {
		t.Fatalf("bf16: %+v %v", bf, err)
	}
	if src, err := m.CedSource(0, DTypeF32); err != nil || src.Layer != 1 || src.Ratio != 2 || src.MainBytesPerToken != 64 {
		t.Fatalf("bank 0: %+v %v", src, err)
	}
	if _, err := m.CedSource(mem.Sources, DTypeF32); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("bank past the end: %v", err)
	}

	tokens := make([]int32, 64)
	for i := range tokens {
		tokens[i] = int32((i*37 + 11) % 256)
	}

	// exact prefill == token-by-token decode, bit for bit
	ctx := cedContext(t, m, CedPrefillExact, CedResumeAuto, true)
	st, err := ctx.Prefill(0, tokens[:30])
	if err != nil || st.PromptTokens != 30 || st.ComputedTokens != 30 || st.ReusedFromCache != 0 || st.KVBytes == 0 {
		t.Fatalf("%+v %v", st, err)
	}
	prefilled, err := ctx.Logits(0)
	if err != nil || len(prefilled) != 256 {
		t.Fatalf("%d logits %v", len(prefilled), err)
	}
	if _, err := ctx.Prefill(1, tokens[:1]); err != nil {
		t.Fatal(err)
	}
	for _, tok := range tokens[1:30] {
		if err := ctx.Decode([]int32{1}, []int32{tok}); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := ctx.SeqLength(1); err != nil || n != 30 {
		t.Fatalf("length %d %v", n, err)
	}
	if decoded, err := ctx.Logits(1); err != nil || !sameBits(prefilled, decoded) {
		t.Fatalf("exact prefill and decode differ (%v)", err)
	}
	if err := ctx.Decode([]int32{0}, []int32{999}); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("bad token: %v", err)
	}
	ctx.Close()

	// a second prefill sharing a 30-token prefix reuses it from the prefix cache
	ctx = cedContext(t, m, CedPrefillExact, CedResumeAuto, false)
	defer ctx.Close()
	if _, err := ctx.Prefill(0, tokens[:30]); err != nil {
		t.Fatal(err)
	}
	st, err = ctx.Prefill(1, tokens[:35])
	if err != nil || st.ReusedTokens == 0 || st.ReusedFromCache == 0 || st.ComputedTokens >= 35 {
		t.Fatalf("shared prefix: %+v %v", st, err)
	}
	// CED prefill with bounded replay: the bank hit is 28 tokens (blocks of 4 under 30)
	ced := cedContext(t, m, CedPrefillCED, CedResumeBoundedReplay, false)
	defer ced.Close()
	if st, err := ced.Prefill(0, tokens[:30]); err != nil || st.ComputedTokens != 30 {
		t.Fatalf("%+v %v", st, err)
	}
	if st, err := ced.Prefill(1, tokens[:35]); err != nil || st.ReusedFromCache != 28 {
		t.Fatalf("bounded replay: %+v %v", st, err)
	}
	// a bad CED option is refused by kvrt
	if _, err := NewContext(m, ContextOptions{CedPrefillMode: 7}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("ced_prefill_mode 7: %v", err)
	}
	if _, err := NewContext(m, ContextOptions{KVType: 42}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("KVType 42: %v", err)
	}
}

func TestCedMemoryOfADenseModelIsUnsupported(t *testing.T) {
	if _, err := testModel.CedMemory(DTypeF32); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("%v", err)
	}
	if _, err := testModel.CedSource(0, DTypeF32); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("%v", err)
	}
}

func TestCedFP4Banks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ced_tiny32.gguf")
	out, err := exec.Command(kvrtCLI(t), "ced-init", "--preset", "tiny", "--idx-dim", "32", "-o", path).CombinedOutput()
	if err != nil {
		t.Fatalf("kvrt ced-init: %v\n%s", err, out)
	}
	m, err := LoadModel(path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	mem, err := m.CedMemory(DTypeFP4)
	if err != nil {
		t.Fatal(err)
	}
	if mem.GlobalBytesPerToken != (18+17)/2.0+(18+17) {
		t.Fatalf("4-bit banks: %v B/token", mem.GlobalBytesPerToken)
	}
	toks := make([]int32, 40)
	for i := range toks {
		toks[i] = int32((i*53 + 7) % 256)
	}
	var logits [][]float32
	for _, nb := range []uint32{512, 3} { // chunked prefill == one pass, bit for bit
		ctx, err := NewContext(m, ContextOptions{NCtx: 256, Threads: 2, BlockTokens: 4, NBatch: nb, KVType: KVF32,
			BankType: KVFP4})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ctx.Prefill(0, toks); err != nil {
			t.Fatal(err)
		}
		l, err := ctx.Logits(0)
		if err != nil {
			t.Fatal(err)
		}
		logits = append(logits, l)
		ctx.Close()
	}
	if !sameBits(logits[0], logits[1]) {
		t.Fatal("4-bit banks: chunked prefill differs from one pass")
	}
	if _, err := NewContext(m, ContextOptions{BlockTokens: 4, BankType: KVI8}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("int8 banks: %v", err)
	}
}
