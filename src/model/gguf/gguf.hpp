// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// GgufFile: a read-only, memory-mapped GGUF (v2, v3) file.
//
// open() maps the file (PROT_READ, MAP_PRIVATE) and parses the header, every
// metadata key/value (all value types, nested arrays included), every tensor
// info and the data section's offset. The mapping lives as long as the
// GgufFile (move it into the model; tensor data pointers point into it).
//
// Every offset, size, count and string length is bounds-checked with
// overflow-safe arithmetic before use: a truncated, hostile or garbage file
// throws kvrt::Error(KVRT_ERR_BAD_FORMAT) whose message names the file, the
// key / tensor and the byte offset; counts are checked against the bytes left
// before anything is allocated. Tensor data ranges lie inside the file, after
// the tensor infos, aligned to general.alignment, and do not overlap. A missing
// file is KVRT_ERR_NOT_FOUND, a directory or unreadable file KVRT_ERR_IO; a
// valid file that kvrt cannot use (v1, big-endian) KVRT_ERR_UNSUPPORTED.
// A file truncated by someone else while mapped raises SIGBUS: GGUF files are
// assumed immutable while loaded (as in llama.cpp).
//
// Thread safety: a GgufFile is immutable after open(); all const members may
// be called from any number of threads.
#pragma once

#include "formats/tensor_type.hpp"

#include <array>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace kvrt {

// GGUF metadata value types (gguf_type).
enum class GgufType : uint32_t {
    U8 = 0,
    I8 = 1,
    U16 = 2,
    I16 = 3,
    U32 = 4,
    I32 = 5,
    F32 = 6,
    BOOL = 7,
    STRING = 8,
    ARRAY = 9,
    U64 = 10,
    I64 = 11,
    F64 = 12,
};
inline constexpr uint32_t kGgufTypeCount = 13;

// "u8", "string", "array", ...; "invalid" for an id past the table.
const char* gguf_type_name(GgufType t) noexcept;
// Bytes of one scalar of type t (0 for STRING and ARRAY).
size_t gguf_type_size(GgufType t) noexcept;

inline constexpr uint32_t kGgufMagic = 0x46554747u;  // "GGUF" read as a little-endian u32
inline constexpr uint32_t kGgufDefaultAlignment = 32;
inline constexpr uint32_t kGgufMaxDims = 4;
inline constexpr uint32_t kGgufMaxArrayDepth = 8;  // nested arrays deeper than this are refused

// One metadata value. Strings and numeric arrays are views into the mapping.
class GgufValue {
public:
    GgufType type() const noexcept { return type_; }
    bool is_integer() const noexcept;  // U8..I64 (not BOOL)
    bool is_float() const noexcept { return type_ == GgufType::F32 || type_ == GgufType::F64; }

    // Scalars (valid for the matching type family; checked by the callers below).
    uint64_t as_u64() const noexcept { return u_; }    // unsigned integer types and BOOL
    int64_t as_i64() const noexcept { return i_; }     // signed integer types
    double as_f64() const noexcept { return f_; }      // F32 / F64
    bool as_bool() const noexcept { return u_ != 0; }  // BOOL
    std::string_view as_string() const noexcept { return str_; }  // STRING

    // Arrays.
    GgufType array_type() const noexcept { return elem_; }
    uint64_t array_size() const noexcept { return count_; }
    // Raw little-endian elements of a numeric / bool array (count * element size bytes; unaligned).
    std::string_view array_bytes() const noexcept { return str_; }
    // Elements of a string array.
    std::span<const std::string_view> strings() const noexcept { return strings_; }
    // Elements of an array of arrays.
    std::span<const GgufValue> arrays() const noexcept { return arrays_; }

    // Element i of a numeric array converted; false when the element type is not of the family
    // or the value does not fit (i must be < array_size()).
    bool array_int(uint64_t i, int64_t* out) const noexcept;   // integer element types (u64 > INT64_MAX fails)
    bool array_float(uint64_t i, double* out) const noexcept;  // F32 / F64 elements

    // "u32 7", "string \"llama\"", "array<string>[49152]" (for listings and messages).
    std::string describe(size_t max_chars = 60) const;

private:
    friend class GgufParser;
    GgufType type_ = GgufType::U8;
    GgufType elem_ = GgufType::U8;
    uint64_t count_ = 0;
    uint64_t u_ = 0;
    int64_t i_ = 0;
    double f_ = 0;
    std::string_view str_;
    std::vector<std::string_view> strings_;
    std::vector<GgufValue> arrays_;
};

struct GgufKV {
    std::string_view key;
    GgufValue value;
};

struct GgufTensor {
    std::string_view name;
    TensorType type = TensorType::F32;
    uint32_t n_dims = 0;
    std::array<uint64_t, kGgufMaxDims> ne{1, 1, 1, 1};  // ne[0] = row length (fastest), unused dims 1
    uint64_t n_elements = 0;
    uint64_t offset = 0;     // from the start of the data section
    uint64_t n_bytes = 0;
    uint64_t row_bytes = 0;  // bytes of one row of ne[0] elements
    const uint8_t* data = nullptr;  // inside the mapping, aligned to at least 2 (4 for f32, 8 for 64-bit types)

    uint64_t row_elems() const noexcept { return ne[0]; }
    uint64_t n_rows() const noexcept { return ne[0] ? n_elements / ne[0] : 0; }
    const uint8_t* row(uint64_t r) const noexcept { return data + r * row_bytes; }
    std::string shape_string() const;  // "[576, 49152]"
};

class GgufFile {
public:
    // Maps and parses the file at `path`. Throws kvrt::Error (see the top of this file).
    static GgufFile open(const std::string& path);
    // Parses `size` bytes at `data` without copying (the caller keeps them alive and
    // unchanged for the GgufFile's lifetime). `name` is used in messages.
    static GgufFile from_buffer(const void* data, size_t size, std::string name = "<buffer>");

    GgufFile(GgufFile&&) noexcept;
    GgufFile& operator=(GgufFile&&) noexcept;
    GgufFile(const GgufFile&) = delete;
    GgufFile& operator=(const GgufFile&) = delete;
    ~GgufFile();

    const std::string& path() const noexcept { return path_; }
    uint32_t version() const noexcept { return version_; }
    uint64_t alignment() const noexcept { return alignment_; }
    uint64_t data_offset() const noexcept { return data_offset_; }  // start of the data section
    uint64_t file_size() const noexcept { return size_; }
    const uint8_t* base() const noexcept { return base_; }

    // ---- metadata
    std::span<const GgufKV> metadata() const noexcept { return kvs_; }  // in file order
    const GgufValue* find(std::string_view key) const noexcept;
    bool has(std::string_view key) const noexcept { return find(key) != nullptr; }

    // Typed getters. get_* returns `def` when the key is absent; require_* throws
    // KVRT_ERR_BAD_FORMAT naming the key. Both throw KVRT_ERR_BAD_FORMAT naming the key
    // and both types when the value has another type or does not fit. Integer getters
    // accept any integer type whose value fits; float getters accept F32 and F64.
    std::string_view get_string(std::string_view key, std::string_view def) const;
    std::string_view require_string(std::string_view key) const;
    uint32_t get_u32(std::string_view key, uint32_t def) const;
    uint32_t require_u32(std::string_view key) const;
    int32_t get_i32(std::string_view key, int32_t def) const;
    int32_t require_i32(std::string_view key) const;
    uint64_t get_u64(std::string_view key, uint64_t def) const;
    uint64_t require_u64(std::string_view key) const;
    float get_f32(std::string_view key, float def) const;
    float require_f32(std::string_view key) const;
    bool get_bool(std::string_view key, bool def) const;
    bool require_bool(std::string_view key) const;

    // Arrays: an absent key gives an empty result (get_) or throws (require_).
    std::span<const std::string_view> get_string_array(std::string_view key) const;
    std::span<const std::string_view> require_string_array(std::string_view key) const;
    std::vector<int32_t> get_i32_array(std::string_view key) const;  // any integer elements that fit
    std::vector<int32_t> require_i32_array(std::string_view key) const;
    std::vector<float> get_f32_array(std::string_view key) const;  // F32 / F64 elements
    std::vector<float> require_f32_array(std::string_view key) const;

    // general.architecture ("" when absent) and "<arch>.<suffix>" keys.
    std::string_view architecture() const;
    std::string arch_key(std::string_view suffix) const;

    // ---- tensors
    std::span<const GgufTensor> tensors() const noexcept { return tensors_; }  // in file order
    const GgufTensor* find_tensor(std::string_view name) const noexcept;
    // Throws KVRT_ERR_BAD_FORMAT naming the tensor when absent.
    const GgufTensor& require_tensor(std::string_view name) const;
    // require_tensor + shape and type checks: `dims` lists ne[0], ne[1], ... (fastest first,
    // as ggml and GGUF do); an empty `allowed` accepts every type. A mismatch throws
    // KVRT_ERR_BAD_FORMAT naming the tensor, the expected and the actual shape / type
    // (a type kvrt cannot compute with is KVRT_ERR_UNSUPPORTED).
    const GgufTensor& expect_tensor(std::string_view name, std::initializer_list<uint64_t> dims,
                                    std::initializer_list<TensorType> allowed = {}) const;

private:
    friend class GgufParser;
    GgufFile() = default;
    struct Mapping;
    std::unique_ptr<Mapping> mapping_;
    std::string path_;
    const uint8_t* base_ = nullptr;
    uint64_t size_ = 0;
    uint32_t version_ = 0;
    uint64_t alignment_ = kGgufDefaultAlignment;
    uint64_t data_offset_ = 0;
    std::vector<GgufKV> kvs_;
    std::vector<GgufTensor> tensors_;
    std::unordered_map<std::string_view, size_t> kv_index_;
    std::unordered_map<std::string_view, size_t> tensor_index_;

    const GgufValue& require(std::string_view key) const;
    [[noreturn]] void type_error(std::string_view key, const GgufValue& v, const char* wanted) const;
};

}  // namespace kvrt
