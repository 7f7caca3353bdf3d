// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

#include "model/tokenizer/pretokenizer.hpp"

#include "model/tokenizer/unicode.hpp"
#include "util/error.hpp"

#include <string>

namespace kvrt {

namespace {

using unicode::kLetter;
using unicode::kNumber;
using unicode::kWhitespace;

// Class value returned outside the current piece; matches nothing.
constexpr uint8_t kOutside = 0x80;

struct Text {
    std::vector<uint32_t> cps;      // code points (kInvalidBase + byte for invalid bytes)
    std::vector<uint8_t> cls;       // class bits per code point
    std::vector<uint32_t> offsets;  // byte offset of each code point, plus the end

    explicit Text(std::string_view s) {
        cps.reserve(s.size());
        cls.reserve(s.size());
        offsets.reserve(s.size() + 1);
        size_t i = 0;
        while (i < s.size()) {
            unicode::Decoded d = unicode::decode_utf8(s.data() + i, s.size() - i);
            cps.push_back(d.cp);
            cls.push_back(unicode::classes(d.cp));
            offsets.push_back(static_cast<uint32_t>(i));
            i += d.len;
        }
        offsets.push_back(static_cast<uint32_t>(s.size()));
    }
};

struct Range {
    size_t begin, end;  // code point indices
};

// One piece [a, b) of the text being split; emits the words found in it.
class Piece {
public:
    Piece(const Text& t, size_t a, size_t b, std::vector<Range>& out) : t_(t), a_(a), b_(b), prev_(a), out_(out) {}

    uint32_t cp(size_t p) const { return p < b_ ? t_.cps[p] : 0xFFFFFFFFu; }
    uint8_t cls(size_t p) const { return p < b_ ? t_.cls[p] : kOutside; }
    // Emits [prev, end) as a word; returns its length.
    size_t emit(size_t end) {
        size_t len = end - prev_;
        if (len > 0) out_.push_back({prev_, end});
        prev_ = end;
        return len;
    }
    static bool other(uint8_t c) { return !(c & (kWhitespace | kLetter | kNumber)) && c != kOutside; }

    // The alternatives every pattern ends with, at pos with nws whitespace code points
    // ahead: \s+(?!\S) (a run of whitespace leaves its last one to the next piece when a
    // non-space follows), then \s+, then any single code point. Emits the piece and returns
    // where the next one starts.
    size_t whitespace_tail(size_t pos, size_t nws) {
        if (nws > 1 && pos + nws < b_) pos += nws - 1;
        else if (nws > 0) pos += nws;
        else ++pos;
        emit(pos);
        return pos;
    }

    void gpt2() {
        size_t pos = a_;
        while (pos < b_) {
            const uint32_t c = cp(pos);
            const uint8_t k = cls(pos);
            // 's|'t|'re|'ve|'m|'ll|'d
            if (c == '\'' && pos + 1 < b_) {
                const uint32_t n1 = cp(pos + 1);
                if (n1 == 's' || n1 == 't' || n1 == 'm' || n1 == 'd') {
                    pos += emit(pos + 2);
                    continue;
                }
                if (pos + 2 < b_) {
                    const uint32_t n2 = cp(pos + 2);
                    if ((n1 == 'r' && n2 == 'e') || (n1 == 'v' && n2 == 'e') || (n1 == 'l' && n2 == 'l')) {
                        pos += emit(pos + 3);
                        continue;
                    }
                }
            }
            const uint8_t k2 = c == ' ' ? cls(pos + 1) : k;
            if (k2 & kLetter) {  //  ?\p{L}+
                pos += (c == ' ');
                while (cls(pos) & kLetter) ++pos;
                emit(pos);
                continue;
            }
            if (k2 & kNumber) {  //  ?\p{N}+
                pos += (c == ' ');
                while (cls(pos) & kNumber) ++pos;
                emit(pos);
                continue;
            }
            if (other(k2)) {  //  ?[^\s\p{L}\p{N}]+
                pos += (c == ' ');
                while (other(cls(pos))) ++pos;
                emit(pos);
                continue;
            }
            size_t nws = 0;
            while (cls(pos + nws) & kWhitespace) ++nws;
            pos = whitespace_tail(pos, nws);
        }
    }

    void llama3(size_t max_digits) {
        auto lower = [](uint32_t c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; };
        size_t pos = a_;
        while (pos < b_) {
            const uint32_t c = cp(pos);
            const uint8_t k = cls(pos);
            // (?i:'s|'t|'re|'ve|'m|'ll|'d)
            if (c == '\'' && pos + 1 < b_) {
                const uint32_t n1 = lower(cp(pos + 1));
                if (n1 == 's' || n1 == 't' || n1 == 'm' || n1 == 'd') {
                    pos += emit(pos + 2);
                    continue;
                }
                if (pos + 2 < b_) {
                    const uint32_t n2 = lower(cp(pos + 2));
                    if ((n1 == 'r' && n2 == 'e') || (n1 == 'v' && n2 == 'e') || (n1 == 'l' && n2 == 'l')) {
                        pos += emit(pos + 3);
                        continue;
                    }
                }
            }
            // [^\r\n\p{L}\p{N}]?\p{L}+
            if (!(c == '\r' || c == '\n' || (k & kNumber))) {
                if ((k & kLetter) || (cls(pos + 1) & kLetter)) {
                    ++pos;
                    while (cls(pos) & kLetter) ++pos;
                    emit(pos);
                    continue;
                }
            }
            // \p{N}{1,max}
            if (k & kNumber) {
                size_t ini = pos;
                while (cls(pos) & kNumber) {
                    if (++pos - ini >= max_digits) {
                        emit(pos);
                        ini = pos;
                    }
                }
                emit(pos);
                continue;
            }
            //  ?[^\s\p{L}\p{N}]+[\r\n]*
            const uint8_t k2 = c == ' ' ? cls(pos + 1) : k;
            if (other(k2)) {
                pos += (c == ' ');
                while (other(cls(pos))) ++pos;
                while (cp(pos) == '\r' || cp(pos) == '\n') ++pos;
                emit(pos);
                continue;
            }
            size_t nws = 0, last_rn = 0;
            while (cls(pos + nws) & kWhitespace) {
                const uint32_t c2 = cp(pos + nws);
                if (c2 == '\r' || c2 == '\n') last_rn = pos + nws + 1;
                ++nws;
            }
            if (last_rn > 0) {  // \s*[\r\n]+
                pos = last_rn;
                emit(pos);
                continue;
            }
            pos = whitespace_tail(pos, nws);
        }
    }

    // \p{N}: every number code point is its own piece; the text between stays one piece.
    void digits() {
        for (size_t pos = a_; pos < b_; ++pos) {
            if (cls(pos) & kNumber) {
                emit(pos);
                emit(pos + 1);
            }
        }
        emit(b_);
    }

private:
    const Text& t_;
    size_t a_, b_, prev_;
    std::vector<Range>& out_;
};

}  // namespace

PreTokenizer pretokenizer_from_name(std::string_view name) {
    // "" (no tokenizer.ggml.pre, older GGUFs) is taken as the GPT-2 regex. llama.cpp
    // then uses its own "default" expression set, which kvrt does not implement.
    if (name.empty() || name == "gpt-2" || name == "phi-2" || name == "mpt" || name == "olmo" || name == "jais" ||
        name == "roberta-bpe" || name == "gigachat")
        return PreTokenizer::gpt2;
    if (name == "smollm" || name == "starcoder" || name == "refact" || name == "command-r" || name == "codeshell" ||
        name == "exaone" || name == "minerva-7b")
        return PreTokenizer::digits_gpt2;
    if (name == "llama3" || name == "llama-v3" || name == "llama-bpe" || name == "falcon3" || name == "dbrx" ||
        name == "smaug-bpe")
        return PreTokenizer::llama3;
    if (name == "qwen2" || name == "deepseek-r1-qwen" || name == "stablelm2" || name == "megrez")
        return PreTokenizer::qwen2;
    fail(KVRT_ERR_UNSUPPORTED,
         "tokenizer.ggml.pre '" + std::string(name) +
             "' is not a supported pre-tokenizer (supported: gpt-2, phi-2, mpt, olmo, jais, smollm, starcoder, "
             "refact, command-r, codeshell, exaone, minerva-7b, llama3, llama-bpe, falcon3, dbrx, smaug-bpe, qwen2, "
             "deepseek-r1-qwen, stablelm2, megrez)");
}

const char* pretokenizer_name(PreTokenizer p) noexcept {
    switch (p) {
        case PreTokenizer::gpt2: return "gpt2";
        case PreTokenizer::digits_gpt2: return "digits+gpt2";
        case PreTokenizer::llama3: return "llama3";
        case PreTokenizer::qwen2: return "qwen2";
    }
    return "?";
}

void pretokenize(PreTokenizer p, std::string_view text, std::vector<std::string_view>& words) {
    if (text.empty()) return;
    const Text t(text);
    std::vector<Range> pieces{{0, t.cps.size()}};
    std::vector<Range> next;
    auto pass = [&](auto&& fn) {
        next.clear();
        next.reserve(pieces.size() * 2);
        for (const Range& r : pieces) {
            Piece piece(t, r.begin, r.end, next);
            fn(piece);
        }
        pieces.swap(next);
    };
    switch (p) {
        case PreTokenizer::gpt2: pass([](Piece& x) { x.gpt2(); }); break;
        case PreTokenizer::digits_gpt2:
            pass([](Piece& x) { x.digits(); });
            pass([](Piece& x) { x.gpt2(); });
            break;
        case PreTokenizer::llama3: pass([](Piece& x) { x.llama3(3); }); break;
        case PreTokenizer::qwen2: pass([](Piece& x) { x.llama3(1); }); break;
    }
    words.reserve(words.size() + pieces.size());
    for (const Range& r : pieces) {
        const size_t b = t.offsets[r.begin], e = t.offsets[r.end];
        words.emplace_back(text.data() + b, e - b);
    }
}

}  // namespace kvrt
