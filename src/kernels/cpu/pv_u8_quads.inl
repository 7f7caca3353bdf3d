// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// P.V over int8 V with 8-bit weight codes (attention_core.inl, pv_rows_u8), on ymm: the part
// the AVX-512 and AVX-VNNI Ops share. Included inside their `struct Ops`, where the ISA has
// vpdpbusd (KVRT_ISA_I8_DOT); each Ops adds pv_u8_dot and pv_u8_cvt (its own vector width).
//
// A quad holds dims of 4 keys as 32-bit words of their 4 value bytes (key order a, b, c, d inside
// a word), so that one vpdpbusd adds code_a v_a + code_b v_b + code_c v_c + code_d v_d per dim.
// The words of 32 dims (one V scale group) are stored as 4 ymm q[k] (128 bytes), whose 128-bit
// lane L holds dims 16 L + 4 k .. 16 L + 4 k + 3; an Ops multiplies them kPvU8Vecs vectors (VU) at
// a time and puts the sums back in dim order (pv_u8_cvt).

// Dims [0, 32) of the value rows a, b, c, d (the group's bytes) -> q[0..3] (pv_u8_store puts them
// where the dot products load them: stored as they are loaded, so that each load is forwarded
// from one store).
static void pv_u8_quads(const uint8_t* a, const uint8_t* b, const uint8_t* c, const uint8_t* d, __m256i* q) {
    const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a));
    const __m256i y = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b));
    const __m256i z = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(c));
    const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(d));
    const __m256i ab0 = _mm256_unpacklo_epi8(x, y), ab1 = _mm256_unpackhi_epi8(x, y);  // (a, b) byte pairs
    const __m256i cd0 = _mm256_unpacklo_epi8(z, w), cd1 = _mm256_unpackhi_epi8(z, w);
    q[0] = _mm256_unpacklo_epi16(ab0, cd0);
    q[1] = _mm256_unpackhi_epi16(ab0, cd0);
    q[2] = _mm256_unpacklo_epi16(ab1, cd1);
    q[3] = _mm256_unpackhi_epi16(ab1, cd1);
}
