// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Pre-tokenizers: split text into the words BPE merges within, exactly as
// llama.cpp's regex pre-tokenizers do (tokenizer.ggml.pre in GGUF), written by
// hand over Unicode classes instead of a regex engine.
//
// Expressions are applied in sequence: each one splits every piece the previous
// one produced, and both the matches and the text between them stay pieces.
// Lookaheads such as \s+(?!\S) see only the current piece.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace kvrt {

enum class PreTokenizer : uint8_t {
    // 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
    gpt2,
    // \p{N} (every digit alone), then gpt2. "smollm", "starcoder", "refact",
    // "command-r", "codeshell", "exaone", "minerva-7b".
    digits_gpt2,
    // (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
    //  ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+        ("llama3", "llama-bpe", ...)
    llama3,
    // as llama3 with \p{N} (single digits)                     ("qwen2", "stablelm2", ...)
    qwen2,
};

// Maps a GGUF tokenizer.ggml.pre value to its pre-tokenizer; "" (key absent)
// means gpt2. Throws kvrt::Error(KVRT_ERR_UNSUPPORTED) naming unknown values.
PreTokenizer pretokenizer_from_name(std::string_view name);

// Name of a pre-tokenizer family (for messages and `kvrt inspect`).
const char* pretokenizer_name(PreTokenizer p) noexcept;

// Splits text into words (views into text, in order, covering it exactly).
// Invalid UTF-8 bytes are kept as single "other" characters. Thread-safe.
void pretokenize(PreTokenizer p, std::string_view text, std::vector<std::string_view>& words);

}  // namespace kvrt
