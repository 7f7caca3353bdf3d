// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Chat template families: detection by signature and rendering.
#include <doctest/doctest.h>

#include "model/tokenizer/chat_template.hpp"
#include "util/error.hpp"

#include <string>
#include <vector>

using kvrt::ChatFamily;
using kvrt::ChatMessage;
using kvrt::ChatTemplate;

namespace {

// tokenizer.chat_template of SmolLM2-135M-Instruct.
const char* kSmolLM2 =
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\n"
    "You are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' "
    "+ message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|im_start|>assistant\n' }}{% endif %}";

// Meta's Llama-2-chat template.
const char* kLlama2 =
    "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message = "
    "messages[0]['content'] %}{% else %}{% set loop_messages = messages %}{% set system_message = false %}{% endif %}"
    "{% for message in loop_messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ "
    "raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if "
    "loop.index0 == 0 and system_message != false %}{% set content = '<<SYS>>\\n' + system_message + "
    "'\\n<</SYS>>\\n\\n' + message['content'] %}{% else %}{% set content = message['content'] %}{% endif %}{% if "
    "message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}{% elif message['role'] "
    "== 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}";

const char* kLlama3 =
    "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + "
    "message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 "
    "%}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}{{ "
    "'<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}";

const char* kGemma =
    "{{ bos_token }}{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}{% "
    "endif %}{% for message in messages %}{% if (message['role'] == 'assistant') %}{% set role = 'model' %}{% else "
    "%}{% set role = message['role'] %}{% endif %}{{ '<start_of_turn>' + role + '\n' + message['content'] | trim + "
    "'<end_of_turn>\n' }}{% endfor %}{% if add_generation_prompt %}{{'<start_of_turn>model\n'}}{% endif %}";

const char* kZephyr =
    "{% for message in messages %}\n{% if message['role'] == 'user' %}\n{{ '<|user|>\n' + message['content'] + "
    "eos_token }}\n{% elif message['role'] == 'system' %}\n{{ '<|system|>\n' + message['content'] + eos_token }}\n{% "
    "elif message['role'] == 'assistant' %}\n{{ '<|assistant|>\n'  + message['content'] + eos_token }}\n{% endif "
    "%}\n{% if loop.last and add_generation_prompt %}\n{{ '<|assistant|>' }}\n{% endif %}\n{% endfor %}";

template <class Fn>
kvrt_status status_of(Fn&& fn) {
    try {
        fn();
    } catch (const kvrt::Error& e) {
        return e.status();
    }
    return KVRT_OK;
}

}  // namespace

TEST_CASE("chat_template: SmolLM2 is ChatML with its default system prompt") {
    const ChatTemplate t = ChatTemplate::detect(kSmolLM2);
    CHECK(t.family() == ChatFamily::chatml);
    CHECK(t.default_system() == "You are a helpful AI assistant named SmolLM, trained by Hugging Face");
    const std::vector<ChatMessage> user{{"user", "What is 2+2?"}};
    CHECK(t.render(user, true) ==
          "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
          "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n");
    CHECK(t.render(user, false) ==
          "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
          "<|im_start|>user\nWhat is 2+2?<|im_end|>\n");
    const std::vector<ChatMessage> sys{{"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Hello!"}, {"user", "Bye"}};
    CHECK(t.render(sys, true) ==
          "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello!<|im_end|>\n"
          "<|im_start|>user\nBye<|im_end|>\n<|im_start|>assistant\n");
    // No messages: the template's loop never runs, so no default system either.
    CHECK(t.render({}, true) == "<|im_start|>assistant\n");
    // The plain fallback has no default system prompt.
    CHECK(ChatTemplate::chatml().render(user, true) ==
          "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n");
}

TEST_CASE("chat_template: Llama 2 folds the system prompt into the first turn") {
    const ChatTemplate t = ChatTemplate::detect(kLlama2, "<s>", "</s>");
    CHECK(t.family() == ChatFamily::llama2);
    const std::vector<ChatMessage> m{
        {"system", "Be kind."}, {"user", " Hi "}, {"assistant", " Hello! "}, {"user", "How are you?"}};
    CHECK(t.render(m, true) ==
          "[INST] <<SYS>>\nBe kind.\n<</SYS>>\n\n Hi [/INST] Hello! </s><s>[INST] How are you? [/INST]");
    // (The template strips the combined "<<SYS>>...\n\n" + content, so the content's leading space stays.)
    const std::vector<ChatMessage> no_sys{{"user", " Hi "}};
    CHECK(t.render(no_sys, true) == "[INST] Hi [/INST]");
    const std::vector<ChatMessage> two_users{{"user", "a"}, {"user", "b"}};
    CHECK(status_of([&] { (void)t.render(two_users, true); }) == KVRT_ERR_INVALID_ARGUMENT);
    const std::vector<ChatMessage> tool{{"user", "a"}, {"tool", "b"}};
    CHECK(status_of([&] { (void)t.render(tool, true); }) == KVRT_ERR_INVALID_ARGUMENT);
}

TEST_CASE("chat_template: Llama 3 headers, trimmed content") {
    const ChatTemplate t = ChatTemplate::detect(kLlama3, "<|begin_of_text|>", "<|eot_id|>");
    CHECK(t.family() == ChatFamily::llama3);
    const std::vector<ChatMessage> m{{"system", "Be kind. "}, {"user", "\nHi"}};
    CHECK(t.render(m, true) ==
          "<|start_header_id|>system<|end_header_id|>\n\nBe kind.<|eot_id|>"
          "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
          "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST_CASE("chat_template: Gemma calls the assistant 'model' and merges the system prompt") {
    const ChatTemplate t = ChatTemplate::detect(kGemma, "<bos>", "<eos>");
    CHECK(t.family() == ChatFamily::gemma);
    const std::vector<ChatMessage> m{{"system", "Be kind."}, {"user", "Hi"}, {"assistant", "Hello"}, {"user", "Bye "}};
    CHECK(t.render(m, true) ==
          "<start_of_turn>user\nBe kind.\n\nHi<end_of_turn>\n<start_of_turn>model\nHello<end_of_turn>\n"
          "<start_of_turn>user\nBye<end_of_turn>\n<start_of_turn>model\n");
    const std::vector<ChatMessage> starts_with_model{{"assistant", "x"}};
    CHECK(status_of([&] { (void)t.render(starts_with_model, false); }) == KVRT_ERR_INVALID_ARGUMENT);
}

TEST_CASE("chat_template: Zephyr ends each turn with the EOS text") {
    const ChatTemplate t = ChatTemplate::detect(kZephyr, "<s>", "</s>");
    CHECK(t.family() == ChatFamily::zephyr);
    const std::vector<ChatMessage> m{{"system", "Be kind."}, {"user", "Hi"}};
    CHECK(t.render(m, true) == "<|system|>\nBe kind.</s>\n<|user|>\nHi</s>\n<|assistant|>\n");
}

TEST_CASE("chat_template: unknown templates and bad messages are refused") {
    CHECK(status_of([] { (void)ChatTemplate::detect("{{ messages | tojson }}"); }) == KVRT_ERR_UNSUPPORTED);
    CHECK(status_of([] { (void)ChatTemplate::detect(""); }) == KVRT_ERR_UNSUPPORTED);
    CHECK(status_of([] { (void)ChatTemplate::detect("{{ bos_token }}{% for m in messages %}[INST] {{ m.content }} [/INST]{% endfor %}"); }) ==
          KVRT_ERR_UNSUPPORTED);  // Mistral style
    try {
        (void)ChatTemplate::detect("{{ messages | tojson }}");
    } catch (const kvrt::Error& e) {
        CHECK(std::string(e.what()).find("chatml") != std::string::npos);
    }
    const std::vector<ChatMessage> empty_role{{"", "x"}};
    CHECK(status_of([&] { (void)ChatTemplate::chatml().render(empty_role, true); }) == KVRT_ERR_INVALID_ARGUMENT);
    CHECK(ChatTemplate::family_from_name("gemma") == ChatFamily::gemma);
    CHECK_FALSE(ChatTemplate::family_from_name("jinja").has_value());
    CHECK(std::string(ChatTemplate::family_name(ChatFamily::llama3)) == "llama3");
}

TEST_CASE("chat_template: content ranges cover exactly the caller's text") {
    const std::vector<ChatMessage> m{{"system", "Be kind."}, {"user", " Hi "}, {"assistant", "Yo"}, {"user", "Q"}};
    for (ChatFamily f : {ChatFamily::chatml, ChatFamily::llama2, ChatFamily::llama3, ChatFamily::gemma, ChatFamily::zephyr}) {
        CAPTURE(ChatTemplate::family_name(f));
        const ChatTemplate t = ChatTemplate::of_family(f);
        std::vector<kvrt::ByteRange> ranges;
        const std::string out = t.render(m, true, &ranges);
        CHECK(out == t.render(m, true));
        std::string joined;
        size_t last_end = 0;
        for (const kvrt::ByteRange& r : ranges) {
            CHECK(r.begin >= last_end);
            CHECK(r.begin < r.end);
            CHECK(r.end <= out.size());
            joined += out.substr(r.begin, r.end - r.begin) + "|";
            last_end = r.end;
        }
        // Every content appears (trimmed where the family trims); no template marker does.
        CHECK(joined.find("Be kind.") != std::string::npos);
        CHECK(joined.find("Hi") != std::string::npos);
        CHECK(joined.find("Yo") != std::string::npos);
        CHECK(joined.find("<") == std::string::npos);
        CHECK(joined.find("[INST]") == std::string::npos);
    }
}
