// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

//go:build !kvrt_no_runtime

package kvrt

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var testModel *Model

func modelPath() string {
	if p := os.Getenv("KVRT_MODEL"); p != "" {
		return p
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache/kvrt/models/SmolLM2-135M-Instruct.Q4_1.gguf")
}

func TestMain(m *testing.M) {
	var err error
	testModel, err = LoadModel(modelPath())
	if err != nil {
		println("kvrt go tests: cannot load", modelPath(), ":", err.Error(), "(run scripts/setup.sh)")
		os.Exit(1)
	}
	code := m.Run()
	testModel.Close()
	os.Exit(code)
}

func TestBadModelPath(t *testing.T) {
	_, err := LoadModel("/nonexistent/model.gguf")
	var ke *Error
	if !errors.As(err, &ke) || (ke.Status != ErrIO && ke.Status != ErrNotFound) {
		t.Fatalf("missing file: %v", err)
	}
	if !strings.Contains(ke.Message, "nonexistent") {
		t.Fatalf("the message should name the file: %q", ke.Message)
	}
	calls := 0
	_, err = LoadModelWith(modelPath(), ModelOptions{Progress: func(float32, string) bool { calls++; return false }})
	if !errors.Is(err, ErrCancelled) || calls == 0 {
		t.Fatalf("cancelled load: %v after %d calls", err, calls)
	}
}

func TestModelInfoAndTokenizer(t *testing.T) {
	info, err := testModel.Info()
	if err != nil || info.Architecture != "llama" || info.Vocab != 49152 || info.Layers != 30 {
		t.Fatalf("%+v %v", info, err)
	}
	toks, err := testModel.Tokenize("The sky is", 0)
	if err != nil || len(toks) != 3 || toks[0] != 504 || toks[1] != 6376 || toks[2] != 314 {
		t.Fatalf("%v %v", toks, err)
	}
	text, err := testModel.Detokenize(toks, false)
	if err != nil || text != "The sky is" {
		t.Fatalf("%q %v", text, err)
	}
	if _, err := testModel.Detokenize([]int32{1 << 30}, false); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("bad id: %v", err)
	}
	if v, err := testModel.Meta("general.architecture"); err != nil || v != "llama" {
		t.Fatalf("%q %v", v, err)
	}
	if _, err := testModel.Meta("no.such.key"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing key: %v", err)
	}
	if keys, err := testModel.MetaKeys(); err != nil || len(keys) == 0 {
		t.Fatalf("%d keys, %v", len(keys), err)
	}
	tensors, err := testModel.Tensors()
	if err != nil || len(tensors) == 0 || tensors[0].Elements == 0 || tensors[0].Type == "" {
		t.Fatalf("%d tensors, %v", len(tensors), err)
	}
	chat, err := testModel.ChatApply([]ChatMessage{{"user", "Hi"}}, true)
	if err != nil || !strings.HasSuffix(chat, "<|im_start|>assistant\n") {
		t.Fatalf("%q %v", chat, err)
	}
}

func TestContextPrefixReuseAndGenerate(t *testing.T) {
	ctx, err := NewContext(testModel, ContextOptions{NCtx: 512, NSeqMax: 2, Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	doc := strings.Repeat("Lighthouses guide ships along dangerous coasts. ", 8)
	a, _ := testModel.Tokenize(doc+"Question one?", 0)
	b, _ := testModel.Tokenize(doc+"Question two?", 0)
	s, err := ctx.Prefill(0, a)
	if err != nil || s.ComputedTokens != uint64(len(a)) {
		t.Fatalf("%+v %v", s, err)
	}
	logits, err := ctx.Logits(0)
	if err != nil || len(logits) != 49152 {
		t.Fatalf("%d logits, %v", len(logits), err)
	}
	s, err = ctx.Prefill(1, b)
	if err != nil || s.ReusedFromCache < 16 || s.ReusedTokens+s.ComputedTokens != uint64(len(b)) {
		t.Fatalf("second question: %+v %v", s, err)
	}
	if kv, err := ctx.SeqKVBytes(1); err != nil || kv == 0 {
		t.Fatalf("kv bytes %d, %v", kv, err)
	}
	if _, err := ctx.Prefill(9, a); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("bad seq id: %v", err)
	}
	if _, err := ctx.Prefill(0, []int32{-1}); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("bad token: %v", err)
	}

	chat, _ := testModel.ChatApply([]ChatMessage{{"user", "What is the capital of France?"}}, true)
	prompt, _ := testModel.Tokenize(chat, TokenizeParseSpecial)
	var out strings.Builder
	var streamed []int32
	s, err = ctx.Generate(0, prompt, GenerateOptions{MaxTokens: 8, OnToken: func(tok int32, text string) bool {
		out.WriteString(text)
		if tok >= 0 { // -1: a final flush of held-back text
			streamed = append(streamed, tok)
		}
		return true
	}})
	if err != nil || s.GeneratedTokens == 0 || uint64(len(streamed)) != s.GeneratedTokens {
		t.Fatalf("%+v %d streamed, %v", s, len(streamed), err)
	}
	if s.SampleSeconds <= 0 || s.SampleSeconds > 60 { // the sampler's time (0.5)
		t.Fatalf("SampleSeconds %v", s.SampleSeconds)
	}
	if text, _ := testModel.Detokenize(streamed, false); text != out.String() {
		t.Fatalf("streamed %q, tokens say %q", out.String(), text)
	}
	n := 0
	s, err = ctx.Generate(0, prompt, GenerateOptions{MaxTokens: 8, OnToken: func(int32, string) bool { n++; return n < 2 }})
	if err != nil || s.StopReason != StopCallback {
		t.Fatalf("stop from the callback: %+v %v", s, err)
	}
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Fatalf("the callback's panic should be re-raised in Go, got %v", r)
			}
		}()
		ctx.Generate(0, prompt, GenerateOptions{MaxTokens: 8, OnToken: func(int32, string) bool { panic("boom") }})
	}()
	sampler, err := NewSampler(SamplerOptions{Temperature: 0.7, TopK: 40, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ctx.Generate(1, prompt, GenerateOptions{MaxTokens: 4, Sampler: sampler}); err != nil {
		t.Fatal(err)
	}
	sampler.Close()
	sampler.Close()
	if _, err := sampler.Sample(logits); err != ErrClosed {
		t.Fatalf("sample after Close: %v", err)
	}
	if _, err := NewSampler(SamplerOptions{Temperature: 1, TopP: 3}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("top_p 3: %v", err)
	}
	other, err := NewContext(testModel, ContextOptions{NCtx: 512, Threads: 2, ShareCacheWith: ctx})
	if err != nil {
		t.Fatal(err)
	}
	if s, err := other.Prefill(0, a); err != nil || s.ReusedFromCache < 16 {
		t.Fatalf("shared cache: %+v %v", s, err)
	}
	other.Close()
	other.Close()
	if _, err := other.Prefill(0, a); err != ErrClosed {
		t.Fatalf("prefill after Close: %v", err)
	}
}

func TestContextPrefillBatch(t *testing.T) {
	ctx, err := NewContext(testModel, ContextOptions{NCtx: 512, NSeqMax: 2, Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	a, _ := testModel.Tokenize("The capital of France is", 0)
	b, _ := testModel.Tokenize("def add(a, b):\n    return", 0)
	stats, err := ctx.PrefillBatch([]int32{0, 1}, [][]int32{a, b})
	if err != nil || len(stats) != 2 || stats[1].PromptTokens != uint64(len(b)) {
		t.Fatalf("%+v %v", stats, err)
	}
	batched, _ := ctx.Logits(1)
	alone, err := NewContext(testModel, ContextOptions{NCtx: 512, Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer alone.Close()
	if _, err := alone.Prefill(0, b); err != nil {
		t.Fatal(err)
	}
	want, _ := alone.Logits(0)
	for i := range want {
		if math.Float32bits(want[i]) != math.Float32bits(batched[i]) {
			t.Fatalf("logit %d: batched %v, alone %v", i, batched[i], want[i])
		}
	}
	if _, err := ctx.PrefillBatch([]int32{0, 0}, [][]int32{b, a}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("repeated sequence: %v", err)
	}
	if n, _ := ctx.SeqLength(0); n != len(a) {
		t.Fatalf("a refused batch changed sequence 0: %d tokens", n)
	}
	if _, err := ctx.PrefillBatch(nil, nil); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("empty batch: %v", err)
	}
	if _, err := ctx.PrefillBatch([]int32{0}, [][]int32{a, b}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("mismatched lengths: %v", err)
	}
}

func TestModelUseAfterClose(t *testing.T) {
	m, err := LoadModel(modelPath())
	if err != nil {
		t.Fatal(err)
	}
	ctx, err := NewContext(m, ContextOptions{NCtx: 128, Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
	m.Close()
	if _, err := m.Tokenize("x", 0); err != ErrClosed {
		t.Fatalf("tokenize after Close: %v", err)
	}
	if _, err := NewContext(m, ContextOptions{}); err != ErrClosed {
		t.Fatalf("context from a closed model: %v", err)
	}
	// The context holds its own reference: it keeps working.
	if _, err := ctx.Prefill(0, []int32{504, 6376, 314}); err != nil {
		t.Fatal(err)
	}
	ctx.Close()
}
