# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The kvrt authors

"""kvrt: Python binding (ctypes, no compile step) of libkvrt, the embeddable
KV-cache runtime for CPU inference.

    import kvrt
    with kvrt.Model("SmolLM2-135M-Instruct.Q4_1.gguf") as model, kvrt.Context(model) as ctx:
        stats = ctx.prefill(0, model.tokenize("The sky is"))
        logits = ctx.logits(0)          # array('f') of n_vocab floats

Every handle is a context manager with an idempotent close(); a call after
close() raises ClosedError; every failure raises KvrtError(status, message)
with kvrt's own message. The library is found via $KVRT_LIBRARY, pkg-config
or the dynamic loader (see _capi.py).
"""
from ._capi import VERSION_MAJOR, VERSION_MINOR, VERSION_NUMBER, VERSION_PATCH, lib as _lib
from .cache import (DTYPE_BF16, DTYPE_F16, DTYPE_F32, DTYPE_FP4, DTYPE_FP8_E4M3, DTYPE_I8, LAYER_BANK_READER, LAYER_BANK_SOURCE, LAYER_FULL,
                    LAYER_INDEXER_KEYS, LAYER_WINDOW, Cache, Layout)
from .context import (ACT_BITS_OUTLIERS, CED_PREFILL_CED, CED_PREFILL_EXACT, CED_RESUME_AUTO, CED_RESUME_BOUNDED_REPLAY,
                      CED_RESUME_CHECKPOINT, CED_RESUME_COLD, KV_BF16, KV_F16, KV_F32, KV_FP8_E4M3, KV_I8, STOP_CALLBACK, STOP_CONTEXT_FULL, STOP_EOG, STOP_MAX_TOKENS,
                      STOP_NONE, STOP_STRING, Context, RequestStats, Sampler)
from .context import (PHASE_DECODE, PHASE_IDLE, PHASE_PREFILL, STOP_CANCELLED, Activity)
from .errors import ClosedError, KvrtError, Status
from .process import (ISA_AMX, ISA_AVX2, ISA_AVX512, ISA_AVX512BF16, ISA_AVXVNNI, ISA_SCALAR, LOG_DEBUG, LOG_ERROR, LOG_INFO,
                      LOG_NONE, LOG_WARN, isa_get, isa_name, isa_set, log_level_name, set_log_callback)
from .model import Model

__version__ = "%d.%d.%d" % (VERSION_MAJOR, VERSION_MINOR, VERSION_PATCH)


def version():
    """The loaded library's version as (major, minor, patch)."""
    v = _lib().kvrt_version()
    return (v >> 16, (v >> 8) & 0xFF, v & 0xFF)


def version_string():
    return _lib().kvrt_version_string().decode()


def check_version():
    """Raises KvrtError(MISMATCH) unless the library can serve this binding."""
    major, minor, _ = version()
    if major != VERSION_MAJOR or minor < VERSION_MINOR:
        raise KvrtError(Status.MISMATCH, "libkvrt %s does not match the binding's headers %s"
                        % (version_string(), __version__))
from ._capi import TIER_DISK, TIER_REDIS  # lower tiers of the prefix cache (Context(cache_dir=..., cache_redis=...))
