// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Hostile GGUF input: truncation at every byte, seeded random byte flips, and
// hand-made malformed headers. Each must give a status and a message naming
// the problem; never a crash, an overread (run under ASan) or a huge allocation.
#include <doctest/doctest.h>

#include "model/gguf/gguf.hpp"
#include "model/gguf/gguf_writer.hpp"
#include "formats/tensor_type_dequant.hpp"
#include "test_support.hpp"
#include "util/error.hpp"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <unistd.h>

using kvrt::GgufFile;
using kvrt::GgufType;
using kvrt::GgufWriter;
using kvrt::TensorType;

namespace {

std::vector<uint8_t> small_valid_file() {
    GgufWriter w;
    w.set_string("general.architecture", "llama");
    w.set_u32("llama.block_count", 2);
    w.set_f32("llama.rope.freq_base", 10000.0f);
    w.set_bool("tokenizer.ggml.add_bos_token", true);
    w.set_string_array("tokenizer.ggml.tokens", {"<s>", "a", "bc", "\xe2\x96\x81"});
    w.set_i32_array("tokenizer.ggml.token_type", {3, 1, 1, 1});
    w.set_f32_array("tokenizer.ggml.scores", {0.f, -1.f, -2.f, -3.f});
    std::string nested;
    nested += GgufWriter::encode_array_header(GgufType::ARRAY, 2);
    nested += GgufWriter::encode_array_header(GgufType::U16, 1) + std::string("\x05\x00", 2);
    nested += GgufWriter::encode_array_header(GgufType::STRING, 1) + GgufWriter::encode_string("zz");
    w.set_encoded("test.nested", GgufType::ARRAY, nested);
    std::vector<float> f32(8, 0.5f);
    w.add_tensor("norm.weight", TensorType::F32, {8}, f32.data(), 32);
    std::vector<uint8_t> q41(2 * 20, 0x11);
    for (int b = 0; b < 2; ++b) {
        q41[b * 20 + 1] = 0x3c;  // d = 1.0 (f16 0x3c00, little-endian)
        q41[b * 20 + 0] = 0x00;
    }
    w.add_tensor("w.q41", TensorType::Q4_1, {32, 2}, q41.data(), q41.size());
    std::vector<uint8_t> q80(34, 0x7f);
    w.add_tensor("w.q80", TensorType::Q8_0, {32}, q80.data(), q80.size());
    return w.to_bytes();
}

// Parses a copy of exactly `n` bytes on the heap (ASan catches any read past them),
// then uses everything the file offers. Returns KVRT_OK or the error's status.
kvrt_status parse_and_use(const uint8_t* data, size_t n, std::string* msg) {
    std::vector<uint8_t> copy(data, data + n);
    try {
        GgufFile f = GgufFile::from_buffer(copy.empty() ? nullptr : copy.data(), copy.size(), "hostile");
        for (const auto& kv : f.metadata()) (void)kv.value.describe();
        (void)f.get_u32("llama.block_count", 0);
        for (const auto& t : f.tensors()) {
            if (!kvrt::dequant_supported(t.type)) continue;
            std::vector<float> y(t.n_elements);
            kvrt::dequantize_rows_f32(t, 0, t.n_rows(), y.data());
        }
        return KVRT_OK;
    } catch (const kvrt::Error& e) {
        *msg = e.what();
        return e.status();
    }
}

struct Raw {
    std::vector<uint8_t> b;
    template <class T>
    Raw& put(T v) {
        uint8_t x[sizeof(T)];
        std::memcpy(x, &v, sizeof(T));
        b.insert(b.end(), x, x + sizeof(T));
        return *this;
    }
    Raw& str(std::string_view s) {
        put<uint64_t>(s.size());
        b.insert(b.end(), s.begin(), s.end());
        return *this;
    }
    Raw& header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
        return put<uint32_t>(kvrt::kGgufMagic).put<uint32_t>(version).put<uint64_t>(n_tensors).put<uint64_t>(n_kv);
    }
    Raw& pad(size_t to) {
        b.resize(b.size() + 4096, 0);  // plenty of zero bytes so only the tested field is wrong
        (void)to;
        return *this;
    }
};

void expect_error(const std::vector<uint8_t>& bytes, kvrt_status st, const std::string& needle) {
    std::string msg;
    kvrt_status got = parse_and_use(bytes.data(), bytes.size(), &msg);
    CAPTURE(msg);
    CHECK(got == st);
    CHECK(msg.find(needle) != std::string::npos);
}

}  // namespace

TEST_CASE("gguf hostile: truncation at every byte offset") {
    const std::vector<uint8_t> file = small_valid_file();
    std::string msg;
    REQUIRE(parse_and_use(file.data(), file.size(), &msg) == KVRT_OK);
    GgufFile full = GgufFile::from_buffer(file.data(), file.size());
    uint64_t needed = 0;  // the end of the last tensor's data: shorter files must fail
    for (const auto& t : full.tensors()) needed = std::max(needed, full.data_offset() + t.offset + t.n_bytes);
    REQUIRE(needed <= file.size());
    for (size_t n = 0; n < file.size(); ++n) {
        CAPTURE(n);
        msg.clear();
        kvrt_status st = parse_and_use(file.data(), n, &msg);
        if (n >= needed) {
            CHECK(st == KVRT_OK);  // only the final padding is missing
        } else {
            CHECK(st == KVRT_ERR_BAD_FORMAT);
            CHECK(msg.find("GGUF hostile") == 0);
        }
    }
}

TEST_CASE("gguf hostile: seeded random byte flips") {
    const std::vector<uint8_t> file = small_valid_file();
    std::mt19937 rng(20261129);
    int ok = 0, bad = 0;
    for (int iter = 0; iter < 3000; ++iter) {
        std::vector<uint8_t> m = file;
        const int flips = 1 + static_cast<int>(rng() % 4);
        for (int k = 0; k < flips; ++k) {
            size_t at = rng() % m.size();
            // Mostly in the header and metadata, where the structure is.
            if (rng() % 4 != 0) at = rng() % std::min<size_t>(m.size(), 400);
            m[at] = static_cast<uint8_t>(rng() % 3 == 0 ? 0xff : rng());
        }
        std::string msg;
        kvrt_status st = parse_and_use(m.data(), m.size(), &msg);
        CAPTURE(iter);
        CAPTURE(msg);
        if (st == KVRT_OK) {
            ok++;
        } else {
            bad++;
            CHECK((st == KVRT_ERR_BAD_FORMAT || st == KVRT_ERR_UNSUPPORTED));
            CHECK(!msg.empty());
        }
    }
    MESSAGE("random flips: " << ok << " still parse, " << bad << " rejected");
    CHECK(bad > 0);
    CHECK(ok > 0);
}

TEST_CASE("gguf hostile: malformed headers are named") {
    using B = std::vector<uint8_t>;
    auto body = [](Raw r) { return r.pad(0).b; };

    expect_error(B{}, KVRT_ERR_BAD_FORMAT, "too small");
    expect_error(body(Raw().put<uint32_t>(0x12345678)), KVRT_ERR_BAD_FORMAT, "not a GGUF file");
    expect_error(body(Raw().header(0, 0, 1)), KVRT_ERR_UNSUPPORTED, "version 1");
    expect_error(body(Raw().header(0, 0, 0x03000000)), KVRT_ERR_UNSUPPORTED, "big-endian");
    expect_error(body(Raw().header(0, 0, 7)), KVRT_ERR_BAD_FORMAT, "unknown version 7");
    expect_error(body(Raw().header(1ull << 60, 0)), KVRT_ERR_BAD_FORMAT, "tensor count");
    expect_error(body(Raw().header(0, 1ull << 62)), KVRT_ERR_BAD_FORMAT, "metadata count");
    // A key whose string length runs past the end.
    expect_error(body(Raw().header(0, 1).put<uint64_t>(1ull << 62)), KVRT_ERR_BAD_FORMAT, "runs past the end");
    expect_error(body(Raw().header(0, 1).str("")), KVRT_ERR_BAD_FORMAT, "empty key");
    expect_error(body(Raw().header(0, 1).str("k").put<uint32_t>(13)), KVRT_ERR_BAD_FORMAT, "not a GGUF value type");
    expect_error(body(Raw().header(0, 1).str("k.bool").put<uint32_t>(7).put<uint8_t>(2)), KVRT_ERR_BAD_FORMAT,
                 "'k.bool'");
    // Arrays: a count the file cannot hold, and nesting past the limit.
    expect_error(body(Raw().header(0, 1).str("k.arr").put<uint32_t>(9).put<uint32_t>(4).put<uint64_t>(1ull << 61)),
                 KVRT_ERR_BAD_FORMAT, "does not fit");
    {
        Raw r;
        r.header(0, 1).str("k.deep").put<uint32_t>(9);
        for (int i = 0; i < 12; ++i) r.put<uint32_t>(9).put<uint64_t>(1);
        r.put<uint32_t>(4).put<uint64_t>(0);
        expect_error(body(r), KVRT_ERR_BAD_FORMAT, "nested deeper");
    }
    // Duplicate keys.
    expect_error(body(Raw().header(0, 2).str("k").put<uint32_t>(4).put<uint32_t>(1).str("k").put<uint32_t>(4).put<uint32_t>(2)),
                 KVRT_ERR_BAD_FORMAT, "duplicate key");
    // general.alignment: wrong type, zero, not a power of two.
    expect_error(body(Raw().header(0, 1).str("general.alignment").put<uint32_t>(5).put<int32_t>(32)),
                 KVRT_ERR_BAD_FORMAT, "general.alignment");
    expect_error(body(Raw().header(0, 1).str("general.alignment").put<uint32_t>(4).put<uint32_t>(0)),
                 KVRT_ERR_BAD_FORMAT, "power of two");
    expect_error(body(Raw().header(0, 1).str("general.alignment").put<uint32_t>(4).put<uint32_t>(24)),
                 KVRT_ERR_BAD_FORMAT, "power of two");

    // Tensor infos.
    auto tensor = [](Raw& r, std::string_view name, std::vector<uint64_t> dims, uint32_t type, uint64_t off) {
        r.str(name).put<uint32_t>(static_cast<uint32_t>(dims.size()));
        for (uint64_t d : dims) r.put<uint64_t>(d);
        r.put<uint32_t>(type).put<uint64_t>(off);
    };
    {
        Raw r;
        r.header(1, 0);
        tensor(r, "t5", {1, 1, 1, 1, 1}, 0, 0);
        expect_error(body(r), KVRT_ERR_BAD_FORMAT, "'t5'");
    }
    {
        Raw r;
        r.header(1, 0);
        tensor(r, "big", {1ull << 40, 1ull << 40}, 0, 0);
        expect_error(body(r), KVRT_ERR_BAD_FORMAT, "overflows");
    }
    {
        Raw r;
        r.header(1, 0);
        tensor(r, "weird", {32}, 1000, 0);
        expect_error(body(r), KVRT_ERR_BAD_FORMAT, "unknown tensor type id 1000");
    }
    {
        Raw r;
        r.header(1, 0);
        tensor(r, "old", {32}, 4, 0);
        expect_error(body(r), KVRT_ERR_BAD_FORMAT, "q4_2");
    }
    {
        Raw r;
        r.header(1, 0);
        tensor(r, "ragged", {33}, 3, 0);
        expect_error(body(r), KVRT_ERR_BAD_FORMAT, "not a multiple of q4_1");
    }
    {
        Raw r;
        r.header(1, 0);
        tensor(r, "misaligned", {4}, 0, 4);
        expect_error(body(r), KVRT_ERR_BAD_FORMAT, "not a multiple of the alignment");
    }
    {
        Raw r;
        r.header(1, 0);
        tensor(r, "outside", {1024, 1024}, 0, 0);
        expect_error(body(r), KVRT_ERR_BAD_FORMAT, "runs past the end of the data section");
    }
    {
        Raw r;
        r.header(1, 0);
        tensor(r, "far", {4}, 0, 1ull << 62);
        expect_error(body(r), KVRT_ERR_BAD_FORMAT, "'far'");
    }
    {
        Raw r;
        r.header(2, 0);
        tensor(r, "a", {16}, 0, 0);
        tensor(r, "b", {16}, 0, 32);
        expect_error(body(r), KVRT_ERR_BAD_FORMAT, "overlap");
    }
    {
        Raw r;
        r.header(2, 0);
        tensor(r, "same", {4}, 0, 0);
        tensor(r, "same", {4}, 0, 32);
        expect_error(body(r), KVRT_ERR_BAD_FORMAT, "duplicate tensor name");
    }
    {
        // i64 data must be 8-byte aligned. With general.alignment = 4 the data section
        // starts at file offset 92 (the header and infos below), 4 mod 8; the heap copy
        // parse_and_use makes is at least 16-byte aligned.
        Raw r;
        r.header(1, 1).str("general.alignment").put<uint32_t>(4).put<uint32_t>(4);
        tensor(r, "i64", {1}, 27, 0);
        REQUIRE(r.b.size() == 92);
        expect_error(body(r), KVRT_ERR_BAD_FORMAT, "aligned");
    }
}

TEST_CASE("gguf hostile: files on disk (empty, truncated model header)") {
    const std::string dir = "/tmp/kvrt_hostile_" + std::to_string(::getpid());
    std::filesystem::create_directories(dir);
    const std::string empty = dir + "/empty.gguf";
    { std::ofstream(empty, std::ios::binary); }
    try {
        GgufFile::open(empty);
        FAIL("expected an error");
    } catch (const kvrt::Error& e) {
        CHECK(e.status() == KVRT_ERR_BAD_FORMAT);
        CHECK(std::string(e.what()).find(empty) != std::string::npos);
    }
    const std::vector<uint8_t> file = small_valid_file();
    const std::string cut = dir + "/cut.gguf";
    {
        std::ofstream o(cut, std::ios::binary);
        o.write(reinterpret_cast<const char*>(file.data()), 100);
    }
    try {
        GgufFile::open(cut);
        FAIL("expected an error");
    } catch (const kvrt::Error& e) {
        CHECK(e.status() == KVRT_ERR_BAD_FORMAT);
        CHECK(std::string(e.what()).find("cut.gguf") != std::string::npos);
    }
    std::filesystem::remove_all(dir);
}

TEST_CASE("gguf hostile: the real model's header, truncated and flipped") {
    const std::string path = kvrt::test::model_path();
    REQUIRE_MESSAGE(std::filesystem::exists(path), "model missing: " << path);
    GgufFile model = GgufFile::open(path);
    const uint64_t header = model.data_offset();  // header + metadata + tensor infos (~1.7 MB)
    REQUIRE(header < model.file_size());
    std::mt19937 rng(4);
    // Truncated anywhere in the header (a dense sample, near the start and at random): BAD_FORMAT.
    std::vector<uint64_t> cuts = {0, 1, 4, 8, 23, 24, header - 1};
    for (int i = 0; i < 40; ++i) cuts.push_back(rng() % header);
    for (uint64_t n : cuts) {
        CAPTURE(n);
        std::string msg;
        CHECK(parse_and_use(model.base(), n, &msg) == KVRT_ERR_BAD_FORMAT);
    }
    // Flips in the header of a full-size copy: a status, never a crash. The copy is the
    // header plus the tensor data of the first tensor only (the file's tail is irrelevant
    // to parsing, and tensors past the copy must then be rejected as outside the file).
    std::vector<uint8_t> head(model.base(), model.base() + header + 4096);
    for (int iter = 0; iter < 60; ++iter) {
        std::vector<uint8_t> m = head;
        for (int k = 0; k < 3; ++k) m[rng() % header] = static_cast<uint8_t>(rng());
        std::string msg;
        kvrt_status st = parse_and_use(m.data(), m.size(), &msg);
        CAPTURE(msg);
        // Never OK: every tensor but the first lies past the copy's end.
        CHECK((st == KVRT_ERR_BAD_FORMAT || st == KVRT_ERR_UNSUPPORTED));
    }
}
