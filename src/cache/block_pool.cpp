// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

#include "cache/block_pool.hpp"

#include "util/error.hpp"
#include "util/log.hpp"

namespace kvrt::cache {

BlockPool::BlockPool(std::vector<size_t> manager_block_bytes, uint64_t budget_bytes, bool large_pages)
    : arena_(budget_bytes, large_pages),
      block_bytes_(std::move(manager_block_bytes)),
      budget_(budget_bytes),
      in_use_(block_bytes_.size(), 0),
      cached_(block_bytes_.size(), 0),
      index_(block_bytes_.size()) {
    blocks_.emplace_back();  // block 0: the null block
    blocks_.reserve(1024);
}

BlockPool::~BlockPool() {
    for (size_t i = 1; i < blocks_.size(); i++)
        if (blocks_[i].mem) arena_.release(blocks_[i].mem);
}

void BlockPool::lru_push_back(BlockId id) {
    Block& b = blocks_[id];
    b.prev = lru_tail_;
    b.next = kNil;
    if (lru_tail_ != kNil) blocks_[lru_tail_].next = id;
    else lru_head_ = id;
    lru_tail_ = id;
    b.in_lru = true;
}

void BlockPool::lru_remove(BlockId id) {
    Block& b = blocks_[id];
    if (b.prev != kNil) blocks_[b.prev].next = b.next;
    else lru_head_ = b.next;
    if (b.next != kNil) blocks_[b.next].prev = b.prev;
    else lru_tail_ = b.prev;
    b.prev = b.next = kNil;
    b.in_lru = false;
}

BlockId BlockPool::new_slot() {
    if (!free_slots_.empty()) {
        BlockId id = free_slots_.back();
        free_slots_.pop_back();
        return id;
    }
    KVRT_CHECK(blocks_.size() < kNil - 1, KVRT_ERR_OVERFLOW, "more than 2^32 blocks");
    blocks_.emplace_back();
    return static_cast<BlockId>(blocks_.size() - 1);
}

void BlockPool::evict(BlockId id) {
    if (on_evict) on_evict(id);
    Block& b = blocks_[id];
    lru_remove(id);
    index_[b.manager].erase(b.hash);
    b.hashed = false;
    b.tail = false;
    cached_bytes_ -= block_bytes_[b.manager];
    cached_[b.manager]--;
    evictions_++;
    kvrt::log::at(kvrt::log::Debug, [&] {
        return "cache: evicted a cached block of " + std::to_string(block_bytes_[b.manager]) + " bytes (manager " +
               std::to_string(b.manager) + ", " + std::to_string(evictions_) + " evictions so far)";
    });
}

BlockId BlockPool::allocate(int32_t m) {
    const size_t need = block_bytes_[m];
    for (;;) {
        if (used_bytes_ + need <= budget_) {
            if (void* p = arena_.allocate(need)) return adopt(m, p);
            // The arena is fragmented: evicting a cached block may help.
            if (lru_head_ == kNil)
                fail(KVRT_ERR_OUT_OF_MEMORY, "the arena could not provide a block of " + std::to_string(need) + " bytes");
        }
        if (lru_head_ == kNil)
            fail(KVRT_ERR_CACHE_FULL, "the cache budget of " + std::to_string(budget_) + " bytes is full (" +
                                          std::to_string(used_bytes_) + " in use) and nothing is evictable");
        BlockId victim = lru_head_;
        evict(victim);
        Block& v = blocks_[victim];
        if (block_bytes_[v.manager] == need) {  // same size: reuse in place
            v.ref = 1;
            v.manager = m;
            in_use_[m]++;
            return victim;
        }
        arena_.release(v.mem);
        used_bytes_ -= block_bytes_[v.manager];
        v = Block{};
        free_slots_.push_back(victim);
    }
}

BlockId BlockPool::allocate_if_free(int32_t m) {
    if (used_bytes_ + block_bytes_[m] > budget_) return kNullBlock;
    void* p = arena_.allocate(block_bytes_[m]);
    return p ? adopt(m, p) : kNullBlock;
}

BlockId BlockPool::adopt(int32_t m, void* p) {
    BlockId id;
    try {
        id = new_slot();
    } catch (...) {
        arena_.release(p);
        throw;
    }
    Block& b = blocks_[id];
    b = Block{};
    b.mem = static_cast<uint8_t*>(p);
    b.ref = 1;
    b.manager = m;
    used_bytes_ += block_bytes_[m];
    in_use_[m]++;
    return id;
}

void BlockPool::acquire(BlockId id) {
    Block& b = blocks_[id];
    if (b.ref == 0) {
        // A cached block comes back into use.
        lru_remove(id);
        cached_bytes_ -= block_bytes_[b.manager];
        cached_[b.manager]--;
        in_use_[b.manager]++;
    }
    b.ref++;
}

void BlockPool::release(BlockId id) {
    Block& b = blocks_[id];
    if (--b.ref > 0) return;
    in_use_[b.manager]--;
    if (b.hashed) {
        lru_push_back(id);
        cached_bytes_ += block_bytes_[b.manager];
        cached_[b.manager]++;
        return;
    }
    arena_.release(b.mem);
    used_bytes_ -= block_bytes_[b.manager];
    b = Block{};
    free_slots_.push_back(id);
}

bool BlockPool::publish(BlockId id, const Hash128& h, bool tail) {
    Block& b = blocks_[id];
    if (!index_[b.manager].try_emplace(h, id)) return false;
    b.hashed = true;
    b.tail = tail;
    b.hash = h;
    return true;
}

BlockId BlockPool::lookup(int32_t m, const Hash128& h) const {
    return index_[m].find(h);
}

void BlockPool::check(const std::vector<int32_t>& expected_refs) const {
    auto bad = [](const std::string& what) { fail(KVRT_ERR_INTERNAL, "block pool invariant: " + what); };
    uint64_t used = 0, cached = 0;
    std::vector<uint64_t> in_use(block_bytes_.size(), 0), cached_n(block_bytes_.size(), 0);
    size_t lru_count = 0;
    for (size_t i = 1; i < blocks_.size(); i++) {
        const Block& b = blocks_[i];
        int32_t want = i < expected_refs.size() ? expected_refs[i] : 0;
        if (b.ref != want)
            bad("block " + std::to_string(i) + " has ref " + std::to_string(b.ref) + " but " + std::to_string(want) +
                " owners");
        if (!b.mem) {
            if (b.ref != 0 || b.hashed || b.in_lru) bad("block " + std::to_string(i) + " has no memory but is live");
            continue;
        }
        used += block_bytes_[b.manager];
        if (b.ref > 0) {
            in_use[b.manager]++;
            if (b.in_lru) bad("block " + std::to_string(i) + " is in use and in the LRU queue");
        } else {
            if (!b.hashed || !b.in_lru) bad("block " + std::to_string(i) + " is unreferenced but not cached");
            cached += block_bytes_[b.manager];
            cached_n[b.manager]++;
            lru_count++;
        }
        if (b.hashed) {
            BlockId got = lookup(b.manager, b.hash);
            if (got != i) bad("block " + std::to_string(i) + " is hashed but not indexed");
        }
    }
    size_t walked = 0;
    for (BlockId id = lru_head_, prev = kNil; id != kNil; prev = id, id = blocks_[id].next) {
        if (blocks_[id].prev != prev) bad("LRU back link broken at block " + std::to_string(id));
        if (++walked > blocks_.size()) bad("LRU queue has a cycle");
    }
    if (walked != lru_count) bad("LRU queue length " + std::to_string(walked) + " != cached blocks " + std::to_string(lru_count));
    for (size_t m = 0; m < index_.size(); m++)
        index_[m].for_each([&](const Hash128& h, BlockId id) {
            if (id >= blocks_.size() || !blocks_[id].hashed || blocks_[id].hash != h || blocks_[id].manager != int32_t(m))
                bad("index entry points to a block without that hash");
        });
    size_t hashed = 0, indexed = 0;
    for (size_t i = 1; i < blocks_.size(); i++) hashed += blocks_[i].hashed ? 1 : 0;
    for (const PrefixIndex& idx : index_) indexed += idx.size();
    if (hashed != indexed) bad(std::to_string(indexed) + " index entries for " + std::to_string(hashed) + " hashed blocks");
    if (used != used_bytes_) bad("used bytes " + std::to_string(used_bytes_) + " != " + std::to_string(used));
    if (cached != cached_bytes_) bad("cached bytes mismatch");
    if (used_bytes_ > budget_) bad("used bytes exceed the budget");
    for (size_t m = 0; m < block_bytes_.size(); m++)
        if (in_use[m] != in_use_[m] || cached_n[m] != cached_[m]) bad("per-manager block counters mismatch");
}

uint64_t BlockPool::trim_cached(uint64_t keep_bytes) {
    uint64_t freed = 0;
    while (cached_bytes_ > keep_bytes && lru_head_ != kNil) {
        const BlockId victim = lru_head_;
        evict(victim);
        Block& v = blocks_[victim];
        arena_.release(v.mem);
        used_bytes_ -= block_bytes_[v.manager];
        freed += block_bytes_[v.manager];
        v = Block{};
        free_slots_.push_back(victim);
    }
    return freed;
}

void BlockPool::set_budget(uint64_t budget_bytes) {
    KVRT_CHECK(budget_bytes > 0, KVRT_ERR_INVALID_ARGUMENT, "the budget is 0");
    const uint64_t in_use = used_bytes_ - cached_bytes_;
    KVRT_CHECK(budget_bytes >= in_use, KVRT_ERR_INVALID_STATE,
               "a budget of " + std::to_string(budget_bytes) + " bytes is below the " + std::to_string(in_use) +
                   " bytes that sequences and pins hold; release sequences first");
    if (used_bytes_ > budget_bytes) trim_cached(cached_bytes_ - (used_bytes_ - budget_bytes));
    budget_ = budget_bytes;
}

}  // namespace kvrt::cache
