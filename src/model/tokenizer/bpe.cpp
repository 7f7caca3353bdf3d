// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

#include "model/tokenizer/bpe.hpp"

#include <algorithm>
#include <array>

namespace kvrt::bpe {

namespace {

constexpr uint64_t kEmpty = ~uint64_t(0);  // (-1, -1): never a real pair

struct ByteMaps {
    std::array<uint32_t, 256> to_cp{};
    std::array<int16_t, 324> from_cp{};  // code points < 0x144 cover the whole alphabet
    ByteMaps() {
        from_cp.fill(-1);
        auto printable = [](int b) { return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE); };
        uint32_t n = 0;
        for (int b = 0; b < 256; ++b) to_cp[b] = printable(b) ? uint32_t(b) : 256 + n++;
        for (int b = 0; b < 256; ++b) from_cp[to_cp[b]] = int16_t(b);
    }
};

const ByteMaps& maps() {
    static const ByteMaps m;
    return m;
}

// Min-heap order: lower rank first, then leftmost.
struct Later {
    bool operator()(const MergeScratch::Candidate& a, const MergeScratch::Candidate& b) const noexcept {
        return a.rank != b.rank ? a.rank > b.rank : a.left > b.left;
    }
};

}  // namespace

uint32_t byte_to_cp(uint8_t b) noexcept { return maps().to_cp[b]; }

int cp_to_byte(uint32_t cp) noexcept { return cp < maps().from_cp.size() ? maps().from_cp[cp] : -1; }

void MergeTable::reserve(size_t n) {
    size_t cap = 16;
    while (cap < n * 2) cap *= 2;
    if (cap <= keys_.size()) return;
    std::vector<uint64_t> old_keys = std::move(keys_);
    std::vector<Entry> old_vals = std::move(vals_);
    keys_.assign(cap, kEmpty);
    vals_.assign(cap, Entry{0, 0});
    mask_ = cap - 1;
    count_ = 0;
    for (size_t i = 0; i < old_keys.size(); ++i) {
        if (old_keys[i] == kEmpty) continue;
        size_t h = hash(old_keys[i]) & mask_;
        while (keys_[h] != kEmpty) h = (h + 1) & mask_;
        keys_[h] = old_keys[i];
        vals_[h] = old_vals[i];
        ++count_;
    }
}

void MergeTable::grow() { reserve(std::max<size_t>(16, (count_ + 1) * 2)); }

bool MergeTable::insert(int32_t left, int32_t right, int32_t rank, int32_t result) {
    if (keys_.empty() || (count_ + 1) * 2 > keys_.size()) grow();
    const uint64_t k = key(left, right);
    size_t h = hash(k) & mask_;
    while (keys_[h] != kEmpty) {
        if (keys_[h] == k) return false;
        h = (h + 1) & mask_;
    }
    keys_[h] = k;
    vals_[h] = Entry{rank, result};
    ++count_;
    return true;
}

const MergeTable::Entry* MergeTable::find(int32_t left, int32_t right) const noexcept {
    if (keys_.empty() || left < 0 || right < 0) return nullptr;
    const uint64_t k = key(left, right);
    size_t h = hash(k) & mask_;
    while (true) {
        const uint64_t cur = keys_[h];
        if (cur == k) return &vals_[h];
        if (cur == kEmpty) return nullptr;
        h = (h + 1) & mask_;
    }
}

void merge_word(const MergeTable& merges, std::span<const int32_t> initial, MergeScratch& s,
                std::vector<int32_t>& out) {
    const int32_t n = static_cast<int32_t>(initial.size());
    if (n == 0) return;
    if (n == 1) {
        if (initial[0] >= 0) out.push_back(initial[0]);
        return;
    }
    auto& sym = s.symbols;
    auto& heap = s.heap;
    sym.resize(size_t(n));
    for (int32_t i = 0; i < n; ++i) sym[size_t(i)] = {initial[size_t(i)], i - 1, i + 1 < n ? i + 1 : -1};
    heap.clear();
    auto consider = [&](int32_t l, int32_t r) {
        if (l < 0 || r < 0) return;
        const MergeTable::Entry* e = merges.find(sym[size_t(l)].id, sym[size_t(r)].id);
        if (!e) return;
        heap.push_back({e->rank, l, r, sym[size_t(l)].id, sym[size_t(r)].id});
        std::push_heap(heap.begin(), heap.end(), Later{});
    };
    for (int32_t i = 0; i + 1 < n; ++i) consider(i, i + 1);
    while (!heap.empty()) {
        std::pop_heap(heap.begin(), heap.end(), Later{});
        const MergeScratch::Candidate c = heap.back();
        heap.pop_back();
        auto& L = sym[size_t(c.left)];
        auto& R = sym[size_t(c.right)];
        // Stale: one side was merged away or changed since this pair was queued.
        if (L.next != c.right || L.id != c.left_id || R.id != c.right_id) continue;
        L.id = merges.find(c.left_id, c.right_id)->result;
        L.next = R.next;
        if (R.next >= 0) sym[size_t(R.next)].prev = c.left;
        R.id = -2;  // dead
        R.prev = R.next = -1;
        consider(L.prev, c.left);
        consider(c.left, L.next);
    }
    for (int32_t i = 0; i >= 0; i = sym[size_t(i)].next)
        if (sym[size_t(i)].id >= 0) out.push_back(sym[size_t(i)].id);
}

}  // namespace kvrt::bpe
