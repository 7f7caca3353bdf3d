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

struct Tokenizer::Impl {
    TokenizerKind kind = TokenizerKind::bpe;
    PreTokenizer pre = PreTokenizer::gpt2;
    bool ignore_merges = false;  // llama3: a word that is a token is emitted whole

    std::vector<std::string> text;  // vocabulary strings
    std::vector<TokenType> type;
    std::vector<float> score;
    // Vocabulary string -> id (views into `text`, which never changes after
    // construction; the last id wins for duplicated strings, as in llama.cpp).
    std::unordered_map<std::string_view, int32_t> by_text;

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
        auto it = by_text.find(s);
        if (it == by_text.end()) return std::nullopt;
        return it->second;
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
