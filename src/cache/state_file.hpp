// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// State files of the cache: a versioned binary container, written atomically.
//
//   magic (8 bytes) | version u32 | kind-specific body ... | checksum u64
//
// The checksum is XXH3-64 of every byte before it. Integers are little-endian
// (the writer refuses big-endian hosts rather than write a foreign format).
// Writing goes to "<path>.tmp.<pid>", is flushed and fsync'ed, then renamed
// over <path>: a reader sees the old file or the new one, never a torn one.
// Reading loads the whole file, checks magic, version and checksum before the
// caller parses anything, and every read is bounds-checked (BAD_FORMAT).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kvrt::cache {

inline constexpr uint32_t kStateVersion = 1;

class StateWriter {
public:
    explicit StateWriter(const char magic[8]);
    void u32(uint32_t v) { put(&v, 4); }
    void u64(uint64_t v) { put(&v, 8); }
    void i64(int64_t v) { put(&v, 8); }
    void bytes(const void* p, size_t n) { put(p, n); }
    // Appends the checksum and writes the file atomically. Throws kvrt::Error(IO).
    void commit(const std::string& path);
    // Appends the checksum and returns the whole container (for embedding in another file).
    std::vector<uint8_t> finish();

private:
    void put(const void* p, size_t n);
    std::vector<uint8_t> buf_;
};

// Writes data to "<path>.tmp.<pid>.<n>", fsyncs it, renames it over path and
// fsyncs the directory: a reader (or a crash) sees the old file or the new
// one, never a torn one. Throws kvrt::Error(IO) naming the step that failed.
void write_file_atomic(const std::string& path, const uint8_t* data, size_t n);

class StateReader {
public:
    // Reads and verifies the file (magic, version, checksum). Throws
    // kvrt::Error: IO (cannot read), BAD_FORMAT (anything malformed),
    // MISMATCH (another state kind or a newer version).
    StateReader(const std::string& path, const char magic[8], uint64_t max_bytes);
    // The same checks on a container already in memory (`what` names it in messages).
    StateReader(std::vector<uint8_t> bytes, const char magic[8], const std::string& what);
    uint32_t u32();
    uint64_t u64();
    int64_t i64();
    const uint8_t* bytes(size_t n);  // a view into the loaded file
    size_t remaining() const { return end_ - pos_; }
    void expect_end() const;

private:
    void verify(const char magic[8], const std::string& what);
    void need(size_t n) const;
    std::vector<uint8_t> buf_;
    size_t pos_ = 0, end_ = 0;  // end_ excludes the checksum
};

}  // namespace kvrt::cache
