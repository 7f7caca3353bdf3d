#include "api/boundary.hpp"

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
    return status;
}

void clear_error() noexcept { t_last_error.clear(); }

const char* last_error() noexcept { return t_last_error.c_str(); }

}  // namespace kvrt::api
