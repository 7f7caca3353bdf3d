// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// The attention core compiled for the avxvnni path (see attention_core.inl): the AVX2 core with
// vpdpbusd on ymm for the integer Q.K over int8 keys (Intel client CPUs since Alder Lake).
#include "kernels/cpu/attention_core_deps.hpp"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avxvnni")
#pragma GCC optimize("fp-contract=off")

namespace kvrt::cpu::avxvnni {
#define KVRT_ISA_AVX2
#define KVRT_ISA_I8_DOT
#include "kernels/cpu/simd_avx2.hpp"
#include "kernels/cpu/attention_core.inl"
#include "kernels/cpu/indexer_core.inl"
#undef KVRT_ISA_I8_DOT
#undef KVRT_ISA_AVX2
}  // namespace kvrt::cpu::avxvnni

#pragma GCC pop_options

namespace kvrt::cpu {
const AttentionImpl& attention_impl_avxvnni() { KVRT_ATTENTION_IMPL_OF(avxvnni); }
}  // namespace kvrt::cpu
