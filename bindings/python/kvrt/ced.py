"""The CED random-weight model generator (kvrt/ced.h)."""
import ctypes
import os

from . import _capi as C
from .errors import check

WEIGHTS_F32, WEIGHTS_F16, WEIGHTS_BF16, WEIGHTS_Q8_0, WEIGHTS_Q4_0, WEIGHTS_Q4_1 = range(6)


def _config(preset, seed, weight_type, window, top_k, n_vocab):
    cfg = C.init_struct(C.ced_init_config, "kvrt_ced_init_config_init")
    cfg.preset = preset.encode()
    cfg.seed, cfg.weight_type, cfg.window, cfg.top_k, cfg.n_vocab = seed, weight_type, window, top_k, n_vocab
    return cfg


def param_count(preset="tiny", seed=1, weight_type=WEIGHTS_F32, window=0, top_k=0, n_vocab=0):
    cfg = _config(preset, seed, weight_type, window, top_k, n_vocab)
    n = ctypes.c_uint64()
    check(C.lib().kvrt_ced_param_count(ctypes.byref(n), ctypes.byref(cfg)))
    return n.value


def write_gguf(path, preset="tiny", seed=1, weight_type=WEIGHTS_F32, window=0, top_k=0, n_vocab=0):
    """Writes a CED GGUF of deterministic random weights to path."""
    cfg = _config(preset, seed, weight_type, window, top_k, n_vocab)
    check(C.lib().kvrt_ced_write_gguf(os.fsencode(path), ctypes.byref(cfg)))
