// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// The attention core compiled for the scalar path (see attention_core.inl).
#include "kernels/cpu/attention_core_deps.hpp"

#pragma GCC push_options
// baseline ISA: no target pragma
#pragma GCC optimize("fp-contract=off")

namespace kvrt::cpu::scalar {
#define KVRT_ISA_SCALAR
#include "kernels/cpu/simd_scalar.hpp"
#include "kernels/cpu/attention_core.inl"
#include "kernels/cpu/indexer_core.inl"
#undef KVRT_ISA_SCALAR
}  // namespace kvrt::cpu::scalar

#pragma GCC pop_options

namespace kvrt::cpu {
const AttentionImpl& attention_impl_scalar() { KVRT_ATTENTION_IMPL_OF(scalar); }
}  // namespace kvrt::cpu
