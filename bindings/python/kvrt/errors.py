# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The kvrt authors

"""kvrt's status codes and the exception that carries them."""
import enum


class Status(enum.IntEnum):
    OK = 0
    INVALID_ARGUMENT = -1
    OUT_OF_MEMORY = -2
    CACHE_FULL = -3
    NOT_FOUND = -4
    OUT_OF_RANGE = -5
    BAD_HANDLE = -6
    IO = -7
    BAD_FORMAT = -8
    UNSUPPORTED = -9
    BUFFER_TOO_SMALL = -10
    INVALID_STATE = -11
    OVERFLOW = -12
    MISMATCH = -13
    CANCELLED = -14
    INTERNAL = -15


class KvrtError(Exception):
    """A failed kvrt call. `status` is the kvrt_status (a Status when known,
    else the int), `status_name` kvrt's name for it, `message` kvrt's
    detailed reason (kvrt_last_error())."""

    def __init__(self, status, message):
        try:
            status = Status(status)
        except ValueError:
            pass
        self.status = status
        self.message = message
        super().__init__("%s: %s" % (self.status_name, message))

    @property
    def status_name(self):
        from ._capi import lib
        return lib().kvrt_status_string(int(self.status)).decode()


class ClosedError(KvrtError):
    """A method was called on a handle after close()."""

    def __init__(self, what):
        super().__init__(Status.BAD_HANDLE, "%s used after close()" % what)


def check(status):
    """Raises KvrtError with the thread's last error unless status is OK.
    (ctypes calls run on the calling OS thread, so the thread-local message is
    the one of this call.)"""
    if status != 0:
        from ._capi import lib
        raise KvrtError(status, lib().kvrt_last_error().decode("utf-8", "replace"))
