// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

#include "kernels/cpu/scratch.hpp"

#include <cstdlib>
#include <memory>
#include <new>

#include <omp.h>

namespace kvrt::cpu {

namespace {
struct Slot {
    void* p = nullptr;
    size_t size = 0;
    ~Slot() { std::free(p); }
};
}  // namespace

void* thread_scratch(int slot, size_t bytes) {
    thread_local Slot slots[16];
    Slot& s = slots[slot & 15];
    if (s.size < bytes) {
        size_t n = (bytes + 63) & ~size_t(63);
        if (n < 4096) n = 4096;
        void* p = std::aligned_alloc(64, n);
        if (!p) throw std::bad_alloc();
        std::free(s.p);
        s.p = p;
        s.size = n;
    }
    return s.p;
}

void* thread_scratch_or_null(int slot, size_t bytes) noexcept {
    try {
        return thread_scratch(slot, bytes);
    } catch (...) {
        return nullptr;
    }
}

int region_threads() { return omp_in_parallel() ? 1 : omp_get_max_threads(); }

int team_threads() {
    if (!omp_in_parallel()) return 0;
    const int n = omp_get_num_threads();
    return n > 1 ? n : 0;
}

int team_thread() { return omp_get_thread_num(); }

}  // namespace kvrt::cpu
