// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// GgufWriter -> GgufFile round trips: every metadata value type (nested arrays
// included), every dequantisable tensor type, alignments, typed accessors.
#include <doctest/doctest.h>

#include "model/gguf/gguf.hpp"
#include "model/gguf/gguf_writer.hpp"
#include "formats/tensor_type_dequant.hpp"
#include "util/error.hpp"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>
#include <unistd.h>

using kvrt::GgufFile;
using kvrt::GgufType;
using kvrt::GgufWriter;
using kvrt::TensorType;

namespace {

std::vector<uint8_t> random_tensor_bytes(TensorType t, uint64_t n_elems, std::mt19937& rng) {
    const auto& tr = kvrt::tensor_type_traits(t);
    std::vector<uint8_t> v(n_elems / tr.block_elems * tr.block_bytes);
    for (auto& b : v) b = static_cast<uint8_t>(rng());
    // Keep half-precision scales finite (exponent < 31) so the data is realistic.
    if (tr.block_elems > 1)
        for (size_t off = 0; off < v.size(); off += tr.block_bytes) {
            size_t d = t == TensorType::Q6_K ? offsetof(kvrt::BlockQ6_K, d) : 0;
            v[off + d + 1] &= 0x3b;
            if (t == TensorType::Q4_1 || t == TensorType::Q5_1 || t == TensorType::Q8_1 || t == TensorType::Q4_K)
                v[off + 3] &= 0x3b;
        }
    if (t == TensorType::F32)
        for (size_t i = 0; i < v.size(); i += 4) v[i + 3] &= 0x3f;
    return v;
}

template <class T>
std::string raw(const T& v) {
    std::string s(sizeof(T), '\0');
    std::memcpy(s.data(), &v, sizeof(T));
    return s;
}

}  // namespace

TEST_CASE("gguf round trip: every metadata value type") {
    GgufWriter w;
    w.set_string("general.architecture", "testarch");
    w.set_u8("k.u8", 200);
    w.set_i8("k.i8", -100);
    w.set_u16("k.u16", 60000);
    w.set_i16("k.i16", -30000);
    w.set_u32("k.u32", 4000000000u);
    w.set_i32("k.i32", -2000000000);
    w.set_u64("k.u64", 1ull << 40);
    w.set_i64("k.i64", -(1ll << 40));
    w.set_f32("k.f32", 0.1f);
    w.set_f64("k.f64", 1e300);
    w.set_bool("k.bool", true);
    w.set_string("k.str", std::string("with\0nul and \xc3\xa9", 16));
    w.set_string("k.empty", "");
    w.set_string_array("k.strs", {"a", "", "ccc"});
    w.set_i32_array("k.i32s", {1, -2, 2147483647});
    w.set_f32_array("k.f32s", {1.5f, -0.0f});
    const uint8_t u8s[3] = {0, 128, 255};
    w.set_array("k.u8s", GgufType::U8, u8s, 3);
    const int64_t i64s[2] = {-5, 1ll << 50};
    w.set_array("k.i64s", GgufType::I64, i64s, 2);
    const uint8_t bools[2] = {1, 0};
    w.set_array("k.bools", GgufType::BOOL, bools, 2);
    const double f64s[1] = {2.25};
    w.set_array("k.f64s", GgufType::F64, f64s, 1);
    // array<array<i32>>: [[7, 8], []] and array<array<string>>: [["x"]]
    std::string nested = GgufWriter::encode_array_header(GgufType::ARRAY, 2) +
                         GgufWriter::encode_array_header(GgufType::I32, 2) + raw<int32_t>(7) + raw<int32_t>(8) +
                         GgufWriter::encode_array_header(GgufType::I32, 0);
    w.set_encoded("k.nested", GgufType::ARRAY, nested);
    std::string nested_s = GgufWriter::encode_array_header(GgufType::ARRAY, 1) +
                           GgufWriter::encode_array_header(GgufType::STRING, 1) + GgufWriter::encode_string("x");
    w.set_encoded("k.nested_s", GgufType::ARRAY, nested_s);
    w.set_u32("k.replaced", 1);
    w.set_u32("k.replaced", 2);  // replaces in place

    std::vector<uint8_t> bytes = w.to_bytes();
    GgufFile f = GgufFile::from_buffer(bytes.data(), bytes.size(), "roundtrip");
    CHECK(f.version() == 3);
    CHECK(f.alignment() == 32);
    CHECK(f.tensors().empty());
    CHECK(f.metadata().size() == 24);  // 25 set_* calls, one replaced a key
    CHECK(f.metadata()[0].key == "general.architecture");  // file order kept
    CHECK(f.architecture() == "testarch");
    CHECK(f.arch_key("x") == "testarch.x");

    CHECK(f.find("k.u8")->type() == GgufType::U8);
    CHECK(f.require_u32("k.u8") == 200);
    CHECK(f.require_i32("k.i8") == -100);
    CHECK(f.require_u32("k.u16") == 60000);
    CHECK(f.require_i32("k.i16") == -30000);
    CHECK(f.require_u32("k.u32") == 4000000000u);
    CHECK(f.require_i32("k.i32") == -2000000000);
    CHECK(f.require_u64("k.u64") == (1ull << 40));
    CHECK(f.find("k.i64")->as_i64() == -(1ll << 40));
    CHECK(f.require_f32("k.f32") == 0.1f);
    CHECK(f.find("k.f64")->as_f64() == 1e300);
    CHECK(f.require_bool("k.bool"));
    CHECK(f.require_string("k.str") == std::string_view("with\0nul and \xc3\xa9", 16));
    CHECK(f.require_string("k.empty").empty());
    auto strs = f.require_string_array("k.strs");
    REQUIRE(strs.size() == 3);
    CHECK(strs[0] == "a");
    CHECK(strs[1].empty());
    CHECK(strs[2] == "ccc");
    CHECK(f.require_i32_array("k.i32s") == std::vector<int32_t>{1, -2, 2147483647});
    CHECK(f.require_i32_array("k.u8s") == std::vector<int32_t>{0, 128, 255});
    CHECK(f.require_f32_array("k.f32s")[0] == 1.5f);
    CHECK(std::signbit(f.require_f32_array("k.f32s")[1]));
    CHECK(f.require_f32_array("k.f64s") == std::vector<float>{2.25f});
    const kvrt::GgufValue* b = f.find("k.bools");
    REQUIRE(b != nullptr);
    CHECK(b->array_type() == GgufType::BOOL);
    CHECK(b->array_bytes() == std::string_view("\x01\x00", 2));
    const kvrt::GgufValue* i64a = f.find("k.i64s");
    int64_t x = 0;
    CHECK(i64a->array_int(1, &x));
    CHECK(x == (1ll << 50));
    CHECK_FALSE(i64a->array_int(2, &x));  // past the end
    const kvrt::GgufValue* nv = f.find("k.nested");
    REQUIRE(nv->array_type() == GgufType::ARRAY);
    REQUIRE(nv->arrays().size() == 2);
    CHECK(nv->arrays()[0].array_type() == GgufType::I32);
    CHECK(nv->arrays()[0].array_size() == 2);
    CHECK(nv->arrays()[0].array_int(1, &x));
    CHECK(x == 8);
    CHECK(nv->arrays()[1].array_size() == 0);
    CHECK(f.find("k.nested_s")->arrays()[0].strings()[0] == "x");
    CHECK(f.require_u32("k.replaced") == 2);

    // The same bytes labelled version 2 (v2 and v3 share the little-endian layout) parse alike.
    std::vector<uint8_t> v2 = bytes;
    v2[4] = 2;
    GgufFile f2 = GgufFile::from_buffer(v2.data(), v2.size(), "v2");
    CHECK(f2.version() == 2);
    CHECK(f2.metadata().size() == f.metadata().size());
    CHECK(f2.require_u32("k.u32") == 4000000000u);

    // Conversions that do not fit, wrong types, absent keys.
    auto expect_bad = [&](auto fn, const char* key) {
        try {
            fn();
            FAIL("expected an error for " << key);
        } catch (const kvrt::Error& e) {
            CHECK(e.status() == KVRT_ERR_BAD_FORMAT);
            CHECK(std::string(e.what()).find(key) != std::string::npos);
        }
    };
    expect_bad([&] { (void)f.require_u32("k.i8"); }, "k.i8");       // negative
    expect_bad([&] { (void)f.require_i32("k.u32"); }, "k.u32");     // > INT32_MAX
    expect_bad([&] { (void)f.require_u32("k.u64"); }, "k.u64");     // > UINT32_MAX
    expect_bad([&] { (void)f.require_f32("k.u32"); }, "k.u32");     // not a float
    expect_bad([&] { (void)f.require_bool("k.u8"); }, "k.u8");
    expect_bad([&] { (void)f.require_string_array("k.i32s"); }, "k.i32s");
    expect_bad([&] { (void)f.require_i32_array("k.strs"); }, "k.strs");
    expect_bad([&] { (void)f.require_i32_array("k.i64s"); }, "k.i64s");  // 2^50 does not fit
    expect_bad([&] { (void)f.require_f32_array("k.u8s"); }, "k.u8s");
    expect_bad([&] { (void)f.require_string("k.absent"); }, "k.absent");
    CHECK(f.get_u32("k.absent", 42) == 42);
    CHECK(f.get_i32("k.absent", -7) == -7);
    CHECK(f.get_f32("k.absent", 0.5f) == 0.5f);
    CHECK(f.get_bool("k.absent", true));
    CHECK(f.get_string("k.absent", "dflt") == "dflt");
    CHECK(f.get_string_array("k.absent").empty());
    CHECK(f.get_i32_array("k.absent").empty());
    CHECK(f.get_f32_array("k.absent").empty());
    expect_bad([&] { (void)f.get_u32("k.str", 1); }, "k.str");  // present with the wrong type: not the default
    CHECK(f.find("k.i8")->describe() == "i8 -100");
    CHECK(f.find("k.strs")->describe().find("array<string>[3]") == 0);
}

TEST_CASE("gguf round trip: tensors of every dequantisable type, shapes and alignments") {
    std::mt19937 rng(5);
    struct Spec {
        TensorType t;
        std::vector<uint64_t> dims;
    };
    const std::vector<Spec> specs = {
        {TensorType::F32, {7}},           {TensorType::F16, {3, 5}},         {TensorType::BF16, {2, 3, 4}},
        {TensorType::Q8_0, {64, 3}},      {TensorType::Q4_0, {32, 2, 2, 2}}, {TensorType::Q4_1, {96, 4}},
        {TensorType::Q5_0, {32, 1}},      {TensorType::Q5_1, {64, 2}},       {TensorType::Q8_1, {32, 3}},
        {TensorType::Q4_K, {256, 2}},     {TensorType::Q6_K, {512, 1}},      {TensorType::F32, {1, 1, 1, 1}},
    };
    for (uint32_t alignment : {32u, 64u, 8u}) {
        CAPTURE(alignment);
        GgufWriter w(alignment);
        w.set_string("general.architecture", "t");
        std::vector<std::vector<uint8_t>> datas;
        for (size_t i = 0; i < specs.size(); ++i) {
            uint64_t n = 1;
            for (uint64_t d : specs[i].dims) n *= d;
            datas.push_back(random_tensor_bytes(specs[i].t, n, rng));
            w.add_tensor("t" + std::to_string(i), specs[i].t, specs[i].dims, datas.back().data(), datas.back().size());
        }
        const std::string path = (std::filesystem::temp_directory_path() /
                                  ("kvrt_rt_" + std::to_string(::getpid()) + "_" + std::to_string(alignment) + ".gguf"))
                                     .string();
        w.write(path);
        GgufFile f = GgufFile::open(path);
        std::filesystem::remove(path);  // the mapping stays valid after unlink
        CHECK(f.alignment() == alignment);
        CHECK(f.has("general.alignment") == (alignment != 32));
        REQUIRE(f.tensors().size() == specs.size());
        for (size_t i = 0; i < specs.size(); ++i) {
            const auto& t = f.tensors()[i];
            CAPTURE(t.name);
            CHECK(t.name == "t" + std::to_string(i));
            CHECK(t.type == specs[i].t);
            CHECK(t.n_dims == specs[i].dims.size());
            for (size_t d = 0; d < specs[i].dims.size(); ++d) CHECK(t.ne[d] == specs[i].dims[d]);
            CHECK(t.offset % alignment == 0);
            CHECK((f.data_offset() + t.offset) % alignment == 0);
            REQUIRE(t.n_bytes == datas[i].size());
            CHECK(std::memcmp(t.data, datas[i].data(), t.n_bytes) == 0);
            CHECK(&f.require_tensor(t.name) == &t);
            std::vector<float> got(t.n_elements), want(t.n_elements);
            kvrt::dequantize_rows_f32(t, 0, t.n_rows(), got.data());
            kvrt::ref::dequantize_f32(t.type, datas[i].data(), want.data(), t.n_elements);
            CHECK(std::memcmp(got.data(), want.data(), got.size() * 4) == 0);
        }
    }
}

TEST_CASE("gguf writer: argument errors") {
    GgufWriter w;
    float x[4] = {};
    auto expect = [](auto fn, kvrt_status st) {
        try {
            fn();
            FAIL("expected an error");
        } catch (const kvrt::Error& e) {
            CHECK(e.status() == st);
        }
    };
    expect([&] { w.add_tensor("a", TensorType::F32, {4}, x, 12); }, KVRT_ERR_INVALID_ARGUMENT);       // wrong size
    expect([&] { w.add_tensor("a", TensorType::Q4_1, {4}, x, 16); }, KVRT_ERR_INVALID_ARGUMENT);      // not a block multiple
    expect([&] { w.add_tensor("a", TensorType::F32, {}, x, 0); }, KVRT_ERR_INVALID_ARGUMENT);         // no dims
    expect([&] { w.add_tensor("a", TensorType::F32, {1, 1, 1, 1, 1}, x, 4); }, KVRT_ERR_INVALID_ARGUMENT);
    w.add_tensor("a", TensorType::F32, {4}, x, 16);
    expect([&] { w.add_tensor("a", TensorType::F32, {4}, x, 16); }, KVRT_ERR_INVALID_ARGUMENT);       // duplicate
    expect([&] { w.set_array("k", GgufType::STRING, x, 1); }, KVRT_ERR_INVALID_ARGUMENT);
    expect([] { GgufWriter bad(24); }, KVRT_ERR_INVALID_ARGUMENT);
    expect([&] { w.write("/nonexistent-dir/x.gguf"); }, KVRT_ERR_IO);
}
