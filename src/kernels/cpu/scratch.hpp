// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Per-thread scratch memory for the cpu kernels.
#pragma once

#include "util/region_error.hpp"

#include <cstddef>

namespace kvrt::cpu {

// Slot `slot` (0..15) of the calling thread: at least `bytes` bytes, 64-byte aligned, grown on
// demand and kept for the thread's life (contents unspecified). A call may invalidate earlier
// pointers of the same slot on the same thread. Defined in a translation unit compiled for the
// baseline ISA so the per-ISA kernels instantiate no shared templates.
void* thread_scratch(int slot, size_t bytes);
// As thread_scratch, but nullptr where the memory is refused (for callers with a way on
// without it, inside parallel regions).
void* thread_scratch_or_null(int slot, size_t bytes) noexcept;

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

// (A kernel's own region reports its threads' exceptions through RegionError, util/region_error.hpp.)

}  // namespace kvrt::cpu
