// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

#include "model/tokenizer/chat_template.hpp"

#include "model/tokenizer/tokenizer.hpp"
#include "util/error.hpp"

#include <algorithm>
#include <utility>

namespace kvrt {

namespace {

bool contains(std::string_view s, std::string_view what) { return s.find(what) != std::string_view::npos; }

// Python's str.strip() for the ASCII whitespace templates meet in practice.
std::string_view trim(std::string_view s) {
    auto ws = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; };
    while (!s.empty() && ws(s.front())) s.remove_prefix(1);
    while (!s.empty() && ws(s.back())) s.remove_suffix(1);
    return s;
}

// A literal "<|im_start|>system\n...<|im_end|>" block in a ChatML template is
// the system prompt it inserts when the conversation has none. The newline may
// be a real one or a Jinja escape ("\n" written as backslash-n). Every
// occurrence is tried: Qwen2.5's template first opens the system turn for a
// caller's system message ('<|im_start|>system\n' + messages[0]['content'])
// and writes its literal default prompt in a later branch.
std::string chatml_default_system(std::string_view t) {
    for (std::string_view open : {std::string_view("<|im_start|>system\n"), std::string_view("<|im_start|>system\\n")}) {
        for (size_t a = t.find(open); a != std::string_view::npos; a = t.find(open, a + 1)) {
            const size_t b = t.find("<|im_end|>", a + open.size());
            if (b == std::string_view::npos) break;
            std::string_view body = t.substr(a + open.size(), b - a - open.size());
            // Template code (an expression, a quote, a tag) means it is not a literal prompt.
            if (body.empty() || body.find_first_of("{}'\"+%") != std::string_view::npos) continue;
            std::string out;
            for (size_t i = 0; i < body.size(); ++i) {
                if (body[i] == '\\' && i + 1 < body.size() && body[i + 1] == 'n') {
                    out += '\n';
                    ++i;
                } else {
                    out += body[i];
                }
            }
            return out;
        }
    }
    return {};
}

[[noreturn]] void bad_role(ChatFamily f, size_t i, std::string_view role) {
    fail(KVRT_ERR_INVALID_ARGUMENT, std::string("chat template ") + ChatTemplate::family_name(f) + ": message " +
                                        std::to_string(i) + " has role '" + std::string(role) +
                                        "' (expected system, user or assistant)");
}

[[noreturn]] void not_alternating(ChatFamily f, size_t i) {
    fail(KVRT_ERR_INVALID_ARGUMENT, std::string("chat template ") + ChatTemplate::family_name(f) + ": message " +
                                        std::to_string(i) +
                                        " breaks the user/assistant alternation the template requires (an optional "
                                        "system message first, then user, assistant, user, ...)");
}

}  // namespace

std::optional<ChatFamily> ChatTemplate::family_from_name(std::string_view n) noexcept {
    if (n == "chatml") return ChatFamily::chatml;
    if (n == "llama2") return ChatFamily::llama2;
    if (n == "llama3") return ChatFamily::llama3;
    if (n == "gemma") return ChatFamily::gemma;
    if (n == "zephyr") return ChatFamily::zephyr;
    return std::nullopt;
}

const char* ChatTemplate::family_name(ChatFamily f) noexcept {
    switch (f) {
        case ChatFamily::chatml: return "chatml";
        case ChatFamily::llama2: return "llama2";
        case ChatFamily::llama3: return "llama3";
        case ChatFamily::gemma: return "gemma";
        case ChatFamily::zephyr: return "zephyr";
    }
    return "?";
}

ChatTemplate ChatTemplate::of_family(ChatFamily family, std::string_view bos_text, std::string_view eos_text) {
    ChatTemplate t;
    t.family_ = family;
    t.bos_ = std::string(bos_text);
    t.eos_ = std::string(eos_text);
    return t;
}

ChatTemplate ChatTemplate::detect(std::string_view j, std::string_view bos_text, std::string_view eos_text) {
    const char* known = " (kvrt recognises the chatml, llama2, llama3, gemma and zephyr families; choose one "
                        "explicitly or use the plain ChatML fallback)";
    if (trim(j).empty())
        fail(KVRT_ERR_UNSUPPORTED,
             std::string("the model has no chat template (tokenizer.chat_template is missing or empty in its GGUF, "
                         "as in base models)") + known);
    if (contains(j, "<|im_start|>")) {
        if (contains(j, "<|im_sep|>") || contains(j, "<end_of_utterance>"))
            fail(KVRT_ERR_UNSUPPORTED,
                 std::string("chat template uses <|im_start|> but is not ChatML (Phi-4 / SmolVLM style)") + known);
        ChatTemplate t = of_family(ChatFamily::chatml, bos_text, eos_text);
        t.default_system_ = chatml_default_system(j);
        return t;
    }
    if (contains(j, "<|start_header_id|>") && contains(j, "<|end_header_id|>"))
        return of_family(ChatFamily::llama3, bos_text, eos_text);
    if (contains(j, "<start_of_turn>")) return of_family(ChatFamily::gemma, bos_text, eos_text);
    if (contains(j, "[INST]")) {
        if (contains(j, "<<SYS>>")) return of_family(ChatFamily::llama2, bos_text, eos_text);
        fail(KVRT_ERR_UNSUPPORTED,
             std::string("chat template uses [INST] without <<SYS>> (Mistral style), which is not Llama 2's") + known);
    }
    if (contains(j, "<|user|>") && contains(j, "<|assistant|>") && !contains(j, "<|end|>"))
        return of_family(ChatFamily::zephyr, bos_text, eos_text);
    fail(KVRT_ERR_UNSUPPORTED, std::string("chat template not recognised") + known);
}

std::string ChatTemplate::render(std::span<const ChatMessage> msgs, bool add_generation_prompt,
                                 std::vector<ByteRange>* content_ranges) const {
    for (size_t i = 0; i < msgs.size(); ++i)
        if (msgs[i].role.empty())
            fail(KVRT_ERR_INVALID_ARGUMENT,
                 std::string("chat template ") + family_name(family_) + ": message " + std::to_string(i) + " has an empty role");
    size_t bytes = 64 + default_system_.size();
    for (const ChatMessage& m : msgs) bytes += m.role.size() + m.content.size() + 32;
    std::string out;
    out.reserve(bytes);
    if (content_ranges) content_ranges->clear();
    // Appends caller-supplied text (a role or a content) and records where it went.
    auto user_text = [&](std::string_view t) {
        const size_t b = out.size();
        out.append(t);
        if (content_ranges && out.size() > b) content_ranges->push_back({b, out.size()});
    };

    switch (family_) {
        case ChatFamily::chatml: {
            if (!msgs.empty() && msgs[0].role != "system" && !default_system_.empty())
                out.append("<|im_start|>system\n").append(default_system_).append("<|im_end|>\n");
            for (const ChatMessage& m : msgs) {
                out.append("<|im_start|>");
                user_text(m.role);
                out.append("\n");
                user_text(m.content);
                out.append("<|im_end|>\n");
            }
            if (add_generation_prompt) out.append("<|im_start|>assistant\n");
            break;
        }
        case ChatFamily::llama3: {
            for (const ChatMessage& m : msgs) {
                out.append("<|start_header_id|>");
                user_text(m.role);
                out.append("<|end_header_id|>\n\n");
                user_text(trim(m.content));
                out.append("<|eot_id|>");
            }
            if (add_generation_prompt) out.append("<|start_header_id|>assistant<|end_header_id|>\n\n");
            break;
        }
        case ChatFamily::zephyr: {
            for (const ChatMessage& m : msgs) {
                out.append("<|");
                user_text(m.role);
                out.append("|>\n");
                user_text(m.content);
                out.append(eos_).append("\n");
            }
            if (add_generation_prompt) out.append("<|assistant|>\n");
            break;
        }
        case ChatFamily::llama2:
        case ChatFamily::gemma: {
            // Optional system first, then strictly user, assistant, user, ...
            size_t first = 0;
            std::string_view system;
            if (!msgs.empty() && msgs[0].role == "system") {
                system = msgs[0].content;
                first = 1;
            }
            for (size_t i = first; i < msgs.size(); ++i) {
                const std::string_view role = msgs[i].role;
                if (role != "user" && role != "assistant") {
                    if (role == "system") not_alternating(family_, i);
                    bad_role(family_, i, role);
                }
                const bool want_user = (i - first) % 2 == 0;
                if ((role == "user") != want_user) not_alternating(family_, i);
            }
            for (size_t i = first; i < msgs.size(); ++i) {
                const ChatMessage& m = msgs[i];
                const bool is_first = i == first;
                if (family_ == ChatFamily::llama2) {
                    if (m.role == "user") {
                        if (!is_first) out.append(bos_);
                        out.append("[INST] ");
                        if (is_first && !system.empty()) {
                            // The template strips the whole "<<SYS>>\n" + system + "\n<</SYS>>\n\n" + content:
                            // only the content's trailing whitespace (or, if it is blank, the block's) goes.
                            const size_t start = out.size();
                            out.append("<<SYS>>\n");
                            const size_t sys_b = out.size();
                            out.append(system);
                            const size_t sys_e = out.size();
                            out.append("\n<</SYS>>\n\n");
                            const size_t usr_b = out.size();
                            out.append(m.content);
                            const size_t usr_e = out.size();
                            const size_t kept = trim(std::string_view(out).substr(start)).size();
                            out.resize(start + kept);
                            if (content_ranges) {
                                for (auto [b, e] : {std::pair{sys_b, sys_e}, std::pair{usr_b, usr_e}}) {
                                    e = std::min(e, out.size());
                                    if (b < e) content_ranges->push_back({b, e});
                                }
                            }
                        } else {
                            user_text(trim(m.content));
                        }
                        out.append(" [/INST]");
                    } else {
                        out.append(" ");
                        user_text(trim(m.content));
                        out.append(" ").append(eos_);
                    }
                } else {  // gemma
                    out.append("<start_of_turn>").append(m.role == "assistant" ? "model" : "user").append("\n");
                    if (is_first && !system.empty()) {
                        user_text(trim(system));
                        out.append("\n\n");
                    }
                    user_text(trim(m.content));
                    out.append("<end_of_turn>\n");
                }
            }
            if (add_generation_prompt && family_ == ChatFamily::gemma) out.append("<start_of_turn>model\n");
            break;
        }
    }
    return out;
}

ChatTemplate chat_template_of(const Tokenizer& tok) {
    const std::string_view bos = tok.bos_id() >= 0 ? tok.token_text(tok.bos_id()) : std::string_view("<s>");
    const std::string_view eos = tok.eos_id() >= 0 ? tok.token_text(tok.eos_id()) : std::string_view("</s>");
    return ChatTemplate::detect(tok.chat_template(), bos, eos);
}

}  // namespace kvrt
