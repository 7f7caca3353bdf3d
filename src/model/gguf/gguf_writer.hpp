// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// GgufWriter: builds a GGUF v3 file in memory and writes it (atomically) to disk.
//
// Used by the tests (round trips, hostile-input corpora) and by `kvrt ced-init`.
// Metadata keeps insertion order; setting a key twice replaces its value in
// place. Tensors are laid out in insertion order, each at an offset that is a
// multiple of the alignment, with zero padding. If the alignment is not the
// default 32, general.alignment (u32) is written automatically unless set.
//
// Not thread-safe; build one file per writer.
#pragma once

#include "model/gguf/gguf.hpp"
#include "formats/tensor_type.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kvrt {

class GgufWriter {
public:
    explicit GgufWriter(uint32_t alignment = kGgufDefaultAlignment);  // power of two, else INVALID_ARGUMENT

    // ---- scalar metadata
    void set_u8(std::string_view key, uint8_t v);
    void set_i8(std::string_view key, int8_t v);
    void set_u16(std::string_view key, uint16_t v);
    void set_i16(std::string_view key, int16_t v);
    void set_u32(std::string_view key, uint32_t v);
    void set_i32(std::string_view key, int32_t v);
    void set_u64(std::string_view key, uint64_t v);
    void set_i64(std::string_view key, int64_t v);
    void set_f32(std::string_view key, float v);
    void set_f64(std::string_view key, double v);
    void set_bool(std::string_view key, bool v);
    void set_string(std::string_view key, std::string_view v);

    // ---- arrays
    // `count` elements of the numeric/bool type `elem`, `data` in little-endian layout
    // (count * gguf_type_size(elem) bytes).
    void set_array(std::string_view key, GgufType elem, const void* data, uint64_t count);
    void set_string_array(std::string_view key, const std::vector<std::string>& v);
    void set_i32_array(std::string_view key, const std::vector<int32_t>& v);
    void set_f32_array(std::string_view key, const std::vector<float>& v);
    // Any value, given as its encoding after the type tag (see encode_* below); lets tests
    // build arrays of arrays and deliberately odd values.
    void set_encoded(std::string_view key, GgufType type, std::string payload);

    // Encoders of value payloads (GGUF little-endian layout).
    static std::string encode_string(std::string_view s);
    static std::string encode_array_header(GgufType elem, uint64_t count);  // then the elements

    // ---- tensors
    // Copies `bytes` bytes of data. dims = ne[0], ne[1], ... (1 to 4 dims); bytes must equal
    // the tensor's size for its type (else INVALID_ARGUMENT naming the tensor).
    void add_tensor(std::string_view name, TensorType type, const std::vector<uint64_t>& dims, const void* data,
                    size_t bytes);

    // Quantises `values` (the product of dims floats, row-major with ne[0] fastest) to
    // `type` with quantize() (tensor_type_quantize.hpp) and adds the result.
    void add_tensor_quantized(std::string_view name, TensorType type, const std::vector<uint64_t>& dims,
                              const float* values);

    // The whole file.
    std::vector<uint8_t> to_bytes() const;
    // Writes the file to `path` via a temporary file and rename(); KVRT_ERR_IO naming the path on failure.
    void write(const std::string& path) const;

private:
    struct KV {
        std::string key;
        GgufType type;
        std::string payload;
    };
    struct Tensor {
        std::string name;
        TensorType type;
        std::vector<uint64_t> dims;
        std::vector<uint8_t> data;
    };
    uint32_t alignment_;
    std::vector<KV> kvs_;
    std::vector<Tensor> tensors_;

    template <class T>
    void set_scalar(std::string_view key, GgufType type, T v);
};

}  // namespace kvrt
