// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

//go:build !kvrt_no_runtime

package kvrt

/*
#include <stdlib.h>
#include <kvrt/kvrt.h>

extern int kvrtGoToken(int32_t token, char *text, size_t text_len, void *user_data);
static int kvrt_go_token(int32_t token, const char *text, size_t text_len, void *user_data) {
    return kvrtGoToken(token, (char *)text, text_len, user_data);
}
static kvrt_token_fn kvrt_go_token_fn(void) { return kvrt_go_token; }
extern int kvrtGoProgress(float fraction, char *stage, void *user_data);
static int kvrt_go_ctx_progress(float fraction, const char *stage, void *user_data) {
    return kvrtGoProgress(fraction, (char *)stage, user_data);
}
static kvrt_progress_fn kvrt_go_ctx_progress_fn(void) { return kvrt_go_ctx_progress; }
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// KVType is the element type of cached K/V rows (kvrt_context_config.kv_dtype, a
// kvrt_dtype: the values are those of DType, the one dtype enum of the C API). The zero
// value keeps kvrt's default (f16); KVTypeOf converts a DType.
type KVType int32

const (
	KVDefault KVType = iota // kvrt's default: f16
	KVF32
	KVF16
	KVBF16
	KVI8      // int8, an f16 scale per 32 elements of a head (head_dim % 32 == 0)
	KVFP8E4M3 // fp8 e4m3, an f16 scale per head of a row
	KVFP4     // 4-bit e2m1, a scale per 32 elements: CED bank rows and indexer keys only (ContextOptions.BankType)
)

// KVTypeOf is the KVType of a DType (DTypeF16 -> KVF16, ...); KVDefault for a DType
// contexts cannot use.
func KVTypeOf(d DType) KVType {
	for _, t := range []KVType{KVF32, KVF16, KVBF16, KVI8, KVFP8E4M3, KVFP4} {
		if r, _ := t.raw(); DType(r) == d {
			return t
		}
	}
	return KVDefault
}

func (t KVType) raw() (C.int32_t, bool) {
	switch t {
	case KVF32:
		return C.KVRT_DTYPE_F32, true
	case KVF16:
		return C.KVRT_DTYPE_F16, true
	case KVBF16:
		return C.KVRT_DTYPE_BF16, true
	case KVI8:
		return C.KVRT_DTYPE_I8, true
	case KVFP8E4M3:
		return C.KVRT_DTYPE_FP8_E4M3, true
	case KVFP4:
		return C.KVRT_DTYPE_FP4, true
	}
	return 0, false
}

// CedPrefillMode is the prefill semantics of a CED model
// (kvrt_ced_prefill_mode); ignored for models of other architectures.
type CedPrefillMode int32

// ActBitsOutliers is ContextOptions.ActBits's mode of 8-bit codes with the residuals of each
// row's outlier blocks (KVRT_ACT_BITS_OUTLIERS; the default's computation since 0.3.3).
const ActBitsOutliers int32 = C.KVRT_ACT_BITS_OUTLIERS

const (
	CedPrefillExact CedPrefillMode = C.KVRT_CED_PREFILL_EXACT // every layer over every prompt token (default)
	CedPrefillCED   CedPrefillMode = C.KVRT_CED_PREFILL_CED   // encoder over all N tokens, decoder over the last W
)

// CedResume is how a prefill of a CED model restores the window state on a
// prefix-cache hit (kvrt_ced_resume); ignored for models of other architectures.
type CedResume int32

const (
	CedResumeAuto          CedResume = C.KVRT_CED_RESUME_AUTO           // checkpoint when no dearer than a replay (default)
	CedResumeCheckpoint    CedResume = C.KVRT_CED_RESUME_CHECKPOINT     // exact resumption only
	CedResumeBoundedReplay CedResume = C.KVRT_CED_RESUME_BOUNDED_REPLAY // replay [H-W, H) (approximate)
	CedResumeCold          CedResume = C.KVRT_CED_RESUME_COLD           // no reuse
)

// ContextOptions are the options of NewContext; zero values take kvrt's defaults.
type ContextOptions struct {
	NCtx            uint32 // positions per sequence; 0 = the model's training context
	NSeqMax         uint32 // sequence ids [0, NSeqMax); 0 = 1
	NBatch          uint32 // prefill chunk; 0 = 512
	Threads         int32  // 0 = up to the OpenMP default, each decode step's count chosen by kvrt; N = exactly N
	KVType          KVType // element type of cached K/V rows; KVDefault = f16
	BlockTokens     uint32 // 0 = the library default: 64 for decoder models, 16 for CED ones
	CacheBytes      uint64 // 0 = kvrt's default budget
	NoPrefixCaching bool
	CacheSalt       string
	// ShareCacheWith: another context over the same model whose KV cache
	// (and prefix cache) this one shares.
	ShareCacheWith *Context
	// CED models only (kvrt/ced.h): prefill semantics and resume policy.
	CedPrefillMode CedPrefillMode
	CedResume      CedResume
	// K and V rows of different types (llama.cpp's type_k / type_v); KVDefault: KVType.
	KType KVType
	VType KVType
	// Progress of long prefills (fraction, stage "prefill"); return false to cancel
	// (the call returns ErrCancelled). Runs on the goroutine of the call.
	Progress func(fraction float32, stage string) bool
	// Activation code width of the quantised weight matmuls (kvrt_context_config.act_bits):
	// 0 (the default, the same as ActBitsOutliers = 9) 16-bit codes for the K/V projections and
	// 8-bit codes with residual codes for each row's outlier blocks elsewhere, 8 everywhere
	// (fastest, ~twice the default's distance from exact math) or 16 everywhere (~256x finer
	// activation rounding, closest to exact math);
	// blocks computed under one setting are never reused by another.
	ActBits int32
	// CED models only: the bank rows' and indexer keys' type (kvrt_context_config.bank_dtype):
	// KVF32, KVF16, KVBF16 or KVFP4 (4-bit banks); KVDefault: KVType, or f16 when KVType is
	// KVI8 / KVFP8E4M3 (which then apply to the window rows only).
	BankType KVType
}

// Context runs a model over a KV cache. kvrt allows one thread at a time per
// context; the Go handle serialises its calls with a mutex. Cancel and
// Activity do not take it: any goroutine may call them while another runs
// Generate or Prefill.
type Context struct {
	handle[C.kvrt_context]
	raw      *C.kvrt_context // the handle for Cancel / Activity (a checked serial: safe after Close)
	progress *callbackBox    // ContextOptions.Progress, alive with the context
}

// NewContext creates a context running m.
func NewContext(m *Model, o ContextOptions) (*Context, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.p == nil {
		return nil, ErrClosed
	}
	var shared *C.kvrt_cache
	if o.ShareCacheWith != nil {
		other := o.ShareCacheWith
		other.mu.Lock()
		defer other.mu.Unlock()
		if other.p == nil {
			return nil, ErrClosed
		}
		if err := call(func() C.kvrt_status { return C.kvrt_context_get_cache(&shared, other.p) }); err != nil {
			return nil, err
		}
	}
	kv, ok := o.KVType.raw()
	if !ok && o.KVType != KVDefault {
		return nil, bindingError(ErrInvalidArgument, "ContextOptions.KVType: %d is not a KVType", int32(o.KVType))
	}
	kt, kok := o.KType.raw()
	if !kok && o.KType != KVDefault {
		return nil, bindingError(ErrInvalidArgument, "ContextOptions.KType: %d is not a KVType", int32(o.KType))
	}
	vt, vok := o.VType.raw()
	if !vok && o.VType != KVDefault {
		return nil, bindingError(ErrInvalidArgument, "ContextOptions.VType: %d is not a KVType", int32(o.VType))
	}
	bt, bok := o.BankType.raw()
	if !bok && o.BankType != KVDefault {
		return nil, bindingError(ErrInvalidArgument, "ContextOptions.BankType: %d is not a KVType", int32(o.BankType))
	}
	salt := C.CString(o.CacheSalt)
	defer C.free(unsafe.Pointer(salt))
	var progress *callbackBox
	if o.Progress != nil {
		progress = newCallbackBox(o.Progress)
	}
	var p *C.kvrt_context
	err := call(func() C.kvrt_status {
		var cfg C.kvrt_context_config
		if st := C.kvrt_context_config_init(&cfg, C.size_t(unsafe.Sizeof(cfg))); st != C.KVRT_OK {
			return st
		}
		cfg.n_ctx = C.uint32_t(o.NCtx)
		if o.NSeqMax != 0 {
			cfg.n_seq_max = C.uint32_t(o.NSeqMax)
		}
		if o.NBatch != 0 {
			cfg.n_batch = C.uint32_t(o.NBatch)
		}
		cfg.n_threads = C.int32_t(o.Threads)
		if o.KVType != KVDefault {
			cfg.kv_dtype = kv
		}
		if o.BlockTokens != 0 {
			cfg.block_tokens = C.uint32_t(o.BlockTokens)
		}
		cfg.cache_bytes = C.uint64_t(o.CacheBytes)
		cfg.cache = shared
		if o.NoPrefixCaching {
			cfg.prefix_caching = 0
		}
		cfg.cache_salt = salt
		cfg.ced_prefill_mode = C.int32_t(o.CedPrefillMode)
		cfg.ced_resume = C.int32_t(o.CedResume)
		if kok {
			cfg.k_dtype = kt
		}
		if vok {
			cfg.v_dtype = vt
		}
		if o.ActBits != 0 {
			cfg.act_bits = C.int32_t(o.ActBits)
		}
		if bok {
			cfg.bank_dtype = bt
		}
		if progress != nil {
			cfg.progress = C.kvrt_go_ctx_progress_fn()
			cfg.progress_user_data = progress.userData()
		}
		return C.kvrt_context_create(&p, m.p, &cfg)
	})
	if err != nil {
		if progress != nil {
			progress.free()
		}
		return nil, err
	}
	c := &Context{handle: handle[C.kvrt_context]{p: p}, raw: p, progress: progress}
	runtime.SetFinalizer(c, (*Context).Close)
	return c, nil
}

// Close destroys the context. Idempotent; later calls return ErrClosed.
func (c *Context) Close() error {
	if c.release(func(p *C.kvrt_context) { C.kvrt_context_destroy(p) }) {
		runtime.SetFinalizer(c, nil)
		if c.progress != nil {
			c.progress.free()
		}
	}
	return nil
}

func (c *Context) with(f func(p *C.kvrt_context) C.kvrt_status) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.p == nil {
		return ErrClosed
	}
	err := call(func() C.kvrt_status { return f(c.p) })
	if c.progress != nil && c.progress.panic != nil { // the Progress callback panicked: re-raise here
		p := c.progress.panic
		c.progress.panic = nil
		panic(p)
	}
	return err
}

// StopReason says why generation stopped.
type StopReason int32

const (
	StopNone        StopReason = C.KVRT_STOP_NONE
	StopEOG         StopReason = C.KVRT_STOP_EOG
	StopMaxTokens   StopReason = C.KVRT_STOP_MAX_TOKENS
	StopString      StopReason = C.KVRT_STOP_STRING
	StopCallback    StopReason = C.KVRT_STOP_CALLBACK
	StopContextFull StopReason = C.KVRT_STOP_CONTEXT_FULL
)

// RequestStats are the statistics of one prefill or generate call.
type RequestStats struct {
	PromptTokens, ReusedTokens, ReusedFromCache, ComputedTokens, GeneratedTokens uint64
	TimeToFirstToken, PrefillSeconds, DecodeSeconds, DecodeTokensPerSecond       float64
	KVBytes                                                                      uint64
	StopReason                                                                   StopReason
	// Where ReusedFromCache came from: RAM, a disk tier, a remote (Redis) tier.
	ReusedFromRAM, ReusedFromDisk, ReusedFromRemote uint64
	// Generate: the time spent picking tokens (not in DecodeSeconds).
	SampleSeconds float64
}

func statsFrom(s *C.kvrt_request_stats) RequestStats {
	return RequestStats{uint64(s.prompt_tokens), uint64(s.reused_tokens), uint64(s.reused_from_cache),
		uint64(s.computed_tokens), uint64(s.generated_tokens), float64(s.time_to_first_token_s),
		float64(s.prefill_s), float64(s.decode_s), float64(s.decode_tokens_per_s), uint64(s.kv_bytes),
		StopReason(s.stop_reason), uint64(s.reused_from_ram), uint64(s.reused_from_disk),
		uint64(s.reused_from_remote), float64(s.sample_s)}
}

// Prefill makes sequence seq hold exactly tokens and computes the last
// token's logits (reusing its kept prefix and the prefix cache).
func (c *Context) Prefill(seq int32, tokens []int32) (RequestStats, error) {
	var s C.kvrt_request_stats
	err := c.with(func(p *C.kvrt_context) C.kvrt_status {
		if st := C.kvrt_request_stats_init(&s, C.size_t(unsafe.Sizeof(s))); st != C.KVRT_OK {
			return st
		}
		return C.kvrt_context_prefill(&s, p, C.int32_t(seq), tokensPtr(tokens), C.size_t(len(tokens)))
	})
	return statsFrom(&s), err
}

// PrefillBatch prefills several sequences in shared forward passes: sequence
// seqs[i] ends holding prompts[i] exactly as Prefill(seqs[i], prompts[i]) alone
// would leave it, bit for bit. Every argument is checked before any sequence
// changes. Returns one RequestStats per prompt, in order.
func (c *Context) PrefillBatch(seqs []int32, prompts [][]int32) ([]RequestStats, error) {
	if len(seqs) != len(prompts) {
		return nil, bindingError(ErrInvalidArgument, "prefill batch: %d sequence ids but %d prompts", len(seqs), len(prompts))
	}
	n := len(seqs)
	total := 0
	for _, p := range prompts {
		total += len(p)
	}
	// cgo forbids handing C an array of Go pointers: the prompts and the array of
	// pointers to them are copied to C memory for the call.
	var ptrs **C.int32_t
	var lens *C.size_t
	if n > 0 {
		ptrMem := C.malloc(C.size_t(n) * C.size_t(unsafe.Sizeof(uintptr(0))))
		lenMem := C.malloc(C.size_t(n) * C.size_t(unsafe.Sizeof(C.size_t(0))))
		tokMem := C.malloc(C.size_t(total+1) * 4)
		defer C.free(ptrMem)
		defer C.free(lenMem)
		defer C.free(tokMem)
		ptrSlice := unsafe.Slice((**C.int32_t)(ptrMem), n)
		lenSlice := unsafe.Slice((*C.size_t)(lenMem), n)
		tokSlice := unsafe.Slice((*C.int32_t)(tokMem), total+1)
		off := 0
		for i, p := range prompts {
			ptrSlice[i] = nil
			if len(p) > 0 {
				ptrSlice[i] = &tokSlice[off]
			}
			for j, t := range p {
				tokSlice[off+j] = C.int32_t(t)
			}
			lenSlice[i] = C.size_t(len(p))
			off += len(p)
		}
		ptrs = (**C.int32_t)(ptrMem)
		lens = (*C.size_t)(lenMem)
	}
	stats := make([]C.kvrt_request_stats, n)
	err := c.with(func(p *C.kvrt_context) C.kvrt_status {
		for i := range stats {
			if st := C.kvrt_request_stats_init(&stats[i], C.size_t(unsafe.Sizeof(stats[i]))); st != C.KVRT_OK {
				return st
			}
		}
		var sp *C.kvrt_request_stats
		if n > 0 {
			sp = &stats[0]
		}
		return C.kvrt_context_prefill_batch(sp, p, tokensPtr(seqs), ptrs, lens, C.size_t(n))
	})
	if err != nil {
		return nil, err
	}
	out := make([]RequestStats, n)
	for i := range stats {
		out[i] = statsFrom(&stats[i])
	}
	return out, nil
}

// Decode appends tokens[i] to sequence seqs[i] and computes their logits.
func (c *Context) Decode(seqs, tokens []int32) error {
	if len(seqs) != len(tokens) {
		return bindingError(ErrInvalidArgument, "decode: %d sequence ids but %d tokens", len(seqs), len(tokens))
	}
	return c.with(func(p *C.kvrt_context) C.kvrt_status {
		return C.kvrt_context_decode(p, tokensPtr(seqs), tokensPtr(tokens), C.size_t(len(seqs)))
	})
}

// Logits returns the logits of sequence seq's last computed token.
func (c *Context) Logits(seq int32) ([]float32, error) {
	var out []float32
	err := c.with(func(p *C.kvrt_context) C.kvrt_status {
		var n C.size_t
		if st := C.kvrt_context_get_logits(nil, 0, &n, p, C.int32_t(seq)); st != C.KVRT_OK && st != C.KVRT_ERR_BUFFER_TOO_SMALL {
			return st
		}
		out = make([]float32, int(n)+1)
		st := C.kvrt_context_get_logits((*C.float)(unsafe.Pointer(&out[0])), C.size_t(len(out)), &n, p, C.int32_t(seq))
		out = out[:n]
		return st
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// PrefillLogits is Prefill that also computes the logits of positions (strictly
// increasing, each below len(tokens)): position p's logits equal those of prefilling
// tokens[:p+1] alone, bit for bit. Reuse stops at the first position. Read them with
// LogitsAt.
func (c *Context) PrefillLogits(seq int32, tokens []int32, positions []uint32) (RequestStats, error) {
	var st C.kvrt_request_stats
	var pp *C.uint32_t
	if len(positions) > 0 {
		mem := C.malloc(C.size_t(len(positions)) * 4)
		defer C.free(mem)
		ps := unsafe.Slice((*C.uint32_t)(mem), len(positions))
		for i, p := range positions {
			ps[i] = C.uint32_t(p)
		}
		pp = (*C.uint32_t)(mem)
	}
	err := c.with(func(p *C.kvrt_context) C.kvrt_status {
		if s := C.kvrt_request_stats_init(&st, C.size_t(unsafe.Sizeof(st))); s != C.KVRT_OK {
			return s
		}
		return C.kvrt_context_prefill_logits(&st, p, C.int32_t(seq), tokensPtr(tokens), C.size_t(len(tokens)), pp,
			C.size_t(len(positions)))
	})
	if err != nil {
		return RequestStats{}, err
	}
	return statsFrom(&st), nil
}

// LogitsAt returns the logits of a position the last PrefillLogits of seq asked for.
func (c *Context) LogitsAt(seq int32, position int) ([]float32, error) {
	if position < 0 {
		return nil, bindingError(ErrOutOfRange, "logits at: position %d is negative", position)
	}
	var out []float32
	err := c.with(func(p *C.kvrt_context) C.kvrt_status {
		var n C.size_t
		if st := C.kvrt_context_get_logits_at(nil, 0, &n, p, C.int32_t(seq), C.size_t(position)); st != C.KVRT_OK && st != C.KVRT_ERR_BUFFER_TOO_SMALL {
			return st
		}
		out = make([]float32, int(n)+1)
		st := C.kvrt_context_get_logits_at((*C.float)(unsafe.Pointer(&out[0])), C.size_t(len(out)), &n, p, C.int32_t(seq), C.size_t(position))
		out = out[:n]
		return st
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// SeqLength is the number of tokens sequence seq holds.
func (c *Context) SeqLength(seq int32) (int, error) {
	var n C.size_t
	err := c.with(func(p *C.kvrt_context) C.kvrt_status { return C.kvrt_context_seq_length(&n, p, C.int32_t(seq)) })
	return int(n), err
}

// SeqRelease empties sequence seq (its full blocks stay in the prefix cache).
func (c *Context) SeqRelease(seq int32) error {
	return c.with(func(p *C.kvrt_context) C.kvrt_status { return C.kvrt_context_seq_release(p, C.int32_t(seq)) })
}

// CacheStats returns the statistics of the context's KV cache.
func (c *Context) CacheStats() (CacheStats, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.p == nil {
		return CacheStats{}, ErrClosed
	}
	var cache *C.kvrt_cache
	if err := call(func() C.kvrt_status { return C.kvrt_context_get_cache(&cache, c.p) }); err != nil {
		return CacheStats{}, err
	}
	return statsOf(cache)
}

// SamplerOptions: Temperature <= 0 is greedy.
type SamplerOptions struct {
	Temperature float32
	TopK        int32
	TopP        float32 // 0 = 1 (off)
	MinP        float32
	Seed        uint64
}

// Sampler picks tokens from logits (one goroutine at a time; serialised).
type Sampler struct {
	handle[C.kvrt_sampler]
}

func NewSampler(o SamplerOptions) (*Sampler, error) {
	var p *C.kvrt_sampler
	err := call(func() C.kvrt_status {
		var cfg C.kvrt_sampler_config
		if st := C.kvrt_sampler_config_init(&cfg, C.size_t(unsafe.Sizeof(cfg))); st != C.KVRT_OK {
			return st
		}
		cfg.temperature = C.float(o.Temperature)
		cfg.top_k = C.int32_t(o.TopK)
		if o.TopP != 0 {
			cfg.top_p = C.float(o.TopP)
		}
		cfg.min_p = C.float(o.MinP)
		cfg.seed = C.uint64_t(o.Seed)
		return C.kvrt_sampler_create(&p, &cfg)
	})
	if err != nil {
		return nil, err
	}
	s := &Sampler{handle[C.kvrt_sampler]{p: p}}
	runtime.SetFinalizer(s, (*Sampler).Close)
	return s, nil
}

// Close destroys the sampler. Idempotent.
func (s *Sampler) Close() error {
	if s.release(func(p *C.kvrt_sampler) { C.kvrt_sampler_destroy(p) }) {
		runtime.SetFinalizer(s, nil)
	}
	return nil
}

// Sample picks a token from logits.
func (s *Sampler) Sample(logits []float32) (int32, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.p == nil {
		return 0, ErrClosed
	}
	var out C.int32_t
	var lp *C.float
	if len(logits) > 0 {
		lp = (*C.float)(unsafe.Pointer(&logits[0]))
	}
	err := call(func() C.kvrt_status { return C.kvrt_sampler_sample(&out, s.p, lp, C.size_t(len(logits))) })
	return int32(out), err
}

// GenerateOptions are the options of Generate; zero MaxTokens means 256.
type GenerateOptions struct {
	MaxTokens   uint32
	IgnoreEOG   bool // keep going past end-of-generation tokens
	StopStrings []string
	Sampler     *Sampler // nil: greedy
	// OnToken streams each token and its text (a last call with token -1
	// flushes text held back for a stop string); return false to stop. It runs
	// on the calling goroutine while the context is busy: it must not call
	// methods of the same Context (they would wait for Generate forever),
	// except Cancel and Activity, which never wait. A
	// panic inside it stops generation and is re-raised by Generate.
	OnToken func(token int32, text string) bool

	out *genOut // GenerateText's buffers
}

// genOut: kvrt_generate_config's output fields (C memory).
type genOut struct {
	toks        *C.int32_t
	tokCap      C.size_t
	tokWritten  *C.size_t
	text        *C.char
	textCap     C.size_t
	textWritten *C.size_t
}

//export kvrtGoToken
func kvrtGoToken(token C.int32_t, text *C.char, n C.size_t, userData unsafe.Pointer) C.int {
	b := boxFrom(userData)
	f := b.fn.(func(int32, string) bool)
	s := C.GoStringN(text, C.int(n))
	return b.run(func() bool { return f(int32(token), s) })
}

// Generate prefills prompt into sequence seq, then samples and decodes until
// a stop condition.
func (c *Context) Generate(seq int32, prompt []int32, o GenerateOptions) (RequestStats, error) {
	nStops := len(o.StopStrings)
	stops := (**C.char)(C.malloc(C.size_t(unsafe.Sizeof((*C.char)(nil))) * C.size_t(nStops+1)))
	defer C.free(unsafe.Pointer(stops))
	stopArr := unsafe.Slice(stops, nStops+1)
	for i, s := range o.StopStrings {
		stopArr[i] = C.CString(s)
	}
	defer func() {
		for i := 0; i < nStops; i++ {
			C.free(unsafe.Pointer(stopArr[i]))
		}
	}()
	if o.Sampler != nil {
		o.Sampler.mu.Lock()
		defer o.Sampler.mu.Unlock()
		if o.Sampler.p == nil {
			return RequestStats{}, ErrClosed
		}
	}
	var box *callbackBox
	if o.OnToken != nil {
		box = newCallbackBox(o.OnToken)
	}
	var s C.kvrt_request_stats
	err := c.with(func(p *C.kvrt_context) C.kvrt_status {
		var cfg C.kvrt_generate_config
		if st := C.kvrt_generate_config_init(&cfg, C.size_t(unsafe.Sizeof(cfg))); st != C.KVRT_OK {
			return st
		}
		if st := C.kvrt_request_stats_init(&s, C.size_t(unsafe.Sizeof(s))); st != C.KVRT_OK {
			return st
		}
		if o.MaxTokens != 0 {
			cfg.max_tokens = C.uint32_t(o.MaxTokens)
		}
		if o.IgnoreEOG {
			cfg.stop_at_eog = 0
		}
		if o.Sampler != nil {
			cfg.sampler = o.Sampler.p
		}
		if nStops > 0 {
			cfg.stop_strings = stops
			cfg.n_stop_strings = C.size_t(nStops)
		}
		if box != nil {
			cfg.on_token = C.kvrt_go_token_fn()
			cfg.user_data = box.userData()
		}
		if o.out != nil {
			cfg.tokens_out, cfg.tokens_capacity, cfg.tokens_written = o.out.toks, o.out.tokCap, o.out.tokWritten
			cfg.text_out, cfg.text_capacity, cfg.text_written = o.out.text, o.out.textCap, o.out.textWritten
		}
		return C.kvrt_context_generate(&s, p, C.int32_t(seq), tokensPtr(prompt), C.size_t(len(prompt)), &cfg)
	})
	if box != nil {
		box.finish() // re-panics here if OnToken panicked
	}
	return statsFrom(&s), err
}

// SeqKVBytes is the KV bytes sequence seq holds (shared prefix blocks included).
func (c *Context) SeqKVBytes(seq int32) (uint64, error) {
	var n C.uint64_t
	err := c.with(func(p *C.kvrt_context) C.kvrt_status { return C.kvrt_context_seq_kv_bytes(&n, p, C.int32_t(seq)) })
	return uint64(n), err
}
