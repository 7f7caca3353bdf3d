// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors
#include "fidelity/logits_file.hpp"

#include "util/error.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>

namespace kvrt::fidelity {

namespace {

const uint32_t* crc_table() {
    static const auto table = [] {
        static uint32_t t[256];
        for (uint32_t i = 0; i < 256; ++i) {
            uint32_t c = i;
            for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
            t[i] = c;
        }
        return t;
    }();
    return table;
}

constexpr uint32_t kMaxString = 1u << 16;
constexpr size_t kFixedHeader = 8 + 4 * 7;  // magic + version .. n_records

}  // namespace

uint32_t crc32_update(uint32_t crc, const void* data, size_t n) {
    const uint32_t* t = crc_table();
    const auto* p = static_cast<const uint8_t*>(data);
    crc = ~crc;
    for (size_t i = 0; i < n; ++i) crc = t[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
    return ~crc;
}

size_t record_bytes(uint32_t n_vocab) { return 4 * 6 + 2 * static_cast<size_t>(n_vocab); }

void LogitsRecord::log_probs(std::vector<double>& out) const {
    out.resize(q.size());
    const double step = (static_cast<double>(lp_max) - lp_floor) / 65535.0;
    double mx = -INFINITY;
    for (size_t i = 0; i < q.size(); ++i) {
        out[i] = lp_floor + q[i] * step;
        mx = std::max(mx, out[i]);
    }
    double s = 0;
    for (double v : out) s += std::exp(v - mx);
    const double lse = mx + std::log(s);
    for (double& v : out) v -= lse;
}

void encode_record(const float* logits, uint32_t n_vocab, uint32_t index, int32_t target, LogitsRecord& r) {
    KVRT_CHECK(n_vocab > 0, KVRT_ERR_INVALID_ARGUMENT, "logits record: n_vocab is 0");
    KVRT_CHECK(target >= 0 && static_cast<uint32_t>(target) < n_vocab, KVRT_ERR_INVALID_ARGUMENT,
               "logits record: target " + std::to_string(target) + " outside the vocabulary");
    int32_t am = 0;
    double mn = INFINITY;
    for (uint32_t i = 0; i < n_vocab; ++i) {
        KVRT_CHECK(std::isfinite(logits[i]), KVRT_ERR_INVALID_ARGUMENT,
                   "logits record: logit " + std::to_string(i) + " at position " + std::to_string(index) +
                       " is not finite");
        if (logits[i] > logits[am]) am = static_cast<int32_t>(i);
        mn = std::min(mn, static_cast<double>(logits[i]));
    }
    const double mx = logits[am];
    double s = 0;
    for (uint32_t i = 0; i < n_vocab; ++i) s += std::exp(static_cast<double>(logits[i]) - mx);
    const double lse = mx + std::log(s);
    r.index = index;
    r.target = target;
    r.argmax = am;
    r.lp_target = static_cast<float>(logits[target] - lse);
    r.lp_max = static_cast<float>(mx - lse);
    const double span = std::min(mx - mn, static_cast<double>(kLogitsRange));
    r.lp_floor = static_cast<float>(static_cast<double>(r.lp_max) - span);
    const double lo = r.lp_floor, width = static_cast<double>(r.lp_max) - lo;
    r.q.resize(n_vocab);
    for (uint32_t i = 0; i < n_vocab; ++i) {
        const double lp = logits[i] - lse;
        double c = width > 0 ? (lp - lo) / width * 65535.0 : 0.0;
        c = std::clamp(c, 0.0, 65535.0);
        r.q[i] = static_cast<uint16_t>(std::lround(c));
    }
}

LogitsWriter::LogitsWriter(const std::string& path, const LogitsHeader& h)
    : path_(path), tmp_(path + ".tmp"), n_vocab_(h.n_vocab), expected_(h.n_records) {
    KVRT_CHECK(h.model.size() < kMaxString && h.producer.size() < kMaxString, KVRT_ERR_INVALID_ARGUMENT,
               "logits file: model or producer string too long");
    f_ = std::fopen(tmp_.c_str(), "wb");
    KVRT_CHECK(f_ != nullptr, KVRT_ERR_IO, "cannot create " + tmp_ + ": " + std::strerror(errno));
    const uint32_t fixed[7] = {kLogitsVersion, h.n_vocab, h.n_ctx, h.stride, static_cast<uint32_t>(h.bos),
                               static_cast<uint32_t>(h.tokens.size()), h.n_records};
    put(kLogitsMagic, 8);
    put(fixed, sizeof fixed);
    for (const std::string* s : {&h.model, &h.producer}) {
        const uint32_t n = static_cast<uint32_t>(s->size());
        put(&n, 4);
        put(s->data(), n);
    }
    put(h.tokens.data(), h.tokens.size() * 4);
}

LogitsWriter::~LogitsWriter() {
    if (f_) {
        std::fclose(f_);
        std::error_code ec;
        std::filesystem::remove(tmp_, ec);
    }
}

void LogitsWriter::put(const void* p, size_t n) {
    if (n == 0) return;
    KVRT_CHECK(std::fwrite(p, 1, n, f_) == n, KVRT_ERR_IO, "cannot write " + tmp_ + ": " + std::strerror(errno));
    crc_ = crc32_update(crc_, p, n);
}

void LogitsWriter::add(const LogitsRecord& r) {
    KVRT_CHECK(f_ != nullptr, KVRT_ERR_INVALID_STATE, "logits file: already finished");
    KVRT_CHECK(written_ < expected_, KVRT_ERR_INVALID_STATE, "logits file: more records than the header says");
    KVRT_CHECK(r.q.size() == n_vocab_, KVRT_ERR_INVALID_ARGUMENT, "logits file: a record of another vocabulary size");
    const uint32_t a[3] = {r.index, static_cast<uint32_t>(r.target), static_cast<uint32_t>(r.argmax)};
    const float b[3] = {r.lp_target, r.lp_max, r.lp_floor};
    put(a, sizeof a);
    put(b, sizeof b);
    put(r.q.data(), r.q.size() * 2);
    ++written_;
}

void LogitsWriter::finish() {
    KVRT_CHECK(f_ != nullptr, KVRT_ERR_INVALID_STATE, "logits file: already finished");
    KVRT_CHECK(written_ == expected_, KVRT_ERR_INVALID_STATE,
               "logits file: " + std::to_string(written_) + " records written, the header says " +
                   std::to_string(expected_));
    const uint32_t crc = crc_;
    KVRT_CHECK(std::fwrite(&crc, 1, 4, f_) == 4 && std::fflush(f_) == 0, KVRT_ERR_IO, "cannot write " + tmp_);
    const int rc = std::fclose(f_);
    f_ = nullptr;
    KVRT_CHECK(rc == 0, KVRT_ERR_IO, "cannot close " + tmp_);
    std::error_code ec;
    std::filesystem::rename(tmp_, path_, ec);
    KVRT_CHECK(!ec, KVRT_ERR_IO, "cannot rename " + tmp_ + " to " + path_ + ": " + ec.message());
}

LogitsReader::LogitsReader(const std::string& path) : path_(path) {
    std::error_code ec;
    KVRT_CHECK(std::filesystem::exists(path, ec), KVRT_ERR_NOT_FOUND, "no logits file at " + path);
    f_ = std::fopen(path.c_str(), "rb");
    KVRT_CHECK(f_ != nullptr, KVRT_ERR_IO, "cannot open " + path + ": " + std::strerror(errno));
    const uint64_t size = std::filesystem::file_size(path, ec);
    KVRT_CHECK(!ec, KVRT_ERR_IO, "cannot stat " + path);
    uint32_t crc = 0;
    uint64_t at = 0;
    auto get = [&](void* p, size_t n, const char* what) {
        KVRT_CHECK(at + n <= size && std::fread(p, 1, n, f_) == n, KVRT_ERR_BAD_FORMAT,
                   path + ": truncated (ends inside the " + std::string(what) + ")");
        crc = crc32_update(crc, p, n);
        at += n;
    };
    char magic[8];
    get(magic, 8, "magic");
    KVRT_CHECK(std::memcmp(magic, kLogitsMagic, 8) == 0, KVRT_ERR_BAD_FORMAT,
               path + " is not a kvrt logits file (no KVRTLOGT magic)");
    uint32_t fixed[7];
    get(fixed, sizeof fixed, "header");
    KVRT_CHECK(fixed[0] == kLogitsVersion, KVRT_ERR_BAD_FORMAT,
               path + ": logits file version " + std::to_string(fixed[0]) + ", this kvrt reads version " +
                   std::to_string(kLogitsVersion));
    h_.n_vocab = fixed[1];
    h_.n_ctx = fixed[2];
    h_.stride = fixed[3];
    h_.bos = static_cast<int32_t>(fixed[4]);
    const uint32_t n_tokens = fixed[5];
    h_.n_records = fixed[6];
    KVRT_CHECK(h_.n_vocab > 0 && h_.n_vocab <= (1u << 24), KVRT_ERR_BAD_FORMAT,
               path + ": n_vocab " + std::to_string(h_.n_vocab) + " is out of range");
    for (std::string* s : {&h_.model, &h_.producer}) {
        uint32_t n = 0;
        get(&n, 4, "header");
        KVRT_CHECK(n < kMaxString, KVRT_ERR_BAD_FORMAT, path + ": a header string of " + std::to_string(n) + " bytes");
        s->resize(n);
        get(s->data(), n, "header");
    }
    // Sizes first: a hostile count must not make us allocate.
    const uint64_t expect = at + 4ull * n_tokens + static_cast<uint64_t>(h_.n_records) * record_bytes(h_.n_vocab) + 4;
    KVRT_CHECK(size >= expect, KVRT_ERR_BAD_FORMAT,
               path + ": truncated (" + std::to_string(size) + " bytes, the header describes " +
                   std::to_string(expect) + ")");
    KVRT_CHECK(size == expect, KVRT_ERR_BAD_FORMAT,
               path + ": " + std::to_string(size - expect) + " bytes after the last record");
    h_.tokens.resize(n_tokens);
    get(h_.tokens.data(), 4ull * n_tokens, "tokens");
    records_at_ = at;
    // The checksum covers everything: one streaming pass now, so a reader never returns a
    // record of a corrupted file.
    std::vector<uint8_t> buf(1 << 20);
    uint64_t left = size - 4 - at;
    while (left > 0) {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(left, buf.size()));
        get(buf.data(), n, "records");
        left -= n;
    }
    const uint32_t computed = crc;
    uint32_t stored = 0;
    get(&stored, 4, "checksum");
    KVRT_CHECK(stored == computed, KVRT_ERR_BAD_FORMAT, path + ": checksum mismatch (the file is corrupted)");
    for (int32_t t : h_.tokens)
        KVRT_CHECK(t >= 0 && static_cast<uint32_t>(t) < h_.n_vocab, KVRT_ERR_BAD_FORMAT,
                   path + ": token id " + std::to_string(t) + " outside the vocabulary");
}

LogitsReader::~LogitsReader() {
    if (f_) std::fclose(f_);
}

void LogitsReader::read(uint32_t i, LogitsRecord& r) {
    KVRT_CHECK(i < h_.n_records, KVRT_ERR_OUT_OF_RANGE,
               path_ + ": record " + std::to_string(i) + " of " + std::to_string(h_.n_records));
    const uint64_t off = records_at_ + static_cast<uint64_t>(i) * record_bytes(h_.n_vocab);
    KVRT_CHECK(std::fseek(f_, static_cast<long>(off), SEEK_SET) == 0, KVRT_ERR_IO, "cannot seek in " + path_);
    uint32_t a[3];
    float b[3];
    r.q.resize(h_.n_vocab);
    KVRT_CHECK(std::fread(a, 4, 3, f_) == 3 && std::fread(b, 4, 3, f_) == 3 &&
                   std::fread(r.q.data(), 2, h_.n_vocab, f_) == h_.n_vocab,
               KVRT_ERR_IO, "cannot read record " + std::to_string(i) + " of " + path_);
    r.index = a[0];
    r.target = static_cast<int32_t>(a[1]);
    r.argmax = static_cast<int32_t>(a[2]);
    r.lp_target = b[0];
    r.lp_max = b[1];
    r.lp_floor = b[2];
    KVRT_CHECK(r.index + 1 < h_.tokens.size() && h_.tokens[r.index + 1] == r.target, KVRT_ERR_BAD_FORMAT,
               path_ + ": record " + std::to_string(i) + " predicts a token the text does not hold");
    KVRT_CHECK(r.argmax >= 0 && static_cast<uint32_t>(r.argmax) < h_.n_vocab && std::isfinite(r.lp_max) &&
                   std::isfinite(r.lp_floor) && std::isfinite(r.lp_target) && r.lp_floor <= r.lp_max,
               KVRT_ERR_BAD_FORMAT, path_ + ": record " + std::to_string(i) + " is malformed");
}

void check_comparable(const LogitsHeader& a, const LogitsHeader& b, bool allow_other_model) {
    KVRT_CHECK(a.n_vocab == b.n_vocab, KVRT_ERR_MISMATCH,
               "another vocabulary: " + std::to_string(a.n_vocab) + " vs " + std::to_string(b.n_vocab) + " entries");
    KVRT_CHECK(allow_other_model || a.model == b.model, KVRT_ERR_MISMATCH,
               "another model: '" + a.model + "' vs '" + b.model + "' (--allow-other-model compares them anyway)");
    KVRT_CHECK(a.tokens.size() == b.tokens.size(), KVRT_ERR_MISMATCH,
               "another text: " + std::to_string(a.tokens.size()) + " vs " + std::to_string(b.tokens.size()) + " tokens");
    const auto d = std::mismatch(a.tokens.begin(), a.tokens.end(), b.tokens.begin());
    KVRT_CHECK(d.first == a.tokens.end(), KVRT_ERR_MISMATCH,
               "the token ids differ at position " + std::to_string(d.first - a.tokens.begin()) + " (" +
                   std::to_string(d.first == a.tokens.end() ? 0 : *d.first) + " vs " +
                   std::to_string(d.first == a.tokens.end() ? 0 : *d.second) + "): another text or tokenizer");
    KVRT_CHECK(a.n_ctx == b.n_ctx && a.stride == b.stride && a.bos == b.bos, KVRT_ERR_MISMATCH,
               "other windows: ctx " + std::to_string(a.n_ctx) + " stride " + std::to_string(a.stride) + " bos " +
                   std::to_string(a.bos) + " vs ctx " + std::to_string(b.n_ctx) + " stride " +
                   std::to_string(b.stride) + " bos " + std::to_string(b.bos));
    KVRT_CHECK(a.n_records == b.n_records, KVRT_ERR_MISMATCH,
               "another number of scored positions: " + std::to_string(a.n_records) + " vs " +
                   std::to_string(b.n_records));
}

}  // namespace kvrt::fidelity
