// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

#include "model/tokenizer/tokenizer.hpp"

#include "model/tokenizer/tokenizer_impl.hpp"
#include "model/tokenizer/unicode.hpp"
#include "util/error.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

namespace kvrt {

namespace {

// Tokens llama.cpp (llama_vocab::load) recognises by their text whatever the
// GGUF's token types say. Each one found becomes a control token (parsed in
// text only with parse_special, rendered only with render_special), and the
// end markers and three of the FIM tokens end generation. E.g. Gemma 3's
// "</s>" (a user-defined HTML tag there) and Qwen2.5's "</s>" (a normal token)
// are control tokens and ends of generation in llama.cpp, so text containing
// them is split as llama.cpp splits it only if kvrt does the same.
//
// End of turn, in the order kvrt picks its EOT from (a GGUF eot_token_id wins).
const char* const kEndOfTurn[] = {"<|eot_id|>", "<|im_end|>",        "<|end|>", "<end_of_turn>", "<|endoftext|>",
                                  "<|eom_id|>", "<|end_of_text|>",   "<EOT>",   "_<EOT>",        "[EOT]",
                                  "<｜end▁of▁sentence｜>", "<end_of_utterance>"};
// Further ends of generation (llama.cpp's EOG list).
const char* const kEndOfGeneration[] = {"<|return|>", "<|call|>", "<|flush|>", "<|calls|>", "</s>", "<eos>",
                                        "<turn|>",    "<|tool_response>",     "[EOS]",     "[e~["};
// FIM pad / repo / file-separator tokens: control and ends of generation.
const char* const kFimEnding[] = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>",  "<PAD>",     "[PAD]",       "<|fim_repo|>",
                                  "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>", "<|file_sep|>"};
// FIM prefix / suffix / middle tokens: control only.
const char* const kFimOther[] = {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>", "<PRE>",
                                 "▁<PRE>", "<|code_prefix|>", "<|prefix|>", "<|fim_suffix|>", "<fim-suffix>",
                                 "<fim_suffix>", "<｜fim▁hole｜>", "<SUF>", "▁<SUF>", "<|code_suffix|>", "<|suffix|>",
                                 "<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>", "<MID>",
                                 "▁<MID>", "<|code_middle|>", "<|middle|>"};

TokenType to_type(int32_t v) {
    return v >= 0 && v <= 6 ? static_cast<TokenType>(v) : TokenType::undefined;
}

bool is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F') || (c >= 'a' && c <= 'f'); }
int hex_val(char c) { return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10; }

// "<0xAB>" -> 0xAB, else -1.
int parse_byte_token(std::string_view t) {
    if (t.size() != 6 || t[0] != '<' || t[1] != '0' || t[2] != 'x' || !is_hex(t[3]) || !is_hex(t[4]) || t[5] != '>')
        return -1;
    return hex_val(t[3]) * 16 + hex_val(t[4]);
}

// GPT-2 byte-level decode of a vocabulary string: each stand-in character
// becomes its byte; any other character is kept as its UTF-8.
void decode_byte_level(std::string_view t, std::string& out) {
    for (size_t i = 0; i < t.size();) {
        unicode::Decoded d = unicode::decode_utf8(t.data() + i, t.size() - i);
        const int b = d.cp < unicode::kInvalidBase ? bpe::cp_to_byte(d.cp) : -1;
        if (b >= 0) out.push_back(char(b));
        else out.append(t.substr(i, d.len));
        i += d.len;
    }
}

void check_special(const char* key, int32_t id, size_t n) {
    if (id < -1 || (id >= 0 && size_t(id) >= n))
        fail(KVRT_ERR_BAD_FORMAT, std::string(key) + " = " + std::to_string(id) + " is outside the vocabulary [0, " +
                                      std::to_string(n) + ")");
}

struct Fragment {
    int32_t id;  // >= 0: a special token; -1: raw text [off, off+len)
    size_t off, len;
};

}  // namespace

uint64_t TokenIndex::hash(std::string_view s) noexcept {
    const char* p = s.data();
    size_t n = s.size();
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ (uint64_t(n) * 0xFF51AFD7ED558CCDULL);
    auto mix = [](uint64_t x) {
        x ^= x >> 32;
        x *= 0xD6E8FEB86659FD93ULL;
        x ^= x >> 32;
        return x;
    };
    while (n >= 8) {
        uint64_t w;
        std::memcpy(&w, p, 8);
        h = mix(h ^ w) * 0xBF58476D1CE4E5B9ULL;
        p += 8;
        n -= 8;
    }
    uint64_t w = 0;
    std::memcpy(&w, p, n);
    return mix(mix(h ^ w ^ (uint64_t(n) << 59)));
}

void TokenIndex::build(const std::vector<std::string>& text) {
    text_ = &text;
    size_t cap = 16;
    while (cap < text.size() * 2) cap *= 2;
    slots_.assign(cap, 0);
    mask_ = cap - 1;
    for (size_t i = 0; i < text.size(); ++i) {
        const std::string& t = text[i];
        if (t.empty()) continue;
        const uint64_t h = hash(t);
        const uint64_t tag = pack(h, t.size());
        size_t k = size_t(h) & mask_;
        while (slots_[k] != 0) {
            if ((slots_[k] & 0xFFFFFFFFu) == tag && text[size_t(slots_[k] >> 32) - 1] == t) break;  // duplicate
            k = (k + 1) & mask_;
        }
        slots_[k] = (uint64_t(i) + 1) << 32 | tag;
    }
}

int32_t TokenIndex::find(std::string_view s) const noexcept {
    if (s.empty() || slots_.empty()) return -1;
    const uint64_t h = hash(s);
    const uint64_t tag = pack(h, s.size());
    for (size_t k = size_t(h) & mask_;; k = (k + 1) & mask_) {
        const uint64_t slot = slots_[k];
        if (slot == 0) return -1;
        if ((slot & 0xFFFFFFFFu) != tag) continue;
        const size_t id = size_t(slot >> 32) - 1;
        if ((*text_)[id] == s) return int32_t(id);
    }
}

void Tokenizer::Impl::check_id(int32_t id) const {
    if (id < 0 || size_t(id) >= text.size())
        fail(KVRT_ERR_OUT_OF_RANGE,
             "token id " + std::to_string(id) + " is outside the vocabulary [0, " + std::to_string(text.size()) + ")");
}

Tokenizer::Tokenizer(const TokenizerData& d) {
    auto impl = std::make_shared<Impl>();
    Impl& m = *impl;
    if (d.model == "gpt2") m.kind = TokenizerKind::bpe;
    else if (d.model == "llama") m.kind = TokenizerKind::spm;
    else
        fail(KVRT_ERR_UNSUPPORTED, "tokenizer.ggml.model '" + d.model +
                                       "' is not supported (supported: 'gpt2' byte-level BPE, 'llama' SentencePiece BPE)");
    const size_t n = d.tokens.size();
    if (n == 0) fail(KVRT_ERR_BAD_FORMAT, "tokenizer.ggml.tokens is empty");
    if (n > size_t(std::numeric_limits<int32_t>::max() / 2))
        fail(KVRT_ERR_BAD_FORMAT, "tokenizer.ggml.tokens has " + std::to_string(n) + " entries (too many)");
    if (!d.token_types.empty() && d.token_types.size() != n)
        fail(KVRT_ERR_BAD_FORMAT, "tokenizer.ggml.token_type has " + std::to_string(d.token_types.size()) +
                                      " entries for " + std::to_string(n) + " tokens");
    if (!d.scores.empty() && d.scores.size() != n)
        fail(KVRT_ERR_BAD_FORMAT, "tokenizer.ggml.scores has " + std::to_string(d.scores.size()) + " entries for " +
                                      std::to_string(n) + " tokens");
    check_special("tokenizer.ggml.bos_token_id", d.bos_id, n);
    check_special("tokenizer.ggml.eos_token_id", d.eos_id, n);
    check_special("tokenizer.ggml.eot_token_id", d.eot_id, n);
    check_special("tokenizer.ggml.unknown_token_id", d.unknown_id, n);
    check_special("tokenizer.ggml.padding_token_id", d.padding_id, n);

    m.text = d.tokens;
    m.type.resize(n, TokenType::normal);
    for (size_t i = 0; i < d.token_types.size(); ++i) m.type[i] = to_type(d.token_types[i]);
    m.score = d.scores.empty() ? std::vector<float>(n, 0.0f) : d.scores;
    m.by_text.build(m.text);
    // llama.cpp's name-based overrides (see kEndOfTurn): control, whatever the GGUF says.
    m.eog.assign(n, 0);
    auto mark = [&](const char* name, bool ends) {
        const int32_t id = m.by_text.find(name);
        if (id < 0) return;
        m.type[size_t(id)] = TokenType::control;
        if (ends) m.eog[size_t(id)] = 1;
    };
    for (const char* name : kEndOfTurn) mark(name, true);
    for (const char* name : kEndOfGeneration) mark(name, true);
    for (const char* name : kFimEnding) mark(name, true);
    for (const char* name : kFimOther) mark(name, false);
    // Except that "</s>" stays an ordinary token (not an end) in vocabularies that
    // have "<|tool_response>" or "<|plamo:eos|>" (Gemma 4, PLaMo), as in llama.cpp.
    if (m.by_text.find("<|tool_response>") >= 0 || m.by_text.find("<|plamo:eos|>") >= 0) {
        if (const int32_t s_id = m.by_text.find("</s>"); s_id >= 0) {
            m.type[size_t(s_id)] = d.token_types.empty() ? TokenType::normal : to_type(d.token_types[size_t(s_id)]);
            m.eog[size_t(s_id)] = 0;
        }
    }

    m.bos = d.bos_id;
    m.eos = d.eos_id;
    m.unk = d.unknown_id;
    m.pad = d.padding_id;
    m.chat_template = d.chat_template;
    m.add_eos = d.add_eos.value_or(false);
    m.byte_token.fill(-1);

    if (m.kind == TokenizerKind::bpe) {
        m.pre = pretokenizer_from_name(d.pre);
        const bool llama3_family = d.pre == "llama3" || d.pre == "llama-v3" || d.pre == "llama-bpe" || d.pre == "falcon3";
        m.ignore_merges = llama3_family;
        m.add_bos = d.add_bos.value_or(llama3_family);
        m.add_space_prefix = d.add_space_prefix.value_or(false);
        for (int b = 0; b < 256; ++b) {
            unicode::append_utf8(m.byte_text[size_t(b)], bpe::byte_to_cp(uint8_t(b)));
            if (auto id = m.find(m.byte_text[size_t(b)])) m.byte_token[size_t(b)] = *id;
        }
        m.merges.reserve(d.merges.size());
        std::string joined;
        for (size_t r = 0; r < d.merges.size(); ++r) {
            const std::string& rule = d.merges[r];
            const size_t sp = rule.size() > 1 ? rule.find(' ', 1) : std::string::npos;
            if (sp == std::string::npos || sp + 1 >= rule.size())
                fail(KVRT_ERR_BAD_FORMAT, "tokenizer.ggml.merges[" + std::to_string(r) + "] = '" + rule.substr(0, 64) +
                                              "' is not 'left right'");
            std::string_view left(rule.data(), sp), right(rule.data() + sp + 1, rule.size() - sp - 1);
            joined.assign(left).append(right);
            auto l = m.find(left), rr = m.find(right), res = m.find(joined);
            // A rule whose parts or result are not tokens can never yield a token; skip it.
            if (!l || !rr || !res) continue;
            m.merges.insert(*l, *rr, int32_t(r), *res);
        }
    } else {
        m.add_bos = d.add_bos.value_or(true);
        m.add_space_prefix = d.add_space_prefix.value_or(true);
        // llama.cpp's byte_to_token: the token spelled "<0xAB>" (upper-case hex,
        // whatever its type), else the one-byte token.
        for (int b = 0; b < 256; ++b) {
            static const char hex[] = "0123456789ABCDEF";
            const char spelled[6] = {'<', '0', 'x', hex[b >> 4], hex[b & 15], '>'};
            const char raw = char(b);
            if (auto id = m.find(std::string_view(spelled, 6))) m.byte_token[size_t(b)] = *id;
            else if (auto id1 = m.find(std::string_view(&raw, 1))) m.byte_token[size_t(b)] = *id1;
        }
    }

    // Decoded pieces.
    m.piece_off.reserve(n + 1);
    m.piece_bytes.reserve(n * 6);
    for (size_t i = 0; i < n; ++i) {
        m.piece_off.push_back(uint32_t(m.piece_bytes.size()));
        const std::string& t = m.text[i];
        switch (m.type[i]) {
            case TokenType::normal:
                if (m.kind == TokenizerKind::bpe) {
                    decode_byte_level(t, m.piece_bytes);
                } else {
                    for (size_t p = 0; p < t.size();) {
                        if (t.compare(p, 3, "\xE2\x96\x81") == 0) {
                            m.piece_bytes.push_back(' ');
                            p += 3;
                        } else {
                            m.piece_bytes.push_back(t[p++]);
                        }
                    }
                }
                break;
            case TokenType::byte: {
                const int b = parse_byte_token(t);
                if (b >= 0) m.piece_bytes.push_back(char(b));
                else m.piece_bytes.append(t);
                break;
            }
            case TokenType::control:
            case TokenType::unknown:
            case TokenType::user_defined: m.piece_bytes.append(t); break;
            case TokenType::unused:
            case TokenType::undefined: break;
        }
        if (m.piece_bytes.size() > std::numeric_limits<uint32_t>::max() / 2)
            fail(KVRT_ERR_BAD_FORMAT, "tokenizer.ggml.tokens is too large");
    }
    m.piece_off.push_back(uint32_t(m.piece_bytes.size()));

    // Tokens matched in text, longest first (ties: lower id first).
    for (size_t i = 0; i < n; ++i) {
        const TokenType t = m.type[i];
        if ((t == TokenType::control || t == TokenType::user_defined || t == TokenType::unknown) && !m.text[i].empty())
            m.specials.push_back(int32_t(i));
    }
    std::stable_sort(m.specials.begin(), m.specials.end(),
                     [&](int32_t a, int32_t b) { return m.text[size_t(a)].size() > m.text[size_t(b)].size(); });

    // End of turn / end of generation.
    m.eot = d.eot_id;
    if (m.eot < 0) {
        for (const char* marker : kEndOfTurn) {
            if (auto id = m.find(marker)) {
                m.eot = *id;
                break;
            }
        }
    }
    if (m.eos >= 0) m.eog[size_t(m.eos)] = 1;
    if (m.eot >= 0) m.eog[size_t(m.eot)] = 1;

    impl_ = std::move(impl);
}

void Tokenizer::Impl::encode_bpe(std::string_view s, std::vector<int32_t>& out) const {
    std::vector<std::string_view> words;
    pretokenize(pre, s, words);
    // Per-call cache of word -> ids (documents repeat their words).
    std::unordered_map<std::string_view, std::pair<uint32_t, uint32_t>> cache;
    std::vector<int32_t> cached;
    std::vector<int32_t> initial;
    std::string encoded;
    bpe::MergeScratch scratch;
    for (std::string_view w : words) {
        if (ignore_merges) {
            encoded.clear();
            for (char c : w) encoded += byte_text[uint8_t(c)];
            if (auto id = find(encoded)) {
                out.push_back(*id);
                continue;
            }
        }
        if (auto it = cache.find(w); it != cache.end()) {
            out.insert(out.end(), cached.begin() + it->second.first,
                       cached.begin() + it->second.first + it->second.second);
            continue;
        }
        initial.clear();
        for (char c : w) initial.push_back(byte_token[uint8_t(c)]);
        const size_t before = out.size();
        bpe::merge_word(merges, initial, scratch, out);
        cache.emplace(w, std::make_pair(uint32_t(cached.size()), uint32_t(out.size() - before)));
        cached.insert(cached.end(), out.begin() + std::ptrdiff_t(before), out.end());
    }
}

void Tokenizer::encode(std::string_view text, const EncodeOptions& opt, std::vector<int32_t>& out) const {
    const Impl& m = *impl_;
    // Offsets inside the pre-tokenizer are 32-bit.
    if (text.size() >= std::numeric_limits<uint32_t>::max())
        fail(KVRT_ERR_OVERFLOW, "text of " + std::to_string(text.size()) + " bytes is too long to tokenize at once (max 4 GiB)");
    if (opt.add_special && m.add_bos && m.bos >= 0) out.push_back(m.bos);

    // Split out special tokens (llama.cpp's order: longest token first, each
    // one cutting every raw fragment left by the previous ones).
    std::vector<Fragment> frags;
    if (!text.empty()) frags.push_back({-1, 0, text.size()});
    std::vector<Fragment> next;
    auto in_plain = [&](size_t b, size_t e) {
        for (const ByteRange& r : opt.plain_ranges)
            if (b < r.end && r.begin < e) return true;
        return false;
    };
    // Which byte pairs the text has: a special token with a pair the text lacks
    // cannot occur in it, which spares the search for most of a large vocabulary's
    // specials (Gemma 3 has 6,414) even in text dense with '<'.
    std::vector<uint64_t> pairs(65536 / 64, 0);
    for (size_t i = 1; i < text.size(); ++i) {
        const uint32_t pr = uint32_t(uint8_t(text[i - 1])) << 8 | uint8_t(text[i]);
        pairs[pr >> 6] |= uint64_t(1) << (pr & 63);
    }
    auto may_occur = [&](const std::string& st) {
        for (size_t i = 1; i < st.size(); ++i) {
            const uint32_t pr = uint32_t(uint8_t(st[i - 1])) << 8 | uint8_t(st[i]);
            if (!(pairs[pr >> 6] >> (pr & 63) & 1)) return false;
        }
        return true;
    };
    for (int32_t id : m.specials) {
        const TokenType t = m.type[size_t(id)];
        if (!opt.parse_special && (t == TokenType::control || t == TokenType::unknown)) continue;
        const std::string& st = m.text[size_t(id)];
        if (st.size() > text.size() || !may_occur(st) || text.find(st) == std::string_view::npos) continue;
        next.clear();
        for (const Fragment& f : frags) {
            if (f.id >= 0) {
                next.push_back(f);
                continue;
            }
            size_t pos = f.off, search = f.off;
            const size_t end = f.off + f.len;
            while (search < end) {
                const size_t hit = text.substr(0, end).find(st, search);
                if (hit == std::string_view::npos) break;
                if (in_plain(hit, hit + st.size())) {  // caller's text: not a token here
                    search = hit + 1;
                    continue;
                }
                if (hit > pos) next.push_back({-1, pos, hit - pos});
                next.push_back({id, hit, st.size()});
                pos = search = hit + st.size();
            }
            if (pos < end) next.push_back({-1, pos, end - pos});
        }
        frags.swap(next);
    }

    bool prev_special = true;  // spm: a space goes in front of the first text and text after specials
    std::string escaped;
    for (const Fragment& f : frags) {
        if (f.id >= 0) {
            out.push_back(f.id);
            prev_special = true;
            continue;
        }
        std::string_view raw = text.substr(f.off, f.len);
        if (m.kind == TokenizerKind::bpe) {
            m.encode_bpe(raw, out);
        } else {
            escaped.clear();
            if (m.add_space_prefix && prev_special) escaped += "\xE2\x96\x81";
            for (char c : raw) {
                if (c == ' ') escaped += "\xE2\x96\x81";
                else escaped.push_back(c);
            }
            m.encode_spm(escaped, out);
            prev_special = false;
        }
    }
    if (opt.add_special && m.add_eos && m.eos >= 0) out.push_back(m.eos);
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, const EncodeOptions& opt) const {
    std::vector<int32_t> out;
    out.reserve(text.size() / 3 + 4);
    encode(text, opt, out);
    return out;
}

std::string_view Tokenizer::piece(int32_t id, bool render_special) const {
    impl_->check_id(id);
    const TokenType t = impl_->type[size_t(id)];
    if (!render_special && (t == TokenType::control || t == TokenType::unknown)) return {};
    return impl_->piece(id);
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool render_special) const {
    for (int32_t id : ids) impl_->check_id(id);
    std::string out;
    TokenDecoder dec(*this, render_special);
    for (int32_t id : ids) dec.push(id, out);
    dec.flush(out);
    return out;
}

std::string_view Tokenizer::token_text(int32_t id) const {
    impl_->check_id(id);
    return impl_->text[size_t(id)];
}

TokenType Tokenizer::token_type(int32_t id) const {
    impl_->check_id(id);
    return impl_->type[size_t(id)];
}

std::optional<int32_t> Tokenizer::find_token(std::string_view text) const { return impl_->find(text); }

int32_t Tokenizer::n_tokens() const noexcept { return int32_t(impl_->text.size()); }
TokenizerKind Tokenizer::kind() const noexcept { return impl_->kind; }
PreTokenizer Tokenizer::pretokenizer() const noexcept { return impl_->pre; }
int32_t Tokenizer::bos_id() const noexcept { return impl_->bos; }
int32_t Tokenizer::eos_id() const noexcept { return impl_->eos; }
int32_t Tokenizer::eot_id() const noexcept { return impl_->eot; }
int32_t Tokenizer::unknown_id() const noexcept { return impl_->unk; }
int32_t Tokenizer::padding_id() const noexcept { return impl_->pad; }
bool Tokenizer::add_bos() const noexcept { return impl_->add_bos; }
bool Tokenizer::add_eos() const noexcept { return impl_->add_eos; }
bool Tokenizer::add_space_prefix() const noexcept { return impl_->add_space_prefix; }
const std::string& Tokenizer::chat_template() const noexcept { return impl_->chat_template; }

bool Tokenizer::is_end_of_generation(int32_t id) const noexcept {
    return id >= 0 && size_t(id) < impl_->eog.size() && impl_->eog[size_t(id)] != 0;
}

bool Tokenizer::is_special(int32_t id) const noexcept {
    if (id < 0 || size_t(id) >= impl_->type.size()) return false;
    const TokenType t = impl_->type[size_t(id)];
    return t == TokenType::control || t == TokenType::unknown || t == TokenType::user_defined ||
           t == TokenType::unused;
}

}  // namespace kvrt
