// Which instruction-set path the cpu/ kernels take, chosen at run time.
//
// isa_detected() is what the CPU supports (AVX-512 = F+BW+VL+DQ, AVX2 = AVX2+FMA+F16C);
// isa_active() is what the kernels use: the detected level, lowered by the
// environment variable KVRT_ISA=scalar|avx2|avx512 (read once) or by
// isa_set_limit() (tests force each path with it). A limit above what the CPU
// has is clamped to the detected level. Results are deterministic within one
// path; different paths may differ in the last bits.
#pragma once

namespace kvrt {

enum class Isa : int { Scalar = 0, Avx2 = 1, Avx512 = 2 };

Isa isa_detected() noexcept;
Isa isa_active() noexcept;
// Sets the highest path the kernels may use (process-wide; not meant to be
// changed while kernels run on other threads). Returns the previous limit.
Isa isa_set_limit(Isa limit) noexcept;
const char* isa_name(Isa isa) noexcept;

}  // namespace kvrt
