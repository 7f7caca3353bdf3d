// Which instruction-set path the cpu/ kernels take, chosen at run time.
//
// isa_detected() is what the CPU supports (AVX-512 = F+BW+VL+DQ, AVX2 = AVX2+FMA+F16C,
// Avx512Bf16 = AVX-512 + AVX512_BF16); isa_active() is what the kernels use: the detected
// level, lowered by the environment variable KVRT_ISA=scalar|avx2|avx512|avx512bf16 (read
// once) or by isa_set_limit() (tests force each path with it). A limit above what the CPU
// has is clamped to the detected level. Results are deterministic within one path;
// different paths may differ in the last bits.
//
// Avx512Bf16 differs from Avx512 in attention over bf16 KV only: Q.K and P.V are bf16 dot
// products (vdpbf16ps, f32 accumulation), so the query and the softmax weights are rounded
// to bf16 (~3 significant digits) where the Avx512 path multiplies in f32 (the usual
// flash-attention recipe; about twice the multiply throughput). f32 and f16 KV take the
// same f32 arithmetic as Avx512. KVRT_ISA=avx512 keeps bf16 KV on f32 arithmetic.
#pragma once

namespace kvrt {

enum class Isa : int { Scalar = 0, Avx2 = 1, Avx512 = 2, Avx512Bf16 = 3 };

Isa isa_detected() noexcept;
Isa isa_active() noexcept;
// Sets the highest path the kernels may use (process-wide; not meant to be
// changed while kernels run on other threads). Returns the previous limit.
Isa isa_set_limit(Isa limit) noexcept;
const char* isa_name(Isa isa) noexcept;

}  // namespace kvrt
