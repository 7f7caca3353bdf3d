// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// The AMX weight-matmul kernel (src/kernels/cpu/weight_matmul_amx.cpp) with the tile
// instructions emulated in C++: the same code and bits, runnable on any AVX-512 VNNI CPU
// (kernel_isa_supported(KernelIsa::Avx512)). Test support only, never part of libkvrt.
#pragma once

#include "kernels/cpu/weight_matmul_kernels.hpp"

namespace kvrt::kernels {

// As matmul_panels_amx: output columns of panels [p0, p1) for all args.M rows.
void matmul_panels_amx_emulated(const MatmulArgs& args, int64_t p0, int64_t p1);

}  // namespace kvrt::kernels
