// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// The unsigned weight codes of one 4-bit chunk of a panel (weight_matmul_layout.hpp), widened
// to bytes on AVX-512: shared by the AVX-512 VNNI kernels (weight_matmul_avx512.cpp) and the AMX
// ones (weight_matmul_amx.cpp), which lay them out as tiles. Include it inside a region compiled
// for at least avx512f,avx512bw (#pragma GCC target), as those files do. Internal to src/kernels/.
#pragma once

#include "formats/tensor_type.hpp"

#include <immintrin.h>

#include <cstdint>

namespace kvrt::kernels::avx512_codes {

// Codes of chunk c (elements 8c..8c+3 -> lo, 8c+4..8c+7 -> hi) of a Q5_0 / Q4_K /
// Q5_K / Q6_K sub-block of one panel (16 rows), as unsigned bytes
// (weight_matmul_layout.hpp). qs: the 4 chunks; hx: Q5 hb or Q6 qh of the sub-block.
template <TensorType T>
inline void codes(const uint8_t* qs, const uint8_t* hx, int c, __m512i& wl, __m512i& wh) {
    const __m512i lo = _mm512_set1_epi8(0x0F);
    const __m512i w = _mm512_loadu_si512(qs + c * 64);
    wl = _mm512_and_si512(w, lo);
    wh = _mm512_and_si512(_mm512_srli_epi16(w, 4), lo);
    if constexpr (T == TensorType::Q5_0 || T == TensorType::Q5_K) {
        const __m512i b5 = _mm512_set1_epi8(0x10);
        const __m512i hb = _mm512_loadu_si512(hx);
        // bit c -> bit 4 (left shift 4 - c), bit 4 + c -> bit 4 (right shift c): within each byte
        wl = _mm512_or_si512(wl, _mm512_and_si512(_mm512_sll_epi16(hb, _mm_cvtsi32_si128(4 - c)), b5));
        wh = _mm512_or_si512(wh, _mm512_and_si512(_mm512_srl_epi16(hb, _mm_cvtsi32_si128(c)), b5));
    } else if constexpr (T == TensorType::Q6_K) {
        const __m512i b6 = _mm512_set1_epi8(0x30);
        const __m512i hq = _mm512_loadu_si512(hx + (c >> 1) * 64);
        if (c & 1) {  // bits 4-5 and 6-7
            wl = _mm512_or_si512(wl, _mm512_and_si512(hq, b6));
            wh = _mm512_or_si512(wh, _mm512_and_si512(_mm512_srli_epi16(hq, 2), b6));
        } else {      // bits 0-1 and 2-3
            wl = _mm512_or_si512(wl, _mm512_and_si512(_mm512_slli_epi16(hq, 4), b6));
            wh = _mm512_or_si512(wh, _mm512_and_si512(_mm512_slli_epi16(hq, 2), b6));
        }
    }
}

}  // namespace kvrt::kernels::avx512_codes
