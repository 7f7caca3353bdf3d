// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// libFuzzer harness: the tokenizers on arbitrary text, one vocabulary per kind.
//
// Built once per process from the real models' vocabularies:
//   0 SmolLM2 (byte-level BPE, "smollm" = digits_gpt2 pre-tokenizer)
//   1 SmolLM2's vocabulary with the plain gpt2 pre-tokenizer
//   2 SmolLM2's vocabulary with the llama3 pre-tokenizer
//   3 Qwen2.5-Coder (byte-level BPE, qwen2 pre-tokenizer)
//   4 Gemma 3 (SentencePiece BPE with byte fallback)
// Input: byte 0 picks the tokenizer (low 3 bits, mod 5) and the options (bits 3-5);
// the rest is the text. Checked on every input, beside the sanitizers:
//  - every pre-tokenizer's words cover the text exactly, in order;
//  - every id encode returns is inside the vocabulary;
//  - byte-level BPE without special-token parsing decodes back to the text;
//  - the streaming decoder's output equals decode() of the same ids.
#include "fuzz_support.hpp"

#include "model/gguf/gguf.hpp"
#include "model/tokenizer/pretokenizer.hpp"
#include "model/tokenizer/tokenizer.hpp"
#include "model/tokenizer/tokenizer_gguf.hpp"
#include "util/error.hpp"

#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

using namespace kvrt;

namespace {

std::vector<std::unique_ptr<Tokenizer>>& tokenizers() {
    static std::vector<std::unique_ptr<Tokenizer>> t;
    return t;
}

// Per tokenizer, the bytes its vocabulary cannot represent at all (encoded alone they
// give no token): encode drops them, as llama.cpp does (tokenizer.hpp). SmolLM2's
// vocabulary lacks a few control bytes.
std::vector<std::array<bool, 256>>& dropped_bytes() {
    static std::vector<std::array<bool, 256>> d;
    return d;
}

TokenizerData data_of(const char* file) {
    const std::string path = fuzz::model_dir() + "/" + file;
    try {
        return tokenizer_data_from_gguf(GgufFile::open(path));
    } catch (const Error& e) {
        fuzz::missing(path + ": " + e.what());
    }
}

[[noreturn]] void fail(const char* what, std::string_view text) {
    std::fprintf(stderr, "fuzz_tokenizer: %s (text of %zu bytes)\n", what, text.size());
    std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    TokenizerData smol = data_of(fuzz::kSmolLM2);
    auto& t = tokenizers();
    t.push_back(std::make_unique<Tokenizer>(smol));
    smol.pre = "gpt-2";
    t.push_back(std::make_unique<Tokenizer>(smol));
    smol.pre = "llama-bpe";
    t.push_back(std::make_unique<Tokenizer>(smol));
    t.push_back(std::make_unique<Tokenizer>(data_of(fuzz::kQwen25)));
    t.push_back(std::make_unique<Tokenizer>(data_of(fuzz::kGemma3)));
    if (t[0]->pretokenizer() != PreTokenizer::digits_gpt2 || t[1]->pretokenizer() != PreTokenizer::gpt2 ||
        t[2]->pretokenizer() != PreTokenizer::llama3 || t[3]->pretokenizer() != PreTokenizer::qwen2 ||
        t[4]->kind() != TokenizerKind::spm)
        fuzz::missing("the vocabularies are not the kinds this harness expects");
    for (const auto& tok : t) {
        std::array<bool, 256> drop{};
        for (int b = 0; b < 256; b++)
            drop[b] = tok->encode(std::string(1, char(b)), EncodeOptions{false, false, {}}).empty();
        dropped_bytes().push_back(drop);
    }
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    const uint8_t sel = data[0];
    const size_t which = (sel & 7) % 5;
    const Tokenizer& tok = *tokenizers()[which];
    const bool parse_special = sel & 8, add_special = sel & 16, render_special = sel & 32;
    // An exact-size copy: a read past the text's end is an ASan report.
    std::unique_ptr<char[]> copy(new char[size - 1 ? size - 1 : 1]);
    std::memcpy(copy.get(), data + 1, size - 1);
    const std::string_view text(copy.get(), size - 1);

    std::vector<std::string_view> words;
    for (PreTokenizer p : {PreTokenizer::gpt2, PreTokenizer::digits_gpt2, PreTokenizer::llama3, PreTokenizer::qwen2}) {
        words.clear();
        pretokenize(p, text, words);
        size_t at = 0;
        for (std::string_view w : words) {
            if (w.data() != text.data() + at || w.empty()) fail("a pre-tokenizer's words do not tile the text", text);
            at += w.size();
        }
        if (at != text.size()) fail("a pre-tokenizer's words do not cover the text", text);
    }

    try {
        EncodeOptions opt;
        opt.parse_special = parse_special;
        opt.add_special = add_special;
        const std::vector<int32_t> ids = tok.encode(text, opt);
        for (int32_t id : ids)
            if (id < 0 || id >= tok.n_tokens()) fail("encode returned an id outside the vocabulary", text);
        const std::string back = tok.decode(ids, render_special);
        if (tok.kind() == TokenizerKind::bpe && !parse_special && !render_special) {
            std::string expect;
            for (char ch : text)
                if (!dropped_bytes()[which][uint8_t(ch)]) expect += ch;
            if (back != expect) fail("byte-level BPE did not decode back to the text (less the dropped bytes)", text);
        }
        TokenDecoder dec(tok, render_special);
        std::string streamed;
        for (int32_t id : ids) dec.push(id, streamed);
        dec.flush(streamed);
        if (streamed != back) fail("the streaming decoder differs from decode()", text);
    } catch (const Error&) {
        // Only a text of 4 GiB or more may be refused; libFuzzer never sends one.
        fail("encode/decode threw on a valid input", text);
    }
    return 0;
}
