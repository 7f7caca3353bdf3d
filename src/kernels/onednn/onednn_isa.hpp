// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// oneDNN's instruction set, following KVRT_ISA.
//
// KVRT_ISA=avx2 (or scalar, avxvnni, avx512, avx512bf16) makes kvrt's kernels run as on a CPU of
// that level, and its tests and benchmarks use it to cover the paths of other CPUs on the one at
// hand. oneDNN dispatches on its own, so on an AVX-512 CPU under KVRT_ISA=avx2 the CED sparse
// attention's dnnl_sgemm (sparse_attention.hpp) and the benchmarks' oneDNN GEMM baselines ran
// AVX-512 code beside kvrt's AVX2 code: neither the path an AVX2 desktop runs nor a like-for-like
// baseline. follow_isa_limit() caps oneDNN (dnnl_set_max_cpu_isa) at the level KVRT_ISA names.
//
// oneDNN takes the cap only before its first kernel, once per process, so the cap follows the
// environment, read at the first call, and not isa_set_limit() (which tests change at run time).
// ONEDNN_MAX_CPU_ISA / DNNL_MAX_CPU_ISA in the environment, where set, are oneDNN's own and win.
#pragma once

#include "util/isa.hpp"

namespace kvrt::onednn {

// The oneDNN ISA (a dnnl_cpu_isa_t value) for kvrt's level `level` on a CPU with features f: the
// highest oneDNN level within it (Scalar: SSE4.1, oneDNN's lowest JIT level), or
// dnnl_cpu_isa_all where the level does not restrict this CPU.
int isa_for(Isa level, const CpuFeatures& f) noexcept;

// Caps oneDNN at isa_for(the KVRT_ISA level) once per process (later calls do nothing). Call it
// before any oneDNN use. Returns true when oneDNN's effective ISA is within that level (false:
// oneDNN had run before the first call, or its environment variable set it higher).
bool follow_isa_limit() noexcept;

}  // namespace kvrt::onednn
