// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Per-thread scratch memory for the cpu kernels.
#pragma once

#include <cstddef>
#include <exception>

namespace kvrt::cpu {

// Slot `slot` (0..7) of the calling thread: at least `bytes` bytes, 64-byte aligned, grown on
// demand and kept for the thread's life (contents unspecified). A call may invalidate earlier
// pointers of the same slot on the same thread. Defined in a translation unit compiled for the
// baseline ISA so the per-ISA kernels instantiate no shared templates.
void* thread_scratch(int slot, size_t bytes);

// The threads a parallel region started here would get (1 inside an active parallel region).
// Baseline translation unit, like thread_scratch.
int region_threads();

// Team mode: when called from inside an active parallel region of more than one thread, the
// number of threads in that team (every one of them must make the same kernel call, which then
// shares its work out by thread number (team_thread) instead of opening a region of its
// own); 0 outside such a region.
int team_threads();
// The calling thread's number in its team (0 outside a parallel region).
int team_thread();

// The first exception of the threads of a kernel's own parallel region. An exception may not
// leave an OpenMP region (the runtime calls std::terminate: the process would die inside the
// library), and the kernels' work can throw inside one (thread_scratch refused its memory), so
// each thread catches what its work throws and keeps going to the region's end (through every
// worksharing loop and barrier, doing no more work), and the thread that opened the region
// rethrows the first one after it:
//     RegionError err;
//     #pragma omp parallel for
//     for (...) { if (err) continue; try { work } catch (...) { err.capture(); } }
//     err.rethrow();
// Out of line in the baseline translation unit (no std::exception_ptr code in the per-ISA ones).
class RegionError {
public:
    RegionError();
    ~RegionError();
    RegionError(const RegionError&) = delete;
    RegionError& operator=(const RegionError&) = delete;
    // Inside a catch block: keeps std::current_exception() when it is the region's first.
    void capture() noexcept;
    // True once a thread has captured an exception (work after it is pointless).
    explicit operator bool() const noexcept;
    // After the region, on the thread that opened it: rethrows the kept exception, if any.
    void rethrow();

private:
    std::exception_ptr first_;
    int taken_ = 0;
};

}  // namespace kvrt::cpu
