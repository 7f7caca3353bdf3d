// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// The OpenMP thread count of a context call (ThreadScope).
#pragma once

#include <omp.h>

namespace kvrt::runtime {

// Sets the OpenMP thread count of the calling thread for the duration of a call (n <= 0: leaves
// it as it is).
class ThreadScope {
public:
    explicit ThreadScope(int n) : prev_(omp_get_max_threads()), set_(n > 0) {
        if (set_) omp_set_num_threads(n);
    }
    ~ThreadScope() {
        if (set_) omp_set_num_threads(prev_);
    }
    ThreadScope(const ThreadScope&) = delete;
    ThreadScope& operator=(const ThreadScope&) = delete;

private:
    int prev_;
    bool set_;
};

}  // namespace kvrt::runtime
