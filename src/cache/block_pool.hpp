// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// BlockPool: every KV block of one cache, under one byte budget, with one
// intrusive LRU queue of evictable blocks and the prefix index.
//
// Blocks have the size of their manager's block (managers differ). A block is
//   in use    ref > 0 (held by sequences/pins),
//   cached    ref == 0 but hashed: its rows are a valid prefix block; it sits
//             in the LRU queue (freed blocks at the tail, victims from the head)
//             and is evicted lazily, only when the budget needs its bytes,
//   gone      ref == 0 and not hashed: its memory went back to the arena
//             immediately (nothing would ever hit it).
// used bytes = in-use + cached block bytes <= budget; free = budget - used.
// When an allocation does not fit, LRU heads are evicted (any manager): a
// victim of the same block size is reused in place, another size is returned
// to the arena and the new block is allocated there.
// Block 0 is the null block (no memory): table entries of dropped positions.
// Not synchronised: the owning Cache holds its mutex around every call.
#pragma once

#include "cache/block_hash.hpp"
#include "cache/prefix_index.hpp"
#include "memory/arena.hpp"

#include <cstdint>
#include <functional>
#include <vector>

namespace kvrt::cache {

using BlockId = uint32_t;
inline constexpr BlockId kNullBlock = 0;
inline constexpr BlockId kNil = 0xffffffffu;

struct Block {
    uint8_t* mem = nullptr;
    int32_t ref = 0;
    int32_t manager = -1;
    bool hashed = false;
    bool in_lru = false;
    // Published as a sequence's partly filled last block (Cache::publish_tail_locked): it serves
    // sub-block hits only, is never a parent, and is not copied to lower tiers or prefix files.
    bool tail = false;
    Hash128 hash;
    BlockId prev = kNil;  // LRU links
    BlockId next = kNil;
};

class BlockPool {
public:
    BlockPool(std::vector<size_t> manager_block_bytes, uint64_t budget_bytes, bool large_pages);
    ~BlockPool();
    BlockPool(const BlockPool&) = delete;
    BlockPool& operator=(const BlockPool&) = delete;

    // Bytes an allocation plan may count on: free plus evictable (cached).
    uint64_t available_bytes() const { return budget_ - used_bytes_ + cached_bytes_; }

    // A fresh block of manager m with ref = 1 and unspecified contents.
    // Evicts LRU heads when the budget requires. Throws CACHE_FULL when even
    // evicting everything cannot make room, OUT_OF_MEMORY when the arena fails.
    BlockId allocate(int32_t m);
    // Like allocate() but only from free bytes (never evicts); kNullBlock when full.
    BlockId allocate_if_free(int32_t m);
    // Calls f(manager, hash, block) for every indexed block.
    template <class F>
    void for_each_indexed(F&& f) const {
        for (size_t m = 0; m < index_.size(); m++)
            index_[m].for_each([&](const Hash128& h, BlockId id) { f(static_cast<int32_t>(m), h, id); });
    }
    // ref + 1; takes a cached block out of the LRU queue.
    void acquire(BlockId id);
    // ref - 1; at 0 a hashed block goes to the LRU tail, another is freed.
    void release(BlockId id);

    // Publishes a computed block under hash h (manager of the block): a full block, or with
    // tail = true a sequence's partly filled last block (Block::tail).
    // Returns false (and leaves the block unhashed) when h is already indexed.
    bool publish(BlockId id, const Hash128& h, bool tail = false);
    // The block indexed under h for manager m, or kNullBlock.
    BlockId lookup(int32_t m, const Hash128& h) const;

    const Block& block(BlockId id) const { return blocks_[id]; }
    uint8_t* mem(BlockId id) const { return blocks_[id].mem; }
    size_t block_bytes(int32_t m) const { return block_bytes_[m]; }
    int32_t n_managers() const { return static_cast<int32_t>(block_bytes_.size()); }

    uint64_t budget() const { return budget_; }
    uint64_t used_bytes() const { return used_bytes_; }
    uint64_t cached_bytes() const { return cached_bytes_; }
    uint64_t evictions() const { return evictions_; }
    // Memory control (Cache::set_budget / trim): a new budget (evicts cached blocks to fit;
    // throws INVALID_STATE when the in-use bytes alone exceed it), and evicting cached blocks
    // until at most keep_bytes of them remain (returns the bytes freed).
    void set_budget(uint64_t budget_bytes);
    uint64_t trim_cached(uint64_t keep_bytes);
    uint64_t blocks_in_use(int32_t m) const { return in_use_[m]; }
    uint64_t blocks_cached(int32_t m) const { return cached_[m]; }
    const memory::Arena& arena() const { return arena_; }

    // Called with an LRU victim just before its hash leaves the index (its rows still
    // intact): the cache copies the block set to its lower tiers. Empty: nothing.
    std::function<void(BlockId)> on_evict;

    // Checks every internal invariant (LRU links, counters, index); throws
    // kvrt::Error(INTERNAL) naming the first violation. O(blocks).
    void check(const std::vector<int32_t>& expected_refs) const;
    size_t n_block_slots() const { return blocks_.size(); }

private:
    void lru_push_back(BlockId id);
    void lru_remove(BlockId id);
    BlockId new_slot();
    // Wraps freshly allocated block memory p in a slot for manager m (ref 1, counted in use);
    // releases p if no slot can be had.
    BlockId adopt(int32_t m, void* p);
    void evict(BlockId id);  // drop hash + index entry of an LRU block

    memory::Arena arena_;
    std::vector<size_t> block_bytes_;
    uint64_t budget_;
    uint64_t used_bytes_ = 0;
    uint64_t cached_bytes_ = 0;
    uint64_t evictions_ = 0;
    std::vector<uint64_t> in_use_, cached_;
    std::vector<Block> blocks_;
    std::vector<BlockId> free_slots_;
    BlockId lru_head_ = kNil, lru_tail_ = kNil;
    std::vector<PrefixIndex> index_;  // per manager
};

}  // namespace kvrt::cache
