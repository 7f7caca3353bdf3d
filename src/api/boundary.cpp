// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

#include "api/boundary.hpp"

#include "util/log.hpp"

namespace kvrt::api {
namespace {
thread_local std::string t_last_error;
}

kvrt_status set_error(kvrt_status status, std::string msg) noexcept {
    try {
        t_last_error = std::move(msg);
    } catch (...) {
        // Assigning can only fail on allocation; keep a short fixed message.
        t_last_error.clear();
    }
    // Every failed call's reason, for applications that log (kvrt/process.h).
    kvrt::log::at(kvrt::log::Debug, [&] { return std::string(kvrt_status_string(status)) + ": " + t_last_error; });
    return status;
}

void clear_error() noexcept { t_last_error.clear(); }

const char* last_error() noexcept { return t_last_error.c_str(); }

}  // namespace kvrt::api
