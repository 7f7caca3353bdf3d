// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// libFuzzer harness: chat-template recognition (ChatTemplate::detect on Jinja source)
// and rendering of arbitrary conversations.
//
// Input: byte 0 holds the mode (bit 0: detect a template from the input, else take
// family (bits 1-3) mod 5), bit 4 = add_generation_prompt; the rest is split at NUL
// bytes into fields: [jinja,] bos, eos, then role, content, role, content, ...
// (at most 64 messages). Errors must be kvrt::Error; a render must report content
// ranges that lie inside the text, in order and without overlap.
#include "model/tokenizer/chat_template.hpp"
#include "util/error.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

using namespace kvrt;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    const uint8_t sel = data[0];
    const std::string input(reinterpret_cast<const char*>(data + 1), size - 1);
    std::vector<std::string_view> fields;
    size_t start = 0;
    for (size_t i = 0; i <= input.size(); i++)
        if (i == input.size() || input[i] == '\0') {
            fields.emplace_back(input.data() + start, i - start);
            start = i + 1;
        }
    size_t f = 0;
    auto next = [&]() -> std::string_view { return f < fields.size() ? fields[f++] : std::string_view(); };
    try {
        const bool detect = sel & 1;
        const std::string_view jinja = detect ? next() : std::string_view();
        const std::string_view bos = next(), eos = next();
        ChatTemplate ct = detect ? ChatTemplate::detect(jinja, bos, eos)
                                 : ChatTemplate::of_family(static_cast<ChatFamily>(((sel >> 1) & 7) % 5), bos, eos);
        if (!ChatTemplate::family_from_name(ChatTemplate::family_name(ct.family()))) std::abort();
        std::vector<ChatMessage> msgs;
        while (f < fields.size() && msgs.size() < 64) {
            std::string_view role = next();
            msgs.push_back({role, next()});
        }
        std::vector<ByteRange> ranges;
        const std::string text = ct.render(msgs, sel & 16, &ranges);
        size_t at = 0;
        for (const ByteRange& r : ranges) {
            if (r.begin < at || r.end < r.begin || r.end > text.size()) {
                std::fprintf(stderr, "fuzz_chat_template: content range [%zu, %zu) out of order or past %zu bytes\n",
                             r.begin, r.end, text.size());
                std::abort();
            }
            at = r.end;
        }
    } catch (const Error&) {
    }
    return 0;
}
