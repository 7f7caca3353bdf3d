// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

#include "memory/arena.hpp"

#include "util/log.hpp"

#include <mimalloc.h>
#include <sys/mman.h>

#include <cstdint>
#include <mutex>
#include <vector>

namespace kvrt::memory {
namespace {

constexpr uint64_t kMiB = 1ull << 20;

struct ArenaSlot {
    mi_arena_id_t id;
    uint64_t size;
    PageKind kind;
    bool busy;
};

// mimalloc places segments at multiples of its segment size (32 MiB in 2.0.9); align arenas we
// map ourselves to 64 MiB to be safe (reservations are multiples of 64 MiB).
constexpr uint64_t kArenaAlign = 64 * kMiB;

// Maps `size` bytes of read-write address space at a kArenaAlign boundary (the slack around it
// is unmapped). hugetlb: from the explicit 2 MiB page pool (every page reserved now: fails
// unless the pool holds them all). Otherwise committed lazily (MAP_NORESERVE).
void* map_aligned(uint64_t size, bool hugetlb) {
    const uint64_t total = size + kArenaAlign;
    const int flags = MAP_PRIVATE | MAP_ANONYMOUS | (hugetlb ? MAP_HUGETLB : MAP_NORESERVE);
    void* p = mmap(nullptr, total, PROT_READ | PROT_WRITE, flags, -1, 0);
    if (p == MAP_FAILED) return nullptr;
    const uintptr_t b = reinterpret_cast<uintptr_t>(p);
    const uintptr_t a = (b + kArenaAlign - 1) & ~uintptr_t(kArenaAlign - 1);
    if (a > b) munmap(p, a - b);
    if (b + total > a + size) munmap(reinterpret_cast<void*>(a + size), b + total - (a + size));
    return reinterpret_cast<void*>(a);
}

// A new exclusive mimalloc arena of `size` bytes backed by pages of `kind`, or -1.
int new_arena(uint64_t size, PageKind kind, mi_arena_id_t* id) {
    if (kind == PageKind::Base)
        return mi_reserve_os_memory_ex(size, /*commit=*/false, /*allow_large=*/false, /*exclusive=*/true, id) == 0 ? 0
                                                                                                                : -1;
    void* p = map_aligned(size, kind == PageKind::HugeTlb);
    if (!p) return -1;
    // THP in "madvise" mode (the common default) backs only advised ranges with 2 MiB pages;
    // in "always" mode this is a no-op and in "never" mode it fails harmlessly (4 KiB pages).
    if (kind == PageKind::Transparent) madvise(p, size, MADV_HUGEPAGE);
    if (!mi_manage_os_memory_ex(p, size, /*is_committed=*/true, /*is_large=*/kind == PageKind::HugeTlb,
                                /*is_zero=*/true, /*numa_node=*/-1, /*exclusive=*/true, id)) {
        munmap(p, size);
        return -1;
    }
    return 0;
}

// Process-wide: mimalloc arenas outlive the Arena objects that use them.
struct ArenaRegistry {
    std::mutex mu;
    std::vector<ArenaSlot> slots;

    // Returns an arena id (>= 0) of at least `size` bytes on pages of `kind`, or -1.
    int acquire(uint64_t size, PageKind kind, uint64_t* got) {
        std::lock_guard<std::mutex> lock(mu);
        int best = -1;
        for (size_t i = 0; i < slots.size(); i++) {
            const ArenaSlot& s = slots[i];
            if (s.busy || s.kind != kind || s.size < size) continue;
            if (best < 0 || s.size < slots[best].size) best = static_cast<int>(i);
        }
        if (best >= 0) {
            slots[best].busy = true;
            *got = slots[best].size;
            return slots[best].id;
        }
        mi_arena_id_t id{};
        if (new_arena(size, kind, &id) != 0) return -1;
        slots.push_back({id, size, kind, true});
        *got = size;
        return id;
    }
    void release(int id) {
        std::lock_guard<std::mutex> lock(mu);
        for (ArenaSlot& s : slots)
            if (s.id == id) s.busy = false;
    }
};

ArenaRegistry& registry() {
    static ArenaRegistry* r = new ArenaRegistry();  // never destroyed: arenas live as long as the process
    return *r;
}

// Per-thread heaps, one per mimalloc arena this thread allocated from.
// mimalloc deletes them when the thread exits (live blocks stay valid).
struct ThreadHeaps {
    std::vector<std::pair<int, mi_heap_t*>> heaps;
    mi_heap_t* get(int arena_id) {
        for (auto& [id, h] : heaps)
            if (id == arena_id) return h;
        mi_heap_t* h = mi_heap_new_in_arena(arena_id);
        if (h) heaps.emplace_back(arena_id, h);
        return h;
    }
};
thread_local ThreadHeaps t_heaps;

}  // namespace

Arena::Arena(uint64_t budget_bytes, bool large_pages, bool transparent_huge_pages) : large_pages_(large_pages) {
    // Reservation: 2x the budget plus 64 MiB of address space (not committed).
    uint64_t want = budget_bytes > (1ull << 46) ? (1ull << 47) : budget_bytes * 2 + 64 * kMiB;
    want = (want + 64 * kMiB - 1) / (64 * kMiB) * (64 * kMiB);
    // Most preferred first; each falls back to the next when the OS refuses.
    const PageKind order[3] = {PageKind::HugeTlb, PageKind::Transparent, PageKind::Base};
    for (PageKind k : order) {
        if (k == PageKind::HugeTlb && !large_pages) continue;
        if (k == PageKind::Transparent && !transparent_huge_pages) continue;
        arena_id_ = registry().acquire(want, k, &reserved_);
        if (arena_id_ >= 0) {
            page_kind_ = k;
            return;
        }
    }
    reserved_ = 0;
}

Arena::~Arena() {
    if (arena_id_ >= 0) registry().release(arena_id_);
}

void* Arena::allocate(size_t bytes) noexcept {
    if (arena_id_ < 0) return mi_malloc_aligned(bytes, kBlockAlign);
    mi_heap_t* h = t_heaps.get(arena_id_);
    if (!h) return nullptr;
    void* p = mi_heap_malloc_aligned(h, bytes, kBlockAlign);
    if (!p) {
        // Memory other threads freed may still sit in this heap's queues.
        mi_heap_collect(h, false);
        p = mi_heap_malloc_aligned(h, bytes, kBlockAlign);
    }
    if (!p) {
        // The reservation is sized from the byte budget, but mimalloc gives
        // every thread's heap whole segments of it, so many threads can
        // exhaust the address space while the budget (which the block pool
        // enforces exactly) still has room. Take the block from the default
        // heap then, rather than failing an allocation the budget allows.
        p = mi_malloc_aligned(bytes, kBlockAlign);
        if (p && fallback_allocations_.fetch_add(1, std::memory_order_relaxed) == 0)
            kvrt::log::at(kvrt::log::Warn, [&] {
                return "KV arena " + std::to_string(arena_id_) + ": its " + std::to_string(reserved_ >> 20) +
                       " MiB of address space are exhausted (per-thread segments); further blocks come from the "
                       "default heap (the byte budget still bounds them)";
            });
    }
    return p;
}

void Arena::release(void* p) noexcept { mi_free(p); }

}  // namespace kvrt::memory
