// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Tokenizer from a GGUF file's tokenizer.* metadata.
#include "model/tokenizer/tokenizer_gguf.hpp"

#include "model/gguf/gguf.hpp"
#include "util/error.hpp"

#include <cstdint>

namespace kvrt {

namespace {

std::optional<bool> optional_bool(const GgufFile& f, std::string_view key) {
    if (!f.has(key)) return std::nullopt;
    return f.require_bool(key);
}

int32_t optional_id(const GgufFile& f, std::string_view key) {
    if (!f.has(key)) return -1;
    const GgufValue* v = f.find(key);
    // Some converters write -1 (as i32) or UINT32_MAX for "none".
    if (v->type() == GgufType::I32 && v->as_i64() == -1) return -1;
    if (v->type() == GgufType::U32 && v->as_u64() == 0xFFFFFFFFu) return -1;
    const uint32_t id = f.require_u32(key);
    if (id > uint32_t(INT32_MAX)) fail(KVRT_ERR_BAD_FORMAT, std::string(key) + " = " + std::to_string(id) + " is too large");
    return int32_t(id);
}

}  // namespace

TokenizerData tokenizer_data_from_gguf(const GgufFile& f) {
    TokenizerData d;
    d.model = std::string(f.require_string("tokenizer.ggml.model"));
    d.pre = std::string(f.get_string("tokenizer.ggml.pre", ""));
    for (std::string_view s : f.require_string_array("tokenizer.ggml.tokens")) d.tokens.emplace_back(s);
    d.token_types = f.get_i32_array("tokenizer.ggml.token_type");
    for (std::string_view s : f.get_string_array("tokenizer.ggml.merges")) d.merges.emplace_back(s);
    d.scores = f.get_f32_array("tokenizer.ggml.scores");
    d.bos_id = optional_id(f, "tokenizer.ggml.bos_token_id");
    d.eos_id = optional_id(f, "tokenizer.ggml.eos_token_id");
    d.eot_id = optional_id(f, "tokenizer.ggml.eot_token_id");
    d.unknown_id = optional_id(f, "tokenizer.ggml.unknown_token_id");
    d.padding_id = optional_id(f, "tokenizer.ggml.padding_token_id");
    d.add_bos = optional_bool(f, "tokenizer.ggml.add_bos_token");
    d.add_eos = optional_bool(f, "tokenizer.ggml.add_eos_token");
    d.add_space_prefix = optional_bool(f, "tokenizer.ggml.add_space_prefix");
    d.chat_template = std::string(f.get_string("tokenizer.chat_template", ""));
    return d;
}

Tokenizer tokenizer_from_gguf(const GgufFile& f) { return Tokenizer(tokenizer_data_from_gguf(f)); }

}  // namespace kvrt
