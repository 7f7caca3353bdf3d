// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// GGUF v3 writer; see gguf_writer.hpp.
#include "model/gguf/gguf_writer.hpp"

#include "formats/tensor_type_quantize.hpp"
#include "util/error.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fcntl.h>
#include <unistd.h>

namespace kvrt {

namespace {
template <class T>
void put(std::string& out, T v) {
    char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    out.append(b, sizeof(T));
}
void append(std::vector<uint8_t>& out, const void* p, size_t n) {
    if (n == 0) return;
    size_t at = out.size();
    out.resize(at + n);
    std::memcpy(out.data() + at, p, n);
}
template <class T>
void put(std::vector<uint8_t>& out, T v) {
    append(out, &v, sizeof(T));
}
void put_str(std::vector<uint8_t>& out, std::string_view s) {
    put<uint64_t>(out, s.size());
    append(out, s.data(), s.size());
}
}  // namespace

GgufWriter::GgufWriter(uint32_t alignment) : alignment_(alignment) {
    if (alignment == 0 || (alignment & (alignment - 1)) != 0)
        fail(KVRT_ERR_INVALID_ARGUMENT, "GGUF alignment " + std::to_string(alignment) + " is not a power of two");
}

std::string GgufWriter::encode_string(std::string_view s) {
    std::string out;
    put<uint64_t>(out, s.size());
    out.append(s);
    return out;
}

std::string GgufWriter::encode_array_header(GgufType elem, uint64_t count) {
    std::string out;
    put<uint32_t>(out, static_cast<uint32_t>(elem));
    put<uint64_t>(out, count);
    return out;
}

void GgufWriter::set_encoded(std::string_view key, GgufType type, std::string payload) {
    for (KV& kv : kvs_)
        if (kv.key == key) {
            kv.type = type;
            kv.payload = std::move(payload);
            return;
        }
    kvs_.push_back({std::string(key), type, std::move(payload)});
}

template <class T>
void GgufWriter::set_scalar(std::string_view key, GgufType type, T v) {
    std::string p;
    put<T>(p, v);
    set_encoded(key, type, std::move(p));
}

void GgufWriter::set_u8(std::string_view k, uint8_t v) { set_scalar(k, GgufType::U8, v); }
void GgufWriter::set_i8(std::string_view k, int8_t v) { set_scalar(k, GgufType::I8, v); }
void GgufWriter::set_u16(std::string_view k, uint16_t v) { set_scalar(k, GgufType::U16, v); }
void GgufWriter::set_i16(std::string_view k, int16_t v) { set_scalar(k, GgufType::I16, v); }
void GgufWriter::set_u32(std::string_view k, uint32_t v) { set_scalar(k, GgufType::U32, v); }
void GgufWriter::set_i32(std::string_view k, int32_t v) { set_scalar(k, GgufType::I32, v); }
void GgufWriter::set_u64(std::string_view k, uint64_t v) { set_scalar(k, GgufType::U64, v); }
void GgufWriter::set_i64(std::string_view k, int64_t v) { set_scalar(k, GgufType::I64, v); }
void GgufWriter::set_f32(std::string_view k, float v) { set_scalar(k, GgufType::F32, v); }
void GgufWriter::set_f64(std::string_view k, double v) { set_scalar(k, GgufType::F64, v); }
void GgufWriter::set_bool(std::string_view k, bool v) { set_scalar<uint8_t>(k, GgufType::BOOL, v ? 1 : 0); }
void GgufWriter::set_string(std::string_view k, std::string_view v) { set_encoded(k, GgufType::STRING, encode_string(v)); }

void GgufWriter::set_array(std::string_view key, GgufType elem, const void* data, uint64_t count) {
    size_t sz = gguf_type_size(elem);
    if (sz == 0)
        fail(KVRT_ERR_INVALID_ARGUMENT, "GGUF writer: set_array('" + std::string(key) + "') needs a numeric element type, got " +
                                            gguf_type_name(elem));
    std::string p = encode_array_header(elem, count);
    if (count) p.append(static_cast<const char*>(data), static_cast<size_t>(count * sz));
    set_encoded(key, GgufType::ARRAY, std::move(p));
}

void GgufWriter::set_string_array(std::string_view key, const std::vector<std::string>& v) {
    std::string p = encode_array_header(GgufType::STRING, v.size());
    for (const std::string& s : v) p += encode_string(s);
    set_encoded(key, GgufType::ARRAY, std::move(p));
}

void GgufWriter::set_i32_array(std::string_view key, const std::vector<int32_t>& v) {
    set_array(key, GgufType::I32, v.data(), v.size());
}

void GgufWriter::set_f32_array(std::string_view key, const std::vector<float>& v) {
    set_array(key, GgufType::F32, v.data(), v.size());
}

void GgufWriter::add_tensor(std::string_view name, TensorType type, const std::vector<uint64_t>& dims, const void* data,
                            size_t bytes) {
    std::string n(name);
    if (dims.empty() || dims.size() > kGgufMaxDims)
        fail(KVRT_ERR_INVALID_ARGUMENT, "GGUF writer: tensor '" + n + "' needs 1 to 4 dimensions");
    for (const Tensor& t : tensors_)
        if (t.name == n) fail(KVRT_ERR_INVALID_ARGUMENT, "GGUF writer: duplicate tensor '" + n + "'");
    uint64_t rows = 1;
    for (size_t d = 1; d < dims.size(); ++d)
        if (__builtin_mul_overflow(rows, dims[d], &rows))
            fail(KVRT_ERR_OVERFLOW, "GGUF writer: tensor '" + n + "' shape overflows");
    uint64_t row_bytes = 0, total = 0;
    if (!tensor_row_bytes_checked(type, dims[0], &row_bytes) || __builtin_mul_overflow(rows, row_bytes, &total))
        fail(KVRT_ERR_INVALID_ARGUMENT, "GGUF writer: tensor '" + n + "' of type " + tensor_type_name(type) +
                                            " cannot have a row of " + std::to_string(dims[0]) + " elements");
    if (total != bytes)
        fail(KVRT_ERR_INVALID_ARGUMENT, "GGUF writer: tensor '" + n + "' needs " + std::to_string(total) +
                                            " bytes of data, got " + std::to_string(bytes));
    Tensor t{n, type, dims, {}};
    if (bytes) t.data.assign(static_cast<const uint8_t*>(data), static_cast<const uint8_t*>(data) + bytes);
    tensors_.push_back(std::move(t));
}

void GgufWriter::add_tensor_quantized(std::string_view name, TensorType type, const std::vector<uint64_t>& dims,
                                      const float* values) {
    uint64_t n = 1;
    for (uint64_t d : dims)
        if (__builtin_mul_overflow(n, d, &n))
            fail(KVRT_ERR_OVERFLOW, "GGUF writer: tensor '" + std::string(name) + "' shape overflows");
    uint64_t bytes = 0;
    if (!tensor_row_bytes_checked(type, n, &bytes) || (dims.empty() ? false : dims[0] % tensor_type_traits(type).block_elems != 0))
        fail(KVRT_ERR_INVALID_ARGUMENT, "GGUF writer: tensor '" + std::string(name) + "' of type " + tensor_type_name(type) +
                                            " cannot have a row of " + std::to_string(dims.empty() ? 0 : dims[0]) + " elements");
    std::vector<uint8_t> q(static_cast<size_t>(bytes));
    quantize(type, values, q.data(), n);
    add_tensor(name, type, dims, q.data(), q.size());
}

std::vector<uint8_t> GgufWriter::to_bytes() const {
    bool add_alignment = alignment_ != kGgufDefaultAlignment;
    for (const KV& kv : kvs_)
        if (kv.key == "general.alignment") add_alignment = false;

    std::vector<uint8_t> out;
    put<uint32_t>(out, kGgufMagic);
    put<uint32_t>(out, 3);
    put<uint64_t>(out, tensors_.size());
    put<uint64_t>(out, kvs_.size() + (add_alignment ? 1 : 0));
    if (add_alignment) {
        put_str(out, "general.alignment");
        put<uint32_t>(out, static_cast<uint32_t>(GgufType::U32));
        put<uint32_t>(out, alignment_);
    }
    for (const KV& kv : kvs_) {
        put_str(out, kv.key);
        put<uint32_t>(out, static_cast<uint32_t>(kv.type));
        append(out, kv.payload.data(), kv.payload.size());
    }
    auto pad = [&](uint64_t n) { return (n + alignment_ - 1) / alignment_ * alignment_; };
    uint64_t offset = 0;
    for (const Tensor& t : tensors_) {
        put_str(out, t.name);
        put<uint32_t>(out, static_cast<uint32_t>(t.dims.size()));
        for (uint64_t d : t.dims) put<uint64_t>(out, d);
        put<uint32_t>(out, static_cast<uint32_t>(t.type));
        put<uint64_t>(out, offset);
        offset = pad(offset + t.data.size());
    }
    out.resize(static_cast<size_t>(pad(out.size())), 0);
    for (const Tensor& t : tensors_) {
        append(out, t.data.data(), t.data.size());
        out.resize(static_cast<size_t>(pad(out.size())), 0);
    }
    return out;
}

void GgufWriter::write(const std::string& path) const {
    std::vector<uint8_t> bytes = to_bytes();
    std::string tmp = path + ".tmp." + std::to_string(::getpid());
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) fail(KVRT_ERR_IO, "GGUF writer: cannot create " + tmp + ": " + std::strerror(errno));
    size_t done = 0;
    while (done < bytes.size()) {
        ssize_t w = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            int e = errno;
            ::close(fd);
            ::unlink(tmp.c_str());
            fail(KVRT_ERR_IO, "GGUF writer: writing " + tmp + " failed: " + std::strerror(e));
        }
        done += static_cast<size_t>(w);
    }
    if (::fsync(fd) != 0 || ::close(fd) != 0) {
        int e = errno;
        ::unlink(tmp.c_str());
        fail(KVRT_ERR_IO, "GGUF writer: flushing " + tmp + " failed: " + std::strerror(e));
    }
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
        int e = errno;
        ::unlink(tmp.c_str());
        fail(KVRT_ERR_IO, "GGUF writer: cannot rename " + tmp + " to " + path + ": " + std::strerror(e));
    }
}

}  // namespace kvrt
