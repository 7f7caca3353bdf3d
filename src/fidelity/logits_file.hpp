// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors
// The saved-logits file of `kvrt perplexity --save-logits` (docs/logits_file.md): the
// next-token distributions a runtime (kvrt with some settings, llama.cpp, the float64
// reference) gave at the scored positions of a text, so that `--kl` can compare two
// runtimes without running both at once. scripts/reference/logits_file.py writes the
// same bytes from Python.
//
// Layout (little-endian, no padding):
//   char[8]  magic "KVRTLOGT"
//   u32      version (1)
//   u32      n_vocab
//   u32      n_ctx          window length in tokens
//   u32      stride         0: llama-perplexity's rule (non-overlapping windows, second
//                           half scored); S: llama-perplexity --ppl-stride S
//   i32      bos            id written at each window's start, -1 = none
//   u32      n_tokens       the text's token ids (BOS included when the model adds one)
//   u32      n_records      scored positions
//   u32 len + bytes  model     "architecture|name|n_params" (which model: another model refuses)
//   u32 len + bytes  producer  free text: runtime and settings
//   i32[n_tokens]    tokens
//   n_records x record:
//     u32 index     text position whose next token is predicted (tokens[index + 1])
//     i32 target    tokens[index + 1]
//     i32 argmax    the most likely id (lowest id on ties)
//     f32 lp_target log-probability of target (from the logits in double)
//     f32 lp_max    log-probability of argmax
//     f32 lp_floor  lp_max - min(lp_max - min lp, 32)
//     u16[n_vocab]  log-probabilities: lp = lp_floor + q x (lp_max - lp_floor) / 65535
//                   (entries below lp_floor, each < e^-32 of the top's mass, read as lp_floor)
//   u32 crc32 (zlib's) of every byte before it
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace kvrt::fidelity {

inline constexpr char kLogitsMagic[8] = {'K', 'V', 'R', 'T', 'L', 'O', 'G', 'T'};
inline constexpr uint32_t kLogitsVersion = 1;
inline constexpr float kLogitsRange = 32.0f;  // log-probability span the u16 codes cover

struct LogitsHeader {
    uint32_t n_vocab = 0;
    uint32_t n_ctx = 0;
    uint32_t stride = 0;
    int32_t bos = -1;
    uint32_t n_records = 0;
    std::string model;     // "architecture|name|n_params"
    std::string producer;  // free text
    std::vector<int32_t> tokens;
};

// One scored position, encoded as stored.
struct LogitsRecord {
    uint32_t index = 0;
    int32_t target = 0;
    int32_t argmax = 0;
    float lp_target = 0;
    float lp_max = 0;
    float lp_floor = 0;
    std::vector<uint16_t> q;  // n_vocab codes

    // The decoded log-probabilities, renormalised (double).
    void log_probs(std::vector<double>& out) const;
};

// Encodes n_vocab logits (any finite values) as a record predicting `target`.
// Throws kvrt::Error INVALID_ARGUMENT for a non-finite logit or a target out of range.
void encode_record(const float* logits, uint32_t n_vocab, uint32_t index, int32_t target, LogitsRecord& out);

// Bytes one record takes.
size_t record_bytes(uint32_t n_vocab);

// Writes a file: the header (n_records must be final), then exactly n_records records,
// then finish() (the checksum). Written to path + ".tmp" and renamed on finish(), so a
// file at `path` is always whole. Throws kvrt::Error IO.
class LogitsWriter {
public:
    LogitsWriter(const std::string& path, const LogitsHeader& h);
    ~LogitsWriter();
    LogitsWriter(const LogitsWriter&) = delete;
    LogitsWriter& operator=(const LogitsWriter&) = delete;
    void add(const LogitsRecord& r);
    void finish();

private:
    void put(const void* p, size_t n);
    std::string path_, tmp_;
    std::FILE* f_ = nullptr;
    uint32_t crc_ = 0;
    uint32_t n_vocab_ = 0, expected_ = 0, written_ = 0;
};

// Reads a file: the header and its size and checksum are checked at open. Throws
// kvrt::Error NOT_FOUND / IO (cannot open), BAD_FORMAT (wrong magic, a version it does not
// know, a size that disagrees with the header: "truncated", a bad checksum, records out of
// order or out of range).
class LogitsReader {
public:
    explicit LogitsReader(const std::string& path);
    ~LogitsReader();
    LogitsReader(const LogitsReader&) = delete;
    LogitsReader& operator=(const LogitsReader&) = delete;
    const LogitsHeader& header() const noexcept { return h_; }
    // Record i in [0, n_records).
    void read(uint32_t i, LogitsRecord& out);

private:
    std::string path_;
    std::FILE* f_ = nullptr;
    LogitsHeader h_;
    uint64_t records_at_ = 0;
};

// Throws kvrt::Error MISMATCH naming the first difference that makes two files (or a file
// and a run) incomparable: vocabulary size, model (unless allow_other_model), tokens,
// window rule, scored positions.
void check_comparable(const LogitsHeader& base, const LogitsHeader& other, bool allow_other_model);

// zlib's CRC-32 (poly 0xEDB88320), continued from crc.
uint32_t crc32_update(uint32_t crc, const void* data, size_t n);

}  // namespace kvrt::fidelity
