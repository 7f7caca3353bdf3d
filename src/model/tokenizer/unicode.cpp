// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

#include "model/tokenizer/unicode.hpp"

#include <algorithm>
#include <array>

namespace kvrt::unicode {

namespace detail {
extern const uint32_t kRuns[];
extern const size_t kRunCount;
extern const char kUnicodeVersion[];
}  // namespace detail

namespace {

uint8_t classes_slow(uint32_t cp) noexcept {
    // Last run whose first code point <= cp.
    const uint32_t* begin = detail::kRuns;
    const uint32_t* end = detail::kRuns + detail::kRunCount;
    const uint32_t key = (cp << 8) | 0xFFu;
    const uint32_t* it = std::upper_bound(begin, end, key);
    return it == begin ? 0 : static_cast<uint8_t>(*(it - 1) & 0xFFu);
}

const std::array<uint8_t, 256>& latin1_table() noexcept {
    static const std::array<uint8_t, 256> table = [] {
        std::array<uint8_t, 256> t{};
        for (uint32_t cp = 0; cp < 256; ++cp) t[cp] = classes_slow(cp);
        return t;
    }();
    return table;
}

}  // namespace

uint8_t classes(uint32_t cp) noexcept {
    if (cp < 256) return latin1_table()[cp];
    if (cp >= kInvalidBase) return 0;
    return classes_slow(cp);
}

Decoded decode_utf8(const char* p, size_t n) noexcept {
    const auto* s = reinterpret_cast<const unsigned char*>(p);
    const uint32_t b0 = s[0];
    const Decoded invalid{kInvalidBase + b0, 1};
    if (b0 < 0x80) return {b0, 1};
    uint32_t len, cp, min;
    if ((b0 & 0xE0) == 0xC0) { len = 2; cp = b0 & 0x1F; min = 0x80; }
    else if ((b0 & 0xF0) == 0xE0) { len = 3; cp = b0 & 0x0F; min = 0x800; }
    else if ((b0 & 0xF8) == 0xF0) { len = 4; cp = b0 & 0x07; min = 0x10000; }
    else return invalid;
    if (n < len) return invalid;
    for (uint32_t i = 1; i < len; ++i) {
        if ((s[i] & 0xC0) != 0x80) return invalid;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return invalid;
    return {cp, len};
}

void append_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
        out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
}

size_t utf8_complete_prefix(std::string_view s) noexcept {
    const size_t n = s.size();
    // Look back at most 3 bytes for the lead byte of a trailing sequence.
    for (size_t back = 1; back <= 3 && back <= n; ++back) {
        const auto c = static_cast<unsigned char>(s[n - back]);
        if ((c & 0xC0) == 0x80) continue;  // continuation byte: keep looking
        uint32_t need;
        if ((c & 0xE0) == 0xC0) need = 2;
        else if ((c & 0xF0) == 0xE0) need = 3;
        else if ((c & 0xF8) == 0xF0) need = 4;
        else return n;  // ASCII or an invalid byte: nothing to wait for
        if (back >= need) return n;  // complete (or over-long run: not ours to fix)
        // Incomplete: hold it back only if what we have could still become valid.
        std::string_view tail = s.substr(n - back);
        auto b1 = back >= 2 ? static_cast<unsigned char>(tail[1]) : 0x80u;
        if (c == 0xC0 || c == 0xC1 || c > 0xF4) return n;  // can never be valid
        if (back >= 2) {
            if (c == 0xE0 && b1 < 0xA0) return n;  // overlong
            if (c == 0xED && b1 > 0x9F) return n;  // surrogate
            if (c == 0xF0 && b1 < 0x90) return n;  // overlong
            if (c == 0xF4 && b1 > 0x8F) return n;  // past U+10FFFF
        }
        return n - back;
    }
    return n;
}

const char* table_version() noexcept { return detail::kUnicodeVersion; }

}  // namespace kvrt::unicode
