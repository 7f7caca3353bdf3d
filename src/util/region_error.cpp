// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

#include "util/region_error.hpp"

namespace kvrt {

RegionError::RegionError() = default;
RegionError::~RegionError() = default;

void RegionError::capture() noexcept {
    const std::exception_ptr e = std::current_exception();
#pragma omp critical(kvrt_region_error)
    if (!taken_) {
        first_ = e;
        __atomic_store_n(&taken_, 1, __ATOMIC_RELEASE);
    }
}

RegionError::operator bool() const noexcept { return __atomic_load_n(&taken_, __ATOMIC_ACQUIRE) != 0; }

void RegionError::rethrow() const {
    if (__atomic_load_n(&taken_, __ATOMIC_ACQUIRE)) std::rethrow_exception(first_);
}

}  // namespace kvrt
