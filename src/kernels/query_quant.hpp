// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// The query of attention over int8 keys, quantised the way the keys are (util/kv_quant.hpp:
// int8 per group of 32 dims, one scale per group) so that Q.K runs as integer dot products
// (vpdpbusd / vpmaddwd) with exact int32 sums: llama.cpp's q8_0 x q8_0 path does the same.
// The fast kernels (kernels/cpu) and the reference (kernels/ref) both call this one function,
// compiled for the baseline ISA, so they quantise a query to the same codes.
#pragma once

#include <cstdint>

namespace kvrt {

inline constexpr int32_t kQueryI8Group = 32;

// q[d] (d a multiple of kQueryI8Group) -> codes qi[d] and scales sc[d / 32]: for each group g,
// amax = max |q| over the group, sc[g] = amax / 127 and qi = q * (127 / amax) rounded to the
// nearest integer (ties to even), so q ~ sc[g] * qi. A group of zeros gets sc 0 and codes 0;
// a group holding inf or NaN gets sc NaN and codes 0 (its scores turn NaN, as in f32).
void quantize_query_i8(const float* q, int32_t d, int8_t* qi, float* sc);

}  // namespace kvrt
