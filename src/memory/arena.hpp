// Arena: raw, 64-byte-aligned, never-moving memory for KV blocks, taken from a
// dedicated mimalloc arena.
//
// Each Arena owns one *exclusive* mimalloc arena (mi_reserve_os_memory_ex,
// reserved but not committed, optionally on 2 MiB pages) so that KV blocks
// never mix with the process's other allocations. mimalloc heaps may only
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

class Arena {
public:
    // budget_bytes: what the caller intends to allocate at most (sizes the
    // reservation). large_pages: ask the OS for 2 MiB pages.
    Arena(uint64_t budget_bytes, bool large_pages);
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
    bool large_pages() const noexcept { return large_pages_; }
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
    std::atomic<uint64_t> fallback_allocations_{0};
};

}  // namespace kvrt::memory
