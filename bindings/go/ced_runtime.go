package kvrt

/*
#include <stdlib.h>
#include <kvrt/kvrt.h>
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// CED prefill modes and resume policies (kvrt/ced.h).
const (
	CedPrefillExact = int32(C.KVRT_CED_PREFILL_EXACT)
	CedPrefillCED   = int32(C.KVRT_CED_PREFILL_CED)

	CedResumeAuto          = int32(C.KVRT_CED_RESUME_AUTO)
	CedResumeCheckpoint    = int32(C.KVRT_CED_RESUME_CHECKPOINT)
	CedResumeBoundedReplay = int32(C.KVRT_CED_RESUME_BOUNDED_REPLAY)
	CedResumeCold          = int32(C.KVRT_CED_RESUME_COLD)
)

// CedModel is a loaded CED GGUF: immutable, safe from many goroutines.
type CedModel struct {
	handle[C.kvrt_ced_model]
}

// LoadCedModel loads a CED GGUF file.
func LoadCedModel(path string) (*CedModel, error) {
	cp := C.CString(path)
	defer C.free(unsafe.Pointer(cp))
	var p *C.kvrt_ced_model
	if err := call(func() C.kvrt_status { return C.kvrt_ced_model_load(&p, cp) }); err != nil {
		return nil, err
	}
	m := &CedModel{handle[C.kvrt_ced_model]{p: p}}
	runtime.SetFinalizer(m, (*CedModel).Close)
	return m, nil
}

// Close drops this handle's reference (sessions keep the model). Idempotent.
func (m *CedModel) Close() error {
	if m.release(func(p *C.kvrt_ced_model) { C.kvrt_ced_model_destroy(p) }) {
		runtime.SetFinalizer(m, nil)
	}
	return nil
}

// CedMemory is the KV memory of a CED model by component.
type CedMemory struct {
	Layers, Sources, Window, ElemBytes                           uint32
	MainBytesPerToken, IndexerBytesPerToken, GlobalBytesPerToken float64
	WindowBytesPerSequence                                       uint64
	DenseKVHeads, DenseHeadDim                                   uint32
	DenseBytesPerToken                                           float64
}

func (m *CedModel) Memory() (CedMemory, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.p == nil {
		return CedMemory{}, ErrClosed
	}
	var c C.kvrt_ced_memory
	c.struct_size = C.size_t(unsafe.Sizeof(c))
	err := call(func() C.kvrt_status { return C.kvrt_ced_memory_get(&c, m.p) })
	return CedMemory{uint32(c.n_layers), uint32(c.n_sources), uint32(c.window), uint32(c.elem_bytes),
		float64(c.main_bytes_per_token), float64(c.indexer_bytes_per_token), float64(c.global_bytes_per_token),
		uint64(c.window_bytes_per_sequence), uint32(c.dense_kv_heads), uint32(c.dense_head_dim),
		float64(c.dense_bytes_per_token)}, err
}

// Source returns bank index's source layer and ratio.
func (m *CedModel) Source(index uint32) (layer, ratio int32, err error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.p == nil {
		return 0, 0, ErrClosed
	}
	var l, r C.int32_t
	err = call(func() C.kvrt_status { return C.kvrt_ced_memory_source(&l, &r, nil, nil, m.p, C.uint32_t(index)) })
	return int32(l), int32(r), err
}

// CedSession is a CED runtime with its caches (calls serialised by a mutex).
type CedSession struct {
	handle[C.kvrt_ced_session]
}

// NewCedSession creates a session over m with kvrt's default options.
func NewCedSession(m *CedModel) (*CedSession, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.p == nil {
		return nil, ErrClosed
	}
	var p *C.kvrt_ced_session
	if err := call(func() C.kvrt_status { return C.kvrt_ced_session_create(&p, m.p, nil) }); err != nil {
		return nil, err
	}
	s := &CedSession{handle[C.kvrt_ced_session]{p: p}}
	runtime.SetFinalizer(s, (*CedSession).Close)
	return s, nil
}

// Close frees the session, its sequences and caches. Idempotent.
func (s *CedSession) Close() error {
	if s.release(func(p *C.kvrt_ced_session) { C.kvrt_ced_session_destroy(p) }) {
		runtime.SetFinalizer(s, nil)
	}
	return nil
}

func (s *CedSession) with(f func(p *C.kvrt_ced_session) C.kvrt_status) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.p == nil {
		return ErrClosed
	}
	return call(func() C.kvrt_status { return f(s.p) })
}

func (s *CedSession) SeqCreate() (uint64, error) {
	var id C.uint64_t
	err := s.with(func(p *C.kvrt_ced_session) C.kvrt_status { return C.kvrt_ced_seq_create(&id, p) })
	return uint64(id), err
}

func (s *CedSession) SeqRelease(seq uint64) error {
	return s.with(func(p *C.kvrt_ced_session) C.kvrt_status { return C.kvrt_ced_seq_release(p, C.uint64_t(seq)) })
}

func (s *CedSession) SeqFork(seq uint64) (uint64, error) {
	var id C.uint64_t
	err := s.with(func(p *C.kvrt_ced_session) C.kvrt_status { return C.kvrt_ced_seq_fork(&id, p, C.uint64_t(seq)) })
	return uint64(id), err
}

func (s *CedSession) SeqTruncate(seq uint64, pos int64) error {
	return s.with(func(p *C.kvrt_ced_session) C.kvrt_status {
		return C.kvrt_ced_seq_truncate(p, C.uint64_t(seq), C.int64_t(pos))
	})
}

func (s *CedSession) SeqLength(seq uint64) (int64, error) {
	var n C.int64_t
	err := s.with(func(p *C.kvrt_ced_session) C.kvrt_status { return C.kvrt_ced_seq_length(&n, p, C.uint64_t(seq)) })
	return int64(n), err
}

// CedPrefillInfo says what a prefill did.
type CedPrefillInfo struct {
	Hit                         int64
	ExactResume                 bool
	Replayed, Computed, Decoded int64
}

// Prefill runs tokens on an empty sequence.
func (s *CedSession) Prefill(seq uint64, tokens []int32, mode, resume int32) (CedPrefillInfo, error) {
	var i C.kvrt_ced_prefill_info
	i.struct_size = C.size_t(unsafe.Sizeof(i))
	err := s.with(func(p *C.kvrt_ced_session) C.kvrt_status {
		return C.kvrt_ced_prefill(&i, p, C.uint64_t(seq), tokensPtr(tokens), C.size_t(len(tokens)), C.int32_t(mode),
			C.int32_t(resume))
	})
	return CedPrefillInfo{int64(i.hit), i.exact_resume != 0, int64(i.replayed), int64(i.computed), int64(i.decoded)}, err
}

// Extend appends tokens through every layer.
func (s *CedSession) Extend(seq uint64, tokens []int32) error {
	return s.with(func(p *C.kvrt_ced_session) C.kvrt_status {
		return C.kvrt_ced_extend(p, C.uint64_t(seq), tokensPtr(tokens), C.size_t(len(tokens)))
	})
}

// Logits returns the logits of the sequence's last processed position.
func (s *CedSession) Logits(seq uint64) ([]float32, error) {
	var out []float32
	err := s.with(func(p *C.kvrt_ced_session) C.kvrt_status {
		var n C.size_t
		if st := C.kvrt_ced_logits(nil, 0, &n, p, C.uint64_t(seq)); st != C.KVRT_OK && st != C.KVRT_ERR_BUFFER_TOO_SMALL {
			return st
		}
		out = make([]float32, int(n)+1)
		st := C.kvrt_ced_logits((*C.float)(unsafe.Pointer(&out[0])), C.size_t(len(out)), &n, p, C.uint64_t(seq))
		out = out[:n]
		return st
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Bytes returns (bank bytes per token, bank bytes in use, window bytes in use).
func (s *CedSession) Bytes() (float64, uint64, uint64, error) {
	var a C.double
	var b, c C.uint64_t
	err := s.with(func(p *C.kvrt_ced_session) C.kvrt_status { return C.kvrt_ced_session_bytes(&a, &b, &c, p) })
	return float64(a), uint64(b), uint64(c), err
}
