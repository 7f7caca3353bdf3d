// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// kvrt/process.h: the log callback and the ISA level of the kernels.
#include "api/boundary.hpp"
#include "kvrt/process.h"
#include "runtime/context.hpp"
#include "util/isa.hpp"
#include "util/log.hpp"

#include <string>

using kvrt::Error;
using kvrt::api::guard;

extern "C" {

KVRT_API kvrt_status kvrt_set_log_callback(int32_t min_level, kvrt_log_fn fn, void* user_data) {
    return guard("kvrt_set_log_callback", [&] {
        if (min_level < KVRT_LOG_DEBUG || min_level > KVRT_LOG_NONE)
            throw Error(KVRT_ERR_INVALID_ARGUMENT,
                        "min_level " + std::to_string(min_level) + " is not a kvrt_log_level (0..4)");
        kvrt::log::set_callback(min_level, fn, user_data);
    });
}

KVRT_API const char* kvrt_log_level_name(int32_t level) { return kvrt::log::level_name(level); }

KVRT_API kvrt_status kvrt_isa_get(int32_t* active, int32_t* detected) {
    return guard("kvrt_isa_get", [&] {
        if (!active && !detected) throw Error(KVRT_ERR_INVALID_ARGUMENT, "active and detected are both NULL");
        if (active) *active = static_cast<int32_t>(kvrt::isa_active());
        if (detected) *detected = static_cast<int32_t>(kvrt::isa_detected());
    });
}

KVRT_API kvrt_status kvrt_isa_set(int32_t limit) {
    return guard("kvrt_isa_set", [&] {
        if (limit < KVRT_ISA_SCALAR || limit > KVRT_ISA_AMX)
            throw Error(KVRT_ERR_INVALID_ARGUMENT, "limit " + std::to_string(limit) + " is not a kvrt_isa (0..5)");
        const int running = kvrt::runtime::Context::running_calls();
        if (running > 0)
            throw Error(KVRT_ERR_INVALID_STATE, std::to_string(running) +
                                                    " call(s) are computing on contexts; switch the ISA between calls");
        kvrt::isa_set_limit(static_cast<kvrt::Isa>(limit));
        kvrt::log::at(kvrt::log::Info, [&] {
            return std::string("kernels use ISA ") + kvrt::isa_name(kvrt::isa_active()) + " (limit " +
                   kvrt::isa_name(static_cast<kvrt::Isa>(limit)) + ", CPU " + kvrt::isa_name(kvrt::isa_detected()) + ")";
        });
    });
}

KVRT_API const char* kvrt_isa_name(int32_t isa) {
    if (isa < KVRT_ISA_SCALAR || isa > KVRT_ISA_AMX) return "?";
    return kvrt::isa_name(static_cast<kvrt::Isa>(isa));
}

}  // extern "C"
