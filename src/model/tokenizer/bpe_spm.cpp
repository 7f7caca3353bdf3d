// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// SentencePiece-style BPE ("llama" vocabularies): adjacent pieces merge when
// their concatenation is a vocabulary piece, highest score first (leftmost on
// ties), as llama.cpp's llm_tokenizer_spm does; characters that end up
// outside the vocabulary fall back to <0xXX> byte tokens.
//
// As in llama.cpp: the text is cut into characters by the lead byte alone
// (0xC0-0xDF two bytes, 0xE0-0xEF three, 0xF0-0xFF four, anything else one;
// the last one truncated at the end), so invalid UTF-8 forms pieces that are
// no token and falls back to bytes; and a pair merges into any vocabulary
// string whatever the token's type (a control token's text can come out of
// ordinary text when its pieces are tokens: llama.cpp does the same).
#include "model/tokenizer/tokenizer_impl.hpp"

#include <algorithm>

namespace kvrt {

namespace {

struct Symbol {
    uint32_t off, len;
    int32_t prev, next;
};

struct Candidate {
    float score;
    int32_t left, right;
    uint32_t size;
};

struct Worse {  // max-heap on score, then leftmost
    bool operator()(const Candidate& a, const Candidate& b) const noexcept {
        return a.score != b.score ? a.score < b.score : a.left > b.left;
    }
};

// llama.cpp's unicode_len_utf8: the length a lead byte announces.
uint32_t lead_len(char c) noexcept {
    static constexpr uint8_t lookup[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return lookup[uint8_t(c) >> 4];
}

}  // namespace

void Tokenizer::Impl::encode_spm(std::string_view s, std::vector<int32_t>& out) const {
    if (s.empty()) return;
    std::vector<Symbol> sym;
    sym.reserve(s.size());
    for (size_t i = 0; i < s.size();) {
        const uint32_t len = uint32_t(std::min<size_t>(lead_len(s[i]), s.size() - i));
        const int32_t idx = int32_t(sym.size());
        sym.push_back({uint32_t(i), len, idx - 1, -1});
        if (idx > 0) sym[size_t(idx) - 1].next = idx;
        i += len;
    }
    std::vector<Candidate> heap;
    auto consider = [&](int32_t l, int32_t r) {
        if (l < 0 || r < 0) return;
        const uint32_t size = sym[size_t(l)].len + sym[size_t(r)].len;
        const int32_t id = by_text.find(s.substr(sym[size_t(l)].off, size));
        if (id < 0) return;
        heap.push_back({score[size_t(id)], l, r, size});
        std::push_heap(heap.begin(), heap.end(), Worse{});
    };
    for (size_t i = 1; i < sym.size(); ++i) consider(int32_t(i) - 1, int32_t(i));
    while (!heap.empty()) {
        std::pop_heap(heap.begin(), heap.end(), Worse{});
        const Candidate c = heap.back();
        heap.pop_back();
        Symbol& L = sym[size_t(c.left)];
        Symbol& R = sym[size_t(c.right)];
        if (L.len == 0 || R.len == 0 || L.len + R.len != c.size) continue;  // stale
        L.len += R.len;
        R.len = 0;
        L.next = R.next;
        if (R.next >= 0) sym[size_t(R.next)].prev = c.left;
        consider(L.prev, c.left);
        consider(c.left, L.next);
    }
    for (int32_t i = 0; i >= 0; i = sym[size_t(i)].next) {
        const Symbol& x = sym[size_t(i)];
        std::string_view piece = s.substr(x.off, x.len);
        if (const int32_t id = by_text.find(piece); id >= 0) {
            out.push_back(id);
            continue;
        }
        for (char ch : piece) {  // byte fallback
            const int32_t b = byte_token[uint8_t(ch)];
            if (b >= 0) out.push_back(b);
            else if (unk >= 0) out.push_back(unk);
        }
    }
}

}  // namespace kvrt
