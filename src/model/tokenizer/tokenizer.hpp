// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// kvrt::Tokenizer: text <-> token ids for the vocabularies GGUF files carry
// (tokenizer.ggml.*), matching llama.cpp token for token.
//
//  - "gpt2": byte-level BPE. Text is split by the model's pre-tokenizer
//    (tokenizer.ggml.pre, see pretokenizer.hpp), each word's bytes are mapped
//    to GPT-2's printable byte alphabet and merged by merge rank.
//  - "llama": SentencePiece-style BPE. Spaces become U+2581, a space is put in
//    front of the text (add_space_prefix), adjacent pieces merge by vocabulary
//    score, and characters outside the vocabulary fall back to <0xXX> tokens.
//
// Special tokens: control tokens (and the unknown token) are recognised in the
// text only when the caller asks (parse_special); otherwise their text is
// tokenised as ordinary text. User-defined tokens are always recognised, as in
// llama.cpp and Hugging Face tokenizers ("added tokens"). As llama.cpp does,
// tokens named like end-of-turn / end-of-generation / FIM markers ("<|im_end|>",
// "<end_of_turn>", "</s>", "<|fim_pad|>", ...) are control tokens whatever
// type the GGUF gives them (token_type reports the type kvrt uses).
//
// Text is bytes: invalid UTF-8 is never rejected or replaced; its bytes are
// tokenised as bytes (a byte the vocabulary cannot represent at all is dropped,
// as llama.cpp does) and decode back to the same bytes. (One exception, shared
// with llama.cpp's "llama" tokenizer: a space within the bytes a truncated
// multi-byte lead announces was already U+2581 and decodes as such.) On
// "gpt2" vocabularies llama.cpp differs here: it tokenizes U+FFFD for each
// byte it cannot decode.
//
// A Tokenizer is immutable after construction; every const member function is
// thread-safe. Copies share the same vocabulary (cheap).
#pragma once

#include "model/tokenizer/pretokenizer.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kvrt {

// tokenizer.ggml.token_type values.
enum class TokenType : int32_t {
    undefined = 0,
    normal = 1,
    unknown = 2,
    control = 3,
    user_defined = 4,
    unused = 5,
    byte = 6,
};

enum class TokenizerKind : uint8_t {
    bpe,  // tokenizer.ggml.model = "gpt2"
    spm,  // tokenizer.ggml.model = "llama"
};

// The GGUF tokenizer metadata as plain values. Absent keys stay at their
// defaults; the optional flags then take the model type's default
// (llama: add_bos, add_space_prefix; gpt2: add_bos only for llama3-style pre).
struct TokenizerData {
    std::string model;                 // tokenizer.ggml.model: "gpt2" or "llama"
    std::string pre;                   // tokenizer.ggml.pre ("" when absent)
    std::vector<std::string> tokens;   // tokenizer.ggml.tokens
    std::vector<int32_t> token_types;  // tokenizer.ggml.token_type (empty: all normal)
    std::vector<std::string> merges;   // tokenizer.ggml.merges, "left right" (gpt2)
    std::vector<float> scores;         // tokenizer.ggml.scores (llama; empty: all 0)
    int32_t bos_id = -1;               // tokenizer.ggml.bos_token_id (-1: none)
    int32_t eos_id = -1;               // tokenizer.ggml.eos_token_id
    int32_t eot_id = -1;               // tokenizer.ggml.eot_token_id
    int32_t unknown_id = -1;           // tokenizer.ggml.unknown_token_id
    int32_t padding_id = -1;           // tokenizer.ggml.padding_token_id
    std::optional<bool> add_bos;           // tokenizer.ggml.add_bos_token
    std::optional<bool> add_eos;           // tokenizer.ggml.add_eos_token
    std::optional<bool> add_space_prefix;  // tokenizer.ggml.add_space_prefix
    std::string chat_template;             // tokenizer.chat_template
};

// A byte range [begin, end) of a text.
struct ByteRange {
    size_t begin = 0;
    size_t end = 0;
};

struct EncodeOptions {
    // Add BOS / EOS as the vocabulary's add_bos / add_eos say.
    bool add_special = true;
    // Recognise control-token text (e.g. "<|im_start|>") as those tokens.
    // Leave false for untrusted text: it then cannot forge control tokens.
    bool parse_special = false;
    // Ranges of the text where no special token (control or user-defined) is
    // recognised: a match overlapping one stays ordinary text. E.g.
    // the message contents of a rendered chat (ChatTemplate::render reports
    // them). The view must stay valid for the call.
    std::span<const ByteRange> plain_ranges = {};
};

class Tokenizer {
public:
    // Validates data and builds the lookup tables. Throws kvrt::Error:
    // KVRT_ERR_UNSUPPORTED for an unknown model or pre-tokenizer,
    // KVRT_ERR_BAD_FORMAT for an empty vocabulary, arrays of mismatched
    // length, a malformed merge or a special id outside the vocabulary.
    // Cost: O(vocabulary + merges).
    explicit Tokenizer(const TokenizerData& data);

    // Appends the ids of text to out. Any byte string is accepted; only a text
    // of 4 GiB or more is refused (KVRT_ERR_OVERFLOW).
    // Cost: O(text) plus the merges of each distinct word.
    void encode(std::string_view text, const EncodeOptions& opt, std::vector<int32_t>& out) const;
    std::vector<int32_t> encode(std::string_view text, const EncodeOptions& opt = {}) const;

    // The bytes of ids concatenated. Control and unknown tokens render as
    // their text when render_special, as nothing otherwise. For "llama"
    // vocabularies with add_space_prefix the leading space of the first text
    // token is removed, so decode(encode(s)) == s. Throws kvrt::Error
    // (KVRT_ERR_OUT_OF_RANGE naming the id) for an id outside the vocabulary.
    std::string decode(std::span<const int32_t> ids, bool render_special = false) const;

    // The bytes one token stands for (as decode renders it, without the
    // leading-space removal); the view stays valid while any copy of this
    // Tokenizer lives. Throws KVRT_ERR_OUT_OF_RANGE.
    std::string_view piece(int32_t id, bool render_special = false) const;

    // The token's vocabulary string (byte-level / U+2581-escaped form).
    std::string_view token_text(int32_t id) const;
    TokenType token_type(int32_t id) const;
    // Id of the token whose vocabulary string is text, if any.
    std::optional<int32_t> find_token(std::string_view text) const;

    int32_t n_tokens() const noexcept;
    TokenizerKind kind() const noexcept;
    PreTokenizer pretokenizer() const noexcept;
    int32_t bos_id() const noexcept;  // -1 when none
    int32_t eos_id() const noexcept;
    int32_t eot_id() const noexcept;  // end of turn (metadata, or found by text), -1 when none
    int32_t unknown_id() const noexcept;
    int32_t padding_id() const noexcept;
    bool add_bos() const noexcept;
    bool add_eos() const noexcept;
    bool add_space_prefix() const noexcept;
    // True for tokens that end generation: EOS, EOT and the tokens llama.cpp
    // ends on by name (<|im_end|>, <|eot_id|>, <|endoftext|>, <end_of_turn>, </s>,
    // <|fim_pad|>, <|repo_name|>, <|file_sep|>, ...).
    bool is_end_of_generation(int32_t id) const noexcept;
    bool is_special(int32_t id) const noexcept;  // control, unknown, user-defined or unused

    const std::string& chat_template() const noexcept;

    struct Impl;

private:
    std::shared_ptr<const Impl> impl_;
};

// Streaming detokenizer for one output stream: feed tokens one at a time and
// get back only complete UTF-8, holding a partial multi-byte character until
// the token that completes it arrives (a byte-level token may end in the
// middle of a character). Bytes that can never become valid UTF-8 are passed
// through as they are. Not thread-safe (one per stream); keeps a reference to
// the tokenizer, which must outlive it.
class TokenDecoder {
public:
    explicit TokenDecoder(const Tokenizer& tok, bool render_special = false);

    // Appends the bytes that are complete after id to out. Throws
    // KVRT_ERR_OUT_OF_RANGE (and changes nothing) for an id outside the vocabulary.
    void push(int32_t id, std::string& out);
    std::string push(int32_t id);
    // Appends whatever is still held (an incomplete sequence, as raw bytes) and resets.
    void flush(std::string& out);
    // Forgets held bytes and starts a new stream.
    void reset() noexcept;
    // Bytes currently held back.
    size_t pending() const noexcept { return held_.size(); }

private:
    const Tokenizer* tok_;
    bool render_special_;
    bool at_start_ = true;
    std::string held_;
};

}  // namespace kvrt
