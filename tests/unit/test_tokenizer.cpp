// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// kvrt::Tokenizer on small hand-built vocabularies: merge order, byte
// fallback, special tokens, BOS/EOS, the streaming decoder, bad input.
#include <doctest/doctest.h>

#include "model/tokenizer/bpe.hpp"
#include "model/tokenizer/pretokenizer.hpp"
#include "model/tokenizer/tokenizer.hpp"
#include "model/tokenizer/unicode.hpp"
#include "util/error.hpp"

#include <algorithm>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

using kvrt::EncodeOptions;
using kvrt::Tokenizer;
using kvrt::TokenizerData;
using kvrt::TokenType;

namespace {

using Ids = std::vector<int32_t>;

// UTF-8 of the GPT-2 stand-in character of each byte of s.
std::string byte_level(std::string_view s) {
    std::string out;
    for (char c : s) kvrt::unicode::append_utf8(out, kvrt::bpe::byte_to_cp(uint8_t(c)));
    return out;
}

// A gpt2 vocabulary: ids 0..255 are the bytes' stand-ins (id == byte), then
// `extra` tokens (given in plain text, stored byte-level encoded), with merges
// (plain-text pairs) in rank order.
struct BpeVocab {
    TokenizerData d;
    BpeVocab(std::vector<std::string> extra, std::vector<std::pair<std::string, std::string>> merges,
             std::string pre = "gpt-2") {
        d.model = "gpt2";
        d.pre = std::move(pre);
        for (int b = 0; b < 256; ++b) d.tokens.push_back(byte_level(std::string(1, char(b))));
        for (const std::string& e : extra) d.tokens.push_back(byte_level(e));
        for (const auto& [l, r] : merges) d.merges.push_back(byte_level(l) + " " + byte_level(r));
        d.token_types.assign(d.tokens.size(), 1);
    }
    int32_t special(std::string text, TokenType t) {
        d.tokens.push_back(std::move(text));
        d.token_types.push_back(int32_t(t));
        return int32_t(d.tokens.size() - 1);
    }
    int32_t id(std::string_view plain) const {
        const std::string enc = byte_level(plain);
        for (size_t i = 0; i < d.tokens.size(); ++i)
            if (d.tokens[i] == enc) return int32_t(i);
        FAIL("no token " << plain);
        return -1;
    }
};

Ids bytes_of(std::string_view s) {
    Ids out;
    for (char c : s) out.push_back(uint8_t(c));
    return out;
}

template <class Fn>
kvrt_status status_of(Fn&& fn) {
    try {
        fn();
    } catch (const kvrt::Error& e) {
        return e.status();
    }
    return KVRT_OK;
}

template <class Fn>
std::string message_of(Fn&& fn) {
    try {
        fn();
    } catch (const kvrt::Error& e) {
        return e.what();
    }
    return {};
}

std::vector<std::string> words(kvrt::PreTokenizer p, std::string_view text) {
    std::vector<std::string_view> w;
    kvrt::pretokenize(p, text, w);
    return {w.begin(), w.end()};
}

}  // namespace

TEST_CASE("tokenizer: byte-level BPE applies merges by rank, leftmost first on ties") {
    {
        BpeVocab v({"ab", "bc", "abc"}, {{"a", "b"}, {"b", "c"}, {"ab", "c"}});
        Tokenizer tok(v.d);
        CHECK(tok.encode("abc") == Ids{v.id("abc")});  // ab (rank 0) then ab+c
        CHECK(tok.encode("bc") == Ids{v.id("bc")});
        CHECK(tok.encode("cab") == Ids{'c', v.id("ab")});
    }
    {
        BpeVocab v({"ab", "bc"}, {{"b", "c"}, {"a", "b"}});  // b c ranks first now
        Tokenizer tok(v.d);
        CHECK(tok.encode("abc") == Ids{'a', v.id("bc")});
    }
    {
        BpeVocab v({"aa", "aaaa"}, {{"a", "a"}, {"aa", "aa"}});
        Tokenizer tok(v.d);
        CHECK(tok.encode("aaa") == Ids{v.id("aa"), 'a'});  // leftmost pair wins the tie
        CHECK(tok.encode("aaaaa") == Ids{v.id("aaaa"), 'a'});
    }
    {
        // Words never merge across the pre-tokenizer's boundaries; " b" is one word.
        BpeVocab v({" b", "a b"}, {{" ", "b"}, {"a", " b"}});
        Tokenizer tok(v.d);
        CHECK(tok.encode("a b") == Ids{'a', v.id(" b")});
    }
}

TEST_CASE("tokenizer: merge rules that cannot yield a token are skipped, malformed ones refused") {
    BpeVocab v({"ab"}, {{"a", "b"}});
    v.d.merges.push_back(byte_level("x") + " " + byte_level("y"));  // "xy" is not a token
    Tokenizer tok(v.d);
    CHECK(tok.encode("xy") == Ids{'x', 'y'});
    CHECK(tok.encode("ab") == Ids{v.id("ab")});
    v.d.merges.push_back("nospace");
    CHECK(status_of([&] { Tokenizer t(v.d); }) == KVRT_ERR_BAD_FORMAT);
    CHECK(message_of([&] { Tokenizer t(v.d); }).find("tokenizer.ggml.merges[2]") != std::string::npos);
}

TEST_CASE("tokenizer: a byte the vocabulary lacks is dropped, as llama.cpp does") {
    BpeVocab v({}, {});
    v.d.tokens[0x04] = "[removed]";
    Tokenizer tok(v.d);
    CHECK(tok.encode("a\x04" "b") == Ids{'a', 'b'});
}

TEST_CASE("tokenizer: invalid UTF-8 is tokenised as bytes and round-trips") {
    BpeVocab v({"ab"}, {{"a", "b"}});
    Tokenizer tok(v.d);
    const std::string bad = std::string("\x80" "ab\xC3(\xFF\xED\xA0\x80 \xF0\x9F\x98", 13);
    const Ids ids = tok.encode(bad);
    CHECK(tok.decode(ids) == bad);
    CHECK(ids[0] == 0x80);
    CHECK(ids[1] == v.id("ab"));
    // Streaming: bytes that can never complete are released, the truncated
    // 4-byte sequence at the end is held until flush.
    kvrt::TokenDecoder dec(tok);
    std::string out;
    for (int32_t id : ids) dec.push(id, out);
    CHECK(out == bad.substr(0, bad.size() - 3));
    CHECK(dec.pending() == 3);
    dec.flush(out);
    CHECK(out == bad);
}

TEST_CASE("tokenizer: streaming decoder releases only complete UTF-8 at every byte split") {
    BpeVocab v({}, {});  // no merges: one token per byte
    Tokenizer tok(v.d);
    const std::string text = "aé€😀b\xE4\xBD\xA0z";  // 1-, 2-, 3- and 4-byte characters
    // Expected release points: after each complete character.
    kvrt::TokenDecoder dec(tok);
    std::string out;
    for (size_t i = 0; i < text.size(); ++i) {
        dec.push(int32_t(uint8_t(text[i])), out);
        // Everything released is a prefix ending on a character boundary.
        size_t boundary = 0;
        for (size_t p = 0; p <= i;) {
            const auto d = kvrt::unicode::decode_utf8(text.data() + p, text.size() - p);
            if (p + d.len > i + 1) break;
            p += d.len;
            boundary = p;
        }
        CHECK(out == text.substr(0, boundary));
        CHECK(dec.pending() == i + 1 - boundary);
    }
    dec.flush(out);
    CHECK(out == text);
    // Two-token splits at every byte of a 4-byte character.
    BpeVocab w({}, {});
    const std::string emoji = "\xF0\x9F\x98\x80";
    for (size_t k = 1; k < emoji.size(); ++k) {
        w.d.tokens.push_back(byte_level(emoji.substr(0, k)));
        w.d.tokens.push_back(byte_level(emoji.substr(k)));
        w.d.token_types.insert(w.d.token_types.end(), {1, 1});
    }
    Tokenizer tw(w.d);
    for (size_t k = 1; k < emoji.size(); ++k) {
        CAPTURE(k);
        const int32_t first = int32_t(256 + 2 * (k - 1));
        kvrt::TokenDecoder d2(tw);
        CHECK(d2.push(first).empty());
        CHECK(d2.push(first + 1) == emoji);
        CHECK(tw.decode(Ids{first, first + 1}) == emoji);
    }
}

TEST_CASE("tokenizer: control tokens only with parse_special, user-defined always, longest first") {
    BpeVocab v({"ab"}, {{"a", "b"}});
    const int32_t ctl = v.special("<|ctl|>", TokenType::control);
    const int32_t ctl_long = v.special("<|ctl|>x", TokenType::control);
    const int32_t usr = v.special("<user>", TokenType::user_defined);
    Tokenizer tok(v.d);
    CHECK(tok.is_special(ctl));
    CHECK_FALSE(tok.is_special('a'));
    // Without parse_special a control token's text is ordinary text.
    const Ids plain = tok.encode("ab<|ctl|>ab");
    CHECK(std::find(plain.begin(), plain.end(), ctl) == plain.end());
    CHECK(tok.decode(plain) == "ab<|ctl|>ab");
    const EncodeOptions special{.add_special = true, .parse_special = true};
    CHECK(tok.encode("ab<|ctl|>ab", special) == Ids{v.id("ab"), ctl, v.id("ab")});
    CHECK(tok.encode("<|ctl|>x<|ctl|>", special) == Ids{ctl_long, ctl});
    CHECK(tok.encode("<|ctl|><|ctl|>", special) == Ids{ctl, ctl});
    // User-defined tokens are split out either way.
    CHECK(tok.encode("a<user>b") == Ids{'a', usr, 'b'});
    // Control tokens render only on request; user-defined always.
    CHECK(tok.decode(Ids{ctl, 'a', usr}) == "a<user>");
    CHECK(tok.decode(Ids{ctl, 'a', usr}, true) == "<|ctl|>a<user>");
    CHECK(tok.piece(ctl).empty());
    CHECK(tok.piece(ctl, true) == "<|ctl|>");
}

TEST_CASE("tokenizer: BOS and EOS follow the metadata when add_special is set") {
    BpeVocab v({}, {});
    const int32_t bos = v.special("<s>", TokenType::control);
    const int32_t eos = v.special("</s>", TokenType::control);
    v.d.bos_id = bos;
    v.d.eos_id = eos;
    {
        Tokenizer tok(v.d);  // gpt2 with no add_bos key: no BOS (llama.cpp's default)
        CHECK_FALSE(tok.add_bos());
        CHECK(tok.encode("a") == Ids{'a'});
        CHECK(tok.is_end_of_generation(eos));
        CHECK_FALSE(tok.is_end_of_generation(bos));
    }
    v.d.add_bos = true;
    v.d.add_eos = true;
    Tokenizer tok(v.d);
    CHECK(tok.encode("a") == Ids{bos, 'a', eos});
    CHECK(tok.encode("") == Ids{bos, eos});
    CHECK(tok.encode("a", {.add_special = false}) == Ids{'a'});
    CHECK(tok.decode(tok.encode("a")) == "a");
}

TEST_CASE("tokenizer: out-of-range ids are refused with KVRT_ERR_OUT_OF_RANGE naming the id") {
    BpeVocab v({}, {});
    Tokenizer tok(v.d);
    const Ids bad{'a', 999999};
    CHECK(status_of([&] { (void)tok.decode(bad); }) == KVRT_ERR_OUT_OF_RANGE);
    CHECK(message_of([&] { (void)tok.decode(bad); }).find("999999") != std::string::npos);
    CHECK(status_of([&] { (void)tok.piece(-1); }) == KVRT_ERR_OUT_OF_RANGE);
    CHECK(status_of([&] { (void)tok.token_text(256); }) == KVRT_ERR_OUT_OF_RANGE);
    kvrt::TokenDecoder dec(tok);
    std::string out;
    dec.push(0xE2, out);  // first byte of a 3-byte character: held
    CHECK(status_of([&] { dec.push(-7, out); }) == KVRT_ERR_OUT_OF_RANGE);
    CHECK(dec.pending() == 1);  // unchanged
    CHECK(out.empty());
}

TEST_CASE("tokenizer: bad vocabularies are refused with a status naming the problem") {
    TokenizerData d;
    d.model = "bert";
    d.tokens = {"a"};
    CHECK(status_of([&] { Tokenizer t(d); }) == KVRT_ERR_UNSUPPORTED);
    d.model = "gpt2";
    d.pre = "no-such-pre";
    CHECK(status_of([&] { Tokenizer t(d); }) == KVRT_ERR_UNSUPPORTED);
    CHECK(message_of([&] { Tokenizer t(d); }).find("no-such-pre") != std::string::npos);
    d.pre = "smollm";
    d.tokens.clear();
    CHECK(status_of([&] { Tokenizer t(d); }) == KVRT_ERR_BAD_FORMAT);
    d.tokens = {"a", "b"};
    d.token_types = {1};
    CHECK(status_of([&] { Tokenizer t(d); }) == KVRT_ERR_BAD_FORMAT);
    d.token_types = {1, 1};
    d.eos_id = 2;
    CHECK(status_of([&] { Tokenizer t(d); }) == KVRT_ERR_BAD_FORMAT);
    CHECK(message_of([&] { Tokenizer t(d); }).find("eos_token_id") != std::string::npos);
    d.eos_id = 1;
    d.scores = {0.f};
    CHECK(status_of([&] { Tokenizer t(d); }) == KVRT_ERR_BAD_FORMAT);
    d.scores.clear();
    CHECK(status_of([&] { Tokenizer t(d); }) == KVRT_OK);
}

TEST_CASE("tokenizer: pre-tokenizers split like llama.cpp's regexes") {
    using kvrt::PreTokenizer;
    using S = std::vector<std::string>;
    CHECK(words(PreTokenizer::gpt2, "Hello world's  test") == S{"Hello", " world", "'s", " ", " test"});
    CHECK(words(PreTokenizer::gpt2, "a 123 b!!  ") == S{"a", " 123", " b", "!!", "  "});
    CHECK(words(PreTokenizer::gpt2, "x\n\n y") == S{"x", "\n\n", " y"});
    CHECK(words(PreTokenizer::gpt2, "don't") == S{"don", "'t"});
    CHECK(words(PreTokenizer::gpt2, "café 你好") == S{"café", " 你好"});
    // smollm: every digit alone first, then GPT-2 within the pieces.
    CHECK(words(PreTokenizer::digits_gpt2, "abc 1234") == S{"abc", " ", "1", "2", "3", "4"});
    CHECK(words(PreTokenizer::digits_gpt2, "x²3") == S{"x", "²", "3"});
    CHECK(words(PreTokenizer::llama3, "12345 ab") == S{"123", "45", " ab"});
    CHECK(words(PreTokenizer::llama3, "I'M\n\n  x") == S{"I", "'M", "\n\n", " ", " x"});
    CHECK(words(PreTokenizer::llama3, "a...\n\nb") == S{"a", "...\n\n", "b"});
    CHECK(words(PreTokenizer::qwen2, "12345") == S{"1", "2", "3", "4", "5"});
    // Invalid bytes are kept, as "other" characters.
    CHECK(words(PreTokenizer::gpt2, "a\xFF\xFE b") == S{"a", "\xFF\xFE", " b"});
    CHECK(words(PreTokenizer::gpt2, "").empty());
    CHECK(kvrt::pretokenizer_from_name("smollm") == PreTokenizer::digits_gpt2);
    CHECK(kvrt::pretokenizer_from_name("llama-bpe") == PreTokenizer::llama3);
    CHECK(kvrt::pretokenizer_from_name("qwen2") == PreTokenizer::qwen2);
    CHECK(status_of([] { kvrt::pretokenizer_from_name("tekken"); }) == KVRT_ERR_UNSUPPORTED);
}

TEST_CASE("tokenizer: Unicode classes") {
    using namespace kvrt::unicode;
    CHECK(classes('a') == kLetter);
    CHECK(classes('7') == kNumber);
    CHECK(classes(' ') == kWhitespace);
    CHECK(classes(0x3000) == kWhitespace);  // ideographic space
    CHECK(classes(0x00A0) == kWhitespace);
    CHECK(classes(0x4F60) == kLetter);      // 你
    CHECK(classes(0x0663) == kNumber);      // Arabic-Indic three
    CHECK(classes(0x00BD) == kNumber);      // ½
    CHECK(classes('!') == 0);
    CHECK(classes(0x1F600) == 0);           // emoji: symbol
    CHECK(classes(0x1C) == 0);              // not White_Space (str.isspace() says yes)
    CHECK(classes(kInvalidBase + 0xFF) == 0);
    CHECK(decode_utf8("\xC0\x80", 2).len == 1);  // overlong
    CHECK(decode_utf8("\xED\xA0\x80", 3).cp == kInvalidBase + 0xED);  // surrogate
    CHECK(decode_utf8("\xF0\x9F\x98\x80", 4).cp == 0x1F600);
    CHECK(utf8_complete_prefix("ab\xE2\x82") == 2);
    CHECK(utf8_complete_prefix("ab\xE2\x82\xAC") == 5);
    CHECK(utf8_complete_prefix("ab\xC0") == 3);  // can never be valid: released
}

TEST_CASE("tokenizer: SentencePiece BPE merges by score with byte fallback and a space prefix") {
    TokenizerData d;
    d.model = "llama";
    d.tokens = {"<unk>", "<s>", "</s>"};
    d.token_types = {2, 3, 3};
    d.scores = {0, 0, 0};
    for (int b = 0; b < 256; ++b) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "<0x%02X>", b);
        d.tokens.push_back(buf);
        d.token_types.push_back(6);
        d.scores.push_back(0);
    }
    auto add = [&](std::string t, float score) {
        d.tokens.push_back(std::move(t));
        d.token_types.push_back(1);
        d.scores.push_back(score);
        return int32_t(d.tokens.size() - 1);
    };
    const std::string sp = "\xE2\x96\x81";  // U+2581
    const int32_t t_sp = add(sp, -1), t_h = add("h", -1), t_e = add("e", -1), t_l = add("l", -1), t_o = add("o", -1);
    const int32_t t_sph = add(sp + "h", -3), t_he = add("he", -2), t_ll = add("ll", -2.5f), t_hell = add("hell", -4);
    const int32_t t_sphell = add(sp + "hell", -5);
    (void)t_h, (void)t_l, (void)t_ll, (void)t_hell;
    d.bos_id = 1;
    d.eos_id = 2;
    d.unknown_id = 0;
    Tokenizer tok(d);
    CHECK(tok.add_bos());
    CHECK(tok.add_space_prefix());
    // "▁hello": "he" (-2) beats "▁h" (-3), then "ll" (-2.5); "▁h" is stale by then
    // ("▁he" is no token); "hell" (-4), then "▁hell" (-5).
    CHECK(tok.encode("hello") == Ids{1, t_sphell, t_o});
    CHECK(tok.decode(tok.encode("hello")) == "hello");
    CHECK(tok.decode(tok.encode("hello"), true) == "<s>hello");
    // Byte fallback for characters outside the vocabulary.
    const Ids ids = tok.encode("hé", {.add_special = false});
    CHECK(ids == Ids{t_sph, 3 + 0xC3, 3 + 0xA9});
    CHECK(tok.decode(ids) == "hé");
    // Spaces inside the text become U+2581 too; a control token gets no space after it.
    CHECK(tok.decode(tok.encode("hello hell o")) == "hello hell o");
    CHECK(tok.encode("<s>he", {.add_special = false, .parse_special = true}) == Ids{1, t_sp, t_he});
    // Swapping the scores changes the merge order.
    d.scores[size_t(t_sph)] = -1.5f;
    Tokenizer tok2(d);
    CHECK(tok2.encode("he", {.add_special = false}) == Ids{t_sph, t_e});
}

TEST_CASE("tokenizer: one tokenizer is safe to share between threads") {
    BpeVocab v({"ab", "abc", " ab"}, {{"a", "b"}, {"ab", "c"}, {" ", "ab"}});
    const Tokenizer tok(v.d);
    std::string text;
    for (int i = 0; i < 200; ++i) text += "abc ab cab " + std::to_string(i) + " ";
    const Ids want = tok.encode(text);
    std::vector<Ids> got(4);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&, t] {
            for (int r = 0; r < 5; ++r) got[size_t(t)] = tok.encode(text);
        });
    for (auto& th : threads) th.join();
    for (const Ids& g : got) CHECK(g == want);
    const Tokenizer copy = tok;  // copies share the tables
    CHECK(copy.encode(text) == want);
}

TEST_CASE("tokenizer: tokens llama.cpp recognises by name become control tokens, whatever their GGUF type") {
    BpeVocab v({"ab"}, {{"a", "b"}});
    const int32_t strike = v.special("</s>", TokenType::user_defined);  // e.g. Gemma 3's HTML tag
    const int32_t fim_pad = v.special("<|fim_pad|>", TokenType::normal);
    const int32_t fim_pre = v.special("<|fim_prefix|>", TokenType::user_defined);
    const int32_t other = v.special("<b>", TokenType::user_defined);
    {
        Tokenizer tok(v.d);
        CHECK(tok.token_type(strike) == TokenType::control);
        CHECK(tok.token_type(fim_pad) == TokenType::control);
        CHECK(tok.token_type(fim_pre) == TokenType::control);
        CHECK(tok.token_type(other) == TokenType::user_defined);
        CHECK(tok.is_end_of_generation(strike));
        CHECK(tok.is_end_of_generation(fim_pad));
        CHECK_FALSE(tok.is_end_of_generation(fim_pre));
        CHECK_FALSE(tok.is_end_of_generation(other));
        // As a control token "</s>" is split out only with parse_special.
        const Ids plain = tok.encode("ab</s><b>");
        CHECK(std::find(plain.begin(), plain.end(), strike) == plain.end());
        CHECK(plain.back() == other);  // user-defined: always
        CHECK(tok.encode("ab</s><b>", {.parse_special = true}) == Ids{v.id("ab"), strike, other});
        CHECK(tok.decode(Ids{strike}).empty());
        CHECK(tok.decode(Ids{strike}, true) == "</s>");
    }
    // With "<|tool_response>" in the vocabulary (Gemma 4) "</s>" keeps its type and does not end generation.
    v.special("<|tool_response>", TokenType::control);
    Tokenizer tok(v.d);
    CHECK(tok.token_type(strike) == TokenType::user_defined);
    CHECK_FALSE(tok.is_end_of_generation(strike));
    CHECK(tok.encode("ab</s>") == Ids{v.id("ab"), strike});
}
