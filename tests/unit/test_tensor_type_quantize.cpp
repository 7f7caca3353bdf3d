// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Quantisers (ggml's reference algorithms): exact results on values chosen to be
// representable, error bounds on random data, and quantise -> GGUF -> dequantise.
#include <doctest/doctest.h>

#include "model/gguf/gguf.hpp"
#include "model/gguf/gguf_writer.hpp"
#include "formats/tensor_type_dequant.hpp"
#include "formats/tensor_type_quantize.hpp"
#include "util/dtype.hpp"
#include "util/error.hpp"

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

using kvrt::TensorType;

TEST_CASE("quantize: representable blocks come back exactly") {
    float x[32], y[32];
    // Q4_1: values 0, 0.5, ... 7.5 -> min 0, d = 7.5 / 15 = 0.5, q = x / d.
    for (int j = 0; j < 16; ++j) {
        x[j] = j * 0.5f;
        x[j + 16] = (15 - j) * 0.5f;
    }
    kvrt::BlockQ4_1 b41;
    kvrt::quantize(TensorType::Q4_1, x, &b41, 32);
    CHECK(b41.d == 0x3800);  // 0.5
    CHECK(b41.m == 0x0000);
    for (int j = 0; j < 16; ++j) CHECK(b41.qs[j] == (j | ((15 - j) << 4)));
    kvrt::ref::dequantize_f32(TensorType::Q4_1, &b41, y, 32);
    CHECK(std::memcmp(x, y, sizeof x) == 0);

    // Q4_0: values 2 * (j - 8) and the most negative -16 -> d = -16 / -8 = 2, q = x / d + 8.
    for (int j = 0; j < 16; ++j) {
        x[j] = 2.0f * (j - 8);
        x[j + 16] = 2.0f * (7 - j);
    }
    kvrt::BlockQ4_0 b40;
    kvrt::quantize(TensorType::Q4_0, x, &b40, 32);
    CHECK(b40.d == 0x4000);  // 2
    for (int j = 0; j < 16; ++j) CHECK(b40.qs[j] == (j | ((15 - j) << 4)));
    kvrt::ref::dequantize_f32(TensorType::Q4_0, &b40, y, 32);
    CHECK(std::memcmp(x, y, sizeof x) == 0);

    // Q8_0 / Q8_1: integers -127..127 spread -> d = 1.
    for (int j = 0; j < 32; ++j) x[j] = float(j * 8 - 127);
    x[31] = 127.0f;
    kvrt::BlockQ8_0 b80;
    kvrt::quantize(TensorType::Q8_0, x, &b80, 32);
    CHECK(b80.d == 0x3c00);
    kvrt::ref::dequantize_f32(TensorType::Q8_0, &b80, y, 32);
    CHECK(std::memcmp(x, y, sizeof x) == 0);
    kvrt::BlockQ8_1 b81;
    kvrt::quantize(TensorType::Q8_1, x, &b81, 32);
    int sum = 0;
    for (int j = 0; j < 32; ++j) sum += b81.qs[j];
    CHECK(b81.s == kvrt::f32_to_f16(float(sum)));

    // An all-zero block quantises to d = 0 and back to zeros (no division by zero).
    std::memset(x, 0, sizeof x);
    for (TensorType t : {TensorType::Q4_0, TensorType::Q4_1, TensorType::Q8_0, TensorType::Q8_1}) {
        uint8_t raw[64];
        kvrt::quantize(t, x, raw, 32);
        kvrt::ref::dequantize_f32(t, raw, y, 32);
        for (float v : y) CHECK(v == 0.0f);
    }
}

TEST_CASE("quantize: error bounds on random data and the GGUF round trip") {
    std::mt19937 rng(3);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    const uint64_t n = 32 * 64;
    std::vector<float> x(n);
    for (auto& v : x) v = dist(rng) * 0.05f + 0.01f;
    kvrt::GgufWriter w;
    for (TensorType t : {TensorType::Q4_0, TensorType::Q4_1, TensorType::Q8_0, TensorType::Q8_1, TensorType::F16,
                         TensorType::BF16, TensorType::F32}) {
        const std::string type_name = kvrt::tensor_type_name(t);
        CAPTURE(type_name);
        std::vector<uint8_t> q(kvrt::tensor_row_bytes(t, n));
        kvrt::quantize(t, x.data(), q.data(), n);
        std::vector<float> y(n);
        kvrt::ref::dequantize_f32(t, q.data(), y.data(), n);
        const auto& tr = kvrt::tensor_type_traits(t);
        for (uint64_t b = 0; b < n / tr.block_elems; ++b) {
            // Per block: the step is the block's range over the quantisation levels.
            float lo = x[b * tr.block_elems], hi = lo, amax = 0;
            for (uint32_t j = 0; j < tr.block_elems; ++j) {
                const float v = x[b * tr.block_elems + j];
                lo = std::min(lo, v);
                hi = std::max(hi, v);
                amax = std::max(amax, std::fabs(v));
            }
            float tol;
            switch (t) {
                case TensorType::Q4_0:  // |d| = amax / 8; levels -8..7, so +amax clamps to 7 |d|: error up to |d|
                    tol = amax / 8 + amax * 1e-3f;
                    break;
                case TensorType::Q4_1: tol = (hi - lo) / 15 * 0.5f + amax * 1e-3f; break;
                case TensorType::Q8_0: case TensorType::Q8_1: tol = amax / 127 * 0.5f + amax * 1e-3f; break;
                case TensorType::F16: tol = amax * 0x1p-11f; break;
                case TensorType::BF16: tol = amax * 0x1p-8f; break;
                default: tol = 0; break;
            }
            for (uint32_t j = 0; j < tr.block_elems; ++j) {
                const uint64_t i = b * tr.block_elems + j;
                CAPTURE(i);
                REQUIRE(std::fabs(y[i] - x[i]) <= tol);
            }
        }
        w.add_tensor_quantized(std::string("w.") + tr.name, t, {32 * 8, 8}, x.data());
    }
    std::vector<uint8_t> file = w.to_bytes();
    kvrt::GgufFile f = kvrt::GgufFile::from_buffer(file.data(), file.size());
    for (const auto& t : f.tensors()) {
        std::vector<uint8_t> q(t.n_bytes);
        kvrt::quantize(t.type, x.data(), q.data(), n);
        CHECK(std::memcmp(q.data(), t.data, t.n_bytes) == 0);
    }
    try {
        kvrt::quantize(TensorType::Q6_K, x.data(), nullptr, 256);
        FAIL("expected an error");
    } catch (const kvrt::Error& e) {
        CHECK(e.status() == KVRT_ERR_UNSUPPORTED);
        CHECK(std::string(e.what()).find("q6_K") != std::string::npos);
    }
    try {
        kvrt::quantize(TensorType::Q8_0, x.data(), nullptr, 33);
        FAIL("expected an error");
    } catch (const kvrt::Error& e) {
        CHECK(e.status() == KVRT_ERR_INVALID_ARGUMENT);
    }
}
