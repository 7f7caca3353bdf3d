// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

//go:build !kvrt_no_runtime

package kvrt

import (
	"errors"
	"strings"
	"sync"
	"testing"
)

func newTestContext(t *testing.T, o ContextOptions) *Context {
	t.Helper()
	c, err := NewContext(testModel, o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestGenerateTextAndStream(t *testing.T) {
	c := newTestContext(t, ContextOptions{NCtx: 256})
	defer c.Close()
	prompt, _ := testModel.Tokenize("The capital of France is", 0)
	var pieces strings.Builder
	var streamed []int32
	_, err := c.Generate(0, prompt, GenerateOptions{MaxTokens: 8, IgnoreEOG: true, OnToken: func(id int32, s string) bool {
		pieces.WriteString(s)
		if id >= 0 {
			streamed = append(streamed, id)
		}
		return true
	}})
	if err != nil {
		t.Fatal(err)
	}
	text, toks, st, err := c.GenerateText(0, prompt, GenerateOptions{MaxTokens: 8, IgnoreEOG: true})
	if err != nil || st.GeneratedTokens != 8 || text != pieces.String() || len(toks) != 8 {
		t.Fatalf("%q %v %+v %v", text, toks, st, err)
	}
	for i := range toks {
		if toks[i] != streamed[i] {
			t.Fatalf("buffer %v vs stream %v", toks, streamed)
		}
	}
	s := c.Stream(0, prompt, GenerateOptions{MaxTokens: 8, IgnoreEOG: true})
	var got strings.Builder
	for tk := range s.Tokens {
		got.WriteString(tk.Text)
	}
	if _, err := s.Wait(); err != nil || got.String() != text {
		t.Fatalf("stream %q vs %q: %v", got.String(), text, err)
	}
	// Stopped early: the generation ends, the context works again.
	s = c.Stream(0, prompt, GenerateOptions{MaxTokens: 200, IgnoreEOG: true})
	<-s.Tokens
	s.Stop()
	if a, _ := c.Activity(); a.Phase != PhaseIdle {
		t.Fatalf("activity after Stop: %+v", a)
	}
	if _, err := c.Generate(0, prompt, GenerateOptions{MaxTokens: 2}); err != nil {
		t.Fatal(err)
	}
}

func TestCancelFromAnotherGoroutine(t *testing.T) {
	c := newTestContext(t, ContextOptions{NCtx: 256})
	defer c.Close()
	prompt, _ := testModel.Tokenize("The capital of France is", 0)
	var wg sync.WaitGroup
	var seen Activity
	n := 0
	_, err := c.Generate(0, prompt, GenerateOptions{MaxTokens: 50, IgnoreEOG: true, OnToken: func(int32, string) bool {
		n++
		if n == 3 {
			wg.Add(1)
			go func() { // another goroutine, while Generate holds the context
				defer wg.Done()
				seen, _ = c.Activity()
				if err := c.Cancel(); err != nil {
					t.Error(err)
				}
			}()
			wg.Wait()
		}
		return true
	}})
	if !errors.Is(err, ErrCancelled) || n != 3 || seen.Phase != PhaseDecode || seen.GeneratedTokens != 3 {
		t.Fatalf("err %v after %d tokens, activity %+v", err, n, seen)
	}
	if l, _ := c.SeqLength(0); l != len(prompt)+2 {
		t.Fatalf("sequence holds %d tokens", l)
	}
	calls := 0
	p := newTestContext(t, ContextOptions{NCtx: 512, NBatch: 16, NoPrefixCaching: true,
		Progress: func(float32, string) bool { calls++; return false }})
	defer p.Close()
	long, _ := testModel.Tokenize(strings.Repeat("the river ran past the mill ", 8), 0)
	if _, err := p.Prefill(0, long); !errors.Is(err, ErrCancelled) || calls != 1 {
		t.Fatalf("progress cancel: %v after %d calls", err, calls)
	}
}

func TestSamplerChainAndPenalties(t *testing.T) {
	s, err := NewSamplerChain(1)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.AddStage(SamplerStage{Type: StagePenalties, RepeatPenalty: 2}); err != nil {
		t.Fatal(err)
	}
	if err := s.AddStage(SamplerStage{Type: StageGreedy}); err != nil {
		t.Fatal(err)
	}
	if tok, _ := s.Sample([]float32{1, 3, 2.5}); tok != 1 {
		t.Fatalf("empty history: %d", tok)
	}
	s.Accept(1)
	if tok, _ := s.Sample([]float32{1, 3, 2.5}); tok != 2 {
		t.Fatalf("penalised: %d", tok)
	}
	if err := s.AddStage(SamplerStage{Type: StageTopK, TopK: 2}); !errors.Is(err, ErrInvalidState) {
		t.Fatalf("stage after greedy: %v", err)
	}
	b, _ := NewSamplerChain(0)
	defer b.Close()
	if err := b.AddStage(SamplerStage{Type: StageLogitBias, Bias: map[int32]float32{2: 5}}); err != nil {
		t.Fatal(err)
	}
	if tok, _ := b.Sample([]float32{0, 1, 0}); tok != 2 {
		t.Fatalf("bias: %d", tok)
	}
}

func TestChatTemplateMemoryLoggingISA(t *testing.T) {
	msgs := []ChatMessage{{Role: "user", Content: "Hi"}}
	if s, err := testModel.ChatApplyTemplate(msgs, false, "chatml"); err != nil || s != "<|im_start|>user\nHi<|im_end|>\n" {
		t.Fatalf("%q %v", s, err)
	}
	if _, err := testModel.ChatApplyTemplate(msgs, true, "{{ unknown }}"); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("unknown template: %v", err)
	}
	var mu sync.Mutex
	var lines []string
	if err := SetLogCallback(func(l LogLevel, m string) { mu.Lock(); lines = append(lines, m); mu.Unlock() }, LogInfo); err != nil {
		t.Fatal(err)
	}
	c := newTestContext(t, ContextOptions{NCtx: 256})
	defer c.Close()
	SetLogCallback(nil, LogNone)
	mu.Lock()
	found := false
	for _, l := range lines {
		found = found || strings.Contains(l, "cache: budget")
	}
	mu.Unlock()
	if !found {
		t.Fatalf("no cache message in %q", lines)
	}
	prompt, _ := testModel.Tokenize("Alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau", 0)
	if _, err := c.Prefill(0, prompt); err != nil {
		t.Fatal(err)
	}
	c.SeqRelease(0)
	st, _ := c.CacheStats()
	if freed, err := c.CacheTrim(0); err != nil || freed == 0 || freed != st.BytesCached {
		t.Fatalf("trim %d of %d: %v", freed, st.BytesCached, err)
	}
	c.Prefill(0, prompt)
	st, _ = c.CacheStats()
	if err := c.CacheSetBudget(st.BytesInUse - 1); !errors.Is(err, ErrInvalidState) {
		t.Fatalf("budget below use: %v", err)
	}
	m2, err := testModel.Retain()
	if err != nil {
		t.Fatal(err)
	}
	if info, err := m2.Info(); err != nil || info.Vocab != 49152 {
		t.Fatalf("retained model: %+v %v", info, err)
	}
	m2.Close()
	if LogWarn.String() != "warn" {
		t.Fatalf("level name %q", LogWarn.String())
	}
	active, detected, err := ISAGet()
	if err != nil || active != detected || ISAAVX2.String() != "avx2" || ISAAMX.String() != "amx" {
		t.Fatalf("%v %v %v", active, detected, err)
	}
	if err := ISASet(ISA(9)); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("bad ISA: %v", err)
	}
}
