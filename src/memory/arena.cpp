#include "memory/arena.hpp"

#include <mimalloc.h>

#include <mutex>
#include <vector>

namespace kvrt::memory {
namespace {

constexpr uint64_t kMiB = 1ull << 20;

struct ArenaSlot {
    mi_arena_id_t id;
    uint64_t size;
    bool large;
    bool busy;
};

// Process-wide: mimalloc arenas outlive the Arena objects that use them.
struct ArenaRegistry {
    std::mutex mu;
    std::vector<ArenaSlot> slots;

    // Returns an arena id (>= 0) of at least `size` bytes, or -1.
    int acquire(uint64_t size, bool large, uint64_t* got) {
        std::lock_guard<std::mutex> lock(mu);
        int best = -1;
        for (size_t i = 0; i < slots.size(); i++) {
            const ArenaSlot& s = slots[i];
            if (s.busy || s.large != large || s.size < size) continue;
            if (best < 0 || s.size < slots[best].size) best = static_cast<int>(i);
        }
        if (best >= 0) {
            slots[best].busy = true;
            *got = slots[best].size;
            return slots[best].id;
        }
        mi_arena_id_t id{};
        if (mi_reserve_os_memory_ex(size, /*commit=*/false, /*allow_large=*/large, /*exclusive=*/true, &id) != 0)
            return -1;
        slots.push_back({id, size, large, true});
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

Arena::Arena(uint64_t budget_bytes, bool large_pages) : large_pages_(large_pages) {
    // Reservation: 2x the budget plus 64 MiB of address space (not committed).
    uint64_t want = budget_bytes > (1ull << 46) ? (1ull << 47) : budget_bytes * 2 + 64 * kMiB;
    want = (want + 64 * kMiB - 1) / (64 * kMiB) * (64 * kMiB);
    arena_id_ = registry().acquire(want, large_pages, &reserved_);
    if (arena_id_ < 0) reserved_ = 0;
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
        if (p) fallback_allocations_.fetch_add(1, std::memory_order_relaxed);
    }
    return p;
}

void Arena::release(void* p) noexcept { mi_free(p); }

}  // namespace kvrt::memory
