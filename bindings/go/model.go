// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

//go:build !kvrt_no_runtime

package kvrt

/*
#include <stdlib.h>
#include <kvrt/kvrt.h>

extern int kvrtGoProgress(float fraction, char *stage, void *user_data);
static int kvrt_go_progress(float fraction, const char *stage, void *user_data) {
    return kvrtGoProgress(fraction, (char *)stage, user_data);
}
static kvrt_progress_fn kvrt_go_progress_fn(void) { return kvrt_go_progress; }
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// Model is a loaded GGUF model: immutable, safe from many goroutines. Close
// drops this handle's reference; contexts keep the weights alive.
type Model struct {
	handle[C.kvrt_model]
}

// ModelOptions are the options of LoadModelWith.
type ModelOptions struct {
	Threads int32
	// Progress is called with (fraction, stage); return false to cancel.
	Progress func(fraction float32, stage string) bool
}

//export kvrtGoProgress
func kvrtGoProgress(fraction C.float, stage *C.char, userData unsafe.Pointer) C.int {
	b := boxFrom(userData)
	f := b.fn.(func(float32, string) bool)
	s := C.GoString(stage)
	return b.run(func() bool { return f(float32(fraction), s) })
}

// LoadModel loads a GGUF file with the default options.
func LoadModel(path string) (*Model, error) { return LoadModelWith(path, ModelOptions{}) }

// LoadModelWith loads a GGUF file.
func LoadModelWith(path string, o ModelOptions) (*Model, error) {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var box *callbackBox
	if o.Progress != nil {
		box = newCallbackBox(o.Progress)
	}
	var p *C.kvrt_model
	err := call(func() C.kvrt_status {
		var cfg C.kvrt_model_config
		if st := C.kvrt_model_config_init(&cfg, C.size_t(unsafe.Sizeof(cfg))); st != C.KVRT_OK {
			return st
		}
		cfg.n_threads = C.int32_t(o.Threads)
		if box != nil {
			cfg.progress = C.kvrt_go_progress_fn()
			cfg.progress_user_data = box.userData()
		}
		return C.kvrt_model_load(&p, cpath, &cfg)
	})
	if box != nil {
		box.finish()
	}
	if err != nil {
		return nil, err
	}
	m := &Model{handle[C.kvrt_model]{p: p}}
	runtime.SetFinalizer(m, (*Model).Close)
	return m, nil
}

// Close releases the handle. Idempotent; later calls return ErrClosed.
func (m *Model) Close() error {
	if m.release(func(p *C.kvrt_model) { C.kvrt_model_destroy(p) }) {
		runtime.SetFinalizer(m, nil)
	}
	return nil
}

func (m *Model) with(f func(p *C.kvrt_model) C.kvrt_status) error {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.p == nil {
		return ErrClosed
	}
	return call(func() C.kvrt_status { return f(m.p) })
}

// ModelInfo holds facts about a model.
type ModelInfo struct {
	Architecture, Name                                  string
	Layers, Vocab, Embd, FF, Heads, KVHeads, HeadDim    uint32
	CtxTrain, SlidingWindow, LayersFull, LayersWindow   uint32
	RopeTheta, RMSEps                                   float32
	BOS, EOS, EOT                                       int32 // -1 when absent
	Params, WeightBytes                                 uint64
	KVBytesPerTokenFull, KVBytesPerTokenWindow, KVBytes uint64
	Fingerprint                                         [16]byte
}

func (m *Model) Info() (ModelInfo, error) {
	var i C.kvrt_model_info
	var out ModelInfo
	err := m.with(func(p *C.kvrt_model) C.kvrt_status {
		if st := C.kvrt_model_info_init(&i, C.size_t(unsafe.Sizeof(i))); st != C.KVRT_OK {
			return st
		}
		st := C.kvrt_model_get_info(&i, p)
		if st == C.KVRT_OK { // copy the strings while the model is surely alive
			out.Architecture, out.Name = C.GoString(i.architecture), C.GoString(i.name)
		}
		return st
	})
	if err != nil {
		return out, err
	}
	out.Layers, out.Vocab, out.Embd, out.FF = uint32(i.n_layers), uint32(i.n_vocab), uint32(i.n_embd), uint32(i.n_ff)
	out.Heads, out.KVHeads, out.HeadDim = uint32(i.n_heads), uint32(i.n_kv_heads), uint32(i.head_dim)
	out.CtxTrain, out.SlidingWindow = uint32(i.n_ctx_train), uint32(i.sliding_window)
	out.LayersFull, out.LayersWindow = uint32(i.n_layers_full), uint32(i.n_layers_window)
	out.RopeTheta, out.RMSEps = float32(i.rope_theta), float32(i.rms_eps)
	out.BOS, out.EOS, out.EOT = int32(i.bos_token), int32(i.eos_token), int32(i.eot_token)
	out.Params, out.WeightBytes = uint64(i.n_params), uint64(i.weight_bytes)
	out.KVBytesPerTokenFull, out.KVBytesPerTokenWindow = uint64(i.kv_bytes_per_token_full), uint64(i.kv_bytes_per_token_window)
	out.KVBytes = uint64(i.kv_bytes_per_token)
	for k := 0; k < 16; k++ {
		out.Fingerprint[k] = byte(i.fingerprint[k])
	}
	return out, nil
}

// CedMemory is the KV memory of a CED model by component at one element
// type (kvrt_ced_memory), with a dense GQA model of the same width and depth beside it.
type CedMemory struct {
	Layers, Sources, Window, ElemBytes                           uint32
	MainBytesPerToken, IndexerBytesPerToken, GlobalBytesPerToken float64
	WindowBytesPerSequence                                       uint64
	DenseKVHeads, DenseHeadDim                                   uint32
	DenseBytesPerToken                                           float64
}

// CedMemory reports the KV memory of a CED model whose cached rows are of
// element type dtype (DTypeF32, DTypeF16 or DTypeBF16). ErrUnsupported for a
// model of another architecture.
func (m *Model) CedMemory(dtype DType) (CedMemory, error) {
	var c C.kvrt_ced_memory
	if err := call(func() C.kvrt_status { return C.kvrt_ced_memory_init(&c, C.size_t(unsafe.Sizeof(c))) }); err != nil {
		return CedMemory{}, err
	}
	err := m.with(func(p *C.kvrt_model) C.kvrt_status { return C.kvrt_ced_memory_get(&c, p, C.int32_t(dtype)) })
	if err != nil {
		return CedMemory{}, err
	}
	return CedMemory{uint32(c.n_layers), uint32(c.n_sources), uint32(c.window), uint32(c.elem_bytes),
		float64(c.main_bytes_per_token), float64(c.indexer_bytes_per_token), float64(c.global_bytes_per_token),
		uint64(c.window_bytes_per_sequence), uint32(c.dense_kv_heads), uint32(c.dense_head_dim),
		float64(c.dense_bytes_per_token)}, nil
}

// CedSource is one bank of a CED model.
type CedSource struct {
	Layer, Ratio                            int32
	MainBytesPerToken, IndexerBytesPerToken float64
}

// CedSource describes bank index (0 <= index < CedMemory.Sources) at element
// type dtype. ErrOutOfRange past the last bank.
func (m *Model) CedSource(index uint32, dtype DType) (CedSource, error) {
	var l, r C.int32_t
	var mb, ib C.double
	err := m.with(func(p *C.kvrt_model) C.kvrt_status {
		return C.kvrt_ced_memory_source(&l, &r, &mb, &ib, p, C.uint32_t(index), C.int32_t(dtype))
	})
	if err != nil {
		return CedSource{}, err
	}
	return CedSource{int32(l), int32(r), float64(mb), float64(ib)}, nil
}

// readText runs kvrt's (dst, capacity, written) convention for text.
func readText(f func(dst *C.char, capacity C.size_t, written *C.size_t) C.kvrt_status) (string, error) {
	var n C.size_t
	if err := call(func() C.kvrt_status { return f(nil, 0, &n) }); err != nil {
		return "", err
	}
	for {
		// n counts the terminating NUL (kvrt/model.h's text-buffer convention).
		capacity := n
		if capacity == 0 {
			capacity = 1
		}
		buf := (*C.char)(C.malloc(capacity))
		err := call(func() C.kvrt_status { return f(buf, capacity, &n) })
		if e, ok := err.(*Error); ok && e.Status == ErrBufferTooSmall && n > capacity {
			C.free(unsafe.Pointer(buf))
			continue
		}
		var s string
		if err == nil && n > 0 {
			s = C.GoStringN(buf, C.int(n-1))
		}
		C.free(unsafe.Pointer(buf))
		return s, err
	}
}

// Meta returns a GGUF metadata value as text (ErrNotFound for a missing key).
func (m *Model) Meta(key string) (string, error) {
	ck := C.CString(key)
	defer C.free(unsafe.Pointer(ck))
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.p == nil {
		return "", ErrClosed
	}
	return readText(func(d *C.char, c C.size_t, w *C.size_t) C.kvrt_status {
		return C.kvrt_model_meta_string(d, c, w, m.p, ck)
	})
}

// Tokenize flags.
const (
	TokenizeAddBOS       = uint32(C.KVRT_TOKENIZE_ADD_BOS)
	TokenizeParseSpecial = uint32(C.KVRT_TOKENIZE_PARSE_SPECIAL)
)

// Tokenize turns UTF-8 text into token ids.
func (m *Model) Tokenize(text string, flags uint32) ([]int32, error) {
	ct := C.CString(text)
	defer C.free(unsafe.Pointer(ct))
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.p == nil {
		return nil, ErrClosed
	}
	var n C.size_t
	tl := C.size_t(len(text))
	if err := call(func() C.kvrt_status { return C.kvrt_model_tokenize(nil, 0, &n, m.p, ct, tl, C.uint32_t(flags)) }); err != nil {
		return nil, err
	}
	out := make([]int32, int(n)+1)
	err := call(func() C.kvrt_status {
		return C.kvrt_model_tokenize((*C.int32_t)(unsafe.Pointer(&out[0])), C.size_t(len(out)), &n, m.p, ct, tl, C.uint32_t(flags))
	})
	if err != nil {
		return nil, err
	}
	return out[:n], nil
}

// Detokenize turns token ids back into text (special tokens rendered when special).
func (m *Model) Detokenize(tokens []int32, special bool) (string, error) {
	var flags C.uint32_t
	if special {
		flags = C.KVRT_DETOKENIZE_SPECIAL
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.p == nil {
		return "", ErrClosed
	}
	// Token ids go to C in C memory: a Go slice may be passed for the call's
	// duration, but readText calls kvrt twice.
	ct := (*C.int32_t)(C.malloc(C.size_t(4 * (len(tokens) + 1))))
	defer C.free(unsafe.Pointer(ct))
	copy(unsafe.Slice((*int32)(unsafe.Pointer(ct)), len(tokens)), tokens)
	return readText(func(d *C.char, c C.size_t, w *C.size_t) C.kvrt_status {
		return C.kvrt_model_detokenize(d, c, w, m.p, ct, C.size_t(len(tokens)), flags)
	})
}

// IsEOG reports whether token ends generation.
func (m *Model) IsEOG(token int32) (bool, error) {
	var out C.int
	err := m.with(func(p *C.kvrt_model) C.kvrt_status { return C.kvrt_model_token_is_eog(&out, p, C.int32_t(token)) })
	return out != 0, err
}

// ChatMessage is one message of a conversation.
type ChatMessage struct{ Role, Content string }

// ChatApply renders messages with the model's chat template; tokenize the
// result with TokenizeParseSpecial.
func (m *Model) ChatApply(messages []ChatMessage, addAssistant bool) (string, error) {
	return m.renderChat(messages, addAssistant, func(d *C.char, c C.size_t, w *C.size_t, p *C.kvrt_model,
		cm *C.kvrt_chat_message, n C.size_t, add C.int) C.kvrt_status {
		return C.kvrt_model_chat_apply(d, c, w, p, cm, n, add)
	})
}

// renderChat marshals messages into C memory for the duration of one render call
// (ChatApply, ChatApplyTemplate) under the model's read lock.
func (m *Model) renderChat(messages []ChatMessage, addAssistant bool,
	render func(d *C.char, c C.size_t, w *C.size_t, p *C.kvrt_model, cm *C.kvrt_chat_message, n C.size_t,
		add C.int) C.kvrt_status) (string, error) {
	n := len(messages)
	cm := (*C.kvrt_chat_message)(C.malloc(C.size_t(unsafe.Sizeof(C.kvrt_chat_message{})) * C.size_t(n+1)))
	defer C.free(unsafe.Pointer(cm))
	arr := unsafe.Slice(cm, n+1)
	for i, msg := range messages {
		arr[i].role = C.CString(msg.Role)
		arr[i].content = C.CString(msg.Content)
	}
	defer func() {
		for i := 0; i < n; i++ {
			C.free(unsafe.Pointer(arr[i].role))
			C.free(unsafe.Pointer(arr[i].content))
		}
	}()
	add := C.int(0)
	if addAssistant {
		add = 1
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.p == nil {
		return "", ErrClosed
	}
	return readText(func(d *C.char, c C.size_t, w *C.size_t) C.kvrt_status {
		return render(d, c, w, m.p, cm, C.size_t(n), add)
	})
}

// MetaKeys lists every GGUF metadata key, in file order.
func (m *Model) MetaKeys() ([]string, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.p == nil {
		return nil, ErrClosed
	}
	var n C.size_t
	if err := call(func() C.kvrt_status { return C.kvrt_model_meta_count(&n, m.p) }); err != nil {
		return nil, err
	}
	keys := make([]string, 0, int(n))
	for i := C.size_t(0); i < n; i++ {
		k, err := readText(func(d *C.char, c C.size_t, w *C.size_t) C.kvrt_status {
			return C.kvrt_model_meta_key(d, c, w, m.p, i)
		})
		if err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// TensorInfo describes one tensor of the file.
type TensorInfo struct {
	Name, Type      string
	Elements, Bytes uint64
}

// Tensors lists every tensor of the file.
func (m *Model) Tensors() ([]TensorInfo, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.p == nil {
		return nil, ErrClosed
	}
	var n C.size_t
	if err := call(func() C.kvrt_status { return C.kvrt_model_tensor_count(&n, m.p) }); err != nil {
		return nil, err
	}
	out := make([]TensorInfo, 0, int(n))
	for i := C.size_t(0); i < n; i++ {
		var typ *C.char
		var ne, nb C.uint64_t
		name, err := readText(func(d *C.char, c C.size_t, w *C.size_t) C.kvrt_status {
			return C.kvrt_model_tensor_info(d, c, w, &typ, &ne, &nb, m.p, i)
		})
		if err != nil {
			return nil, err
		}
		out = append(out, TensorInfo{name, C.GoString(typ), uint64(ne), uint64(nb)})
	}
	return out, nil
}
