// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// The tables behind kvrt::Tokenizer (shared by tokenizer.cpp and the merge
// engines). Immutable after construction.
#pragma once

#include "model/tokenizer/bpe.hpp"
#include "model/tokenizer/tokenizer.hpp"

#include <array>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace kvrt {

// Vocabulary string -> id. Open addressing over a power-of-two table of 64-bit
// slots, each packing id + 1 (high 32 bits), the string's length (16 bits,
// saturated) and a 16-bit hash tag, so a probe reads the vocabulary text only
// when length and tag agree: one cache miss per lookup in the common case,
// which is what the SentencePiece merge loop (a lookup per candidate pair over
// a 262K vocabulary) is bound by. Read-only after build(): thread-safe.
class TokenIndex {
public:
    // Indexes every non-empty string of text; for duplicated strings the last
    // id wins (as llama.cpp's token_to_id map). text must outlive the index
    // and not change.
    void build(const std::vector<std::string>& text);
    // Id of s, or -1.
    int32_t find(std::string_view s) const noexcept;

private:
    static uint64_t hash(std::string_view s) noexcept;
    static uint64_t pack(uint64_t h, size_t len) noexcept {
        return (uint64_t(len < 0xFFFF ? len : 0xFFFF) << 16) | ((h >> 48) & 0xFFFF);
    }
    const std::vector<std::string>* text_ = nullptr;
    std::vector<uint64_t> slots_;  // 0: empty; else (id + 1) << 32 | pack(hash, length)
    size_t mask_ = 0;
};

struct Tokenizer::Impl {
    TokenizerKind kind = TokenizerKind::bpe;
    PreTokenizer pre = PreTokenizer::gpt2;
    bool ignore_merges = false;  // llama3: a word that is a token is emitted whole

    std::vector<std::string> text;  // vocabulary strings
    std::vector<TokenType> type;
    std::vector<float> score;
    // Vocabulary string -> id (over `text`, which never changes after
    // construction; the last id wins for duplicated strings, as in llama.cpp).
    TokenIndex by_text;

    bpe::MergeTable merges;  // gpt2 only
    // gpt2: the token of each byte's stand-in character; llama: its <0xXX>
    // token (or the one-character token). -1 when absent.
    std::array<int32_t, 256> byte_token{};
    std::array<std::string, 256> byte_text;  // gpt2: UTF-8 of each byte's stand-in

    // Decoded bytes of every token: piece_bytes[piece_off[id], piece_off[id+1]).
    std::string piece_bytes;
    std::vector<uint32_t> piece_off;

    // Tokens recognised inside text (control, user-defined, unknown), longest first.
    std::vector<int32_t> specials;

    int32_t bos = -1, eos = -1, eot = -1, unk = -1, pad = -1;
    bool add_bos = false, add_eos = false, add_space_prefix = false;
    std::vector<uint8_t> eog;  // per id
    std::string chat_template;

    std::optional<int32_t> find(std::string_view s) const {
        const int32_t id = by_text.find(s);
        if (id < 0) return std::nullopt;
        return id;
    }
    std::string_view piece(int32_t id) const {
        return std::string_view(piece_bytes).substr(piece_off[size_t(id)], piece_off[size_t(id) + 1] - piece_off[size_t(id)]);
    }
    void check_id(int32_t id) const;

    // Raw-text encoders (no special-token matching, no BOS/EOS).
    void encode_bpe(std::string_view text, std::vector<int32_t>& out) const;
    void encode_spm(std::string_view escaped, std::vector<int32_t>& out) const;
};

}  // namespace kvrt
