// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// The one choice of instruction-set level for every CPU kernel (attention,
// weight matmul, dequantisation, the K/V row writer), made at run time.
//
// isa_detected() is the best level the CPU supports; isa_active() is what the
// kernels use: the detected level, lowered by the environment variable
// KVRT_ISA=scalar|avx2|avxvnni|avx512|avx512bf16|amx (read once) or by
// isa_set_limit() (tests force each path with it). A limit above what the CPU
// has is clamped to the detected level. Results are deterministic within one
// path; different paths may differ in the last bits (the weight matmul and the
// dequantisers give the same bits on every path).
//
// Levels, each including the ones below:
//   Scalar      portable C++
//   Avx2        AVX2 + FMA + F16C
//   AvxVnni     + AVX-VNNI (vpdpbusd on ymm: Intel client CPUs since Alder Lake); the weight
//               matmul and attention have paths of their own (attention: the AVX2 one with
//               vpdpbusd for Q.K over int8 K, the same integers), the others take their AVX2 one
//   Avx512      AVX-512 F/BW/VL/DQ (the weight matmul's AVX-512 path also needs
//               AVX512_VNNI; without it the matmul takes AvxVnni or AVX2); attention over
//               int8 K/V takes vpdpbusd where the CPU has AVX512_VNNI (Cascade Lake, Ice
//               Lake: cpu::attention_avx512_i8_dot), vpmaddwd otherwise: the same integers
//   Avx512Bf16  + AVX512_BF16 and AVX512_VNNI (every CPU with the first has the second):
//               attention over int8 K takes vpdpbusd (the same integers as the other
//               paths); attention over bf16 KV multiplies in bf16 (vdpbf16ps,
//               f32 accumulation: the query and the softmax weights rounded to bf16);
//               f32/f16 KV keep the Avx512 arithmetic. KVRT_ISA=avx512 keeps bf16 KV
//               on f32 arithmetic.
//   Amx         + AMX-TILE and AMX-INT8 with the kernel's permission to use the tile
//               state (Sapphire Rapids and later): the weight matmul's prefill tiles of
//               16 rows take tdpbsud (the same exact integers, so the same bits as every
//               other path); everything else runs as at Avx512Bf16.
#pragma once

namespace kvrt {

enum class Isa : int { Scalar = 0, Avx2 = 1, AvxVnni = 2, Avx512 = 3, Avx512Bf16 = 4, Amx = 5 };

// Individual CPU features (probed once: CPUID traps to the hypervisor in a VM).
struct CpuFeatures {
    bool avx2 = false;        // AVX2 + FMA + F16C
    bool avxvnni = false;     // AVX-VNNI (with avx2)
    bool avx512 = false;      // AVX-512 F/BW/VL/DQ (with avx2)
    bool avx512vnni = false;  // AVX512_VNNI (with avx512)
    bool avx512bf16 = false;  // AVX512_BF16 (with avx512)
    bool amx = false;         // AMX-TILE + AMX-INT8, tile state granted by the OS (with avx512vnni)
    bool intel = false;       // vendor GenuineIntel (prefetch tuning only, never the arithmetic)
    bool amd = false;         // vendor AuthenticAMD (likewise)
    int family = 0;           // display family (base + extended, CPUID leaf 1): AMD 0x19 = Zen 3 / Zen 4,
                              // 0x1A = Zen 5 (likewise tuning only)
};
const CpuFeatures& cpu_features() noexcept;

// AMD Zen 4: family 0x19 with AVX-512 (Zen 3, the same family, has none).
bool cpu_is_zen4(const CpuFeatures& f) noexcept;
// An Intel core older than the Alder Lake / Sapphire Rapids generation (Skylake to Ice Lake and
// Tiger Lake), told by the absence of AVX-VNNI, which every core of that generation and later has
// (tuning only: the weight prefetch, the attention's scale reads; measured on Ice Lake-SP).
bool cpu_is_intel_before_avxvnni(const CpuFeatures& f) noexcept;
// Whether software prefetches of a long read stream (decode's weights and its KV) go into L2
// (prefetcht1) rather than L1 (prefetcht0) on this CPU (tuning only, never the arithmetic). An L1
// prefetch holds one of the core's L1 fill buffers until its line arrives, which caps the lines a
// core streaming from DRAM has in flight; L2 prefetches wait in the L2's larger miss queue.
// Measured: Intel (Sapphire Rapids class) and AMD Zen 4 into L2; AMD Zen 3 / Zen 5 into L1 (on
// Zen 5 prefetcht1 left the KV stream at its unprefetched speed; L2 was not tried for weights
// there). Figures in src/kernels/README.md. The KV stream's rule as it is; the weights' takes Intel
// cores before Alder Lake / Sapphire Rapids out of it for decode-shaped calls (weight_prefetch_for).
bool prefetch_streams_into_l2(const CpuFeatures& f) noexcept;

Isa isa_detected() noexcept;
Isa isa_active() noexcept;
// The level KVRT_ISA names, read once (Amx, i.e. no limit, when it is unset or names no level),
// before the CPU's own level or isa_set_limit() apply.
Isa isa_env_limit() noexcept;
// Sets the highest level the kernels may use (process-wide; not meant to be
// changed while kernels run on other threads). Returns the previous limit.
Isa isa_set_limit(Isa limit) noexcept;
const char* isa_name(Isa isa) noexcept;
// KVRT_ISA's value when it names no level (it is ignored then), else nullptr.
const char* isa_env_ignored() noexcept;

}  // namespace kvrt
