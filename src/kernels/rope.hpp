// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Rotary position embedding on the last rope_dims dims of every head.
//
// x: [n_tokens][n_heads][head_dim] f32, rotated in place; token t is at positions[t].
// Pair i in [0, rope_dims/2) of the tail (tail = the last rope_dims dims of a head):
//   Neox:        (tail[i], tail[i + rope_dims/2])
//   Interleaved: (tail[2i], tail[2i + 1])        (GGML "normal" rope, as llama GGUFs use)
// angle = position * freq_scale * theta^(-2i / rope_dims); inverse rotates by -angle
// (rope(inverse) after rope() restores x up to rounding). ref:: computes in double;
// cpu:: computes cos/sin once per (token, pair) in double and rotates in f32.
#pragma once

#include <cstdint>

namespace kvrt {

enum class RopeMode : uint8_t { Neox = 0, Interleaved = 1 };

struct RopeParams {
    int32_t n_heads = 0;
    int32_t head_dim = 0;
    int32_t rope_dims = 0;  // even, <= head_dim; head_dim = full rotation
    float theta = 10000.0f;
    float freq_scale = 1.0f;
    RopeMode mode = RopeMode::Neox;
};

namespace ref {
void rope(float* x, int32_t n_tokens, const int32_t* positions, const RopeParams& p, bool inverse = false);
}
namespace cpu {
void rope(float* x, int32_t n_tokens, const int32_t* positions, const RopeParams& p, bool inverse = false);
// rope() in two steps, for a caller that rotates many heads (or several calls' worth of
// them) at the same positions: rope_table() writes the (cos, sin) pairs rope() would use for
// each token (n_tokens x rope_dims floats: cs[t * rope_dims + 2i] = cos, [+ 2i + 1] = sin; the
// heads and head_dim of p do not enter), rope_apply() rotates with them. Together they give
// rope()'s bits exactly; the table is computed once instead of once per call.
void rope_table(const int32_t* positions, int32_t n_tokens, const RopeParams& p, bool inverse, float* cs);
void rope_apply(float* x, int32_t n_tokens, const float* cs, const RopeParams& p);
}
}  // namespace kvrt
