// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// The attention core compiled for the avx2 path (see attention_core.inl).
#include "kernels/cpu/attention_core_deps.hpp"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#pragma GCC optimize("fp-contract=off")

namespace kvrt::cpu::avx2 {
#define KVRT_ISA_AVX2
#include "kernels/cpu/simd_avx2.hpp"
#include "kernels/cpu/attention_core.inl"
#include "kernels/cpu/indexer_core.inl"
#undef KVRT_ISA_AVX2
}  // namespace kvrt::cpu::avx2

#pragma GCC pop_options

namespace kvrt::cpu {
const AttentionImpl& attention_impl_avx2() { KVRT_ATTENTION_IMPL_OF(avx2); }
}  // namespace kvrt::cpu
