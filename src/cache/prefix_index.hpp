// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// PrefixIndex: the flat hash map of the prefix cache, 128-bit block hash ->
// block id. Open addressing with linear probing over one array of 24-byte
// slots (no node per entry, one cache line touched per lookup in the common
// case); erasing shifts the following entries back instead of leaving
// tombstones, so lookups never slow down with churn. The keys are XXH3-128
// outputs, uniformly distributed: the low 64 bits pick the home slot.
// Load factor <= 1/2. Block id 0 (the null block) marks an empty slot.
// Not synchronised (the Cache's mutex guards it).
#pragma once

#include "cache/block_hash.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kvrt::cache {

class PrefixIndex {
public:
    static constexpr uint32_t kEmpty = 0;

    // The block under h, or kEmpty.
    uint32_t find(const Hash128& h) const {
        if (size_ == 0) return kEmpty;
        for (size_t i = home(h);; i = (i + 1) & mask_) {
            const Slot& s = slots_[i];
            if (s.id == kEmpty) return kEmpty;
            if (s.key == h) return s.id;
        }
    }

    // Inserts h -> id (id != kEmpty) unless h is present. Returns true if inserted.
    // May throw std::bad_alloc when growing (the index is unchanged then).
    bool try_emplace(const Hash128& h, uint32_t id) {
        if ((size_ + 1) * 2 > slots_.size()) grow();
        for (size_t i = home(h);; i = (i + 1) & mask_) {
            Slot& s = slots_[i];
            if (s.id == kEmpty) {
                s.key = h;
                s.id = id;
                size_++;
                return true;
            }
            if (s.key == h) return false;
        }
    }

    // Removes h if present. Returns true if it was.
    bool erase(const Hash128& h) {
        if (size_ == 0) return false;
        size_t i = home(h);
        for (;; i = (i + 1) & mask_) {
            if (slots_[i].id == kEmpty) return false;
            if (slots_[i].key == h) break;
        }
        // Backward-shift: move later entries of the probe run into the hole
        // when their home slot does not lie cyclically in (hole, j].
        for (size_t j = i;;) {
            j = (j + 1) & mask_;
            if (slots_[j].id == kEmpty) break;
            size_t k = home(slots_[j].key);
            bool stays = (i <= j) ? (i < k && k <= j) : (i < k || k <= j);
            if (!stays) {
                slots_[i] = slots_[j];
                i = j;
            }
        }
        slots_[i] = Slot{};
        size_--;
        return true;
    }

    template <class F>
    void for_each(F&& f) const {
        for (const Slot& s : slots_)
            if (s.id != kEmpty) f(s.key, s.id);
    }

    size_t size() const { return size_; }

private:
    struct Slot {
        Hash128 key;
        uint32_t id = kEmpty;
    };
    size_t home(const Hash128& h) const { return static_cast<size_t>(h.lo) & mask_; }
    void grow() {
        std::vector<Slot> old;
        size_t n = slots_.empty() ? 64 : slots_.size() * 2;
        std::vector<Slot> fresh(n);  // may throw: nothing changed yet
        old.swap(slots_);
        slots_.swap(fresh);
        mask_ = n - 1;
        for (const Slot& s : old)
            if (s.id != kEmpty)
                for (size_t i = home(s.key);; i = (i + 1) & mask_)
                    if (slots_[i].id == kEmpty) {
                        slots_[i] = s;
                        break;
                    }
    }

    std::vector<Slot> slots_;
    size_t mask_ = 0;
    size_t size_ = 0;
};

}  // namespace kvrt::cache
