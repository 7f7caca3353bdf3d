// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// The attention core compiled for the avx512bf16 path (see attention_core.inl and isa.hpp):
// the AVX-512 code, with bf16 KV tiles multiplied by vdpbf16ps (KVRT_ISA_BF16_DOT) and int8 K
// by vpdpbusd (KVRT_ISA_I8_DOT: the avx512bf16 level includes AVX512_VNNI, isa.hpp).
#include "kernels/cpu/attention_core_deps.hpp"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,avx512vnni,avx2,fma,f16c")
#pragma GCC optimize("fp-contract=off")
// GCC 12 warns about _mm512_undefined_* inside its own intrinsics headers (a false positive).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace kvrt::cpu::avx512bf16 {
#define KVRT_ISA_AVX512
#define KVRT_ISA_BF16_DOT
#define KVRT_ISA_I8_DOT
#include "kernels/cpu/simd_avx512.hpp"
#include "kernels/cpu/attention_core.inl"
#include "kernels/cpu/indexer_core.inl"
#undef KVRT_ISA_I8_DOT
#undef KVRT_ISA_BF16_DOT
#undef KVRT_ISA_AVX512
}  // namespace kvrt::cpu::avx512bf16

#pragma GCC pop_options

namespace kvrt::cpu {
const AttentionImpl& attention_impl_avx512bf16() { KVRT_ATTENTION_IMPL_OF(avx512bf16); }
}  // namespace kvrt::cpu
