// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Chat templates: render a conversation into the prompt text an instruct model
// was trained on.
//
// GGUF files carry the template as Jinja source (tokenizer.chat_template).
// kvrt does not run Jinja: it recognises the common template families by
// signature and renders them natively, reproducing what the family's
// reference template renders (role names, separators, trimming, a default
// system prompt written into the template). Unknown templates are refused
// with KVRT_ERR_UNSUPPORTED; ChatTemplate::chatml() is a plain ChatML
// fallback a caller can choose explicitly.
//
// Untrusted content: message text could contain control-token text such as
// "<|im_end|>". render() can report the byte ranges of caller-supplied text
// (roles and contents); pass them as EncodeOptions::plain_ranges with
// parse_special and only the template's own markers become control tokens,
// while the tokenization is otherwise that of the whole string.
//
// BOS: the rendered text never starts with the BOS token's text; tokenize it
// with add_special (the tokenizer adds BOS when the model wants one) and
// parse_special (so "<|im_start|>" etc. become their tokens). Families whose
// templates put BOS inside the history (Llama 2 between turns) keep it there.
//
// A ChatTemplate is immutable; render() is thread-safe.
#pragma once

#include "model/tokenizer/tokenizer.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kvrt {

enum class ChatFamily : uint8_t {
    chatml,  // <|im_start|>role\ncontent<|im_end|>\n      (SmolLM2, Qwen, Hermes...)
    llama2,  // <s>[INST] <<SYS>>\nsys\n<</SYS>>\n\nuser [/INST] answer </s>
    llama3,  // <|start_header_id|>role<|end_header_id|>\n\ncontent<|eot_id|>
    gemma,   // <start_of_turn>user\ncontent<end_of_turn>\n (assistant is "model")
    zephyr,  // <|role|>\ncontent</s>\n
};

struct ChatMessage {
    std::string_view role;     // "system", "user", "assistant" (ChatML and Zephyr accept any role)
    std::string_view content;
};

class ChatTemplate {
public:
    // Recognises the family of a Jinja template. bos_text / eos_text are the
    // vocabulary's BOS / EOS token strings (used by families whose templates
    // write bos_token / eos_token). Throws kvrt::Error(KVRT_ERR_UNSUPPORTED)
    // for an empty or unrecognised template, naming the known families.
    static ChatTemplate detect(std::string_view jinja, std::string_view bos_text = "<s>",
                               std::string_view eos_text = "</s>");
    // A family chosen by the caller (no default system prompt).
    static ChatTemplate of_family(ChatFamily family, std::string_view bos_text = "<s>",
                                  std::string_view eos_text = "</s>");
    // Plain ChatML, no default system prompt: the explicit fallback.
    static ChatTemplate chatml() { return of_family(ChatFamily::chatml); }

    // "chatml", "llama2", "llama3", "gemma", "zephyr" <-> family.
    static std::optional<ChatFamily> family_from_name(std::string_view name) noexcept;
    static const char* family_name(ChatFamily family) noexcept;

    ChatFamily family() const noexcept { return family_; }
    // The system prompt the template inserts when the conversation does not
    // start with a system message ("" when none).
    const std::string& default_system() const noexcept { return default_system_; }

    // Renders messages; add_generation_prompt appends the opening of the
    // assistant's turn. When content_ranges is given it receives the byte
    // ranges of the rendered text that came from the messages (roles and
    // contents), in order. Throws kvrt::Error(KVRT_ERR_INVALID_ARGUMENT) for an
    // empty role, a role the family has no place for, or (Llama 2, Gemma)
    // turns that do not alternate user/assistant as their templates require.
    std::string render(std::span<const ChatMessage> messages, bool add_generation_prompt,
                       std::vector<ByteRange>* content_ranges = nullptr) const;

private:
    ChatTemplate() = default;
    ChatFamily family_ = ChatFamily::chatml;
    std::string default_system_;
    std::string bos_, eos_;
};

// ChatTemplate::detect on the tokenizer's chat_template with its BOS / EOS
// token strings ("<s>" / "</s>" when the vocabulary has none). Throws as detect.
ChatTemplate chat_template_of(const Tokenizer& tok);

}  // namespace kvrt
