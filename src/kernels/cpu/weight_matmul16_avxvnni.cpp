// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// AVX2 + AVX-VNNI (vpdpwssd on ymm: Intel client CPUs from Alder Lake on, which lack AVX-512) weight-matmul kernels for 16-bit activation codes: see
// weight_matmul16_avx2_impl.hpp.
#include "kernels/cpu/weight_matmul_fused_residual.hpp"  // (the shared tile loop reads MarkedStepRows)
#include "kernels/cpu/weight_matmul_kernels.hpp"
#include "kernels/cpu/weight_matmul_layout.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avxvnni")

#define KVRT_AVX2_VNNI 1
#define KVRT_AVX2_16_ENTRY matmul_panels16_avxvnni
#define KVRT_AVX2_ENTRY matmul_panels_avxvnni
#include "kernels/cpu/weight_matmul16_avx2_impl.hpp"

#pragma GCC pop_options

#else  // not x86: never selected (kernel_isa_supported() is false); keeps the link whole.

namespace kvrt::kernels {
void matmul_panels16_avxvnni(const MatmulArgs& args, int64_t p0, int64_t p1) { matmul_panels16_scalar(args, p0, p1); }
}  // namespace kvrt::kernels

#endif
