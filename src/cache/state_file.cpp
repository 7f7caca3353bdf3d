// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

#include "cache/state_file.hpp"

#include "util/error.hpp"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace kvrt::cache {

namespace {
bool little_endian() {
    const uint16_t one = 1;
    uint8_t b;
    std::memcpy(&b, &one, 1);
    return b == 1;
}
std::string errno_text() { return std::strerror(errno); }
}  // namespace

StateWriter::StateWriter(const char magic[8]) {
    KVRT_CHECK(little_endian(), KVRT_ERR_UNSUPPORTED, "state files are little-endian; this host is not");
    put(magic, 8);
    u32(kStateVersion);
}

void StateWriter::put(const void* p, size_t n) {
    if (n == 0) return;
    size_t at = buf_.size();
    buf_.resize(at + n);
    std::memcpy(buf_.data() + at, p, n);
}

std::vector<uint8_t> StateWriter::finish() {
    uint64_t sum = XXH3_64bits(buf_.data(), buf_.size());
    put(&sum, 8);
    return std::move(buf_);
}

void StateWriter::commit(const std::string& path) {
    std::vector<uint8_t> data = finish();
    write_file_atomic(path, data.data(), data.size());
}

void write_file_atomic(const std::string& path, const uint8_t* data, size_t n) {
    static std::atomic<uint64_t> counter{0};
    const std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    KVRT_CHECK(fd >= 0, KVRT_ERR_IO, "cannot create " + tmp + ": " + errno_text());
    size_t off = 0;
    while (off < n) {
        ssize_t w = ::write(fd, data + off, n - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            std::string why = errno_text();
            ::close(fd);
            ::unlink(tmp.c_str());
            fail(KVRT_ERR_IO, "cannot write " + tmp + ": " + why);
        }
        off += static_cast<size_t>(w);
    }
    if (::fsync(fd) != 0 || ::close(fd) != 0) {
        std::string why = errno_text();
        ::unlink(tmp.c_str());
        fail(KVRT_ERR_IO, "cannot flush " + tmp + ": " + why);
    }
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
        std::string why = errno_text();
        ::unlink(tmp.c_str());
        fail(KVRT_ERR_IO, "cannot rename " + tmp + " to " + path + ": " + why);
    }
    // The rename itself is durable only once the directory is synced.
    const size_t slash = path.find_last_of('/');
    const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
    int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        ::fsync(dfd);
        ::close(dfd);
    }
}

StateReader::StateReader(const std::string& path, const char magic[8], uint64_t max_bytes) {
    KVRT_CHECK(little_endian(), KVRT_ERR_UNSUPPORTED, "state files are little-endian; this host is not");
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    KVRT_CHECK(fd >= 0, errno == ENOENT ? KVRT_ERR_NOT_FOUND : KVRT_ERR_IO,
               "cannot open " + path + ": " + errno_text());
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        fail(KVRT_ERR_IO, path + " is not a regular file");
    }
    if (static_cast<uint64_t>(st.st_size) > max_bytes) {
        ::close(fd);
        fail(KVRT_ERR_BAD_FORMAT, path + " is " + std::to_string(st.st_size) + " bytes; more than this cache could hold");
    }
    try {
        buf_.resize(static_cast<size_t>(st.st_size));
    } catch (...) {
        ::close(fd);
        throw;
    }
    size_t off = 0;
    while (off < buf_.size()) {
        ssize_t r = ::read(fd, buf_.data() + off, buf_.size() - off);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            std::string why = r == 0 ? "unexpected end of file" : errno_text();
            ::close(fd);
            fail(KVRT_ERR_IO, "cannot read " + path + ": " + why);
        }
        off += static_cast<size_t>(r);
    }
    ::close(fd);
    verify(magic, path);
}

StateReader::StateReader(std::vector<uint8_t> bytes, const char magic[8], const std::string& what)
    : buf_(std::move(bytes)) {
    KVRT_CHECK(little_endian(), KVRT_ERR_UNSUPPORTED, "state files are little-endian; this host is not");
    verify(magic, what);
}

void StateReader::verify(const char magic[8], const std::string& path) {
    KVRT_CHECK(buf_.size() >= 8 + 4 + 8, KVRT_ERR_BAD_FORMAT, path + " is too short to be a kvrt state file");
    KVRT_CHECK(std::memcmp(buf_.data(), magic, 8) == 0, std::memcmp(buf_.data(), "KVRT", 4) == 0 ? KVRT_ERR_MISMATCH : KVRT_ERR_BAD_FORMAT,
               path + " is not a " + std::string(magic, 7) + " file");
    uint64_t sum;
    std::memcpy(&sum, buf_.data() + buf_.size() - 8, 8);
    KVRT_CHECK(XXH3_64bits(buf_.data(), buf_.size() - 8) == sum, KVRT_ERR_BAD_FORMAT,
               path + ": checksum mismatch (truncated or corrupted)");
    end_ = buf_.size() - 8;
    pos_ = 8;
    uint32_t version = u32();
    KVRT_CHECK(version == kStateVersion, KVRT_ERR_MISMATCH,
               path + " has state version " + std::to_string(version) + "; this library reads " +
                   std::to_string(kStateVersion));
}

void StateReader::need(size_t n) const {
    KVRT_CHECK(n <= end_ - pos_, KVRT_ERR_BAD_FORMAT, "state file ends early (needs " + std::to_string(n) + " more bytes)");
}
uint32_t StateReader::u32() {
    need(4);
    uint32_t v;
    std::memcpy(&v, buf_.data() + pos_, 4);
    pos_ += 4;
    return v;
}
uint64_t StateReader::u64() {
    need(8);
    uint64_t v;
    std::memcpy(&v, buf_.data() + pos_, 8);
    pos_ += 8;
    return v;
}
int64_t StateReader::i64() { return static_cast<int64_t>(u64()); }
const uint8_t* StateReader::bytes(size_t n) {
    need(n);
    const uint8_t* p = buf_.data() + pos_;
    pos_ += n;
    return p;
}
void StateReader::expect_end() const {
    KVRT_CHECK(pos_ == end_, KVRT_ERR_BAD_FORMAT, "state file has " + std::to_string(end_ - pos_) + " trailing bytes");
}

}  // namespace kvrt::cache
