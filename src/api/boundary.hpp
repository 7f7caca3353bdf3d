// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// The one exception-to-status boundary of the C API.
//
// Every extern "C" function in src/api/ runs its body through kvrt::api::guard():
// a kvrt::Error becomes its status, std::bad_alloc becomes
// KVRT_ERR_OUT_OF_MEMORY, anything else KVRT_ERR_INTERNAL; the message goes to
// the thread-local last error. Nothing unwinds into the caller.
#pragma once

#include "kvrt/common.h"
#include "util/error.hpp"
#include "util/log.hpp"

#include <cstdint>
#include <new>
#include <type_traits>
#include <string>
#include <utility>

namespace kvrt::api {

// Records msg as the calling thread's last error and returns status.
kvrt_status set_error(kvrt_status status, std::string msg) noexcept;
void clear_error() noexcept;

// Runs fn(); fn returns void or kvrt_status. On success the last error is
// left untouched (as errno), on failure it names the problem.
template <class Fn>
kvrt_status guard(const char* where, Fn&& fn) noexcept {
    struct LogFlush {  // the call's log messages go out as it returns (util/log.hpp)
        ~LogFlush() { kvrt::log::flush(); }
    } log_flush;
    try {
        if constexpr (std::is_void_v<decltype(fn())>) {
            std::forward<Fn>(fn)();
            return KVRT_OK;
        } else {
            return std::forward<Fn>(fn)();
        }
    } catch (const kvrt::Error& e) {
        return set_error(e.status(), std::string(where) + ": " + e.what());
    } catch (const std::bad_alloc&) {
        return set_error(KVRT_ERR_OUT_OF_MEMORY, std::string(where) + ": out of memory");
    } catch (const std::exception& e) {
        return set_error(KVRT_ERR_INTERNAL, std::string(where) + ": internal error: " + e.what());
    } catch (...) {
        return set_error(KVRT_ERR_INTERNAL, std::string(where) + ": unknown internal error");
    }
}

// Throws kvrt::Error(KVRT_ERR_INVALID_ARGUMENT) naming the parameter when p is null.
template <class T>
inline void require_non_null(const T* p, const char* name) {
    if (p == nullptr) throw Error(KVRT_ERR_INVALID_ARGUMENT, std::string(name) + " is NULL");
}

// Checks a size-prefixed config struct: cfg->struct_size must be at least the
// size of the fields the caller's header version knew (min_size) and at most
// the size this library knows.
template <class Cfg>
inline void require_config(const Cfg* cfg, const char* name, size_t min_size) {
    require_non_null(cfg, name);
    if (cfg->struct_size < min_size || cfg->struct_size > sizeof(Cfg))
        throw Error(KVRT_ERR_INVALID_ARGUMENT,
                    std::string(name) + "->struct_size is " + std::to_string(cfg->struct_size) +
                        "; initialise it with the matching _config_init()");
}

// Thread counts the C API accepts: 0 (the OpenMP default) to kMaxThreads.
// Larger counts only make OpenMP ask for per-thread stacks and scratch it
// cannot get (libgomp exits the process on that), so they are rejected here.
constexpr int32_t kMaxThreads = 1024;

// Throws kvrt::Error(KVRT_ERR_INVALID_ARGUMENT) naming `name` unless n is in [0, kMaxThreads].
inline void require_thread_count(int32_t n, const char* name) {
    if (n < 0 || n > kMaxThreads)
        throw Error(KVRT_ERR_INVALID_ARGUMENT, std::string(name) + " is " + std::to_string(n) + "; it must be in [0, " +
                                                   std::to_string(kMaxThreads) + "] (0 = the OpenMP default)");
}

}  // namespace kvrt::api
