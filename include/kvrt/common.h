/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The kvrt authors */

/*
 * kvrt — embeddable KV-cache runtime for CPU inference.
 *
 * common.h: version, visibility, status codes and error reporting shared by
 * every part of the C API. C99; no varargs, no bitfields, no structs by value.
 *
 * Error model: every fallible call returns a kvrt_status (KVRT_OK = 0,
 * errors negative; codes are only ever appended). When a call fails it also
 * records a human-readable reason in a thread-local buffer that
 * kvrt_last_error() returns. No exception, abort or unwinding ever crosses
 * this ABI.
 */
#ifndef KVRT_COMMON_H
#define KVRT_COMMON_H

#include <stddef.h>
#include <stdint.h>

#define KVRT_VERSION_MAJOR 0
#define KVRT_VERSION_MINOR 5
#define KVRT_VERSION_PATCH 0
/* (major << 16) | (minor << 8) | patch */
#define KVRT_VERSION_NUMBER \
    ((KVRT_VERSION_MAJOR << 16) | (KVRT_VERSION_MINOR << 8) | KVRT_VERSION_PATCH)

/* KVRT_API marks the exported functions. Windows: dllexport while building the
 * DLL (KVRT_BUILDING), dllimport for programs using the DLL, nothing for programs
 * linking the static library (define KVRT_STATIC before including kvrt). Elsewhere:
 * default visibility (the library is built with -fvisibility=hidden). */
#if defined(_WIN32) || defined(__CYGWIN__)
#  if defined(KVRT_BUILDING)
#    define KVRT_API __declspec(dllexport)
#  elif defined(KVRT_STATIC)
#    define KVRT_API
#  else
#    define KVRT_API __declspec(dllimport)
#  endif
#else
#  define KVRT_API __attribute__((visibility("default")))
#endif

#if defined(__GNUC__) || defined(__clang__)
#  define KVRT_DEPRECATED(msg) __attribute__((deprecated(msg)))
#else
#  define KVRT_DEPRECATED(msg)
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Status codes. KVRT_OK is 0, errors are negative. New codes are appended;
 * existing values never change. */
typedef enum kvrt_status {
    KVRT_OK = 0,
    KVRT_ERR_INVALID_ARGUMENT = -1, /* a parameter is NULL, zero or out of its domain */
    KVRT_ERR_OUT_OF_MEMORY = -2,    /* the system allocator failed */
    KVRT_ERR_CACHE_FULL = -3,       /* the cache budget is exhausted and nothing is evictable */
    KVRT_ERR_NOT_FOUND = -4,        /* no such sequence, file, key or entry */
    KVRT_ERR_OUT_OF_RANGE = -5,     /* a position, index or token id is outside its range */
    KVRT_ERR_BAD_HANDLE = -6,       /* NULL, destroyed or foreign handle */
    KVRT_ERR_IO = -7,               /* reading or writing a file failed */
    KVRT_ERR_BAD_FORMAT = -8,       /* a file (GGUF, state) is malformed, truncated or hostile */
    KVRT_ERR_UNSUPPORTED = -9,      /* valid but not supported (architecture, tensor type...) */
    KVRT_ERR_BUFFER_TOO_SMALL = -10,/* output buffer too small; *written holds the size needed */
    KVRT_ERR_INVALID_STATE = -11,   /* the object is not in a state that allows the call */
    KVRT_ERR_OVERFLOW = -12,        /* a count or size would overflow */
    KVRT_ERR_MISMATCH = -13,        /* fingerprint, layout or version does not match */
    KVRT_ERR_CANCELLED = -14,       /* a callback asked to stop */
    KVRT_ERR_INTERNAL = -15         /* a bug in kvrt; the message says where */
} kvrt_status;

/* Returns a static, NUL-terminated name for a status code ("KVRT_OK",
 * "KVRT_ERR_CACHE_FULL", ...; "KVRT_ERR_UNKNOWN" for values kvrt does not
 * know). Never NULL. Thread-safe. O(1). */
KVRT_API const char *kvrt_status_string(kvrt_status status);

/* Returns the detailed message of the last failed kvrt call on the calling
 * thread ("" when none failed yet). The pointer stays valid until the next
 * kvrt call on this thread. Thread-safe (thread-local). O(1). */
KVRT_API const char *kvrt_last_error(void);

/* Clears the calling thread's last error. */
KVRT_API void kvrt_clear_error(void);

/* Returns the run-time library version as KVRT_VERSION_NUMBER does at
 * compile time; compare the two to detect a header/library mismatch. */
KVRT_API uint32_t kvrt_version(void);

/* Returns the run-time version as a static string, e.g. "0.5.0". */
KVRT_API const char *kvrt_version_string(void);

#ifdef __cplusplus
}
#endif

#endif /* KVRT_COMMON_H */
