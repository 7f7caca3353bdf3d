// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Sparse K = V global attention (CED) with oneDNN doing the matrix work.
//
// All query heads of a token read the same selected bank rows (MQA, K = V), so per query
// token and per tile of up to kOnednnSparseTile selected rows the work is two GEMMs on one
// gathered f32 tile G[rows][D]:
//   S[H][rows] = Qs[H][D] . G^T          (Qs = q * scale * log2 e, as the hand kernel)
//   O[H][D]    = alpha * O + P[H][rows] . G   (P = exp2(S - running max), online softmax)
// both by dnnl_sgemm on the calling thread alone. Tiles belong to chunks of kKeyChunk list
// entries (as in cpu::attention_sparse); a chunk's partial (m, l, O) starts empty, chunks run
// in parallel (OpenMP, one item per (query, chunk)) and their partials fold in chunk order.
//
// Determinism. Every oneDNN call has a shape that depends only on the model (H, D) and on
// the query's own selection (the tile's row count), and runs with one thread (inside our
// parallel region, or with the calling thread's OpenMP thread count set to 1 around it), so
// a query's result does not depend on the other queries of the call, on prefill chunking,
// on batching or on the thread count. Its bits differ from the hand kernel's (a different
// reduction order: oneDNN blocks the reduction over D and over rows); both are tested
// against the ref twin.
//
// The choice (sparse_attention_use_onednn): KVRT_ONEDNN=on|off|auto (read once; default auto),
// or onednn_set_mode() (tests). auto takes this path where it measured faster than the hand
// kernel (see src/kernels/onednn/README.md): the AVX2 levels (isa_active() Avx2 or AvxVnni) and
// the amx level (Intel Xeons with AMX; Avx512 and Avx512Bf16 keep the hand kernel: Zen 5 measured
// it faster), f32 / bf16 / f16 / fp4 banks,
// H * D >= 1024 (e.g. the base preset's 4 x 256, the public model's 64 x 512). The choice depends on the model's shape alone, never on the
// batch or the selection, so every call of a model takes the same path. The path needs
// AVX2 + FMA + F16C for its own gather and softmax code; below that level (isa_active() ==
// Scalar, e.g. KVRT_ISA=scalar) it is never taken. Quantised banks (int8, fp8) stay on the
// hand kernel.
#pragma once

#include "kernels/attention.hpp"

#include <cstdint>

namespace kvrt::onednn {

inline constexpr int32_t kOnednnSparseTile = 128;

enum class Mode : int { Auto = 0, Off = 1, On = 2 };

// The mode in force: onednn_set_mode()'s if set, else $KVRT_ONEDNN (on | off | auto), else Auto.
Mode onednn_mode() noexcept;
// Sets the mode (process-wide; not while kernels run on other threads). Returns the previous one.
Mode onednn_set_mode(Mode m) noexcept;
const char* onednn_mode_name(Mode m) noexcept;

// True when this path can run these arguments (isa_active() >= Avx2, bank dtype f32, bf16, f16 or
// 4-bit FP4, whose rows the gather decodes to f32 exactly).
bool sparse_attention_supported(const PagedKV& bank, const AttnParams& p) noexcept;
// True when cpu::attention_sparse should take this path: supported and mode On, or mode Auto
// and the shape is one where oneDNN measured faster.
bool sparse_attention_use_onednn(const PagedKV& bank, const AttnParams& p) noexcept;

// The kernel. Arguments already validated (kernels::check_sparse_args) and supported.
// Semantics as cpu::attention_sparse (kernels/attention.hpp). Throws std::bad_alloc when a
// thread's scratch is refused (as the hand kernels do), kvrt::Error(KVRT_ERR_INTERNAL) when a
// oneDNN call fails; the outputs are then unspecified.
void attention_sparse(const PagedKV& bank, const AttnParams& p, const SparseQuery* queries, int32_t n_queries);

}  // namespace kvrt::onednn
