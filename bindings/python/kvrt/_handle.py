# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The kvrt authors

"""The base of every kvrt object: owns one C handle, closes it exactly once."""
import ctypes

from .errors import ClosedError, check


class Handle:
    _destroy = None  # name of the C destroy function

    def __init__(self, ptr):
        self._ptr = ptr

    @property
    def _p(self):
        """The live handle; raises ClosedError after close()."""
        if self._ptr is None:
            raise ClosedError(type(self).__name__)
        return self._ptr

    @property
    def closed(self):
        return self._ptr is None

    def close(self):
        """Destroys the C object. Idempotent: a second close does nothing."""
        ptr, self._ptr = getattr(self, "_ptr", None), None
        if ptr is not None:
            from ._capi import lib
            getattr(lib(), self._destroy)(ptr)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown: the library may be gone
            pass


def create(fn, *args):
    """Calls a kvrt_x_create(out, ...) function and returns the handle."""
    out = ctypes.c_void_p()
    check(fn(ctypes.byref(out), *args))
    return out.value


def read_text(call):
    """kvrt's (dst, capacity, written) convention for text: size query, then fill.
    written counts the terminating NUL (kvrt/model.h); the text is written - 1 bytes."""
    written = ctypes.c_size_t()
    check(call(None, 0, ctypes.byref(written)))
    while True:
        cap = max(written.value, 1)
        buf = ctypes.create_string_buffer(cap)
        status = call(buf, cap, ctypes.byref(written))
        if status == -10 and written.value > cap:  # grew in between
            continue
        check(status)
        return buf.raw[:written.value - 1]


class Callback:
    """Runs a Python callable from C: any exception is caught (it must not
    propagate into C frames), stops the operation, and is re-raised by
    `reraise()` once the C call has returned."""

    def __init__(self, fn):
        self.fn = fn
        self.error = None

    def invoke(self, *args):
        if self.error is not None:
            return 1
        try:
            return 0 if self.fn(*args) is not False else 1
        except BaseException as e:  # noqa: B902 - KeyboardInterrupt included
            self.error = e
            return 1

    def reraise(self):
        if self.error is not None:
            err, self.error = self.error, None
            raise err
