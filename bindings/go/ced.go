package kvrt

/*
#include <stdlib.h>
#include <kvrt/kvrt.h>
*/
import "C"

import "unsafe"

// CedOptions are the options of the CED random-weight generator; zero
// overrides keep the preset's values.
type CedOptions struct {
	Preset     string // "tiny" (default) or "base"
	Seed       uint64 // 0 = kvrt's default (1)
	WeightType int32  // KVRT_CED_WEIGHTS_*: 0 = f32
	Window     int32
	TopK       int32
	Vocab      int32
}

func withCedConfig(o CedOptions, f func(cfg *C.kvrt_ced_init_config) C.kvrt_status) error {
	preset := o.Preset
	if preset == "" {
		preset = "tiny"
	}
	cp := C.CString(preset)
	defer C.free(unsafe.Pointer(cp))
	return call(func() C.kvrt_status {
		var cfg C.kvrt_ced_init_config
		if st := C.kvrt_ced_init_config_init(&cfg, C.size_t(unsafe.Sizeof(cfg))); st != C.KVRT_OK {
			return st
		}
		cfg.preset = cp
		if o.Seed != 0 {
			cfg.seed = C.uint64_t(o.Seed)
		}
		cfg.weight_type = C.int32_t(o.WeightType)
		cfg.window = C.int32_t(o.Window)
		cfg.top_k = C.int32_t(o.TopK)
		cfg.n_vocab = C.int32_t(o.Vocab)
		return f(&cfg)
	})
}

// CedParamCount is the number of parameters of the model o describes.
func CedParamCount(o CedOptions) (uint64, error) {
	var n C.uint64_t
	err := withCedConfig(o, func(cfg *C.kvrt_ced_init_config) C.kvrt_status { return C.kvrt_ced_param_count(&n, cfg) })
	return uint64(n), err
}

// CedWriteGGUF writes a CED GGUF of deterministic random weights to path.
func CedWriteGGUF(path string, o CedOptions) error {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	return withCedConfig(o, func(cfg *C.kvrt_ced_init_config) C.kvrt_status { return C.kvrt_ced_write_gguf(cpath, cfg) })
}
