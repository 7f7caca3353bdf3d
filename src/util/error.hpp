// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// kvrt::Error: the exception type used inside the library. It carries the
// kvrt_status the C API boundary (src/api/boundary.hpp) turns it into.
#pragma once

#include "kvrt/common.h"

#include <stdexcept>
#include <string>

namespace kvrt {

class Error : public std::runtime_error {
public:
    Error(kvrt_status status, const std::string& msg) : std::runtime_error(msg), status_(status) {}
    kvrt_status status() const noexcept { return status_; }

private:
    kvrt_status status_;
};

[[noreturn]] inline void fail(kvrt_status status, const std::string& msg) { throw Error(status, msg); }

// KVRT_CHECK(cond, status, msg): throws kvrt::Error(status, msg) when cond is false.
#define KVRT_CHECK(cond, status, msg)                     \
    do {                                                  \
        if (!(cond)) ::kvrt::fail((status), (msg));       \
    } while (0)

}  // namespace kvrt
