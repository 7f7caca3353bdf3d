// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Building a kvrt::Tokenizer from a GGUF file (tokenizer.ggml.* and
// tokenizer.chat_template).
#pragma once

#include "model/tokenizer/tokenizer.hpp"

namespace kvrt {

class GgufFile;

// Reads the tokenizer metadata. Throws kvrt::Error(KVRT_ERR_BAD_FORMAT) naming
// the key when a required key (tokenizer.ggml.model, .tokens) is missing or a
// key has the wrong type. Copies the strings: the result does not reference f.
TokenizerData tokenizer_data_from_gguf(const GgufFile& f);

// Tokenizer(tokenizer_data_from_gguf(f)); also throws what that constructor throws.
Tokenizer tokenizer_from_gguf(const GgufFile& f);

}  // namespace kvrt
