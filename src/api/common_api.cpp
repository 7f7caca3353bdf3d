// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// kvrt_version, kvrt_status_string, kvrt_last_error.
#include "api/boundary.hpp"

namespace kvrt::api {
const char* last_error() noexcept;
}

extern "C" {

KVRT_API const char* kvrt_status_string(kvrt_status status) {
    switch (status) {
        case KVRT_OK: return "KVRT_OK";
        case KVRT_ERR_INVALID_ARGUMENT: return "KVRT_ERR_INVALID_ARGUMENT";
        case KVRT_ERR_OUT_OF_MEMORY: return "KVRT_ERR_OUT_OF_MEMORY";
        case KVRT_ERR_CACHE_FULL: return "KVRT_ERR_CACHE_FULL";
        case KVRT_ERR_NOT_FOUND: return "KVRT_ERR_NOT_FOUND";
        case KVRT_ERR_OUT_OF_RANGE: return "KVRT_ERR_OUT_OF_RANGE";
        case KVRT_ERR_BAD_HANDLE: return "KVRT_ERR_BAD_HANDLE";
        case KVRT_ERR_IO: return "KVRT_ERR_IO";
        case KVRT_ERR_BAD_FORMAT: return "KVRT_ERR_BAD_FORMAT";
        case KVRT_ERR_UNSUPPORTED: return "KVRT_ERR_UNSUPPORTED";
        case KVRT_ERR_BUFFER_TOO_SMALL: return "KVRT_ERR_BUFFER_TOO_SMALL";
        case KVRT_ERR_INVALID_STATE: return "KVRT_ERR_INVALID_STATE";
        case KVRT_ERR_OVERFLOW: return "KVRT_ERR_OVERFLOW";
        case KVRT_ERR_MISMATCH: return "KVRT_ERR_MISMATCH";
        case KVRT_ERR_CANCELLED: return "KVRT_ERR_CANCELLED";
        case KVRT_ERR_INTERNAL: return "KVRT_ERR_INTERNAL";
    }
    return "KVRT_ERR_UNKNOWN";
}

KVRT_API const char* kvrt_last_error(void) { return kvrt::api::last_error(); }

KVRT_API void kvrt_clear_error(void) { kvrt::api::clear_error(); }

KVRT_API uint32_t kvrt_version(void) { return KVRT_VERSION_NUMBER; }

#define KVRT_STR2(x) #x
#define KVRT_STR(x) KVRT_STR2(x)
KVRT_API const char* kvrt_version_string(void) {
    return KVRT_STR(KVRT_VERSION_MAJOR) "." KVRT_STR(KVRT_VERSION_MINOR) "." KVRT_STR(KVRT_VERSION_PATCH);
}

}  // extern "C"
