// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// The ggml type table: block sizes derived independently from each layout's
// fields (ggml-common.h), retired ids, row-size arithmetic and its overflow.
#include <doctest/doctest.h>

#include "formats/tensor_type.hpp"
#include "util/error.hpp"

#include <cstring>
#include <limits>

using kvrt::TensorType;

TEST_CASE("tensor_type: block sizes equal the sum of each ggml layout's fields") {
    const int qk = kvrt::kQK_K;
    struct Row {
        TensorType t;
        uint32_t elems;
        uint32_t bytes;
    };
    // half = 2 bytes; every size below is spelled as its fields.
    const Row rows[] = {
        {TensorType::F32, 1, 4},
        {TensorType::F16, 1, 2},
        {TensorType::BF16, 1, 2},
        {TensorType::Q4_0, 32, 2 + 32 / 2},
        {TensorType::Q4_1, 32, 2 + 2 + 32 / 2},
        {TensorType::Q5_0, 32, 2 + 4 + 32 / 2},
        {TensorType::Q5_1, 32, 2 + 2 + 4 + 32 / 2},
        {TensorType::Q8_0, 32, 2 + 32},
        {TensorType::Q8_1, 32, 2 + 2 + 32},
        {TensorType::Q2_K, 256, uint32_t(qk / 16 + qk / 4 + 2 + 2)},
        {TensorType::Q3_K, 256, uint32_t(qk / 8 + qk / 4 + 12 + 2)},
        {TensorType::Q4_K, 256, uint32_t(2 + 2 + 12 + qk / 2)},
        {TensorType::Q5_K, 256, uint32_t(2 + 2 + 12 + qk / 8 + qk / 2)},
        {TensorType::Q6_K, 256, uint32_t(qk / 2 + qk / 4 + qk / 16 + 2)},
        {TensorType::Q8_K, 256, uint32_t(4 + qk + qk / 16 * 2)},
        {TensorType::IQ2_XXS, 256, uint32_t(2 + qk / 8 * 2)},
        {TensorType::IQ2_XS, 256, uint32_t(2 + qk / 8 * 2 + qk / 32)},
        {TensorType::IQ3_XXS, 256, uint32_t(2 + 3 * (qk / 8))},
        {TensorType::IQ1_S, 256, uint32_t(2 + qk / 8 + qk / 32 * 2)},
        {TensorType::IQ4_NL, 32, 2 + 32 / 2},
        {TensorType::IQ3_S, 256, uint32_t(2 + qk / 4 + qk / 32 + qk / 8 + qk / 64)},
        {TensorType::IQ2_S, 256, uint32_t(2 + qk / 4 + qk / 32 + qk / 32)},
        {TensorType::IQ4_XS, 256, uint32_t(2 + 2 + qk / 64 + qk / 2)},
        {TensorType::I8, 1, 1},
        {TensorType::I16, 1, 2},
        {TensorType::I32, 1, 4},
        {TensorType::I64, 1, 8},
        {TensorType::F64, 1, 8},
        {TensorType::IQ1_M, 256, uint32_t(qk / 8 + qk / 16 + qk / 32)},
        {TensorType::TQ1_0, 256, uint32_t((qk - 4 * qk / 64) / 5 + qk / 64 + 2)},
        {TensorType::TQ2_0, 256, uint32_t(qk / 4 + 2)},
        {TensorType::MXFP4, 32, 1 + 32 / 2},
    };
    int listed = 0;
    for (const Row& r : rows) {
        CAPTURE(kvrt::tensor_type_name(r.t));
        const kvrt::TensorTypeTraits& tr = kvrt::tensor_type_traits(r.t);
        CHECK(tr.block_elems == r.elems);
        CHECK(tr.block_bytes == r.bytes);
        CHECK(kvrt::tensor_type_valid(static_cast<uint32_t>(r.t)));
        listed++;
    }
    // Every valid id is in the list above; every other id is retired or unknown.
    int valid = 0;
    for (uint32_t id = 0; id < 64; ++id) valid += kvrt::tensor_type_valid(id) ? 1 : 0;
    CHECK(valid == listed);
    for (uint32_t id : {4u, 5u, 31u, 32u, 33u, 36u, 37u, 38u}) {
        CAPTURE(id);
        REQUIRE(kvrt::tensor_type_traits(id) != nullptr);
        CHECK(kvrt::tensor_type_traits(id)->block_elems == 0);
        CHECK(std::strstr(kvrt::tensor_type_traits(id)->name, "removed") != nullptr);
    }
    CHECK(kvrt::tensor_type_traits(40u) == nullptr);
    CHECK(kvrt::tensor_type_traits(0xffffffffu) == nullptr);
    CHECK(std::strcmp(kvrt::tensor_type_name(TensorType::Q4_1), "q4_1") == 0);
}

TEST_CASE("tensor_type: row bytes, block multiples and overflow") {
    CHECK(kvrt::tensor_row_bytes(TensorType::Q4_1, 576) == 576 / 32 * 20);
    CHECK(kvrt::tensor_row_bytes(TensorType::Q8_0, 64) == 2 * 34);
    CHECK(kvrt::tensor_row_bytes(TensorType::F32, 7) == 28);
    CHECK(kvrt::tensor_row_bytes(TensorType::Q6_K, 512) == 2 * 210);
    CHECK(kvrt::tensor_row_bytes(TensorType::Q4_0, 0) == 0);

    uint64_t out = 12345;
    CHECK_FALSE(kvrt::tensor_row_bytes_checked(TensorType::Q4_1, 33, &out));
    CHECK(out == 12345);  // untouched on failure
    CHECK_FALSE(kvrt::tensor_row_bytes_checked(TensorType::F64, std::numeric_limits<uint64_t>::max() / 4, &out));
    CHECK_FALSE(kvrt::tensor_row_bytes_checked(static_cast<TensorType>(4), 32, &out));
    CHECK_FALSE(kvrt::tensor_row_bytes_checked(static_cast<TensorType>(1000), 32, &out));

    try {
        kvrt::tensor_row_bytes(TensorType::Q4_1, 33);
        FAIL("expected an error");
    } catch (const kvrt::Error& e) {
        CHECK(e.status() == KVRT_ERR_BAD_FORMAT);
        CHECK(std::strstr(e.what(), "q4_1") != nullptr);
        CHECK(std::strstr(e.what(), "33") != nullptr);
    }
    try {
        kvrt::tensor_row_bytes(TensorType::F32, uint64_t(1) << 63);
        FAIL("expected an error");
    } catch (const kvrt::Error& e) {
        CHECK(e.status() == KVRT_ERR_OVERFLOW);
    }
}
