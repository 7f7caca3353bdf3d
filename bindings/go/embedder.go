// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

//go:build !kvrt_no_runtime

package kvrt

/*
#include <stdlib.h>
#include <kvrt/kvrt.h>

extern void kvrtGoLog(int32_t level, char *message, void *user_data);
static void kvrt_go_log(int32_t level, const char *message, void *user_data) {
    kvrtGoLog(level, (char *)message, user_data);
}
static kvrt_log_fn kvrt_go_log_fn(void) { return kvrt_go_log; }
*/
import "C"

import (
	"runtime"
	"sync"
	"unsafe"
)

// ---- cancellation and activity ---------------------------------------------

// StopCancelled: the call was stopped by Cancel or a Progress callback (it returned ErrCancelled).
const StopCancelled StopReason = C.KVRT_STOP_CANCELLED

// Phase is what a context is doing (Activity.Phase).
type Phase int32

const (
	PhaseIdle    Phase = C.KVRT_PHASE_IDLE
	PhasePrefill Phase = C.KVRT_PHASE_PREFILL
	PhaseDecode  Phase = C.KVRT_PHASE_DECODE
)

// Activity is a snapshot of what a context is doing (kvrt_context_activity).
type Activity struct {
	Phase           Phase
	CancelPending   bool
	PrefillTotal    uint64
	PrefillDone     uint64
	GeneratedTokens uint64
	Calls           uint64
}

// Cancel stops the call running on c (Prefill, Generate...) from any goroutine,
// without waiting: that call returns an error matching ErrCancelled and the
// sequence keeps what was computed. A cancel while nothing runs is dropped when
// the next call starts. After Close it returns an error (kvrt checks the handle).
func (c *Context) Cancel() error {
	return call(func() C.kvrt_status { return C.kvrt_context_cancel(c.raw) })
}

// Activity reads what c is doing, from any goroutine, without waiting.
func (c *Context) Activity() (Activity, error) {
	var a C.kvrt_context_activity
	err := call(func() C.kvrt_status {
		if st := C.kvrt_context_activity_init(&a, C.size_t(unsafe.Sizeof(a))); st != C.KVRT_OK {
			return st
		}
		return C.kvrt_context_activity_get(&a, c.raw)
	})
	return Activity{Phase(a.phase), a.cancel_pending != 0, uint64(a.prefill_total), uint64(a.prefill_done),
		uint64(a.generated_tokens), uint64(a.calls)}, err
}

// ---- generate into buffers, and as a channel --------------------------------

// GenerateText runs Generate and also returns the answer's text and tokens, through
// kvrt's output buffers (OnToken may be nil). Text longer than 128 bytes per token
// on average is cut at a character boundary.
func (c *Context) GenerateText(seq int32, prompt []int32, o GenerateOptions) (string, []int32, RequestStats, error) {
	maxTok := o.MaxTokens
	if maxTok == 0 {
		maxTok = 256
	}
	toks := (*C.int32_t)(C.malloc(C.size_t(4 * maxTok)))
	defer C.free(unsafe.Pointer(toks))
	textCap := C.size_t(128*maxTok + 1)
	text := (*C.char)(C.malloc(textCap))
	defer C.free(unsafe.Pointer(text))
	written := (*C.size_t)(C.malloc(C.size_t(2 * unsafe.Sizeof(C.size_t(0)))))
	defer C.free(unsafe.Pointer(written))
	ws := unsafe.Slice(written, 2)
	ws[0], ws[1] = 0, 0
	*text = 0
	o.out = &genOut{toks: toks, tokCap: C.size_t(maxTok), tokWritten: &ws[0], text: text, textCap: textCap,
		textWritten: &ws[1]}
	st, err := c.Generate(seq, prompt, o)
	n := int(ws[0])
	if n > int(maxTok) {
		n = int(maxTok)
	}
	out := make([]int32, n)
	copy(out, unsafe.Slice((*int32)(unsafe.Pointer(toks)), n))
	return C.GoString(text), out, st, err
}

// Token is one generated token and the text it completes (ID -1: text held back for a
// stop string, flushed at the end).
type Token struct {
	ID   int32
	Text string
}

// Stream is a generation running on its own goroutine; read Tokens until it is closed.
type Stream struct {
	Tokens <-chan Token
	ctx    *Context
	stop   chan struct{}
	once   sync.Once
	done   chan struct{}
	stats  RequestStats
	err    error
}

// Stream starts Generate on a new goroutine and delivers each token on the channel
// (o.OnToken is ignored). Stop cancels it; Wait returns its statistics and error.
//
//	s := ctx.Stream(0, prompt, kvrt.GenerateOptions{MaxTokens: 64})
//	for t := range s.Tokens { fmt.Print(t.Text) }
//	stats, err := s.Wait()
func (c *Context) Stream(seq int32, prompt []int32, o GenerateOptions) *Stream {
	ch := make(chan Token, 16)
	s := &Stream{Tokens: ch, ctx: c, stop: make(chan struct{}), done: make(chan struct{})}
	o.OnToken = func(id int32, text string) bool {
		select {
		case ch <- Token{id, text}:
			return true
		case <-s.stop:
			return false
		}
	}
	go func() {
		defer close(s.done)
		defer close(ch)
		s.stats, s.err = c.Generate(seq, prompt, o)
	}()
	return s
}

// Stop cancels the generation (also during its prefill) and waits for it to end.
// Tokens not yet read are dropped. Idempotent.
func (s *Stream) Stop() {
	s.once.Do(func() { close(s.stop) })
	_ = s.ctx.Cancel()
	for range s.Tokens { // drain so the generating goroutine can finish
	}
	<-s.done
}

// Wait waits for the generation to end (reading Tokens to the end first, or Stop)
// and returns its statistics and error.
func (s *Stream) Wait() (RequestStats, error) {
	<-s.done
	return s.stats, s.err
}

// ---- sampler chains --------------------------------------------------------

// StageType is a kvrt_sampler_stage_type.
type StageType int32

const (
	StagePenalties   StageType = C.KVRT_SAMPLER_PENALTIES
	StageLogitBias   StageType = C.KVRT_SAMPLER_LOGIT_BIAS
	StageTopK        StageType = C.KVRT_SAMPLER_TOP_K
	StageTopP        StageType = C.KVRT_SAMPLER_TOP_P
	StageMinP        StageType = C.KVRT_SAMPLER_MIN_P
	StageTemperature StageType = C.KVRT_SAMPLER_TEMPERATURE
	StageDist        StageType = C.KVRT_SAMPLER_DIST
	StageGreedy      StageType = C.KVRT_SAMPLER_GREEDY
)

// SamplerStage is one stage of a chain; the fields its Type reads are used. Zero
// values: RepeatPenalty 0 means 1 (off); PenaltyLastN 0 means 64.
type SamplerStage struct {
	Type             StageType
	TopK             int32
	P                float32 // top-p, min-p
	Temperature      float32
	PenaltyLastN     int32 // -1: the whole history
	RepeatPenalty    float32
	FrequencyPenalty float32
	PresencePenalty  float32
	Bias             map[int32]float32
}

// NewSamplerChain creates an empty sampler chain (kvrt_sampler_chain_create): add
// stages with AddStage; without a dist or greedy stage it picks the argmax.
func NewSamplerChain(seed uint64) (*Sampler, error) {
	var p *C.kvrt_sampler
	if err := call(func() C.kvrt_status { return C.kvrt_sampler_chain_create(&p, C.uint64_t(seed)) }); err != nil {
		return nil, err
	}
	s := &Sampler{handle[C.kvrt_sampler]{p: p}}
	runtime.SetFinalizer(s, (*Sampler).Close)
	return s, nil
}

func (s *Sampler) with(f func(p *C.kvrt_sampler) C.kvrt_status) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.p == nil {
		return ErrClosed
	}
	return call(func() C.kvrt_status { return f(s.p) })
}

// AddStage appends a stage to a chain (the bias map is copied).
func (s *Sampler) AddStage(st SamplerStage) error {
	n := len(st.Bias)
	toks := (*C.int32_t)(C.malloc(C.size_t(4 * (n + 1))))
	defer C.free(unsafe.Pointer(toks))
	vals := (*C.float)(C.malloc(C.size_t(4 * (n + 1))))
	defer C.free(unsafe.Pointer(vals))
	ts, vs := unsafe.Slice(toks, n+1), unsafe.Slice(vals, n+1)
	i := 0
	for t, b := range st.Bias {
		ts[i], vs[i] = C.int32_t(t), C.float(b)
		i++
	}
	return s.with(func(p *C.kvrt_sampler) C.kvrt_status {
		var cs C.kvrt_sampler_stage
		if rc := C.kvrt_sampler_stage_init(&cs, C.size_t(unsafe.Sizeof(cs))); rc != C.KVRT_OK {
			return rc
		}
		cs._type = C.int32_t(st.Type)
		cs.top_k = C.int32_t(st.TopK)
		cs.p = C.float(st.P)
		cs.temperature = C.float(st.Temperature)
		if st.PenaltyLastN != 0 {
			cs.penalty_last_n = C.int32_t(st.PenaltyLastN)
		}
		if st.RepeatPenalty != 0 {
			cs.repeat_penalty = C.float(st.RepeatPenalty)
		}
		cs.frequency_penalty = C.float(st.FrequencyPenalty)
		cs.presence_penalty = C.float(st.PresencePenalty)
		if n > 0 {
			cs.bias_tokens, cs.bias_values, cs.n_bias = toks, vals, C.size_t(n)
		}
		return C.kvrt_sampler_chain_add(p, &cs)
	})
}

// Accept appends token to the history penalty stages look at (your own sampling loop).
func (s *Sampler) Accept(token int32) error {
	return s.with(func(p *C.kvrt_sampler) C.kvrt_status { return C.kvrt_sampler_accept(p, C.int32_t(token)) })
}

// Reset empties the history.
func (s *Sampler) Reset() error {
	return s.with(func(p *C.kvrt_sampler) C.kvrt_status { return C.kvrt_sampler_reset(p) })
}

// ---- chat template override, memory control --------------------------------

// ChatApplyTemplate renders messages with a chosen template: "" = the model's own (as
// ChatApply), a family name ("chatml", "llama2", "llama3", "gemma", "zephyr") or a
// Jinja template text kvrt recognises.
func (m *Model) ChatApplyTemplate(messages []ChatMessage, addAssistant bool, template string) (string, error) {
	if template == "" {
		return m.ChatApply(messages, addAssistant)
	}
	tmpl := C.CString(template)
	defer C.free(unsafe.Pointer(tmpl))
	return m.renderChat(messages, addAssistant, func(d *C.char, c C.size_t, w *C.size_t, p *C.kvrt_model,
		cm *C.kvrt_chat_message, n C.size_t, add C.int) C.kvrt_status {
		return C.kvrt_model_chat_apply_template(d, c, w, p, tmpl, cm, n, add)
	})
}

// SetBudget changes the cache's byte budget (shrinking evicts cached prefix blocks; an
// error matching ErrInvalidState below the bytes sequences hold).
func (c *Cache) SetBudget(budgetBytes uint64) error {
	return c.with(func(p *C.kvrt_cache) C.kvrt_status { return C.kvrt_cache_set_budget(p, C.uint64_t(budgetBytes)) })
}

// Trim releases cached prefix blocks until at most keepBytes remain; returns the bytes freed.
func (c *Cache) Trim(keepBytes uint64) (uint64, error) {
	var n C.uint64_t
	err := c.with(func(p *C.kvrt_cache) C.kvrt_status { return C.kvrt_cache_trim(&n, p, C.uint64_t(keepBytes)) })
	return uint64(n), err
}

func (c *Context) cachePtr() (*C.kvrt_cache, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.p == nil {
		return nil, ErrClosed
	}
	var cache *C.kvrt_cache
	err := call(func() C.kvrt_status { return C.kvrt_context_get_cache(&cache, c.p) })
	return cache, err
}

// CacheSetBudget is Cache.SetBudget on the context's cache.
func (c *Context) CacheSetBudget(budgetBytes uint64) error {
	cache, err := c.cachePtr()
	if err != nil {
		return err
	}
	return call(func() C.kvrt_status { return C.kvrt_cache_set_budget(cache, C.uint64_t(budgetBytes)) })
}

// CacheTrim is Cache.Trim on the context's cache.
func (c *Context) CacheTrim(keepBytes uint64) (uint64, error) {
	cache, err := c.cachePtr()
	if err != nil {
		return 0, err
	}
	var n C.uint64_t
	err = call(func() C.kvrt_status { return C.kvrt_cache_trim(&n, cache, C.uint64_t(keepBytes)) })
	return uint64(n), err
}

// ---- logging and ISA (kvrt/process.h) ----------------------------------------

// LogLevel is a kvrt_log_level.
type LogLevel int32

const (
	LogDebug LogLevel = C.KVRT_LOG_DEBUG
	LogInfo  LogLevel = C.KVRT_LOG_INFO
	LogWarn  LogLevel = C.KVRT_LOG_WARN
	LogError LogLevel = C.KVRT_LOG_ERROR
	LogNone  LogLevel = C.KVRT_LOG_NONE
)

var logMu sync.Mutex
var logBox *callbackBox

//export kvrtGoLog
func kvrtGoLog(level C.int32_t, message *C.char, userData unsafe.Pointer) {
	b := boxFrom(userData)
	f := b.fn.(func(LogLevel, string))
	m := C.GoString(message)
	b.run(func() bool { f(LogLevel(level), m); return true })
}

// SetLogCallback routes kvrt's log (messages at minLevel or above) to fn; nil stops
// it (the default: kvrt prints nothing). fn runs on the goroutine of the kvrt call
// that logged, as it returns; a panic in fn is swallowed.
func SetLogCallback(fn func(level LogLevel, message string), minLevel LogLevel) error {
	logMu.Lock()
	defer logMu.Unlock()
	var box *callbackBox
	err := call(func() C.kvrt_status {
		if fn == nil {
			return C.kvrt_set_log_callback(C.KVRT_LOG_NONE, nil, nil)
		}
		box = newCallbackBox(fn)
		return C.kvrt_set_log_callback(C.int32_t(minLevel), C.kvrt_go_log_fn(), box.userData())
	})
	if err != nil {
		if box != nil {
			box.free()
		}
		return err
	}
	if logBox != nil { // kvrt never calls the previous callback again
		logBox.free()
	}
	logBox = box
	return nil
}

// String is the level's name ("debug", "info", "warn", "error", "none").
func (l LogLevel) String() string { return C.GoString(C.kvrt_log_level_name(C.int32_t(l))) }

// Retain returns another handle of the same loaded model (kvrt_model_retain): no copy
// of the weights; each handle is closed on its own.
func (m *Model) Retain() (*Model, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.p == nil {
		return nil, ErrClosed
	}
	var p *C.kvrt_model
	if err := call(func() C.kvrt_status { return C.kvrt_model_retain(&p, m.p) }); err != nil {
		return nil, err
	}
	r := &Model{handle[C.kvrt_model]{p: p}}
	runtime.SetFinalizer(r, (*Model).Close)
	return r, nil
}

// ISA is a kvrt_isa level of the CPU kernels.
type ISA int32

const (
	ISAScalar     ISA = C.KVRT_ISA_SCALAR
	ISAAVX2       ISA = C.KVRT_ISA_AVX2
	ISAAVXVNNI    ISA = C.KVRT_ISA_AVXVNNI
	ISAAVX512     ISA = C.KVRT_ISA_AVX512
	ISAAVX512BF16 ISA = C.KVRT_ISA_AVX512BF16
	ISAAMX        ISA = C.KVRT_ISA_AMX
)

// String is the level's name as KVRT_ISA spells it.
func (i ISA) String() string { return C.GoString(C.kvrt_isa_name(C.int32_t(i))) }

// ISAGet returns the level the kernels use and the CPU's best.
func ISAGet() (active, detected ISA, err error) {
	var a, d C.int32_t
	err = call(func() C.kvrt_status { return C.kvrt_isa_get(&a, &d) })
	return ISA(a), ISA(d), err
}

// ISASet limits the kernels to limit (a level above the CPU's gives the CPU's); an
// error matching ErrInvalidState while a context is computing.
func ISASet(limit ISA) error {
	return call(func() C.kvrt_status { return C.kvrt_isa_set(C.int32_t(limit)) })
}
