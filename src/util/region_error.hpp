// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// The first exception of the threads of an OpenMP parallel region.
#pragma once

#include <exception>

namespace kvrt {

// An exception may not leave an OpenMP region (the runtime calls std::terminate: the process
// would die inside the library), and work inside one can throw (scratch memory refused, a
// kernel's argument check). So each thread runs its work through guard() (or catches and calls
// capture()), keeps going to the region's end (through every worksharing loop, barrier and
// TeamBarrier wait, doing no more work), and the thread that opened the region rethrows the
// first exception after it:
//     RegionError err;
//     #pragma omp parallel for
//     for (...) { if (err) continue; err.guard([&] { work }); }
//     err.rethrow();
// Used by the kernels' own regions (kernels/cpu) and by the forward's team regions
// (model/arch/decoder_forward.cpp). Out of line in a baseline translation unit, so the per-ISA
// kernel units compile no std::exception_ptr code of their own.
class RegionError {
public:
    RegionError();
    ~RegionError();
    RegionError(const RegionError&) = delete;
    RegionError& operator=(const RegionError&) = delete;
    // Runs fn; what it throws is captured, not propagated.
    template <class Fn>
    void guard(Fn&& fn) noexcept {
        try {
            fn();
        } catch (...) {
            capture();
        }
    }
    // Inside a catch block: keeps std::current_exception() when it is the region's first.
    void capture() noexcept;
    // True once a thread has captured an exception (work after it is pointless).
    explicit operator bool() const noexcept;
    // After the region, on the thread that opened it: rethrows the kept exception, if any.
    void rethrow() const;

private:
    std::exception_ptr first_;
    int taken_ = 0;
};

}  // namespace kvrt
