// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// The attention core compiled for the avx512 level on CPUs with AVX512_VNNI but not AVX512_BF16
// (Intel Cascade Lake, Ice Lake, Tiger Lake; see attention_avx512_i8_dot in attention_isa.hpp):
// the AVX-512 code with int8 K and V multiplied by vpdpbusd / vpdpwssd (KVRT_ISA_I8_DOT), the
// same exact integers as the avx512 path's vpmaddwd, so the same bits.
#include "kernels/cpu/attention_core_deps.hpp"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")
#pragma GCC optimize("fp-contract=off")
// GCC 12 warns about _mm512_undefined_* inside its own intrinsics headers (a false positive).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace kvrt::cpu::avx512vnni {
#define KVRT_ISA_AVX512
#define KVRT_ISA_I8_DOT
#include "kernels/cpu/simd_avx512.hpp"
#include "kernels/cpu/attention_core.inl"
#include "kernels/cpu/indexer_core.inl"
#undef KVRT_ISA_I8_DOT
#undef KVRT_ISA_AVX512
}  // namespace kvrt::cpu::avx512vnni

#pragma GCC pop_options

namespace kvrt::cpu {
const AttentionImpl& attention_impl_avx512vnni() { KVRT_ATTENTION_IMPL_OF(avx512vnni); }
}  // namespace kvrt::cpu
