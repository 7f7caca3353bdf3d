// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// The ggml type table: names, block sizes, row sizes.
#include "formats/tensor_type.hpp"

#include "util/error.hpp"

#include <string>

namespace kvrt {
namespace {

// Indexed by ggml type id. Sizes from ggml-common.h (QK_K = 256).
constexpr TensorTypeTraits kTable[kTensorTypeIdCount] = {
    /* 0 */ {"f32", 1, 4, true},
    /* 1 */ {"f16", 1, 2, true},
    /* 2 */ {"q4_0", kQK4_0, sizeof(BlockQ4_0), true},
    /* 3 */ {"q4_1", kQK4_1, sizeof(BlockQ4_1), true},
    /* 4 */ {"q4_2 (removed)", 0, 0, false},
    /* 5 */ {"q4_3 (removed)", 0, 0, false},
    /* 6 */ {"q5_0", kQK5_0, sizeof(BlockQ5_0), true},
    /* 7 */ {"q5_1", kQK5_1, sizeof(BlockQ5_1), true},
    /* 8 */ {"q8_0", kQK8_0, sizeof(BlockQ8_0), true},
    /* 9 */ {"q8_1", kQK8_1, sizeof(BlockQ8_1), true},
    /* 10 */ {"q2_K", kQK_K, 84, false},
    /* 11 */ {"q3_K", kQK_K, 110, false},
    /* 12 */ {"q4_K", kQK_K, sizeof(BlockQ4_K), true},
    /* 13 */ {"q5_K", kQK_K, sizeof(BlockQ5_K), true},
    /* 14 */ {"q6_K", kQK_K, sizeof(BlockQ6_K), true},
    /* 15 */ {"q8_K", kQK_K, sizeof(BlockQ8_K), false},
    /* 16 */ {"iq2_xxs", kQK_K, 66, false},
    /* 17 */ {"iq2_xs", kQK_K, 74, false},
    /* 18 */ {"iq3_xxs", kQK_K, 98, false},
    /* 19 */ {"iq1_s", kQK_K, 50, false},
    /* 20 */ {"iq4_nl", 32, 18, false},
    /* 21 */ {"iq3_s", kQK_K, 110, false},
    /* 22 */ {"iq2_s", kQK_K, 82, false},
    /* 23 */ {"iq4_xs", kQK_K, 136, false},
    /* 24 */ {"i8", 1, 1, false},
    /* 25 */ {"i16", 1, 2, false},
    /* 26 */ {"i32", 1, 4, false},
    /* 27 */ {"i64", 1, 8, false},
    /* 28 */ {"f64", 1, 8, false},
    /* 29 */ {"iq1_m", kQK_K, 56, false},
    /* 30 */ {"bf16", 1, 2, true},
    /* 31 */ {"q4_0_4_4 (removed)", 0, 0, false},
    /* 32 */ {"q4_0_4_8 (removed)", 0, 0, false},
    /* 33 */ {"q4_0_8_8 (removed)", 0, 0, false},
    /* 34 */ {"tq1_0", kQK_K, 54, false},
    /* 35 */ {"tq2_0", kQK_K, 66, false},
    /* 36 */ {"iq4_nl_4_4 (removed)", 0, 0, false},
    /* 37 */ {"iq4_nl_4_8 (removed)", 0, 0, false},
    /* 38 */ {"iq4_nl_8_8 (removed)", 0, 0, false},
    /* 39 */ {"mxfp4", 32, 17, false},
};

constexpr TensorTypeTraits kUnknown = {"unknown", 0, 0, false};

}  // namespace

const TensorTypeTraits* tensor_type_traits(uint32_t id) noexcept {
    return id < kTensorTypeIdCount ? &kTable[id] : nullptr;
}

const TensorTypeTraits& tensor_type_traits(TensorType t) noexcept {
    const TensorTypeTraits* p = tensor_type_traits(static_cast<uint32_t>(t));
    return p ? *p : kUnknown;
}

const char* tensor_type_name(TensorType t) noexcept { return tensor_type_traits(t).name; }

bool tensor_type_valid(uint32_t id) noexcept { return id < kTensorTypeIdCount && kTable[id].block_elems != 0; }

bool tensor_row_bytes_checked(TensorType t, uint64_t n_elems, uint64_t* bytes) noexcept {
    const TensorTypeTraits& tr = tensor_type_traits(t);
    if (tr.block_elems == 0 || n_elems % tr.block_elems != 0) return false;
    uint64_t blocks = n_elems / tr.block_elems;
    uint64_t out;
    if (__builtin_mul_overflow(blocks, static_cast<uint64_t>(tr.block_bytes), &out)) return false;
    *bytes = out;
    return true;
}

uint64_t tensor_row_bytes(TensorType t, uint64_t n_elems) {
    uint64_t bytes = 0;
    if (!tensor_row_bytes_checked(t, n_elems, &bytes)) {
        const TensorTypeTraits& tr = tensor_type_traits(t);
        if (tr.block_elems == 0)
            fail(KVRT_ERR_BAD_FORMAT, std::string("tensor type ") + tr.name + " (id " +
                                          std::to_string(static_cast<uint32_t>(t)) + ") has no size");
        if (n_elems % tr.block_elems != 0)
            fail(KVRT_ERR_BAD_FORMAT, "a row of " + std::to_string(n_elems) + " elements is not a multiple of " +
                                          tr.name + "'s block of " + std::to_string(tr.block_elems));
        fail(KVRT_ERR_OVERFLOW, "a row of " + std::to_string(n_elems) + " " + tr.name + " elements overflows");
    }
    return bytes;
}

}  // namespace kvrt
