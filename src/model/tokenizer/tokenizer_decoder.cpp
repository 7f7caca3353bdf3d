// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// kvrt::TokenDecoder: streaming detokenization that only releases complete UTF-8.
#include "model/tokenizer/tokenizer.hpp"

#include "model/tokenizer/unicode.hpp"

namespace kvrt {

TokenDecoder::TokenDecoder(const Tokenizer& tok, bool render_special) : tok_(&tok), render_special_(render_special) {}

void TokenDecoder::push(int32_t id, std::string& out) {
    std::string_view p = tok_->piece(id, render_special_);  // throws before any change
    if (at_start_ && tok_->kind() == TokenizerKind::spm && tok_->add_space_prefix()) {
        const TokenType t = tok_->token_type(id);
        if (t == TokenType::normal || t == TokenType::byte || t == TokenType::undefined) {
            if (!p.empty() && p.front() == ' ') p.remove_prefix(1);
            at_start_ = false;
        }
    }
    if (p.empty()) return;
    held_.append(p);
    const size_t ready = unicode::utf8_complete_prefix(held_);
    out.append(held_, 0, ready);
    held_.erase(0, ready);
}

std::string TokenDecoder::push(int32_t id) {
    std::string out;
    push(id, out);
    return out;
}

void TokenDecoder::flush(std::string& out) {
    out += held_;
    reset();
}

void TokenDecoder::reset() noexcept {
    held_.clear();
    at_start_ = true;
}

}  // namespace kvrt
