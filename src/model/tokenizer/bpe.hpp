// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Byte-level BPE (GPT-2 style) building blocks: the byte <-> printable code
// point alphabet, the merge table keyed by token-id pairs, and the per-word
// merge loop (lowest rank first, leftmost on ties: llama.cpp's and HF's order).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace kvrt::bpe {

// GPT-2's bytes_to_unicode(): printable bytes stand for themselves, the rest
// (controls, space, 0x7F..0xA0, 0xAD) map to U+0100 onwards.
uint32_t byte_to_cp(uint8_t b) noexcept;
// Inverse of byte_to_cp; -1 when cp stands for no byte.
int cp_to_byte(uint32_t cp) noexcept;

// Merge rules: (left id, right id) -> (rank, merged id). Open addressing,
// linear probing; read-only after construction, so lookups are thread-safe.
class MergeTable {
public:
    struct Entry {
        int32_t rank;
        int32_t result;
    };
    void reserve(size_t n);
    // Returns false (and changes nothing) if the pair is already present:
    // the first (lowest-rank) rule for a pair wins.
    bool insert(int32_t left, int32_t right, int32_t rank, int32_t result);
    const Entry* find(int32_t left, int32_t right) const noexcept;
    size_t size() const noexcept { return count_; }

private:
    static uint64_t key(int32_t l, int32_t r) noexcept {
        return (uint64_t(uint32_t(l)) << 32) | uint32_t(r);
    }
    static size_t hash(uint64_t k) noexcept {
        k ^= k >> 33;
        k *= 0xff51afd7ed558ccdULL;
        k ^= k >> 33;
        return size_t(k);
    }
    void grow();

    std::vector<uint64_t> keys_;  // kEmpty marks a free slot
    std::vector<Entry> vals_;
    size_t count_ = 0;
    size_t mask_ = 0;
};

// Scratch buffers reused across the words of one encode call.
struct MergeScratch {
    struct Symbol {
        int32_t id;
        int32_t prev, next;
    };
    struct Candidate {
        int32_t rank, left, right, left_id, right_id;
    };
    std::vector<Symbol> symbols;
    std::vector<Candidate> heap;
};

// Merges the initial symbols (one token id per byte; -1 for a byte the
// vocabulary lacks, which never merges) and appends the resulting ids to out,
// dropping -1s.
void merge_word(const MergeTable& merges, std::span<const int32_t> initial, MergeScratch& scratch,
                std::vector<int32_t>& out);

}  // namespace kvrt::bpe
