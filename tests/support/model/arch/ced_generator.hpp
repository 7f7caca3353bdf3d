// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// The CED model generator: no trained CED weights exist at a size this
// machine holds, so kvrt writes GGUF files of deterministic random weights.
//
// Every tensor is drawn from its own stream, seeded by (seed, tensor name),
// uniform with the variance below, so the file depends only on (config,
// seed, weight type) and not on tensor order. Scales keep activations healthy
// through every layer (tests check the per-layer RMS):
//   input projections (q, kv, bank, gate, indexer, ffn gate/up): var 1 / fan_in
//     (unit-RMS outputs from the unit-RMS normed input);
//   output projections (attn_output, ffn_down): var 1 / (fan_in * 2L), so the
//     residual stream grows to about sqrt(2) x the embedding's RMS over L layers;
//   embedding: var 1; output head: var 4 / E (logits of std ~2);
//   norm weights 1 +- 0.1, sinks uniform in [-0.5, 0.5].
#pragma once

#include "model/arch/ced_config.hpp"
#include "formats/tensor_type.hpp"

#include <cstdint>
#include <string>

namespace kvrt {
class GgufWriter;
}

namespace kvrt::ced {

struct GeneratorOptions {
    CedConfig cfg;                             // validated by write_random_gguf
    uint64_t seed = 1;
    TensorType weight_type = TensorType::F32;  // matrices: F32, F16, BF16, Q8_0, Q4_0, Q4_1
};

// Writes the GGUF to `path` (atomically). Throws kvrt::Error: INVALID_ARGUMENT
// (weight type), BAD_FORMAT (config, naming the ced.* key), IO (path).
// Cost: O(parameters) time; holds the quantised file in memory once.
void write_random_gguf(const std::string& path, const GeneratorOptions& opt);
// Same, into a writer (tests build files in memory with it).
void fill_random_gguf(GgufWriter& w, const GeneratorOptions& opt);

}  // namespace kvrt::ced
