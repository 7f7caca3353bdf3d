// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// The real model (SmolLM2-135M-Instruct Q4_1): metadata values and every tensor's
// type and shape, with shapes derived from the metadata rather than typed in.
#include <doctest/doctest.h>

#include "model/gguf/gguf.hpp"
#include "test_support.hpp"
#include "util/error.hpp"

#include <filesystem>
#include <string>

using kvrt::GgufFile;
using kvrt::TensorType;

namespace {
const GgufFile& model() {
    static GgufFile f = [] {
        std::string p = kvrt::test::model_path();
        REQUIRE_MESSAGE(std::filesystem::exists(p), "model missing (run scripts/setup.sh): " << p);
        return GgufFile::open(p);
    }();
    return f;
}
}  // namespace

TEST_CASE("gguf model: header and llama hyper-parameters") {
    const GgufFile& f = model();
    CHECK(f.version() == 3);
    CHECK(f.alignment() == 32);
    CHECK(f.data_offset() % 32 == 0);
    CHECK(f.architecture() == "llama");
    CHECK(f.arch_key("block_count") == "llama.block_count");
    CHECK(f.require_u32(f.arch_key("block_count")) == 30);
    CHECK(f.require_u32(f.arch_key("embedding_length")) == 576);
    CHECK(f.require_u32(f.arch_key("attention.head_count")) == 9);
    CHECK(f.require_u32(f.arch_key("attention.head_count_kv")) == 3);
    CHECK(f.require_f32(f.arch_key("rope.freq_base")) == 100000.0f);
    CHECK(f.get_u32(f.arch_key("attention.sliding_window"), 0) == 0);  // absent -> default
    CHECK(f.require_string("tokenizer.ggml.model") == "gpt2");
    CHECK(f.require_string_array("tokenizer.ggml.tokens").size() == 49152);
    CHECK(f.require_string_array("tokenizer.ggml.merges").size() == 48900);
    CHECK(f.require_i32_array("tokenizer.ggml.token_type").size() == 49152);
    CHECK(f.require_string_array("tokenizer.ggml.tokens")[0] == "<|endoftext|>");
    CHECK(f.require_string("tokenizer.chat_template").find("messages") != std::string_view::npos);

    // Required-but-missing and wrong-type keys name the key.
    try {
        (void)f.require_u32("llama.no_such_key");
        FAIL("expected an error");
    } catch (const kvrt::Error& e) {
        CHECK(e.status() == KVRT_ERR_BAD_FORMAT);
        CHECK(std::string(e.what()).find("llama.no_such_key") != std::string::npos);
    }
    try {
        (void)f.require_string("llama.block_count");
        FAIL("expected an error");
    } catch (const kvrt::Error& e) {
        CHECK(e.status() == KVRT_ERR_BAD_FORMAT);
        CHECK(std::string(e.what()).find("llama.block_count") != std::string::npos);
        CHECK(std::string(e.what()).find("u32") != std::string::npos);
    }
}

TEST_CASE("gguf model: every tensor's type and shape") {
    const GgufFile& f = model();
    const uint64_t n_layer = f.require_u32("llama.block_count");
    const uint64_t n_embd = f.require_u32("llama.embedding_length");
    const uint64_t n_ff = f.require_u32("llama.feed_forward_length");
    const uint64_t n_head = f.require_u32("llama.attention.head_count");
    const uint64_t n_head_kv = f.require_u32("llama.attention.head_count_kv");
    const uint64_t n_vocab = f.require_string_array("tokenizer.ggml.tokens").size();
    const uint64_t head_dim = n_embd / n_head;
    REQUIRE(head_dim * n_head == n_embd);
    CHECK(head_dim == f.require_u32("llama.rope.dimension_count"));

    const auto& emb = f.expect_tensor("token_embd.weight", {n_embd, n_vocab}, {TensorType::Q8_0});
    CHECK(emb.row_bytes == n_embd / 32 * sizeof(kvrt::BlockQ8_0));
    CHECK(emb.n_rows() == n_vocab);
    CHECK(f.find_tensor("output.weight") == nullptr);  // tied embeddings
    f.expect_tensor("output_norm.weight", {n_embd}, {TensorType::F32});

    size_t seen = 2;
    for (uint64_t l = 0; l < n_layer; ++l) {
        std::string p = "blk." + std::to_string(l) + ".";
        CAPTURE(p);
        f.expect_tensor(p + "attn_norm.weight", {n_embd}, {TensorType::F32});
        f.expect_tensor(p + "ffn_norm.weight", {n_embd}, {TensorType::F32});
        f.expect_tensor(p + "attn_q.weight", {n_embd, n_embd}, {TensorType::Q4_1});
        f.expect_tensor(p + "attn_k.weight", {n_embd, n_head_kv * head_dim}, {TensorType::Q4_1});
        f.expect_tensor(p + "attn_v.weight", {n_embd, n_head_kv * head_dim}, {TensorType::Q4_1});
        f.expect_tensor(p + "attn_output.weight", {n_embd, n_embd}, {TensorType::Q4_1});
        f.expect_tensor(p + "ffn_gate.weight", {n_embd, n_ff}, {TensorType::Q4_1});
        f.expect_tensor(p + "ffn_up.weight", {n_embd, n_ff}, {TensorType::Q4_1});
        const auto& down = f.expect_tensor(p + "ffn_down.weight", {n_ff, n_embd}, {TensorType::Q4_1});
        CHECK(down.n_bytes == n_embd * (n_ff / 32) * sizeof(kvrt::BlockQ4_1));
        seen += 9;
    }
    CHECK(f.tensors().size() == seen);

    // Data ranges: inside the file, aligned, and (sorted by offset) disjoint.
    uint64_t end = 0;
    for (const auto& t : f.tensors()) {
        CHECK(t.offset % f.alignment() == 0);
        CHECK(f.data_offset() + t.offset + t.n_bytes <= f.file_size());
        CHECK(t.data == f.base() + f.data_offset() + t.offset);
        if (t.offset + t.n_bytes > end) end = t.offset + t.n_bytes;
    }
    CHECK(f.data_offset() + end == f.file_size());

    // Shape / type mismatches name the tensor and both shapes; unsupported types are UNSUPPORTED.
    try {
        f.expect_tensor("token_embd.weight", {n_embd, n_vocab + 1});
        FAIL("expected an error");
    } catch (const kvrt::Error& e) {
        CHECK(e.status() == KVRT_ERR_BAD_FORMAT);
        CHECK(std::string(e.what()).find("token_embd.weight") != std::string::npos);
        CHECK(std::string(e.what()).find("[576, 49152]") != std::string::npos);
    }
    try {
        f.expect_tensor("token_embd.weight", {n_embd, n_vocab}, {TensorType::F16, TensorType::BF16});
        FAIL("expected an error");
    } catch (const kvrt::Error& e) {
        CHECK(e.status() == KVRT_ERR_UNSUPPORTED);
        CHECK(std::string(e.what()).find("q8_0") != std::string::npos);
    }
    try {
        f.require_tensor("blk.30.attn_q.weight");
        FAIL("expected an error");
    } catch (const kvrt::Error& e) {
        CHECK(e.status() == KVRT_ERR_BAD_FORMAT);
        CHECK(std::string(e.what()).find("blk.30.attn_q.weight") != std::string::npos);
    }
}

TEST_CASE("gguf open: missing file, directory, non-GGUF file") {
    try {
        GgufFile::open("/nonexistent/dir/model.gguf");
        FAIL("expected an error");
    } catch (const kvrt::Error& e) {
        CHECK(e.status() == KVRT_ERR_NOT_FOUND);
        CHECK(std::string(e.what()).find("/nonexistent/dir/model.gguf") != std::string::npos);
    }
    try {
        GgufFile::open("/tmp");
        FAIL("expected an error");
    } catch (const kvrt::Error& e) {
        CHECK(e.status() == KVRT_ERR_IO);
        CHECK(std::string(e.what()).find("not a regular file") != std::string::npos);
    }
    try {
        GgufFile::open(std::string(KVRT_SOURCE_DIR) + "/CMakeLists.txt");
        FAIL("expected an error");
    } catch (const kvrt::Error& e) {
        CHECK(e.status() == KVRT_ERR_BAD_FORMAT);
        CHECK(std::string(e.what()).find("not a GGUF file") != std::string::npos);
    }
}
