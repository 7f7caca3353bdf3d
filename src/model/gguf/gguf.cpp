// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// GGUF parsing with bounds checks on every read; see gguf.hpp.
#include "model/gguf/gguf.hpp"

#include "util/error.hpp"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static_assert(std::endian::native == std::endian::little, "the GGUF reader assumes a little-endian host");

namespace kvrt {

namespace {

constexpr const char* kTypeNames[kGgufTypeCount] = {"u8",  "i8",   "u16",    "i16",   "u32", "i32", "f32",
                                                    "bool", "string", "array", "u64", "i64", "f64"};
constexpr size_t kTypeSizes[kGgufTypeCount] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};

// Smallest encoding of one value of a type: bounds counts before allocating.
size_t min_encoded_size(GgufType t) {
    if (t == GgufType::STRING) return 8;       // u64 length
    if (t == GgufType::ARRAY) return 4 + 8;    // element type + count
    return kTypeSizes[static_cast<uint32_t>(t)];
}

std::string printable(std::string_view s, size_t max_chars = 60) {
    std::string out;
    for (char c : s) {
        if (out.size() >= max_chars) {
            out += "...";
            break;
        }
        unsigned char u = static_cast<unsigned char>(c);
        if (u >= 0x20 && u < 0x7f) {
            out += c;
        } else {
            static const char* hex = "0123456789abcdef";
            out += "\\x";
            out += hex[u >> 4];
            out += hex[u & 15];
        }
    }
    return out;
}

}  // namespace

const char* gguf_type_name(GgufType t) noexcept {
    uint32_t i = static_cast<uint32_t>(t);
    return i < kGgufTypeCount ? kTypeNames[i] : "invalid";
}

size_t gguf_type_size(GgufType t) noexcept {
    uint32_t i = static_cast<uint32_t>(t);
    return i < kGgufTypeCount ? kTypeSizes[i] : 0;
}

// ---------------------------------------------------------------------------
// GgufValue

bool GgufValue::is_integer() const noexcept {
    switch (type_) {
        case GgufType::U8: case GgufType::I8: case GgufType::U16: case GgufType::I16:
        case GgufType::U32: case GgufType::I32: case GgufType::U64: case GgufType::I64:
            return true;
        default:
            return false;
    }
}

bool GgufValue::array_int(uint64_t i, int64_t* out) const noexcept {
    if (type_ != GgufType::ARRAY || i >= count_) return false;
    const char* p = str_.data() + i * gguf_type_size(elem_);
    switch (elem_) {
        case GgufType::U8: { uint8_t v; std::memcpy(&v, p, 1); *out = v; return true; }
        case GgufType::I8: { int8_t v; std::memcpy(&v, p, 1); *out = v; return true; }
        case GgufType::U16: { uint16_t v; std::memcpy(&v, p, 2); *out = v; return true; }
        case GgufType::I16: { int16_t v; std::memcpy(&v, p, 2); *out = v; return true; }
        case GgufType::U32: { uint32_t v; std::memcpy(&v, p, 4); *out = v; return true; }
        case GgufType::I32: { int32_t v; std::memcpy(&v, p, 4); *out = v; return true; }
        case GgufType::I64: { int64_t v; std::memcpy(&v, p, 8); *out = v; return true; }
        case GgufType::U64: {
            uint64_t v;
            std::memcpy(&v, p, 8);
            if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return false;
            *out = static_cast<int64_t>(v);
            return true;
        }
        default: return false;
    }
}

bool GgufValue::array_float(uint64_t i, double* out) const noexcept {
    if (type_ != GgufType::ARRAY || i >= count_) return false;
    const char* p = str_.data() + i * gguf_type_size(elem_);
    if (elem_ == GgufType::F32) {
        float v;
        std::memcpy(&v, p, 4);
        *out = v;
        return true;
    }
    if (elem_ == GgufType::F64) {
        std::memcpy(out, p, 8);
        return true;
    }
    return false;
}

std::string GgufValue::describe(size_t max_chars) const {
    switch (type_) {
        case GgufType::STRING: return "string \"" + printable(str_, max_chars) + "\"";
        case GgufType::BOOL: return std::string("bool ") + (u_ ? "true" : "false");
        case GgufType::F32: case GgufType::F64: {
            char buf[64];
            std::snprintf(buf, sizeof buf, "%s %.9g", gguf_type_name(type_), f_);
            return buf;
        }
        case GgufType::ARRAY: {
            std::string s = std::string("array<") + gguf_type_name(elem_) + ">[" + std::to_string(count_) + "]";
            if (elem_ == GgufType::STRING && count_ > 0) s += " \"" + printable(strings_[0], 24) + "\", ...";
            return s;
        }
        case GgufType::I8: case GgufType::I16: case GgufType::I32: case GgufType::I64:
            return std::string(gguf_type_name(type_)) + " " + std::to_string(i_);
        default:
            return std::string(gguf_type_name(type_)) + " " + std::to_string(u_);
    }
}

std::string GgufTensor::shape_string() const {
    std::string s = "[";
    for (uint32_t d = 0; d < n_dims; ++d) {
        if (d) s += ", ";
        s += std::to_string(ne[d]);
    }
    return s + "]";
}

// ---------------------------------------------------------------------------
// Mapping

struct GgufFile::Mapping {
    void* addr = nullptr;
    size_t len = 0;
    ~Mapping() {
        if (addr) ::munmap(addr, len);
    }
};

GgufFile::GgufFile(GgufFile&&) noexcept = default;
GgufFile& GgufFile::operator=(GgufFile&&) noexcept = default;
GgufFile::~GgufFile() = default;

// ---------------------------------------------------------------------------
// The parser: a cursor over [base, base + size) that throws BAD_FORMAT with the
// file name, what it was reading and the offset.

class GgufParser {
public:
    GgufParser(GgufFile& f) : f_(f), base_(f.base_), size_(f.size_) {}

    void run();

private:
    GgufFile& f_;
    const uint8_t* base_;
    uint64_t size_;
    uint64_t pos_ = 0;
    static constexpr uint64_t kNestedArrayBudget = uint64_t(1) << 20;
    static constexpr uint64_t kMaxCount = uint64_t(1) << 20;  // metadata keys, tensors
    uint64_t nested_budget_ = kNestedArrayBudget;
    std::string what_;  // what is being read, for messages

    [[noreturn]] void bad(const std::string& msg) const {
        fail(KVRT_ERR_BAD_FORMAT, "GGUF " + f_.path_ + ": " + (what_.empty() ? "" : what_ + ": ") + msg);
    }
    [[noreturn]] void bad_at(const std::string& msg, uint64_t at) const {
        bad(msg + " at offset " + std::to_string(at) + " (file size " + std::to_string(size_) + ")");
    }
    uint64_t remaining() const { return size_ - pos_; }
    const uint8_t* need(uint64_t n, const char* field) {
        if (n > remaining()) bad_at(std::string("truncated: ") + field + " needs " + std::to_string(n) + " bytes", pos_);
        const uint8_t* p = base_ + pos_;
        pos_ += n;
        return p;
    }
    template <class T>
    T read(const char* field) {
        T v;
        std::memcpy(&v, need(sizeof(T), field), sizeof(T));
        return v;
    }
    std::string_view read_string(const char* field) {
        uint64_t at = pos_;
        uint64_t len = read<uint64_t>(field);
        if (len > remaining())
            bad_at(std::string(field) + " length " + std::to_string(len) + " runs past the end of the file", at);
        return {reinterpret_cast<const char*>(need(len, field)), static_cast<size_t>(len)};
    }
    GgufType read_type(const char* field) {
        uint64_t at = pos_;
        uint32_t t = read<uint32_t>(field);
        if (t >= kGgufTypeCount) bad_at(std::string(field) + " " + std::to_string(t) + " is not a GGUF value type", at);
        return static_cast<GgufType>(t);
    }
    void read_value(GgufValue& v, GgufType t, uint32_t depth);
    void read_array(GgufValue& v, uint32_t depth);
    void read_tensor_info(GgufTensor& t, uint64_t index);
    void apply_alignment();
    void place_tensors();
};

void GgufParser::read_value(GgufValue& v, GgufType t, uint32_t depth) {
    v.type_ = t;
    switch (t) {
        case GgufType::U8: v.u_ = read<uint8_t>("u8 value"); break;
        case GgufType::I8: v.i_ = read<int8_t>("i8 value"); break;
        case GgufType::U16: v.u_ = read<uint16_t>("u16 value"); break;
        case GgufType::I16: v.i_ = read<int16_t>("i16 value"); break;
        case GgufType::U32: v.u_ = read<uint32_t>("u32 value"); break;
        case GgufType::I32: v.i_ = read<int32_t>("i32 value"); break;
        case GgufType::U64: v.u_ = read<uint64_t>("u64 value"); break;
        case GgufType::I64: v.i_ = read<int64_t>("i64 value"); break;
        case GgufType::F32: v.f_ = read<float>("f32 value"); break;
        case GgufType::F64: v.f_ = read<double>("f64 value"); break;
        case GgufType::BOOL: {
            uint64_t at = pos_;
            uint8_t b = read<uint8_t>("bool value");
            if (b > 1) bad_at("bool value " + std::to_string(b) + " is neither 0 nor 1", at);
            v.u_ = b;
            break;
        }
        case GgufType::STRING: v.str_ = read_string("string value"); break;
        case GgufType::ARRAY: read_array(v, depth + 1); break;
    }
}

void GgufParser::read_array(GgufValue& v, uint32_t depth) {
    uint64_t at = pos_;
    if (depth > kGgufMaxArrayDepth)
        bad_at("arrays nested deeper than " + std::to_string(kGgufMaxArrayDepth) + " levels", at);
    GgufType elem = read_type("array element type");
    uint64_t count_at = pos_;
    uint64_t count = read<uint64_t>("array length");
    // Every element takes at least min_encoded_size bytes: refuse counts the file cannot hold
    // before allocating anything.
    uint64_t min_size = min_encoded_size(elem);
    if (min_size > 0 && count > remaining() / min_size)
        bad_at("array<" + std::string(gguf_type_name(elem)) + "> of " + std::to_string(count) +
                   " elements does not fit in the " + std::to_string(remaining()) + " bytes left",
               count_at);
    v.elem_ = elem;
    v.count_ = count;
    if (elem == GgufType::STRING) {
        v.strings_.reserve(static_cast<size_t>(count));
        for (uint64_t i = 0; i < count; ++i) v.strings_.push_back(read_string("string array element"));
    } else if (elem == GgufType::ARRAY) {
        // Each nested array costs a GgufValue (~100 bytes) per 12 file bytes: a file-wide
        // budget keeps a hostile file from turning into many times its size in memory.
        if (count > nested_budget_)
            bad_at("more than " + std::to_string(kNestedArrayBudget) + " nested arrays in the file", count_at);
        nested_budget_ -= count;
        v.arrays_.resize(static_cast<size_t>(count));
        for (uint64_t i = 0; i < count; ++i) {
            v.arrays_[i].type_ = GgufType::ARRAY;
            read_array(v.arrays_[i], depth + 1);
        }
    } else {
        const uint8_t* p = need(count * min_size, "array elements");
        v.str_ = {reinterpret_cast<const char*>(p), static_cast<size_t>(count * min_size)};
        if (elem == GgufType::BOOL)
            for (uint64_t i = 0; i < count; ++i)
                if (p[i] > 1) bad_at("bool array element " + std::to_string(i) + " is neither 0 nor 1", at);
    }
}

void GgufParser::read_tensor_info(GgufTensor& t, uint64_t index) {
    uint64_t at = pos_;
    what_ = "tensor info #" + std::to_string(index);
    t.name = read_string("tensor name");
    what_ = "tensor '" + printable(t.name) + "' (#" + std::to_string(index) + ")";
    if (t.name.empty()) bad_at("empty tensor name", at);
    if (t.name.size() > 255) bad_at("tensor name of " + std::to_string(t.name.size()) + " bytes (limit 255)", at);
    uint64_t dims_at = pos_;
    t.n_dims = read<uint32_t>("dimension count");
    if (t.n_dims > kGgufMaxDims)
        bad_at(std::to_string(t.n_dims) + " dimensions (at most " + std::to_string(kGgufMaxDims) + ")", dims_at);
    uint64_t n = 1;
    for (uint32_t d = 0; d < t.n_dims; ++d) {
        t.ne[d] = read<uint64_t>("dimension");
        if (t.ne[d] > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
            __builtin_mul_overflow(n, t.ne[d], &n) || n > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
            bad_at("shape overflows 63 bits at dimension " + std::to_string(d), dims_at);
    }
    t.n_elements = n;
    uint64_t type_at = pos_;
    uint32_t type_id = read<uint32_t>("type");
    const TensorTypeTraits* tr = tensor_type_traits(type_id);
    if (tr == nullptr) bad_at("unknown tensor type id " + std::to_string(type_id), type_at);
    if (tr->block_elems == 0) bad_at("tensor type " + std::string(tr->name) + " (id " + std::to_string(type_id) + ")", type_at);
    t.type = static_cast<TensorType>(type_id);
    if (t.ne[0] % tr->block_elems != 0)
        bad_at("row length " + std::to_string(t.ne[0]) + " is not a multiple of " + tr->name + "'s block of " +
                   std::to_string(tr->block_elems),
               dims_at);
    if (!tensor_row_bytes_checked(t.type, t.ne[0], &t.row_bytes)) bad_at("row size overflows", dims_at);
    uint64_t rows = t.ne[0] ? t.n_elements / t.ne[0] : 0;
    if (__builtin_mul_overflow(rows, t.row_bytes, &t.n_bytes)) bad_at("data size overflows", dims_at);
    t.offset = read<uint64_t>("data offset");
}

void GgufParser::apply_alignment() {
    what_.clear();
    const GgufValue* a = f_.find("general.alignment");
    if (!a) return;
    if (a->type() != GgufType::U32)
        bad("general.alignment is " + a->describe() + ", expected u32");
    uint64_t al = a->as_u64();
    if (al == 0 || (al & (al - 1)) != 0 || al > (1u << 20))
        bad("general.alignment " + std::to_string(al) + " is not a power of two up to 1 MiB");
    f_.alignment_ = al;
}

void GgufParser::place_tensors() {
    // The data section starts at the first aligned offset after the tensor infos.
    uint64_t al = f_.alignment_;
    uint64_t data = (pos_ + al - 1) / al * al;  // pos_ <= size_ < 2^63: no overflow
    if (data > size_ && !f_.tensors_.empty())
        bad_at("the data section starts past the end of the file", data);
    f_.data_offset_ = data;
    uint64_t avail = data <= size_ ? size_ - data : 0;

    std::vector<size_t> order(f_.tensors_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    for (size_t i = 0; i < f_.tensors_.size(); ++i) {
        GgufTensor& t = f_.tensors_[i];
        what_ = "tensor '" + printable(t.name) + "'";
        if (t.offset % al != 0)
            bad("data offset " + std::to_string(t.offset) + " is not a multiple of the alignment " + std::to_string(al));
        if (t.offset > avail || t.n_bytes > avail - t.offset)
            bad("data [" + std::to_string(t.offset) + ", +" + std::to_string(t.n_bytes) +
                ") runs past the end of the data section (" + std::to_string(avail) + " bytes at file offset " +
                std::to_string(data) + ")");
        t.data = f_.base_ + data + t.offset;
        // Kernels read block scales as uint16_t and plain types as their element type.
        const TensorTypeTraits& tr = tensor_type_traits(t.type);
        uintptr_t need_align = tr.block_elems == 1 ? tr.block_bytes : 2;
        if (reinterpret_cast<uintptr_t>(t.data) % need_align != 0)
            bad("data at file offset " + std::to_string(data + t.offset) + " is not " + std::to_string(need_align) +
                "-byte aligned");
    }
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return f_.tensors_[a].offset < f_.tensors_[b].offset; });
    for (size_t k = 1; k < order.size(); ++k) {
        const GgufTensor& p = f_.tensors_[order[k - 1]];
        const GgufTensor& q = f_.tensors_[order[k]];
        if (p.offset + p.n_bytes > q.offset && q.n_bytes > 0 && p.n_bytes > 0) {
            what_.clear();
            bad("tensors '" + printable(p.name) + "' and '" + printable(q.name) + "' overlap in the data section");
        }
    }
    what_.clear();
}

void GgufParser::run() {
    what_ = "header";
    if (size_ < 4) bad_at("file too small for a GGUF header", 0);
    uint32_t magic = read<uint32_t>("magic");
    if (magic != kGgufMagic) bad("not a GGUF file (magic " + printable(std::string_view(reinterpret_cast<const char*>(base_), 4)) + ")");
    uint64_t at = pos_;
    uint32_t version = read<uint32_t>("version");
    if (version == 1) fail(KVRT_ERR_UNSUPPORTED, "GGUF " + f_.path_ + ": version 1 files are not supported (re-convert to v3)");
    if (version != 2 && version != 3) {
        if (__builtin_bswap32(version) == 2 || __builtin_bswap32(version) == 3)
            fail(KVRT_ERR_UNSUPPORTED, "GGUF " + f_.path_ + ": big-endian GGUF files are not supported");
        bad_at("unknown version " + std::to_string(version), at);
    }
    f_.version_ = version;
    uint64_t n_tensors = read<uint64_t>("tensor count");
    uint64_t n_kv = read<uint64_t>("metadata count");
    // Minimal encodings: a KV is a key (8) + type (4) + the smallest value (1); a tensor info is
    // a name (8) + n_dims (4) + type (4) + offset (8).
    if (n_kv > remaining() / 13)
        bad("metadata count " + std::to_string(n_kv) + " cannot fit in the " + std::to_string(remaining()) + " bytes left");
    if (n_tensors > remaining() / 24)
        bad("tensor count " + std::to_string(n_tensors) + " cannot fit in the " + std::to_string(remaining()) + " bytes left");
    if (n_kv > kMaxCount) bad("metadata count " + std::to_string(n_kv) + " exceeds the limit " + std::to_string(kMaxCount));
    if (n_tensors > kMaxCount) bad("tensor count " + std::to_string(n_tensors) + " exceeds the limit " + std::to_string(kMaxCount));
    if (n_kv + n_tensors > remaining() / 13)
        bad("metadata count " + std::to_string(n_kv) + " and tensor count " + std::to_string(n_tensors) +
            " cannot fit in the " + std::to_string(remaining()) + " bytes left");

    f_.kvs_.resize(static_cast<size_t>(n_kv));
    f_.kv_index_.reserve(static_cast<size_t>(n_kv));
    for (uint64_t i = 0; i < n_kv; ++i) {
        uint64_t kat = pos_;
        what_ = "metadata #" + std::to_string(i);
        GgufKV& kv = f_.kvs_[i];
        kv.key = read_string("key");
        what_ = "metadata key '" + printable(kv.key) + "' (#" + std::to_string(i) + ")";
        if (kv.key.empty()) bad_at("empty key", kat);
        if (kv.key.size() > 65535) bad_at("key of " + std::to_string(kv.key.size()) + " bytes (limit 65535)", kat);
        GgufType t = read_type("value type");
        read_value(kv.value, t, 0);
        if (!f_.kv_index_.emplace(kv.key, i).second) bad_at("duplicate key", kat);
    }
    apply_alignment();

    f_.tensors_.resize(static_cast<size_t>(n_tensors));
    f_.tensor_index_.reserve(static_cast<size_t>(n_tensors));
    for (uint64_t i = 0; i < n_tensors; ++i) {
        uint64_t tat = pos_;
        read_tensor_info(f_.tensors_[i], i);
        if (!f_.tensor_index_.emplace(f_.tensors_[i].name, i).second) bad_at("duplicate tensor name", tat);
    }
    place_tensors();
}

// ---------------------------------------------------------------------------
// GgufFile

GgufFile GgufFile::open(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        fail(e == ENOENT ? KVRT_ERR_NOT_FOUND : KVRT_ERR_IO,
             "GGUF " + path + ": cannot open: " + std::strerror(e));
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        int e = errno;
        ::close(fd);
        fail(KVRT_ERR_IO, "GGUF " + path + ": cannot stat: " + std::strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        ::close(fd);
        fail(KVRT_ERR_IO, "GGUF " + path + ": not a regular file");
    }
    if (st.st_size <= 0) {
        ::close(fd);
        fail(KVRT_ERR_BAD_FORMAT, "GGUF " + path + ": empty file");
    }
    size_t len = static_cast<size_t>(st.st_size);
    void* addr = ::mmap(nullptr, len, PROT_READ, MAP_PRIVATE, fd, 0);
    int e = errno;
    ::close(fd);
    if (addr == MAP_FAILED) fail(KVRT_ERR_IO, "GGUF " + path + ": mmap of " + std::to_string(len) + " bytes failed: " + std::strerror(e));
    GgufFile f;
    f.mapping_ = std::make_unique<Mapping>();
    f.mapping_->addr = addr;
    f.mapping_->len = len;
    f.path_ = path;
    f.base_ = static_cast<const uint8_t*>(addr);
    f.size_ = len;
    GgufParser(f).run();
    return f;
}

GgufFile GgufFile::from_buffer(const void* data, size_t size, std::string name) {
    if (data == nullptr && size != 0) fail(KVRT_ERR_INVALID_ARGUMENT, "GGUF " + name + ": NULL buffer");
    GgufFile f;
    f.path_ = std::move(name);
    f.base_ = static_cast<const uint8_t*>(data);
    f.size_ = size;
    GgufParser(f).run();
    return f;
}

const GgufValue* GgufFile::find(std::string_view key) const noexcept {
    auto it = kv_index_.find(key);
    return it == kv_index_.end() ? nullptr : &kvs_[it->second].value;
}

const GgufValue& GgufFile::require(std::string_view key) const {
    const GgufValue* v = find(key);
    if (!v) fail(KVRT_ERR_BAD_FORMAT, "GGUF " + path_ + ": required metadata key '" + std::string(key) + "' is missing");
    return *v;
}

void GgufFile::type_error(std::string_view key, const GgufValue& v, const char* wanted) const {
    fail(KVRT_ERR_BAD_FORMAT,
         "GGUF " + path_ + ": metadata key '" + std::string(key) + "' is " + v.describe() + ", expected " + wanted);
}

namespace {

// Integer value of v as a signed 128-bit-free check: returns false when v is not an integer.
bool int_value(const GgufValue& v, bool* negative, uint64_t* magnitude) {
    if (!v.is_integer()) return false;
    switch (v.type()) {
        case GgufType::I8: case GgufType::I16: case GgufType::I32: case GgufType::I64: {
            int64_t i = v.as_i64();
            *negative = i < 0;
            *magnitude = i < 0 ? static_cast<uint64_t>(-(i + 1)) + 1 : static_cast<uint64_t>(i);
            return true;
        }
        default:
            *negative = false;
            *magnitude = v.as_u64();
            return true;
    }
}

}  // namespace

std::string_view GgufFile::get_string(std::string_view key, std::string_view def) const {
    return has(key) ? require_string(key) : def;
}
std::string_view GgufFile::require_string(std::string_view key) const {
    const GgufValue& v = require(key);
    if (v.type() != GgufType::STRING) type_error(key, v, "a string");
    return v.as_string();
}

uint64_t GgufFile::get_u64(std::string_view key, uint64_t def) const { return has(key) ? require_u64(key) : def; }
uint64_t GgufFile::require_u64(std::string_view key) const {
    const GgufValue& v = require(key);
    bool neg;
    uint64_t mag;
    if (!int_value(v, &neg, &mag) || neg) type_error(key, v, "a non-negative integer");
    return mag;
}

uint32_t GgufFile::get_u32(std::string_view key, uint32_t def) const { return has(key) ? require_u32(key) : def; }
uint32_t GgufFile::require_u32(std::string_view key) const {
    const GgufValue& v = require(key);
    bool neg;
    uint64_t mag;
    if (!int_value(v, &neg, &mag) || neg || mag > std::numeric_limits<uint32_t>::max())
        type_error(key, v, "an integer in [0, 4294967295]");
    return static_cast<uint32_t>(mag);
}

int32_t GgufFile::get_i32(std::string_view key, int32_t def) const { return has(key) ? require_i32(key) : def; }
int32_t GgufFile::require_i32(std::string_view key) const {
    const GgufValue& v = require(key);
    bool neg;
    uint64_t mag;
    if (!int_value(v, &neg, &mag) || (neg ? mag > 2147483648ull : mag > 2147483647ull))
        type_error(key, v, "an integer in [-2147483648, 2147483647]");
    return neg ? static_cast<int32_t>(-static_cast<int64_t>(mag)) : static_cast<int32_t>(mag);
}

float GgufFile::get_f32(std::string_view key, float def) const { return has(key) ? require_f32(key) : def; }
float GgufFile::require_f32(std::string_view key) const {
    const GgufValue& v = require(key);
    if (!v.is_float()) type_error(key, v, "f32 or f64");
    return static_cast<float>(v.as_f64());
}

bool GgufFile::get_bool(std::string_view key, bool def) const { return has(key) ? require_bool(key) : def; }
bool GgufFile::require_bool(std::string_view key) const {
    const GgufValue& v = require(key);
    if (v.type() != GgufType::BOOL) type_error(key, v, "a bool");
    return v.as_bool();
}

std::span<const std::string_view> GgufFile::get_string_array(std::string_view key) const {
    return has(key) ? require_string_array(key) : std::span<const std::string_view>{};
}
std::span<const std::string_view> GgufFile::require_string_array(std::string_view key) const {
    const GgufValue& v = require(key);
    if (v.type() != GgufType::ARRAY || v.array_type() != GgufType::STRING) type_error(key, v, "array<string>");
    return v.strings();
}

std::vector<int32_t> GgufFile::get_i32_array(std::string_view key) const {
    return has(key) ? require_i32_array(key) : std::vector<int32_t>{};
}
std::vector<int32_t> GgufFile::require_i32_array(std::string_view key) const {
    const GgufValue& v = require(key);
    if (v.type() != GgufType::ARRAY) type_error(key, v, "an integer array");
    std::vector<int32_t> out;
    out.reserve(static_cast<size_t>(v.array_size()));
    for (uint64_t i = 0; i < v.array_size(); ++i) {
        int64_t x;
        if (!v.array_int(i, &x)) type_error(key, v, "an integer array");
        if (x < std::numeric_limits<int32_t>::min() || x > std::numeric_limits<int32_t>::max())
            fail(KVRT_ERR_BAD_FORMAT, "GGUF " + path_ + ": metadata key '" + std::string(key) + "' element " +
                                          std::to_string(i) + " = " + std::to_string(x) + " does not fit in i32");
        out.push_back(static_cast<int32_t>(x));
    }
    return out;
}

std::vector<float> GgufFile::get_f32_array(std::string_view key) const {
    return has(key) ? require_f32_array(key) : std::vector<float>{};
}
std::vector<float> GgufFile::require_f32_array(std::string_view key) const {
    const GgufValue& v = require(key);
    if (v.type() != GgufType::ARRAY || (v.array_type() != GgufType::F32 && v.array_type() != GgufType::F64))
        type_error(key, v, "array<f32>");
    std::vector<float> out;
    out.reserve(static_cast<size_t>(v.array_size()));
    for (uint64_t i = 0; i < v.array_size(); ++i) {
        double x = 0;
        v.array_float(i, &x);
        out.push_back(static_cast<float>(x));
    }
    return out;
}

std::string_view GgufFile::architecture() const { return get_string("general.architecture", ""); }

std::string GgufFile::arch_key(std::string_view suffix) const {
    std::string k(architecture());
    k += '.';
    k += suffix;
    return k;
}

const GgufTensor* GgufFile::find_tensor(std::string_view name) const noexcept {
    auto it = tensor_index_.find(name);
    return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

const GgufTensor& GgufFile::require_tensor(std::string_view name) const {
    const GgufTensor* t = find_tensor(name);
    if (!t) fail(KVRT_ERR_BAD_FORMAT, "GGUF " + path_ + ": required tensor '" + std::string(name) + "' is missing");
    return *t;
}

const GgufTensor& GgufFile::expect_tensor(std::string_view name, std::initializer_list<uint64_t> dims,
                                          std::initializer_list<TensorType> allowed) const {
    const GgufTensor& t = require_tensor(name);
    bool ok = dims.size() == t.n_dims;
    if (ok) {
        size_t d = 0;
        for (uint64_t x : dims) ok = ok && t.ne[d++] == x;
    }
    if (!ok) {
        std::string want = "[";
        size_t d = 0;
        for (uint64_t x : dims) want += (d++ ? ", " : "") + std::to_string(x);
        want += "]";
        fail(KVRT_ERR_BAD_FORMAT,
             "GGUF " + path_ + ": tensor '" + std::string(name) + "' has shape " + t.shape_string() + ", expected " + want);
    }
    if (allowed.size() > 0 && std::find(allowed.begin(), allowed.end(), t.type) == allowed.end()) {
        std::string want;
        for (TensorType a : allowed) want += (want.empty() ? "" : ", ") + std::string(tensor_type_name(a));
        fail(KVRT_ERR_UNSUPPORTED, "GGUF " + path_ + ": tensor '" + std::string(name) + "' has type " +
                                       tensor_type_name(t.type) + "; kvrt supports " + want + " here");
    }
    return t;
}

}  // namespace kvrt
