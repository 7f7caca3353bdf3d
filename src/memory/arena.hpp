// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Arena: raw, 64-byte-aligned, never-moving memory for KV blocks, taken from a
// dedicated mimalloc arena.
//
// Each Arena owns one *exclusive* mimalloc arena so that KV blocks never mix
// with the process's other allocations. Its address space is 64 MiB-aligned and
// backed by 2 MiB pages where the OS allows it:
//   - HugeTlb: explicit 2 MiB pages from the OS pool (vm.nr_hugepages), only
//     when large_pages is asked for and the pool holds the whole reservation;
//   - Transparent (the default): transparent huge pages, madvise(MADV_HUGEPAGE)
//     on the range (THP "madvise" mode backs nothing else), committed on touch;
//   - Base: 4 KiB pages (mi_reserve_os_memory_ex), when the others fail.
// Why 2 MiB pages: a sequence's blocks are scattered over the arena; on 4 KiB
// pages every block costs page walks (TLB misses) and stops the hardware
// prefetchers at each page boundary. Decode attention reads every cached row
// once per token, so this is its memory-level bound (bench_attention_decode). mimalloc heaps may only
// allocate on the thread that created them, so every thread that allocates
// gets its own heap in that arena (mi_heap_new_in_arena, created on first
// use); any thread may free. mimalloc cannot release an arena (2.0.9) and
// allows at most 64 per process, so a process-wide registry hands a
// destroyed Arena's mimalloc arena to the next Arena that fits in it. If no
// arena can be reserved, the Arena falls back to the default mimalloc heap
// and says so (dedicated() == false).
//
// The Arena does NOT enforce the byte budget: the block pool does, exactly,
// in block bytes. The reservation is larger than the budget (2x + 64 MiB of
// address space, committed only when touched) because mimalloc rounds large
// objects to its pages/segments.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace kvrt::memory {

inline constexpr size_t kBlockAlign = 64;

// What backs an arena's memory (see above).
enum class PageKind : uint8_t { Base = 0, Transparent = 1, HugeTlb = 2 };

class Arena {
public:
    // budget_bytes: what the caller intends to allocate at most (sizes the
    // reservation). large_pages: try explicit 2 MiB pages (hugetlb) first.
    // transparent_huge_pages: advise transparent 2 MiB pages (else 4 KiB pages
    // unless hugetlb succeeded; benchmarks compare the two).
    Arena(uint64_t budget_bytes, bool large_pages, bool transparent_huge_pages = true);
    ~Arena();
    Arena(const Arena&) = delete;
    Arena& operator=(const Arena&) = delete;

    // 64-byte-aligned memory of `bytes` bytes (from the default heap when the
    // arena's address space is exhausted), or nullptr when the system is out
    // of memory. Thread-safe. Cost: one mimalloc allocation.
    void* allocate(size_t bytes) noexcept;
    // Returns memory from allocate(). Any thread. nullptr is ignored.
    void release(void* p) noexcept;

    bool dedicated() const noexcept { return arena_id_ >= 0; }
    bool large_pages() const noexcept { return large_pages_; }  // as requested
    // What actually backs the arena (Base also for the default-heap fallback).
    PageKind page_kind() const noexcept { return page_kind_; }
    uint64_t reserved_bytes() const noexcept { return reserved_; }
    int arena_id() const noexcept { return arena_id_; }
    // Blocks that came from the default heap because the dedicated arena's
    // address space was exhausted (each allocating thread holds whole
    // mimalloc segments of it); the byte budget still bounds them.
    uint64_t fallback_allocations() const noexcept { return fallback_allocations_.load(std::memory_order_relaxed); }

private:
    int arena_id_ = -1;  // mimalloc arena id, -1 = default heap fallback
    uint64_t reserved_ = 0;
    bool large_pages_ = false;
    PageKind page_kind_ = PageKind::Base;
    std::atomic<uint64_t> fallback_allocations_{0};
};

}  // namespace kvrt::memory
