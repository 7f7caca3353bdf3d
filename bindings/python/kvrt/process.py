# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The kvrt authors

"""Process-wide settings (kvrt/process.h): the log callback and the ISA level
of the CPU kernels."""
import ctypes
import threading

from . import _capi as C
from .errors import check

LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR, LOG_NONE = range(5)
ISA_SCALAR, ISA_AVX2, ISA_AVXVNNI, ISA_AVX512, ISA_AVX512BF16, ISA_AMX = range(6)

_log_lock = threading.Lock()
_log_cb = None  # the ctypes thunk kvrt holds; kept alive while installed


def set_log_callback(fn, min_level=LOG_INFO):
    """Routes kvrt's log to fn(level, message) for messages at min_level or
    above; fn=None (or min_level LOG_NONE) stops logging (the default: kvrt
    prints nothing). fn runs on the thread of the kvrt call that logged, as
    that call returns; an exception in it is swallowed (it must not cross C).
    Once this returns, the previous fn is never called again."""
    global _log_cb
    with _log_lock:
        if fn is None:
            check(C.lib().kvrt_set_log_callback(LOG_NONE, C.log_fn(), None))
            _log_cb = None
            return

        def thunk(level, msg, _ud):
            try:
                fn(level, msg.decode("utf-8", "replace") if msg else "")
            except BaseException:  # noqa: B902 - nothing may unwind into C
                pass

        cb = C.log_fn(thunk)
        check(C.lib().kvrt_set_log_callback(min_level, cb, None))
        _log_cb = cb


def log_level_name(level):
    return C.lib().kvrt_log_level_name(level).decode()


def isa_get():
    """(active, detected): the ISA level the kernels use and the CPU's best."""
    a, d = ctypes.c_int32(), ctypes.c_int32()
    check(C.lib().kvrt_isa_get(ctypes.byref(a), ctypes.byref(d)))
    return a.value, d.value


def isa_set(limit):
    """Limits the kernels to `limit` (ISA_*; above the CPU's level gives the
    CPU's). KvrtError(INVALID_STATE) while a context is computing."""
    check(C.lib().kvrt_isa_set(limit))


def isa_name(level):
    return C.lib().kvrt_isa_name(level).decode()
